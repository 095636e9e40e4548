package simengine

import "testing"

// newidleSim: 3 hogs on 2 CPUs of the given kernel; the hog alone on its
// CPU goes to sleep at 0, and the clock is set to 10 ms so the hog waiting
// on the other CPU (it never ran) is not cache hot. CPU1 (renumbered: the
// idle one is returned) is idle, the other overloaded: a new-idle balance
// of the idle CPU pulls the waiting hog unless the gate stops it. The
// CPU's new-idle state is reset to sd_init()'s.
func newidleSim(t *testing.T, kernel string) (*sim, int32) {
	t.Helper()
	in := Input{Node: Node{CPUs: 2, Kernel: kernel}, DurationNs: 1e9, Seed: 1, Groups: []Group{{Name: "hogs", Tasks: 3}}}
	if nodeScheduler(in.Node) == EEVDF {
		in.Knobs.Features = map[string]bool{"NI_RANDOM": true} // the kernel's default where it exists
	}
	s := startedSim(t, in)
	idle := int32(0)
	if s.rqs[s.cpus[0].root].hNr == 2 {
		idle = 1
	}
	s.blockTask(s.cpus[idle].curr)
	s.flushResched()
	if s.cpus[idle].curr >= 0 || s.rqs[s.cpus[idle].root].hNr != 0 || s.rqs[s.cpus[1-idle].root].hNr != 2 {
		t.Fatalf("want CPU%d idle and two hogs on the other", idle)
	}
	s.now = 10_000_000
	s.cpus[idle].ni = newNewidleState()
	return s, idle
}

// The gate of new-idle balancing by kernel version: before v5.16
// newidle_balance() skipped it when rq->avg_idle < sysctl_sched_migration_cost
// (0.5 ms); from v5.16 sched_balance_newidle() skips it only when avg_idle
// < sd->max_newidle_lb_cost, the most a balance of the domain cost (3 µs
// here, NewidleBalanceNs). An expected idle time of 100 µs balances on
// 6.12, not on 5.15; 2 µs balances on neither once a 3 µs balance was seen.
func TestNewidleGateByVersion(t *testing.T) {
	for _, c := range []struct {
		kernel  string
		avgIdle int64
		maxCost int64
		pull    bool
	}{
		{"5.15", 100_000, 0, false},
		{"5.15", 600_000, 0, true},
		{"6.12", 100_000, 0, true},
		{"6.12", 100_000, 3_000, true},
		{"6.12", 2_000, 3_000, false},
		{"6.18.44", 2_000, 3_000, false},
		{"6.18.44", 4_000, 3_000, true}, // NI_RANDOM: ratio 512, the seed's first die passes (checked below)
	} {
		s, cpu := newidleSim(t, c.kernel)
		s.cpus[cpu].avgIdle = c.avgIdle
		s.cpus[cpu].ni.maxCost = c.maxCost
		rnd := s.niRnd
		if c.kernel == "6.18.44" && c.pull {
			if d := s.niRand() % 1024; d > 513 {
				t.Fatalf("seed 1's first NI_RANDOM die is %d > 513: pick another seed for this case", d)
			}
			s.niRnd = rnd
		}
		if got := s.newidleBalance(cpu); got != c.pull {
			t.Errorf("kernel %s, avg_idle %d ns, max_newidle_lb_cost %d ns: pulled %v, want %v", c.kernel, c.avgIdle, c.maxCost, got, c.pull)
		}
		if c.pull && s.cpus[cpu].ni.maxCost != max(c.maxCost, 3_000) {
			t.Errorf("kernel %s: max_newidle_lb_cost after a 3 µs balance = %d, want %d", c.kernel, s.cpus[cpu].ni.maxCost, max(c.maxCost, 3_000))
		}
	}
}

// update_newidle_cost(): the max cost decays by 253/256 once more than HZ
// jiffies passed since it was last set or decayed (v5.16..v6.18); on
// v6.18.0..v6.18.4 a balance that pulled nothing counts as 3/2 of the max
// cost, capped at the migration cost + 200 ns: from 3 µs, failures give
// 4.5, 6.75, 10.125 µs ... and 500.2 µs after 11 of them (3·1.5^11 = 259.5,
// 3·1.5^12 = 389.3, then the cap).
func TestNewidleCostDecayAndBump(t *testing.T) {
	s, cpu := newidleSim(t, "6.12")
	ni := &s.cpus[cpu].ni
	s.updateNewidleCost(ni, 3_000, 0)
	if ni.maxCost != 3_000 {
		t.Fatalf("max cost %d after a 3 µs balance", ni.maxCost)
	}
	set := ni.lastDecay
	s.now = (set + s.hz) * s.tickNs // HZ jiffies later: not after yet
	if s.updateNewidleCost(ni, 0, 0) || ni.maxCost != 3_000 {
		t.Errorf("decayed at exactly HZ jiffies: %d", ni.maxCost)
	}
	s.now += s.tickNs
	if !s.updateNewidleCost(ni, 0, 0) || ni.maxCost != 3_000*253/256 {
		t.Errorf("max cost after a second = %d, want %d", ni.maxCost, 3_000*253/256)
	}

	b, bc := newidleSim(t, "6.18.2")
	if !b.newidleBump || b.newidleProportional {
		t.Fatal("6.18.2 should have the bump and not NI_RANDOM")
	}
	ni = &b.cpus[bc].ni
	b.updateNewidleCost(ni, 3_000, 0)
	b.cpus[bc].avgIdle = 1_000_000
	want := []int64{4_500, 6_750, 10_125}
	for i := 0; i < 14; i++ {
		var curr int64
		b.newidleDomain(bc, ni, &curr, func() (bool, bool) { return false, true })
		if i < len(want) && ni.maxCost != want[i] {
			t.Errorf("after failure %d: max cost %d, want %d", i+1, ni.maxCost, want[i])
		}
	}
	if ni.maxCost != 500_200 {
		t.Errorf("max cost after 14 failures = %d, want the cap 500200", ni.maxCost)
	}
	// The cap: the gate now wants an expected idle time of 500.2 µs, as the
	// pre-5.16 rule wanted 500 µs.
	if b.cpus[bc].avgIdle = 400_000; b.newidleGate(bc, ni) {
		t.Error("6.18.2 balanced with avg_idle 400 µs after the bumps")
	}
}

// NI_RANDOM (v6.18.5+, v6.19): a domain's balance runs when a 1024-sided
// die is at most 1 + sd->newidle_ratio; sd_init() starts the ratio at 512,
// so about 514/1024 of the attempts run; update_newidle_stats() sets the
// ratio to the successes of the last 1024 calls (halving both counts then).
func TestNewidleProportional(t *testing.T) {
	s, cpu := newidleSim(t, "6.18.44")
	if !s.newidleProportional || s.newidleBump {
		t.Fatal("6.18.44 should have NI_RANDOM and not the bump")
	}
	ni := &s.cpus[cpu].ni
	ni.ratio = 512
	ran := 0
	const n = 4000
	for i := 0; i < n; i++ {
		ni.call, ni.success = 0, 0 // keep the ratio fixed at 512
		var curr int64
		s.newidleDomain(cpu, ni, &curr, func() (bool, bool) { ran++; return false, true })
	}
	if f := float64(ran) / n; f < 0.47 || f > 0.535 {
		t.Errorf("balances run in %.3f of the attempts, want 514/1024 = 0.502", f)
	}
	st := newidleState{call: 1023, success: 100, ratio: 512}
	updateNewidleStats(&st, 3)
	if st.ratio != 103 || st.call != 512 || st.success != 51 {
		t.Errorf("update_newidle_stats at the 1024th call: %+v, want ratio 103, call 512, success 51", st)
	}
}

// load_balance() (v6.1..v6.18) clears sd->nr_balance_failed whenever a task
// moved, in a new-idle balance too; a new-idle balance that moves nothing
// does not count a failure.
func TestNewidleBalanceFailures(t *testing.T) {
	s, cpu := newidleSim(t, "6.12")
	s.cpus[cpu].nrBalanceFailed = 3
	if !s.loadBalance(cpu, true, true) {
		t.Fatal("the new-idle balance pulled nothing from the overloaded CPU")
	}
	if got := s.cpus[cpu].nrBalanceFailed; got != 0 {
		t.Errorf("nr_balance_failed after a new-idle balance that moved a task = %d, want 0", got)
	}
	// One task on each CPU now: the domain is balanced (out_balanced
	// clears the count too).
	s.cpus[cpu].nrBalanceFailed = 2
	s.loadBalance(cpu, true, true)
	if got := s.cpus[cpu].nrBalanceFailed; got != 0 {
		t.Errorf("nr_balance_failed after a balanced new-idle pass = %d, want 0 (out_balanced)", got)
	}
}
