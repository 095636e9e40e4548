package simengine

import (
	"math"
	"testing"
)

// blockedLoadSim forks the groups on 2 CPUs (HZ 250), puts task ti to sleep
// at time 0 (it never wakes: a Hog has no timer) and runs to endNs.
func blockedLoadSim(t *testing.T, groups []Group, ti int32, endNs int64) *sim {
	t.Helper()
	s := startedSim(t, Input{Node: Node{CPUs: 2, HZ: 250}, DurationNs: 1e9, Seed: 1, Groups: groups})
	if s.tasks[ti].state != tsQueued {
		t.Fatalf("task %d not runnable after the fork", ti)
	}
	s.blockTask(ti)
	s.flushResched()
	s.end = endNs
	s.loop()
	return s
}

// peltAfter is the kernel's load_avg of a queue that had load l and nothing
// queued for n whole PELT periods: l·y^n, y^32 = 1/2.
func peltAfter(l float64, n int64) float64 { return l * math.Pow(0.5, float64(n)/32) }

// A group's task asleep on an idle CPU: its queue there is decayed by the
// NOHZ blocked-load update (nohz_balancer_kick() NOHZ_STATS_KICK from the
// busy CPU's tick, every LOAD_AVG_PERIOD = 32 ms = 8 jiffies at HZ 250, due
// when jiffies > nohz.next_blocked), so tg->load_avg follows. Trace, from
// the kernel's rules: CPU1 goes idle at 0 (nohz.has_blocked); the ticks at
// jiffies 1, 10, 19, 28, 37, 46 (4, 40, 76, 112, 148, 184 ms) update it.
// At 200 ms its contribution is the 1024 it had, decayed over the
// 175 whole PELT periods (2^20 ns) up to 184 ms: 1024·2^(-175/32) = 23.1,
// and the group's entity on CPU0 weighs 1024·1024/(1024+23.1) = 1001
// (calc_group_shares(), reweighted at CPU0's tick at 200 ms). Without the
// update the contribution stayed 1024 and the entity weighed 512.
func TestBlockedLoadDecaysOnIdleCPU(t *testing.T) {
	s := blockedLoadSim(t, []Group{{Name: "g", Tasks: 2, CPUWeight: 100}}, 1, 200_000_001)
	tg := &s.tgs[0]
	if s.tasks[0].cpu == s.tasks[1].cpu || s.tasks[1].cpu != 1 {
		t.Fatalf("hogs on CPUs %d and %d, want 0 and 1", s.tasks[0].cpu, s.tasks[1].cpu)
	}
	cq1 := tg.rq[1]
	if s.rqs[cq1].load != 0 || s.cpus[1].curr >= 0 {
		t.Fatalf("CPU1 not idle with the group's queue empty (load %d)", s.rqs[cq1].load)
	}
	// The contributions are integers, the averages truncated (load_avg =
	// load_sum / divider).
	want := int64(peltAfter(1024, 184_000_000>>peltPeriodShift))
	if got := s.rqs[cq1].contrib; got != want {
		t.Errorf("CPU1's contribution to tg->load_avg at 200 ms = %d, want %d (1024 decayed to the update at 184 ms)", got, want)
	}
	if got := tg.loadAvg; got != 1024+want {
		t.Errorf("tg->load_avg = %d, want %d", got, 1024+want)
	}
	wantW := 1024 * 1024 / (1024 + want)
	if got := s.ents[tg.se[0]].weight; got != wantW {
		t.Errorf("group entity weight on CPU0 = %d, want %d", got, wantW)
	}
}

// A group's task asleep on a CPU busy with another group's task: the busy
// CPU's own periodic balance (sched_balance_softirq(), due every
// balance_interval × busy_factor in jiffies less one, get_sd_balance_interval();
// on 2 CPUs at HZ 250 28 ms, or 60 ms once a pass found the domain balanced
// and doubled balance_interval to 4 ms) decays its blocked queues first.
// Forks: h's hog on CPU0, g's first on CPU1, g's second on CPU0 (it sleeps
// at 0). CPU0 balances at 4 ms (the first tick past its 2 ms start), finds
// the domain balanced each time, and balances again every 60 ms: 64, 124,
// 184 ms. At 200 ms g's contribution on CPU0 is 1024·2^(-175/32) = 23.2
// (175 whole periods to 184 ms) and g's entity on CPU1 weighs
// 1024·1024/(1024+23) = 1001.
func TestBlockedLoadDecaysOnBusyCPU(t *testing.T) {
	s := blockedLoadSim(t, []Group{{Name: "h", Tasks: 1, CPUWeight: 100}, {Name: "g", Tasks: 2, CPUWeight: 100}}, 2, 200_000_001)
	if s.tasks[0].cpu != 0 || s.tasks[1].cpu != 1 || s.tasks[2].cpu != 0 {
		t.Fatalf("forks on CPUs %d %d %d, want 0 1 0", s.tasks[0].cpu, s.tasks[1].cpu, s.tasks[2].cpu)
	}
	g := &s.tgs[1]
	cq0 := g.rq[0]
	if s.rqs[cq0].load != 0 || s.cpus[0].curr != 0 || s.cpus[1].curr != 1 {
		t.Fatalf("want h's hog on CPU0 and g's on CPU1 with g's CPU0 queue empty (load %d)", s.rqs[cq0].load)
	}
	want := int64(peltAfter(1024, 184_000_000>>peltPeriodShift))
	if got := s.rqs[cq0].contrib; got != want {
		t.Errorf("CPU0's contribution of g at 200 ms = %d, want %d (1024 decayed to CPU0's balance at 184 ms)", got, want)
	}
	wantW := 1024 * 1024 / (1024 + want)
	if got := s.ents[g.se[1]].weight; got != wantW {
		t.Errorf("g's entity weight on CPU1 = %d, want %d", got, wantW)
	}
}
