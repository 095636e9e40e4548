package simengine

import "testing"

// startedSim builds the simulation of in and forks its tasks (time 0).
func startedSim(t *testing.T, in Input) *sim {
	t.Helper()
	if err := validate(&in); err != nil {
		t.Fatal(err)
	}
	s, err := newSim(&in)
	if err != nil {
		t.Fatal(err)
	}
	s.start()
	return s
}

// load_balance() (v6.1..v6.18) clears sd->nr_balance_failed when it finds
// the domain balanced (out_balanced), so failures from an earlier imbalance
// do not make the next real imbalance migrate cache-hot tasks at once.
func TestBalancedDomainResetsFailures(t *testing.T) {
	s := startedSim(t, Input{Node: Node{CPUs: 2}, DurationNs: 1e9, Seed: 1,
		Groups: []Group{{Name: "hogs", Tasks: 2}}})
	if s.tasks[0].cpu == s.tasks[1].cpu {
		t.Fatalf("two hogs forked onto one CPU (cpu%d)", s.tasks[0].cpu)
	}
	s.cpus[0].nrBalanceFailed = 3
	if s.loadBalance(0, false, false) {
		t.Fatal("a hog moved between two CPUs running one hog each")
	}
	if got := s.cpus[0].nrBalanceFailed; got != 0 {
		t.Errorf("nr_balance_failed after a balanced pass = %d, want 0", got)
	}
}

// migrate_task_rq_fair() of v6.1 sets se->exec_start = 0 ("we have migrated,
// no longer consider this task hot"); the EEVDF kernels keep exec_start, so a
// task that ran within sched_migration_cost stays cache hot after a move.
func TestMigratedTaskHotness(t *testing.T) {
	for _, c := range []struct {
		sch Scheduler
		hot bool
	}{{CFS, false}, {EEVDF, true}} {
		s := startedSim(t, Input{Node: Node{CPUs: 2, Scheduler: c.sch}, DurationNs: 1e9, Seed: 1,
			Groups: []Group{{Name: "pp", Tasks: 2, Pattern: Pattern{Type: PingPong, RunNs: 20_000}}}})
		ti := int32(1) // the partner that waits for the first message: asleep, not queued
		if s.tasks[ti].state != tsSleeping {
			t.Fatalf("%s: task 1 state %d, want asleep at the start", c.sch, s.tasks[ti].state)
		}
		if !s.taskHot(ti) {
			t.Fatalf("%s: a task at time 0 with exec_start 0 should be cache hot (migration cost %d ns)", c.sch, s.migrationCost)
		}
		s.migrateTask(ti, 1-s.tasks[ti].cpu)
		if got := s.taskHot(ti); got != c.hot {
			t.Errorf("%s: task_hot() after a migration = %v, want %v", c.sch, got, c.hot)
		}
	}
}

// update_curr() of v6.12..v6.16 reschedules a curr whose slice protection was
// cancelled as soon as it is not eligible (did_preempt_short()); with its
// protection intact it runs on to its deadline. v6.17 replaced the rule.
func TestDidPreemptShort(t *testing.T) {
	for _, c := range []struct {
		kernel    string
		cancelled bool
		want      bool
	}{
		{"6.12", true, true}, {"6.16", true, true}, {"6.12", false, false}, {"6.18.44", true, false},
	} {
		s := startedSim(t, Input{Node: Node{CPUs: 1, Kernel: c.kernel}, DurationNs: 1e9, Seed: 1,
			Groups: []Group{{Name: "hogs", Tasks: 2}}})
		cur := s.cpus[0].curr
		if cur < 0 || s.cpus[0].needResched {
			t.Fatalf("%s: no hog running after the start, or a resched pending", c.kernel)
		}
		se := s.tasks[cur].se
		if c.cancelled {
			s.ents[se].protectOK = false // cancel_protect_slice()
		}
		s.now = 100_000 // 100 µs of running: not eligible, well before its deadline
		s.updateCurr(s.ents[se].rq)
		if s.entityEligible(s.ents[se].rq, se) {
			t.Fatalf("%s: the running hog is still eligible after 100 µs beside a waiting one", c.kernel)
		}
		if got := s.cpus[0].needResched; got != c.want {
			t.Errorf("%s, protection cancelled %v: rescheduled = %v, want %v", c.kernel, c.cancelled, got, c.want)
		}
	}
}
