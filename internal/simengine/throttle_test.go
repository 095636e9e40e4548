package simengine

import "testing"

// throttle_cfs_rq() (v6.12..v6.17, "sched/fair: Implement delayed dequeue")
// dequeues a delayed group entity with DEQUEUE_DELAYED, which clears
// se->sched_delayed; unthrottle_cfs_rq() finishes any delayed dequeue left
// above before it enqueues. A quota group whose only task went to sleep
// while the group entity was not eligible leaves that entity delayed; the
// queue is throttled at the switch. The simulator kept the delayed flag
// through the throttle, so the unthrottle requeued the entity still marked
// delayed, and the next pick of it dequeued it for good (finishDelayedDequeue)
// with the group's woken task below: an unthrottled queue with a task and no
// queued group entity, which the periodic balance then tried to migrate from
// (moveQueuedTask -> dequeueTree on an entity not in the tree: a panic).
//
// A nice -5 hog shares cpu0 with the quota group, so the group entity, of
// a quarter of the weight, is often not eligible while it runs.
func TestThrottleClearsDelayedGroupEntity(t *testing.T) {
	for end := int64(300_000_000); end < 320_000_000; end += 100_000 {
		s := startedSim(t, Input{Node: Node{CPUs: 2, Kernel: "6.18.44"}, DurationNs: 1e9, Seed: 1,
			Groups: []Group{
				{Name: "hog", Tasks: 1, Root: true, Nice: -5, CPUs: []int32{0}},
				{Name: "q", Tasks: 1, CPUs: []int32{0}, CPUMaxQuotaNs: 80e6},
			}})
		s.end = end
		s.loop()
		qt := s.cpus[0].curr
		if qt < 0 || s.tasks[qt].group != 1 {
			continue
		}
		cq := s.ents[s.tasks[qt].se].rq
		ge := s.rqs[cq].ge
		s.updateCurr(s.ents[ge].rq)
		if s.entityEligible(s.ents[ge].rq, ge) {
			continue
		}
		// The group ran out of runtime; its task goes to sleep, the
		// group entity is delayed, and the switch throttles the queue
		// (check_cfs_rq_runtime() in pick_next_task_fair()).
		tg := s.tasks[qt].tg
		s.tgs[tg].runtime = 0
		s.blockTask(qt)
		if !s.ents[ge].delayed || !s.ents[ge].onRq {
			t.Fatalf("group entity: delayed %v onRq %v after its task slept not eligible; want a delayed entity", s.ents[ge].delayed, s.ents[ge].onRq)
		}
		s.flushResched()
		if !s.rqs[cq].throttled {
			t.Fatal("the group's queue was not throttled at the switch")
		}
		if s.ents[ge].onRq || s.ents[ge].delayed {
			t.Fatalf("throttled group entity: onRq %v delayed %v; want dequeued with sched_delayed cleared", s.ents[ge].onRq, s.ents[ge].delayed)
		}
		// The task wakes onto the throttled queue; the period refills
		// the quota and unthrottles it.
		s.wakeTask(qt, 1, false)
		s.flushResched()
		if s.ents[ge].onRq {
			t.Fatal("the group entity was enqueued above a throttled queue")
		}
		s.tgs[tg].runtime = s.tgs[tg].quota
		s.unthrottleCfsRq(cq)
		s.flushResched()
		if !s.ents[ge].onRq || s.ents[ge].delayed {
			t.Fatalf("unthrottled group entity: onRq %v delayed %v; want queued, not delayed", s.ents[ge].onRq, s.ents[ge].delayed)
		}
		before := s.ents[s.tasks[qt].se].sumExec
		s.end += 100_000_000
		s.loop()
		if got := s.ents[s.tasks[qt].se].sumExec - before; got <= 0 {
			t.Errorf("the woken task of the unthrottled group ran %d ns in the next 100 ms", got)
		}
		return
	}
	t.Fatal("the quota group's task never ran not eligible on cpu0 between 300 and 320 ms")
}

// The input that crashed Run (the mixed scenario's shape with cpu.max
// groups, 2 CPUs, v6.18): it must run, and every task's CPU time must fit
// in the CPUs' time.
func TestQuotaMixedRuns(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		in := Input{Node: Node{CPUs: 2, Kernel: "6.18.44"}, DurationNs: 4e9, WarmupNs: 1e9, Seed: seed,
			Groups: []Group{
				{Name: "hogs", Tasks: 2},
				{Name: "frames", Tasks: 1, Pattern: Pattern{Type: Periodic, RunNs: 4e6, PeriodNs: 40e6}},
				{Name: "pingpong", Tasks: 2, Pattern: Pattern{Type: PingPong, RunNs: 20_000}},
				{Name: "burst", Tasks: 1, Pattern: Pattern{Type: Burst, MeanRunNs: 2e6, MeanSleepNs: 6e6}},
				{Name: "idle", Tasks: 2, CPUIdle: true, Pattern: Pattern{Type: Burst, MeanRunNs: 1e6, MeanSleepNs: 6e6}},
				{Name: "idlepol", Tasks: 2, Policy: "Idle", Pattern: Pattern{Type: Burst, MeanRunNs: 1e6, MeanSleepNs: 3e6}},
				{Name: "pp2", Tasks: 2, CPUMaxQuotaNs: 30e6, Pattern: Pattern{Type: PingPong, RunNs: 50_000}},
				{Name: "quota", Tasks: 3, CPUMaxQuotaNs: 20e6, Pattern: Pattern{Type: Burst, MeanRunNs: 1e6, MeanSleepNs: 2e6}},
			}}
		r, err := Run(in)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		// Two hogs keep both CPUs busy: the groups' CPU adds up to the
		// two CPUs, and each cpu.max group stays within quota/period
		// (debt carries over, so a period's overrun is paid back).
		sum := 0.0
		for _, g := range r.Groups {
			sum += g.Metrics.CPU
			limit := map[string]float64{"pp2": 0.3, "quota": 0.2}[g.Name]
			if limit > 0 && g.Metrics.CPU > limit*1.01 {
				t.Errorf("seed %d: group %s used %.4f CPUs, its cpu.max allows %.2f", seed, g.Name, g.Metrics.CPU, limit)
			}
		}
		if sum < 1.99 || sum > 2.0001 {
			t.Errorf("seed %d: the groups used %.4f CPUs of 2, busy all along", seed, sum)
		}
		for c, u := range r.CPUUtilization {
			if u < 0.99 || u > 1.0001 {
				t.Errorf("seed %d: cpu%d utilization %.4f, want about 1 (two hogs)", seed, c, u)
			}
		}
	}
}
