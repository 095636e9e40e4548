package simengine

import "testing"

// hogNotEligibleOnCPU0 returns a sim at least 300 ms in (PELT at steady
// state) whose cpu0 runs the hogs of group "pinned" (all pinned to cpu0)
// and whose running hog is not eligible; cpu1 has nothing. It returns that
// hog.
func hogNotEligibleOnCPU0(t *testing.T, hogs int) (*sim, int32) {
	t.Helper()
	for end := int64(300_000_000); end < 310_000_000; end += 100_000 {
		s := startedSim(t, Input{Node: Node{CPUs: 2}, DurationNs: 1e9, Seed: 1,
			Groups: []Group{{Name: "pinned", Tasks: hogs, Root: true, CPUs: []int32{0}}}})
		s.end = end
		s.loop()
		if c := s.cpus[0].curr; c >= 0 && !s.cpus[0].needResched {
			if se := s.tasks[c].se; !s.entityEligible(s.ents[se].rq, se) {
				return s, c
			}
		}
	}
	t.Fatal("no hog ran not eligible on cpu0 between 300 and 310 ms")
	return nil, -1
}

// update_sg_lb_stats() (v6.12, v6.18) sums rq->nr_running, which keeps a
// task that went to sleep not eligible (DELAY_DEQUEUE) until its final
// dequeue. A CPU running one hog with such a delayed task queued is
// therefore group_overloaded (two tasks, the hog's utilization), and an idle
// CPU's balance finds an imbalance there (migrate_task, sibling_imbalance()):
// it can move neither the running hog nor the delayed task, so
// sd->nr_balance_failed grows, as load_balance() counts a balance that moved
// nothing. Counting runnable tasks only (h_nr_runnable), the simulator saw
// one task, a fully busy CPU, and went to out_balanced, which clears the
// failures.
func TestDelayedTaskCountsInBalanceStats(t *testing.T) {
	s, hog := hogNotEligibleOnCPU0(t, 2)
	s.blockTask(hog)
	s.flushResched()
	if !s.ents[s.tasks[hog].se].delayed {
		t.Fatal("the hog went to sleep not eligible but was not delayed")
	}
	if got, runnable := s.nrRunning(0), s.rqs[s.cpus[0].root].hNr; got != 2 || runnable != 1 {
		t.Fatalf("cpu0 nr_running %d, h_nr_runnable %d; want 2 and 1", got, runnable)
	}
	if s.cpus[0].pl.util*imbalancePct < 1024*100 {
		t.Fatalf("cpu0's util_avg %.0f: the test needs it above 100/117 of the capacity", s.cpus[0].pl.util)
	}
	// The running hog may run on cpu1 (it is not pinned), so the balance
	// does not end in out_all_pinned.
	s.tasks[s.cpus[0].curr].aff = -1
	s.cpus[1].nrBalanceFailed = 0
	if s.loadBalance(1, true, false) {
		t.Fatal("an idle balance moved a task off cpu0 (its only tasks run or are delayed)")
	}
	if got := s.cpus[1].nrBalanceFailed; got != 1 {
		t.Errorf("sd->nr_balance_failed %d after the idle balance, want 1 (busiest cpu0 overloaded with nr_running 2, nothing movable)", got)
	}
}

// detach_tasks() (v6.12, v6.18) looks at up to env->loop_max =
// min(sysctl_sched_nr_migrate, busiest->nr_running) tasks from the tail of
// cfs_tasks, and nr_running counts delayed tasks, which sit on cfs_tasks too.
// With a delayed task and the running hog at the tail, the third task (a
// queued hog that may move) is still looked at and pulled; a loop_max of the
// runnable tasks only (2) stopped before it.
func TestDetachTasksCountsDelayedInLoopMax(t *testing.T) {
	s, d := hogNotEligibleOnCPU0(t, 3)
	s.blockTask(d)
	s.flushResched()
	a := s.cpus[0].curr
	if !s.ents[s.tasks[d].se].delayed || a < 0 || a == d {
		t.Fatalf("hog %d delayed %v, cpu0 runs %d", d, s.ents[s.tasks[d].se].delayed, a)
	}
	b := int32(-1)
	for _, ti := range s.cpus[0].tasks {
		if ti != a && ti != d {
			b = ti
		}
	}
	if got := s.nrRunning(0); got != 3 || b < 0 {
		t.Fatalf("cpu0 nr_running %d, want 3 (running, queued, delayed)", got)
	}
	// The tail of cfs_tasks: the delayed hog, then the running one; the
	// queued hog b, unpinned now, was enqueued last. Failures above
	// cache_nice_tries let a cache-hot task go.
	s.tasks[d].listStamp, s.tasks[a].listStamp, s.tasks[b].listStamp = 1, 2, 3
	s.tasks[b].aff = -1
	s.cpus[1].nrBalanceFailed = 2
	if !s.loadBalance(1, true, false) {
		t.Fatal("an idle balance of cpu1 moved nothing; want the queued hog pulled")
	}
	if s.tasks[b].cpu != 1 {
		t.Errorf("queued hog on cpu%d after the balance, want cpu1", s.tasks[b].cpu)
	}
}

// nohz_balancer_kick() (v6.12, v6.18) kicks the idle CPUs' balance from a
// busy CPU's tick when that CPU's rq->nr_running >= 2, a delayed task
// included: one hog running with a delayed task queued is enough.
func TestDelayedTaskKicksNohzBalance(t *testing.T) {
	s, hog := hogNotEligibleOnCPU0(t, 2)
	s.blockTask(hog)
	s.flushResched()
	if s.nrRunning(0) != 2 || s.rqs[s.cpus[0].root].hNr != 1 || s.cpus[1].curr >= 0 {
		t.Fatalf("cpu0 nr_running %d, runnable %d, cpu1 runs %d; want 2, 1 and nothing", s.nrRunning(0), s.rqs[s.cpus[0].root].hNr, s.cpus[1].curr)
	}
	s.now = (s.now/s.tickNs + 1) * s.tickNs
	s.cpus[1].nextBalance = s.now
	s.tick()
	if s.cpus[1].lastBalance != s.now {
		t.Errorf("idle cpu1 last balanced at %d ns, want at the tick (%d ns): cpu0's nr_running 2 kicks the nohz balance", s.cpus[1].lastBalance, s.now)
	}
}

// rd->overloaded (v6.12, v6.18) is set when a CPU's nr_running reaches 2
// (add_nr_running()) and recomputed only by update_sd_lb_stats() at the root
// domain: sched_balance_newidle() reads the flag, not the CPUs' present
// counts, so a CPU going idle right after the second task left cpu0 still
// balances, and after the next balance it does not.
func TestRootDomainOverloadIsKeptUntilABalance(t *testing.T) {
	s, hog := hogNotEligibleOnCPU0(t, 2)
	s.blockTask(hog)
	s.flushResched()
	s.finishDelayedDequeue(s.tasks[hog].se)
	if s.nrRunning(0) != 1 {
		t.Fatalf("cpu0 nr_running %d after the final dequeue, want 1", s.nrRunning(0))
	}
	ni := &s.cpus[1].ni
	s.cpus[1].avgIdle = 1e9 // past the cost gate
	if !s.newidleGate(1, ni) {
		t.Error("sched_balance_newidle() gave up on cpu1 with rd->overloaded still set (cpu0 had 2 tasks since the last balance)")
	}
	s.loadBalance(1, true, false)
	if s.newidleGate(1, ni) {
		t.Error("sched_balance_newidle() balanced after a balance found no CPU with 2 tasks")
	}
}
