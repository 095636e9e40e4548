package simengine

import "testing"

// __select_idle_cpu() (v6.12, v6.18) takes a CPU that runs only SCHED_IDLE
// or idle-group tasks (sched_idle_cpu()) as it takes an idle one, so the
// flat machine's scan in select_idle_sibling() stops at it too.
func TestFlatScanTakesSchedIdleCPU(t *testing.T) {
	for _, c := range []struct {
		name  string
		group Group
	}{
		{"SCHED_IDLE task", Group{Name: "idle", Tasks: 1, Policy: "Idle", Nice: 19}},
		{"cpu.idle group", Group{Name: "idle", Tasks: 1, CPUIdle: true}},
	} {
		// Three hogs on CPUs 0-2 and the idle task forked onto CPU 3.
		s := startedSim(t, Input{Node: Node{CPUs: 4}, DurationNs: 1e9, Seed: 1,
			Groups: []Group{{Name: "hogs", Tasks: 3}, c.group}})
		for i := int32(0); i < 4; i++ {
			if s.tasks[i].cpu != i {
				t.Fatalf("%s: task %d forked onto cpu%d, want cpu%d", c.name, i, s.tasks[i].cpu, i)
			}
		}
		if s.cpuIdle(3) || !s.schedIdleCPU(3) {
			t.Fatalf("%s: cpu3 idle %v, sched_idle_cpu %v; want only the idle task there", c.name, s.cpuIdle(3), s.schedIdleCPU(3))
		}
		// A wake-up of hog 0 (prev = target = cpu0, busy); the scan visits
		// cpu1, cpu2, cpu3.
		for _, l := range []struct{ nr, want int32 }{{4, 3}, {3, 3}, {2, 0}, {0, 0}} {
			s.nrIdleScan = l.nr
			if got := s.selectIdleSibling(0, 0, 0); got != l.want {
				t.Errorf("%s, nr_idle_scan %d: select_idle_sibling() = cpu%d, want cpu%d", c.name, l.nr, got, l.want)
			}
		}
	}
}

// dequeue_entities() (v6.12, v6.18): when a dequeue leaves a CPU with only
// SCHED_IDLE or idle-group tasks, rq->next_balance = jiffies ("balance early
// to pull high priority tasks"), and the next tick's sched_balance_domains()
// balances. Without it the CPU, which never goes idle (its idle task runs),
// waits out the busy interval of its last balance (28 or 60 ms on 2 CPUs at
// HZ 250, get_sd_balance_interval()) before
// it balances again.
func TestSchedIdleCPUBalancesEarly(t *testing.T) {
	s := startedSim(t, Input{Node: Node{CPUs: 2}, DurationNs: 200_000_000, Seed: 1,
		Groups: []Group{
			{Name: "idle", Tasks: 1, Policy: "Idle", Nice: 19, CPUIdle: true, CPUs: []int32{1}},
			{Name: "light", Tasks: 1, CPUs: []int32{1}},
			{Name: "hogs", Tasks: 2},
		}})
	for i, want := range []int32{1, 1, 0, 0} {
		if s.tasks[i].cpu != want {
			t.Fatalf("task %d forked onto cpu%d, want cpu%d", i, s.tasks[i].cpu, want)
		}
	}
	s.end = 50_000_000
	s.loop() // (loop() runs once: it drops the first event at or past s.end)
	if s.cpus[1].curr != 1 || s.tasks[2].cpu != 0 || s.tasks[3].cpu != 0 {
		t.Fatalf("at 50 ms cpu1 runs task %d (want the light task 1), hogs on cpu%d and cpu%d (want cpu0)", s.cpus[1].curr, s.tasks[2].cpu, s.tasks[3].cpu)
	}
	due := s.cpus[1].nextBalance
	if due <= s.now+s.tickNs {
		t.Fatalf("cpu1's next balance at %d ns, within a tick of %d ns: the test needs it later", due, s.now)
	}
	// The light task goes to sleep: cpu1 is left with its idle task.
	s.blockTask(1)
	s.flushResched()
	if !s.schedIdleCPU(1) {
		t.Fatal("cpu1 is not sched_idle_cpu() with only its idle task queued")
	}
	if got := s.cpus[1].nextBalance; got > s.now {
		t.Errorf("cpu1's next balance at %d ns after the dequeue at %d ns (it was due at %d), want now", got, s.now, due)
	}
	// The next tick (what the event loop does at it) balances the domain,
	// with the interval of a CPU that is not busy for the one after.
	s.now = (s.now/s.tickNs + 1) * s.tickNs
	s.tick()
	s.flushResched()
	if s.cpus[1].lastBalance != s.now {
		t.Errorf("cpu1 last balanced at %d ns, want at the tick after the dequeue, %d ns (its busy balance was due at %d)", s.cpus[1].lastBalance, s.now, due)
	}
	if s.schedIdleCPU(1) {
		// A CPU that is not busy: sd->balance_interval (2 or 4 ms) in
		// jiffies, one at HZ 250 (get_sd_balance_interval()).
		if got := s.cpus[1].nextBalance; got != s.now+s.tickNs {
			t.Errorf("cpu1's next balance at %d ns, want %d", got, s.now+s.tickNs)
		}
	}
}

// sched_balance_domains() (v6.12, v6.18): busy = idle != CPU_IDLE &&
// !sched_idle_cpu(cpu), so a CPU that runs only idle tasks balances at the
// domain's interval, a busy one busy_factor times less often.
func TestSchedIdleCPUBalanceInterval(t *testing.T) {
	s := startedSim(t, Input{Node: Node{CPUs: 2}, DurationNs: 100_000_000, Seed: 1,
		Groups: []Group{
			{Name: "hogs", Tasks: 2, CPUs: []int32{0}},
			{Name: "idle", Tasks: 1, Policy: "Idle", Nice: 19, CPUs: []int32{1}},
		}})
	s.end = 50_000_000
	s.loop()
	if !s.schedIdleCPU(1) || s.schedIdleCPU(0) || s.cpus[0].lastBalance == never || s.cpus[1].lastBalance == never {
		t.Fatalf("cpu1 sched_idle %v, cpu0 %v; balanced at %d and %d ns", s.schedIdleCPU(1), s.schedIdleCPU(0), s.cpus[0].lastBalance, s.cpus[1].lastBalance)
	}
	for _, c := range []struct {
		cpu  int32
		want int64
	}{
		// get_sd_balance_interval() (v6.18) at HZ 250: the balanced
		// passes have doubled sd->balance_interval to max_interval
		// (4 ms), × busy_factor = 64 ms = 16 jiffies, less one on a
		// busy CPU; the idle-only CPU's 2 or 4 ms is one jiffy.
		{0, 15 * s.tickNs}, {1, s.tickNs}} {
		if got := s.cpus[c.cpu].nextBalance - s.cpus[c.cpu].lastBalance; got != c.want {
			t.Errorf("cpu%d: next balance %d ns after the last, want %d ns", c.cpu, got, c.want)
		}
	}
}

// lightNotEligibleBesideIdle returns a 2-CPU sim whose cpu1 runs a light
// task (returned) that is not eligible, its queue shared with an idle
// group's task; two hogs run on cpu0.
func lightNotEligibleBesideIdle(t *testing.T) (*sim, int32) {
	t.Helper()
	// The light task and the idle group's entity share cpu1's root queue,
	// placed at the same vruntime; as soon as the light task has run, it is
	// ahead of its share (not eligible) until the idle entity's turn. Find
	// such a moment in the first tick (loop() runs once per sim).
	light := int32(1)
	for end := int64(100_000); ; end += 100_000 {
		if end >= 4_000_000 {
			t.Fatal("the light task never ran not eligible on cpu1 in the first tick")
		}
		s := startedSim(t, Input{Node: Node{CPUs: 2}, DurationNs: 200_000_000, Seed: 1,
			Groups: []Group{
				{Name: "idle", Tasks: 1, Policy: "Idle", Nice: 19, CPUIdle: true, CPUs: []int32{1}},
				{Name: "light", Tasks: 1, Root: true, CPUs: []int32{1}},
				{Name: "hogs", Tasks: 2},
			}})
		s.end = end
		s.loop()
		if se := s.tasks[light].se; s.cpus[1].curr == light && !s.cpus[1].needResched && !s.entityEligible(s.ents[se].rq, se) {
			return s, light
		}
	}
}

// A task that goes to sleep not eligible stays queued, delayed
// (DELAY_DEQUEUE, v6.12+): dequeue_entities() returns before the early
// balance and still counts it in rq->nr_running, so the CPU becomes
// sched_idle_rq() only at the delayed task's final dequeue, and that is when
// the early balance comes.
func TestSchedIdleCPUBalancesEarlyAfterDelayedDequeue(t *testing.T) {
	s, light := lightNotEligibleBesideIdle(t)
	se := s.tasks[light].se
	due := s.cpus[1].nextBalance
	s.blockTask(light)
	s.flushResched()
	if !s.ents[se].delayed {
		t.Fatal("the light task went to sleep not eligible but was not delayed")
	}
	if s.cpus[1].nextBalance != due {
		t.Errorf("cpu1's next balance moved to %d ns at the delayed dequeue (was %d), want it unchanged", s.cpus[1].nextBalance, due)
	}
	// Its final dequeue, as the pick does it once the entity is picked.
	s.finishDelayedDequeue(se)
	if got := s.cpus[1].nextBalance; got > s.now {
		t.Errorf("cpu1's next balance at %d ns after the delayed task's final dequeue at %d ns (it was due at %d), want now", got, s.now, due)
	}
}

// sched_idle_cpu() (v6.12, v6.18: rq->nr_running == rq->cfs.h_nr_idle)
// counts queued tasks, a delayed one included: a CPU that runs an idle task
// while a task that went to sleep not eligible is still queued there
// (DELAY_DEQUEUE) is not a sched-idle CPU, so select_idle_sibling() does not
// take it for a wakee, until the delayed task's final dequeue. (The
// simulator had counted runnable tasks only, h_nr_runnable, and took it.)
func TestDelayedTaskKeepsCPUFromSchedIdle(t *testing.T) {
	s, light := lightNotEligibleBesideIdle(t)
	se := s.tasks[light].se
	s.blockTask(light)
	s.flushResched()
	if !s.ents[se].delayed || s.cpus[1].curr != 0 {
		t.Fatalf("light task delayed %v, cpu1 runs task %d; want it delayed and the idle task 0 running", s.ents[se].delayed, s.cpus[1].curr)
	}
	if got := s.nrRunning(1); got != 2 {
		t.Errorf("cpu1's nr_running %d with the idle task and the delayed one queued, want 2", got)
	}
	if s.schedIdleCPU(1) {
		t.Error("cpu1 is sched_idle_cpu() with a delayed normal task queued beside its idle task")
	}
	// A wake-up of hog 2 from busy cpu0 (prev = target = cpu0): the scan
	// finds no idle or sched-idle CPU and keeps the target.
	s.nrIdleScan = 2
	if got := s.selectIdleSibling(2, 0, 0); got != 0 {
		t.Errorf("select_idle_sibling() = cpu%d with the delayed task on cpu1, want cpu0", got)
	}
	s.finishDelayedDequeue(se)
	if !s.schedIdleCPU(1) || s.nrRunning(1) != 1 {
		t.Errorf("after the final dequeue cpu1 sched_idle_cpu %v, nr_running %d; want true, 1", s.schedIdleCPU(1), s.nrRunning(1))
	}
	if got := s.selectIdleSibling(2, 0, 0); got != 1 {
		t.Errorf("select_idle_sibling() = cpu%d after the final dequeue, want the sched-idle cpu1", got)
	}
}
