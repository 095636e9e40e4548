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
// no longer consider this task hot"); v6.12 and v6.18 do the same in
// enqueue_entity() with ENQUEUE_MIGRATED (fair.c of 6.12: "Entity has
// migrated, no longer consider this task hot"), so a migrated task is cache
// cold under both schedulers.
func TestMigratedTaskHotness(t *testing.T) {
	for _, c := range []struct {
		sch Scheduler
		hot bool
	}{{CFS, false}, {EEVDF, false}} {
		s := startedSim(t, Input{Node: Node{CPUs: 2, Scheduler: c.sch}, DurationNs: 1e9, Seed: 1,
			Groups: []Group{{Name: "pp", Tasks: 2, Pattern: Pattern{Type: PingPong, RunNs: 20_000}}}})
		ti := int32(1) // the partner that waits for the first message: asleep, not queued
		if s.tasks[ti].state != tsSleeping {
			t.Fatalf("%s: task 1 state %d, want asleep at the start", c.sch, s.tasks[ti].state)
		}
		if !s.taskHot(ti) {
			t.Fatalf("%s: a task at time 0 with exec_start 0 should be cache hot (migration cost %d ns)", c.sch, s.migrationCost)
		}
		s.migrateTask(ti, 1-s.tasks[ti].cpu, true) // asleep: a wake-up move
		if got := s.taskHot(ti); got != c.hot {
			t.Errorf("%s: task_hot() after a migration = %v, want %v", c.sch, got, c.hot)
		}
	}
}

// update_curr() of v6.12..v6.16 reschedules a curr whose slice protection was
// cancelled as soon as it is not eligible (did_preempt_short()); with its
// protection intact it runs on to its deadline. v6.17 reschedules any curr
// past its protection (see TestSliceProtectionV617 for an eligible one).
func TestDidPreemptShort(t *testing.T) {
	for _, c := range []struct {
		kernel    string
		cancelled bool
		want      bool
	}{
		{"6.12", true, true}, {"6.16", true, true}, {"6.12", false, false}, {"6.18.44", true, true}, {"6.18.44", false, false},
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

// setKeys moves entity se of queue cq to vruntime v, deadline d and slice
// sl, keeping the tree and avg_vruntime's sums consistent.
func setKeys(s *sim, cq, se int32, v, d, sl int64) {
	inTree := s.rqs[cq].curr != se
	if inTree {
		s.dequeueTree(cq, se)
	}
	e := &s.ents[se]
	e.vruntime, e.deadline, e.slice = v, d, sl
	if inTree {
		s.enqueueTree(cq, se)
	}
}

// The v6.17 slice protection (set_protect_slice(), protect_slice() and the
// resched in update_curr()), against the v6.12 rules it replaced.
func TestSliceProtectionV617(t *testing.T) {
	// set_protect_slice(): up to the deadline while every queued slice is
	// curr's; to the shortest queued slice with RUN_TO_PARITY; to the
	// normalized base slice (0.7 ms; 1.4 ms on 2 CPUs) without it.
	for _, c := range []struct {
		parity  bool
		shortNs int64 // a queued entity's slice; 0: the base slice
		want    int64 // protection length in ns of curr's (nice 0) vruntime; 0: the deadline
	}{{true, 0, 0}, {true, 200_000, 200_000}, {false, 0, 700_000}, {false, 200_000, 700_000}} {
		s := startedSim(t, Input{Node: Node{CPUs: 2, Kernel: "6.18.44"}, DurationNs: 1e9, Seed: 1,
			Knobs:  Knobs{Features: map[string]bool{"RUN_TO_PARITY": c.parity}},
			Groups: []Group{{Name: "hogs", Tasks: 4}}})
		// The CPU where hogs wait (fork placed three of the four on one).
		c1 := int32(0)
		if s.rqs[s.ents[s.tasks[s.cpus[1].curr].se].rq].nr > 1 {
			c1 = 1
		}
		cur := s.tasks[s.cpus[c1].curr].se
		cq := s.ents[cur].rq // the group's queue on that CPU
		r := &s.rqs[cq]
		if len(r.tree) == 0 {
			t.Fatalf("no hog waits on either CPU")
		}
		if c.shortNs > 0 {
			o := r.tree[0].se
			setKeys(s, cq, o, s.ents[o].vruntime, s.ents[o].deadline, c.shortNs)
		}
		e := &s.ents[cur]
		s.setProtectSlice(cq, cur)
		want := e.deadline
		if c.want > 0 {
			want = e.vruntime + calcDeltaFair(c.want, e)
		}
		if e.protect != want || !e.protectOK {
			t.Errorf("RUN_TO_PARITY %v, queued slice %d: vprot %d (ok %v), want %d (vruntime %d, deadline %d)",
				c.parity, c.shortNs, e.protect, e.protectOK, want, e.vruntime, e.deadline)
		}
	}

	// update_curr(): an eligible curr past its protection is rescheduled on
	// 6.18 (and not on 6.12, where did_preempt_short() waits until it is not
	// eligible). Two hogs on one CPU: at the first tick (4 ms) the first one
	// has used its request and the second is picked, well behind V.
	for _, c := range []struct {
		kernel string
		want   bool
	}{{"6.18.44", true}, {"6.12", false}} {
		s := startedSim(t, Input{Node: Node{CPUs: 1, Kernel: c.kernel}, DurationNs: 1e9, Seed: 1,
			Groups: []Group{{Name: "hogs", Tasks: 2}}})
		s.end = 4_100_000
		s.loop()
		cur := s.tasks[s.cpus[0].curr].se
		cq := s.ents[cur].rq
		s.now = 4_200_000
		s.updateCurr(cq)
		if !s.protectSlice(cur) || !s.entityEligible(cq, cur) || s.cpus[0].needResched {
			t.Fatalf("%s: the hog picked at the tick: protected %v, eligible %v, resched %v; want protected, eligible, no resched",
				c.kernel, s.protectSlice(cur), s.entityEligible(cq, cur), s.cpus[0].needResched)
		}
		s.cancelProtectSlice(cur)
		s.now = 4_300_000
		s.updateCurr(cq)
		if !s.entityEligible(cq, cur) {
			t.Fatalf("%s: the hog is no longer eligible 0.3 ms after its pick", c.kernel)
		}
		if got := s.cpus[0].needResched; got != c.want {
			t.Errorf("%s: eligible curr whose protection ended: rescheduled %v, want %v", c.kernel, got, c.want)
		}
	}

	// reweight_entity() of curr writes se->vlag, which is se->vprot on
	// 6.17..6.18: the protection ends although vruntime is still below the
	// vprot that set_protect_slice() gave.
	s := startedSim(t, Input{Node: Node{CPUs: 1, Kernel: "6.18.44"}, DurationNs: 1e9, Seed: 1,
		Groups: []Group{{Name: "a", Tasks: 1}, {Name: "b", Tasks: 1}}})
	s.end = 4_100_000
	s.loop()
	ge := s.ents[s.tasks[s.cpus[0].curr].se].parent
	cq := s.ents[ge].rq
	if ge < 0 || !s.protectSlice(ge) {
		t.Fatalf("the group entity picked at the tick is not protected (se%d)", ge)
	}
	vprot := s.ents[ge].protect
	s.now = 4_200_000
	s.reweightEntity(cq, ge, s.ents[ge].weight/2)
	if e := &s.ents[ge]; s.protectSlice(ge) || e.vruntime-vprot >= 0 {
		t.Errorf("after a reweight of curr: protected %v (vruntime %d, vprot before %d); want the protection gone with vruntime still below it",
			s.protectSlice(ge), e.vruntime, vprot)
	}
}

// do_preempt_short() (v6.12..v6.16): a wakee with a shorter slice cancels
// curr's protection only when it is eligible and either has the earlier
// deadline or curr is not eligible. v6.17 tightens the protection instead
// (update_protect_slice()) when the wakee is not picked.
func TestDoPreemptShort(t *testing.T) {
	const base = 700_000
	for _, c := range []struct {
		name           string
		pv, pd, cv, ov int64 // wakee's vruntime and deadline, curr's vruntime, the third entity's vruntime
		want           bool
	}{
		{"wakee not eligible", 10_000_000, 10_100_000, 1000, 1000, false},
		{"wakee eligible, earlier deadline", 0, 100_000, 1000, 1000, true},
		{"wakee eligible, later deadline, curr eligible", 0, base + 2000, 1000, 3000, false},
		{"wakee eligible, later deadline, curr not eligible", 0, base + 600_000, 500_000, 0, true},
	} {
		for _, kernel := range []string{"6.12", "6.18.44"} {
			s := startedSim(t, Input{Node: Node{CPUs: 1, Kernel: kernel}, DurationNs: 1e9, Seed: 1,
				Groups: []Group{{Name: "hogs", Tasks: 3}}})
			cti := s.cpus[0].curr
			cur := s.tasks[cti].se
			cq := s.ents[cur].rq
			m := s.rqs[cq].minV
			var pti, o int32 = -1, -1
			for ti := int32(0); ti < 3; ti++ {
				if ti == cti {
					continue
				}
				if pti < 0 {
					pti = ti
				} else {
					o = s.tasks[ti].se
				}
			}
			pse := s.tasks[pti].se
			setKeys(s, cq, cur, m+c.cv, m+c.cv+base, base)
			setKeys(s, cq, o, m+c.ov, m+c.ov+base, base)
			setKeys(s, cq, pse, m+c.pv, m+c.pd, 100_000)
			if kernel == "6.12" {
				if got := s.doPreemptShort(cq, pse, cur); got != c.want {
					t.Errorf("%s: do_preempt_short = %v, want %v", c.name, got, c.want)
				}
				s.ents[cur].protect, s.ents[cur].protectOK = s.ents[cur].deadline, true
			} else {
				s.setProtectSlice(cq, cur)
			}
			before := s.ents[cur].protect
			s.checkPreemptWakeup(0, pti, 0)
			e := &s.ents[cur]
			switch {
			case kernel == "6.12" && c.want:
				if e.protectOK {
					t.Errorf("6.12, %s: curr's protection kept, want it cancelled", c.name)
				}
			case kernel == "6.12":
				if !e.protectOK || s.cpus[0].needResched {
					t.Errorf("6.12, %s: protection kept %v, resched %v; want kept, no resched", c.name, e.protectOK, s.cpus[0].needResched)
				}
			case !s.cpus[0].needResched:
				// 6.18, not preempted: tightened to the shortest slice, never cancelled.
				want := min(before, e.vruntime+calcDeltaFair(100_000, e))
				if !e.protectOK || e.protect != want {
					t.Errorf("6.18, %s: vprot %d (ok %v), want %d", c.name, e.protect, e.protectOK, want)
				}
			}
		}
	}
}

// enqueue_task_fair() and dequeue_entities() (v6.12) set an already-queued
// group entity's slice to the smallest slice below it at every enqueue and
// dequeue under it: a pod whose hog keeps it queued takes the 0.1 ms slice
// of its short-slice task while that task is queued, and the base slice
// again once it sleeps and its group's entity has left the pod's queue.
func TestGroupSlicePropagates(t *testing.T) {
	s := startedSim(t, Input{Node: Node{CPUs: 1, Kernel: "6.12"}, DurationNs: 100e6, Seed: 1,
		Groups: []Group{
			{Name: "pod", Tasks: 0},
			{Name: "hog", Parent: "pod", Tasks: 1},
			{Name: "short", Parent: "pod", Tasks: 1, SliceNs: 100_000, Pattern: Pattern{Type: Periodic, RunNs: 50_000, PeriodNs: 5e6}},
		}})
	var hog, short int32 = -1, -1
	for i := range s.tasks {
		if s.in.Groups[s.tasks[i].group].Name == "short" {
			short = int32(i)
		} else {
			hog = int32(i)
		}
	}
	pod := s.ents[s.ents[s.tasks[short].se].parent].parent
	if hog < 0 || short < 0 || pod < 0 || s.ents[s.ents[s.tasks[hog].se].parent].parent != pod {
		t.Fatalf("layout: hog %d, short %d, pod entity %d", hog, short, pod)
	}
	var queued, asleep []int64
	s.trace = func(format string, a ...any) {
		if format == "wake task%d on cpu%d" && a[0].(int32) == short {
			queued = append(queued, s.ents[pod].slice)
		}
		// The short group's entity off the pod's queue (not left delayed
		// there: a delayed entity keeps its slice in the queue's minimum,
		// in the kernel as here).
		if ge := s.ents[s.tasks[short].se].parent; !s.ents[ge].onRq {
			asleep = append(asleep, s.ents[pod].slice)
		}
	}
	s.loop()
	if len(queued) < 10 || len(asleep) < 10 {
		t.Fatalf("%d wake-ups and %d events with the short group off the queue, want 10 or more of each", len(queued), len(asleep))
	}
	for _, sl := range queued {
		if sl != 100_000 {
			t.Fatalf("pod's slice %d ns after its short-slice task woke, want 100000 (slices seen: %v)", sl, queued)
		}
	}
	for _, sl := range asleep {
		if sl != s.baseSlice {
			t.Fatalf("pod's slice %d ns with the short-slice task asleep, want the base slice %d (slices seen: %v)", sl, s.baseSlice, asleep)
		}
	}
}

// The default base slice is 0.75 ms until commit 2ae891b82695 lowered it to
// 0.70 ms: mainline v6.15, and the stable series at 6.14.9, 6.12.31 and
// 6.6.93 (the stable review mails of 27 May and 2 June 2025 carry it;
// fair.c of 6.12.0 has 750000, of 6.12.67 and 6.18.2 700000). 1 CPU: the
// tunable scaling factor is 1.
func TestDefaultBaseSliceByRelease(t *testing.T) {
	for _, c := range []struct {
		kernel string
		want   int64
	}{
		{"6.6.0", 750_000}, {"6.6.92", 750_000}, {"6.6.93", 700_000}, {"6.6.120-generic", 700_000},
		{"6.8.0-45-generic", 750_000}, {"6.11.11", 750_000},
		{"6.12", 750_000}, {"6.12.30", 750_000}, {"6.12.31", 700_000}, {"6.12.67", 700_000},
		{"6.13.12", 750_000}, {"6.14.8", 750_000}, {"6.14.9", 700_000},
		{"6.15", 700_000}, {"6.18.44-fc-v1045", 700_000}, {"", 700_000},
	} {
		if got := DefaultBaseSlice(Node{CPUs: 1, Kernel: c.kernel}); got != c.want {
			t.Errorf("kernel %q: base slice %d ns, want %d", c.kernel, got, c.want)
		}
	}
}

// check_preempt_wakeup_fair() of v6.12 (commit faa42d29419d) tests
// SCHED_IDLE on the entities find_matching_se() returns and only then lets
// batch and idle wakees give up; before (v6.1..v6.11) a batch wakee gave up
// first. A SCHED_BATCH task waking in a normal cgroup beside a hog in a
// cpu.idle cgroup: on 6.12 the idle group's entity is preempted
// (cse_is_idle && !pse_is_idle), on 6.11 the batch wakee does not preempt.
// A SCHED_IDLE hog in a normal cgroup and a normal wakee in another: 6.11
// preempts it at once (the task-level test); 6.12 compares the two group
// entities with pick_eevdf(), and the waking group's entity, placed with
// no lag at V beside the running one's, is picked, so both preempt here.
func TestIdleWakeupOrderByVersion(t *testing.T) {
	for _, c := range []struct {
		kernel      string
		idleGroup   bool   // the hog's cgroup is cpu.idle
		hogPolicy   string // the hog's policy
		wakePolicy  string
		wantResched bool
	}{
		{"6.11", true, "", "Batch", false},
		{"6.12", true, "", "Batch", true},
		{"6.18.44", true, "", "Batch", true},
		{"6.11", false, "Idle", "", true},
		{"6.12", false, "Idle", "", true},
		// A SCHED_IDLE wakee in a normal cgroup: its group entity is not
		// idle (se_is_idle() of a group entity is the group's cpu.idle).
		{"6.11", true, "", "Idle", false},
		{"6.12", true, "", "Idle", true},
	} {
		s := startedSim(t, Input{Node: Node{CPUs: 1, Kernel: c.kernel}, DurationNs: 1e9, Seed: 1,
			Groups: []Group{
				{Name: "hog", Tasks: 1, CPUIdle: c.idleGroup, Policy: c.hogPolicy},
				{Name: "waker", Tasks: 1, Policy: c.wakePolicy, Pattern: Pattern{Type: Periodic, RunNs: 100_000, PeriodNs: 1e9}},
			}})
		s.flushResched()
		if s.cpus[0].curr != 0 || s.tasks[1].state != tsSleeping || s.cpus[0].needResched {
			t.Fatalf("%s: want the hog running and the periodic task asleep", c.kernel)
		}
		s.now = 10_000_000
		s.tryToWakeUp(1, 0, false, s.now)
		if got := s.cpus[0].needResched; got != c.wantResched {
			t.Errorf("kernel %s, hog idle group %v policy %q, wakee policy %q: rescheduled %v, want %v",
				c.kernel, c.idleGroup, c.hogPolicy, c.wakePolicy, got, c.wantResched)
		}
	}
}

// CFS (v6.1) buddies. pick_next_entity() runs the next buddy, else the last
// buddy, instead of the leftmost entity as long as wakeup_preempt_entity()
// says running it is not unfair: its vruntime at most wakeup_gran (1 ms on
// 1 CPU, scaled by the leftmost entity's weight, 1024 here) right of the
// leftmost. check_preempt_wakeup() makes a preempting wakee the next buddy
// (whatever NEXT_BUDDY says), and dequeue_task_fair() makes the parent
// group entity of a task going to sleep the next buddy of its queue when
// the group keeps other entities.
func TestCFSBuddies(t *testing.T) {
	s := startedSim(t, Input{Node: Node{CPUs: 1, Kernel: "6.1.100"}, DurationNs: 1e9, Seed: 1,
		Groups: []Group{{Name: "hogs", Tasks: 3, Session: "s"}}})
	if s.eevdf {
		t.Fatal("6.1 should be CFS")
	}
	cur := s.cpus[0].curr
	var q []int32
	for i := int32(0); i < 3; i++ {
		if i != cur {
			q = append(q, s.tasks[i].se)
		}
	}
	cq := s.ents[q[0]].rq
	base := s.ents[s.tasks[cur].se].vruntime
	setKeys(s, cq, s.tasks[cur].se, base+10_000_000, 0, 0) // curr far right: not the leftmost
	for _, c := range []struct {
		gap        int64 // next buddy's vruntime right of the leftmost
		next, last bool
		wantBuddy  bool
	}{
		{500_000, true, false, true},    // 0.5 ms ≤ 1 ms: the buddy runs
		{1_500_000, true, false, false}, // 1.5 ms > 1 ms: unfair, the leftmost runs
		{900_000, false, true, true},    // the last buddy likewise
		{1_100_000, false, true, false},
	} {
		setKeys(s, cq, q[0], base, 0, 0)
		setKeys(s, cq, q[1], base+c.gap, 0, 0)
		s.rqs[cq].next, s.rqs[cq].last = -1, -1
		if c.next {
			s.rqs[cq].next = q[1]
		}
		if c.last {
			s.rqs[cq].last = q[1]
		}
		want := q[0]
		if c.wantBuddy {
			want = q[1]
		}
		if got := s.pickNextEntity(cq); got != want {
			t.Errorf("buddy %d µs right of the leftmost (next %v, last %v): picked se%d, want se%d", c.gap/1000, c.next, c.last, got, want)
		}
	}
	// set_next_entity() clears the buddy it runs.
	s.rqs[cq].next = q[1]
	s.setNextEntity(cq, q[1])
	if s.rqs[cq].next != -1 {
		t.Error("the next buddy is still set after it was picked")
	}

	// A wake-up that preempts: a Periodic task asleep since 0 wakes at
	// 50 ms beside a hog that ran 50 ms; its group's entity is placed half
	// a sched_latency (3 ms) before min_vruntime, more than wakeup_gran
	// (1 ms) left of the hog's group's, so it preempts and becomes the
	// next buddy.
	w := startedSim(t, Input{Node: Node{CPUs: 1, Kernel: "6.1.100"}, DurationNs: 1e9, Seed: 1,
		Groups: []Group{{Name: "hog", Tasks: 1}, {Name: "p", Tasks: 1, Pattern: Pattern{Type: Periodic, RunNs: 100_000, PeriodNs: 1e9}}}})
	w.flushResched()
	w.now = 50_000_000
	w.updateCurr(w.cpus[0].root)
	w.tryToWakeUp(1, 0, false, w.now)
	// Each group is its own cgroup: find_matching_se() compares the two
	// group entities, and the wakee's is the one made next buddy.
	if pe := w.tgs[1].se[0]; !w.cpus[0].needResched || w.rqs[w.cpus[0].root].next != pe {
		t.Errorf("waking beside a hog that ran 50 ms: resched %v, next buddy se%d, want the wakee's group entity se%d",
			w.cpus[0].needResched, w.rqs[w.cpus[0].root].next, pe)
	}

	// A task of a two-task cgroup goes to sleep: the group entity stays
	// queued and becomes the root queue's next buddy.
	g := startedSim(t, Input{Node: Node{CPUs: 1, Kernel: "6.1.100"}, DurationNs: 1e9, Seed: 1,
		Groups: []Group{{Name: "other", Tasks: 1}, {Name: "g", Tasks: 2}}})
	g.flushResched()
	ti := int32(1)
	if g.tasks[ti].running {
		ti = 2
	}
	g.now = 1_000_000
	g.dequeueTask(ti, deqSleep)
	if ge := g.tgs[1].se[0]; g.rqs[g.cpus[0].root].next != ge {
		t.Errorf("root next buddy se%d after a task of g slept, want g's entity se%d", g.rqs[g.cpus[0].root].next, ge)
	}
}

// calc_group_shares() computes a group entity's weight with tg->shares
// scale_load()ed (<< 10) and update_cfs_group() compares that fixed-point
// value with se->load.weight (v6.1..v6.18), so a change of the group's load
// worth less than one weight unit still runs reweight_entity(); on
// 6.13..6.18.44 that places the running entity with itself counted
// (reweightPlaceCurr) and moves its vruntime even though the weight the
// vruntime arithmetic uses (scale_load_down()) is unchanged. The simulator
// had compared whole weight units and skipped such reweights.
func TestSubUnitSharesChangeReweights(t *testing.T) {
	s := startedSim(t, Input{Node: Node{CPUs: 2, HZ: 250, Kernel: "6.18.44"}, DurationNs: 1e9, Seed: 1,
		Groups: []Group{{Name: "g", Tasks: 2}, {Name: "h", Tasks: 2}}})
	tg := &s.tgs[0]
	var ge, cq int32 = -1, -1
	for step := 0; step < 200 && ge < 0; step++ {
		s.end = s.now + 1_000_000
		s.loop()
		for c := range s.cpus {
			root := &s.rqs[s.cpus[c].root]
			if e := tg.se[c]; root.curr == e && root.nr > 1 {
				ge, cq = e, tg.rq[c]
			}
		}
	}
	if ge < 0 {
		t.Fatal("group g's entity never ran with another entity queued beside it")
	}
	s.updateCfsGroup(ge) // settle on the current inputs
	e := &s.ents[ge]
	w, fp := e.weight, e.weightFP
	// Move tg->load_avg by one load unit (an integer, as the kernel's):
	// the fixed-point shares change, the weight in whole units does not.
	tg.loadAvg--
	if got := s.calcGroupSharesFP(cq); got == fp || got>>loadShift != fp>>loadShift {
		t.Fatalf("fixed-point shares %d -> %d: the nudge should move them within one weight unit", fp, got)
	}
	s.updateCurr(e.rq)
	v := e.vruntime
	s.updateCfsGroup(ge)
	if e.weight != w {
		t.Fatalf("weight %d -> %d, want it unchanged", w, e.weight)
	}
	if e.weightFP == fp {
		t.Errorf("se->load.weight (fixed point) still %d: update_cfs_group() did not reweight", fp)
	}
	if e.vruntime == v {
		t.Errorf("curr's vruntime unchanged (%d): reweight_entity()'s placement of curr did not run", v)
	}
}

// dequeue_entities() (v6.12..v6.18) makes the group of a task that goes to
// sleep its queues' next buddy when the group keeps other entities ("Bias
// pick_next to pick a task from this cfs_rq"), and from v6.14 (6.12.13) the
// pick takes an eligible next buddy before anything else (PICK_BUDDY, on by
// default): the CPU stays with the sleeper's group although another group
// has the earlier deadline. Before, the buddy was picked only under
// NEXT_BUDDY (off), and PICK_BUDDY off gives the plain EEVDF pick.
func TestPickBuddyAfterASleepInTheGroup(t *testing.T) {
	for _, c := range []struct {
		kernel string
		off    bool // PICK_BUDDY off
		buddy  bool // the sleeper's group keeps the CPU
	}{{"6.18.44", false, true}, {"6.18.20", false, true}, {"6.14", false, true}, {"6.12.13", false, true},
		{"6.18.44", true, false}, {"6.12", false, false}, {"6.11", false, false}} {
		in := Input{Node: Node{CPUs: 1, Kernel: c.kernel}, DurationNs: 1e9, Seed: 1,
			Groups: []Group{{Name: "a", Tasks: 2}, {Name: "b", Tasks: 1}}}
		if c.off {
			in.Knobs.Features = map[string]bool{"PICK_BUDDY": false}
		}
		s := startedSim(t, in)
		cur := s.cpus[0].curr
		if cur < 0 || s.tasks[cur].group != 0 {
			t.Fatalf("%s: a task of group a should run first, got task %d", c.kernel, cur)
		}
		other := 1 - cur // group a's other task
		ga := s.ents[s.tasks[cur].se].parent
		gb := s.ents[s.tasks[2].se].parent
		root := s.cpus[0].root
		// Group b waits with the earlier deadline, both groups at V, and
		// a's protection is over: the plain pick is b.
		v := s.ents[ga].vruntime
		setKeys(s, root, gb, v, v+1_000_000, s.ents[gb].slice)
		setKeys(s, root, ga, v, v+10_000_000, s.ents[ga].slice)
		s.cancelProtectSlice(ga)
		s.blockTask(cur) // eligible at V: dequeued, not delayed
		if s.tasks[cur].state != tsSleeping || s.ents[s.tasks[cur].se].delayed {
			t.Fatalf("%s: the running task of a did not go to sleep", c.kernel)
		}
		if !s.entityEligible(root, ga) || !s.entityEligible(root, gb) {
			t.Fatalf("%s: both groups should be eligible", c.kernel)
		}
		got := s.pickNextTaskFair(0)
		want := int32(2)
		if c.buddy {
			want = other
		}
		if got != want {
			t.Errorf("%s, PICK_BUDDY off %v: picked task %d (group %d), want task %d; root next buddy se%d, a's se%d",
				c.kernel, c.off, got, s.tasks[got].group, want, s.rqs[root].next, ga)
		}
		if !c.buddy || got != want {
			continue
		}
		// a's other task runs; a's entity stayed curr of the root queue, so
		// it is still the root's buddy. A wake-up check of b against it:
		// where the PICK_BUDDY test sits in __pick_eevdf() (6.18.33+,
		// v6.19) the wake-up's pick returns the buddy and b does not
		// preempt; where it sits in pick_next_entity() b, eligible with the
		// earlier deadline against an unprotected curr, does.
		s.schedule(0)
		if s.cpus[0].curr != other || s.rqs[root].next != ga {
			t.Fatalf("%s: after the switch curr is task %d and the root's buddy se%d, want task %d and se%d", c.kernel, s.cpus[0].curr, s.rqs[root].next, other, ga)
		}
		s.checkPreemptWakeup(0, 2, 0)
		if got, want := s.cpus[0].needResched, !rulesFor(nodeKernel(in.Node)).buddyInPickEEVDF; got != want {
			t.Errorf("%s: b's wake-up check against a's buddy entity rescheduled %v, want %v", c.kernel, got, want)
		}
	}
}

// update_entity_lag() clamps a lag at the largest slice queued on the
// cfs_rq plus TICK_NSEC from commit 6e3c0a4e1ad1 ("sched/fair: Fix lag
// clamp"; fair.c of 6.18.35 has it, so the node's 6.18.44), and at
// max(2 * se->slice, TICK_NSEC) of the entity's own slice before it
// (v6.6..v6.18.16, 6.12.y here). A task of the base slice queued beside
// one with a 20 ms custom slice tells the two apart: its lag is clamped at
// 24 ms with the fix, at 4 ms without.
func TestLagClampMaxSlice(t *testing.T) {
	for _, c := range []struct {
		kernel string
		fixed  bool
	}{{"6.18.44", true}, {"6.18.16", false}, {"6.12.67", false}, {"7.0", true}} {
		s := startedSim(t, Input{Node: Node{CPUs: 1, HZ: 250, Kernel: c.kernel}, DurationNs: 1e9, Seed: 1,
			Groups: []Group{{Name: "big", Tasks: 1, SliceNs: 20_000_000}, {Name: "small", Tasks: 1}}})
		if s.lagClampMaxSlice != c.fixed {
			t.Fatalf("%s: lagClampMaxSlice %v, want %v", c.kernel, s.lagClampMaxSlice, c.fixed)
		}
		// Run until the small task runs with the big one queued beside
		// it in the same queue (both groups' tasks share no queue, so
		// look at the root: the small group's entity as curr, the big
		// group's queued).
		small := s.tgs[1].se[0]
		root := s.cpus[0].root
		for step := 0; step < 200 && !(s.rqs[root].curr == small && s.rqs[root].currOn && s.rqs[root].nr > 1); step++ {
			s.end = s.now + 100_000
			s.loop()
		}
		r := &s.rqs[root]
		if r.curr != small || !r.currOn || r.nr < 2 {
			t.Fatalf("%s: the small group's entity never ran with the big one queued", c.kernel)
		}
		e := &s.ents[small]
		if e.slice >= 20_000_000 {
			t.Fatalf("%s: the small group's entity has slice %d", c.kernel, e.slice)
		}
		// Put curr 100 ms of virtual time ahead of V: its lag is far
		// below either clamp.
		e.vruntime = s.avgVruntime(root) + 100_000_000
		s.updateEntityLag(root, small)
		want := calcDeltaFair(max(2*e.slice, s.tickNs), e)
		if c.fixed {
			want = calcDeltaFair(20_000_000+s.tickNs, e)
		}
		if e.vlag != -want {
			t.Errorf("%s: vlag %d, want the clamp -%d (slices %d and 20 ms, tick %d)", c.kernel, e.vlag, want, e.slice, s.tickNs)
		}
	}
}
