package simengine

// This file holds the core scheduler paths (kernel/sched/core.c): __schedule,
// the tick, try_to_wake_up, and task migration.

// schedule is __schedule() for a CPU: throttle what ran out of quota, pick
// the next task, switch, and new-idle balance when nothing is left.
func (s *sim) schedule(c int32) {
	cpu := &s.cpus[c]
	cpu.needResched = false
	cpu.lazyResched = false
	prev := cpu.curr
	prevPut := false
	if prev >= 0 && s.anyQuota {
		// check_cfs_rq_runtime() on the way down (pick_next_task_fair)
		// throttles queues whose group ran dry, then takes the simple path.
		throttled := false
		for se := s.tasks[prev].se; se >= 0; se = s.ents[se].parent {
			if my := s.ents[se].rq; s.rqs[my].tg >= 0 && s.checkCfsRqRuntime(my) {
				throttled = true
			}
		}
		if throttled {
			s.putPrevTask(prev)
			prevPut = true
		}
	}
	next := s.pickNextTaskFair(c)
	cpu.needResched = false // clear_tsk_need_resched() after the pick
	if next < 0 {
		if prev >= 0 && !prevPut {
			s.putPrevTask(prev)
		}
		if prev >= 0 {
			s.switchOut(c, prev)
		}
		// newidle_balance(): try to pull before going idle.
		if s.newidleBalance(c) {
			next = s.pickNextTaskFair(c)
		}
		if next < 0 {
			if cpu.runEndT != never {
				s.setRunEnd(c, never)
			}
			s.nohzNewidleBalance(c)
			s.nohzEnterIdle(c)
			cpu.idleStamp = s.now
			s.setIdle(c, s.cpuIdle(c))
			if s.topo != nil {
				s.updateIdleCore(c)
			}
			if s.trace != nil && prev >= 0 {
				s.trace("cpu%d idle", c)
			}
			return
		}
		s.setNextTask(next)
		s.switchIn(c, next, false)
		return
	}
	if next == prev && !prevPut {
		s.resumeCurr(c)
		return
	}
	if prev >= 0 && !prevPut {
		// Put the previous hierarchy and set the next one below their
		// common ancestor only, as pick_next_task_fair() does.
		tp, tn := &s.tasks[prev], &s.tasks[next]
		pse, nse := tp.se, tn.se
		if tp.rq == tn.rq {
			// Siblings (two tasks of one group, the common case: one
			// queue, so one parent): only their own level changes.
			s.putPrevEntity(tp.rq, pse)
			s.setNextEntity(tn.rq, nse)
		} else if pp, np := s.ents[pse].parent, s.ents[nse].parent; pp >= 0 && np >= 0 &&
			s.ents[pp].parent < 0 && s.ents[np].parent < 0 {
			// Tasks of two groups that sit under the root (two
			// levels each, no common ancestor below the root): the
			// walk below, written out, in its order.
			s.putPrevEntity(tp.rq, pse)
			s.putPrevEntity(s.ents[pp].rq, pp)
			s.setNextEntity(s.ents[np].rq, np)
			s.setNextEntity(tn.rq, nse)
		} else {
			stack := s.scratch[:0]
			for s.ents[pse].depth > s.ents[nse].depth {
				s.putPrevEntity(s.ents[pse].rq, pse)
				pse = s.ents[pse].parent
			}
			for s.ents[nse].depth > s.ents[pse].depth {
				stack = append(stack, nse)
				nse = s.ents[nse].parent
			}
			for pse != nse {
				s.putPrevEntity(s.ents[pse].rq, pse)
				stack = append(stack, nse)
				pse = s.ents[pse].parent
				nse = s.ents[nse].parent
			}
			for i := len(stack) - 1; i >= 0; i-- {
				s.setNextEntity(s.ents[stack[i]].rq, stack[i])
			}
			s.scratch = stack[:0]
		}
	} else {
		s.setNextTask(next)
	}
	if next == prev {
		s.resumeCurr(c)
		return
	}
	if prev >= 0 {
		s.switchOut(c, prev)
	}
	s.switchIn(c, next, prev < 0)
}

// resumeCurr is __schedule() picking the task that was running: no
// context switch, the task returns to user space and goes on with what it
// was doing. A burst that ended while need_resched was set (a PingPong
// writer whose wake-up of its partner asked for a resched, burstDone) left
// the CPU's run end to the switch it expected; the task keeps the CPU, so
// the rest of its burst is armed here.
func (s *sim) resumeCurr(c int32) {
	if s.cpus[c].runEndT <= s.now {
		s.armRunEnd(c)
	}
}

// putPrevTask is put_prev_task_fair(): put_prev_entity() at every level.
func (s *sim) putPrevTask(ti int32) {
	for se := s.tasks[ti].se; se >= 0; se = s.ents[se].parent {
		s.putPrevEntity(s.ents[se].rq, se)
	}
}

// setNextTask is set_next_task_fair(): set_next_entity() at every level, top down.
func (s *sim) setNextTask(ti int32) {
	stack := s.scratch[:0]
	for se := s.tasks[ti].se; se >= 0; se = s.ents[se].parent {
		stack = append(stack, se)
	}
	for i := len(stack) - 1; i >= 0; i-- {
		s.setNextEntity(s.ents[stack[i]].rq, stack[i])
	}
	s.scratch = stack[:0]
}

// switchOut takes task ti off CPU c.
func (s *sim) switchOut(c, ti int32) {
	cpu := &s.cpus[c]
	t := &s.tasks[ti]
	s.cpuPelt(c)
	s.taskPelt(ti)
	t.running = false
	cpu.curr = -1
	// The CPU's run-end timer is re-keyed by the next switchIn, or cleared
	// when the CPU goes idle.
	if t.state == tsQueued && s.inWindow() {
		t.invol++ // preempted while runnable
	}
}

// switchIn puts task ti on CPU c (context_switch()): it pays the context
// switch cost (and, on a CPU that was idle, the idle exit), records its
// wakeup latency, is charged its per-wake-up CPU cost, and its run-end
// event is armed.
func (s *sim) switchIn(c, ti int32, fromIdle bool) {
	cpu := &s.cpus[c]
	t := &s.tasks[ti]
	s.cpuPelt(c)
	s.taskPelt(ti)
	t.running = true
	cpu.curr = ti
	t.listStamp = s.now // list_move to the head of cfs_tasks
	s.setIdle(c, false)
	mm := s.switchMM(cpu, t)
	cost := s.ctxNs
	if fromIdle {
		cost += s.idleExitNs
	}
	if t.wakeAt >= 0 {
		// A woken task pays its wake-up's draw of the path (drawFloor).
		f := &s.floorTab[t.floorIdx]
		cost = f.ctx
		if fromIdle {
			cost += f.idle
		}
		// The cold part of the way back (coldWake) and the switch of
		// address space (switchMM) are in the latency only, not charged
		// as CPU time (see Constants.ColdWakeNs and ProcessSwitchNs).
		ranAt := s.now + cost + s.coldWake(t, f)
		if mm {
			ranAt += f.mm
		}
		if ranAt >= s.winStart && ranAt < s.end && t.hist != nil {
			t.recordLatency(ranAt - t.wakeAt)
		}
		t.wakeAt = -1
		cost += s.wakeCPUNs
		if t.timerWake {
			cost += s.armCPUNs
		}
	}
	// A Foreign task's bursts are its measured CPU time per wake-up,
	// which holds its wake-up path already.
	if cost > 0 && t.workEnd != never && t.kind != patForeign {
		t.workEnd += s.scaleExec(cost)
	}
	s.armRunEndOf(c, t)
	if s.trace != nil {
		s.trace("cpu%d run task%d", c, ti)
	}
}

// noMM is the address space of a kernel thread (none), and of a CPU on
// which no task with one has run yet.
const noMM int32 = -1

// switchMM is context_switch()'s address-space step for task t switched
// in on cpu (kernel/sched/core.c, v6.18): a task with an address space
// calls switch_mm_irqs_off(prev->active_mm, next->mm), which does nothing
// more when the CPU holds that mm already (a thread of the same process
// ran last, or only kernel threads and the idle task ran since this task
// did: they borrow the mm they find, enter_lazy_tlb()), and otherwise
// loads the new page tables (Constants.ProcessSwitchNs, paid in a woken
// task's latency); a kernel thread switches nothing. It reports whether t
// pays the switch, and makes t's mm the CPU's.
func (s *sim) switchMM(cpu *cpuState, t *task) bool {
	if t.mm == noMM || cpu.mm == t.mm {
		return false
	}
	cpu.mm = t.mm
	return true
}

// armRunEnd schedules the end of the running task's current CPU burst.
func (s *sim) armRunEnd(c int32) { s.armRunEndOf(c, &s.tasks[s.cpus[c].curr]) }

// armRunEndOf is armRunEnd with the CPU's running task t at hand.
func (s *sim) armRunEndOf(c int32, t *task) {
	if t.workEnd == never {
		if s.cpus[c].runEndT != never {
			s.setRunEnd(c, never)
		}
		return
	}
	e := &s.ents[t.se]
	rem := t.workEnd - e.sumExec
	if t.kind == patPingPong && t.pingPhase != pingWork {
		// The write() runs on from the last update_curr() uncommitted
		// (runEnd), and the read() follows it at once; neither reads the
		// clock.
		rem -= s.scaleExec(s.now - s.rqs[t.rq].currStart)
		s.setRunEnd(c, s.now+s.unscaleExec(max(rem, 0)))
		return
	}
	if rem < 0 {
		rem = 0
	}
	// A Server, PingPong, Periodic or Burst worker spins by reading its
	// thread's CPU clock (the agent's spinCPU; the plain programs of
	// docs/wakeup-heavy-groups.md alike), and each read runs update_curr()
	// of its queue (clockReadSliceEnd). A Hog never reads it, and a
	// LatencyProbe does no spinning (its 2 µs of modelled work is the
	// recording of its sample).
	if s.eevdf && readsCPUClock(t.kind) {
		rem = min(rem, clockReadSliceEndOf(e))
	}
	s.setRunEnd(c, s.now+s.unscaleExec(rem))
}

// readsCPUClock says whether a worker of pattern kind k spins its work by
// reading its thread's CPU clock: clock_gettime(CLOCK_THREAD_CPUTIME_ID) in
// a loop (the agent's spinCPU() for the Server, PingPong, Periodic and
// Burst patterns).
func readsCPUClock(k uint8) bool {
	return k == patServer || k == patPingPong || k == patPeriodic || k == patBurst
}

// runEnd handles the end of a CPU burst of the task running on c.
func (s *sim) runEnd(c int32) {
	ti := s.cpus[c].curr
	t := &s.tasks[ti]
	if t.kind == patPingPong && t.pingPhase == pingWrite {
		// A PingPong write(): no clock read, so no update_curr(); the
		// wake-up at its end sees curr's vruntime as of the last one
		// (burstDone).
		if s.ents[t.se].sumExec+s.scaleExec(s.now-s.rqs[t.rq].currStart) < t.workEnd {
			s.armRunEndOf(c, t)
			return
		}
		s.burstDone(ti, t)
		return
	}
	s.updateCurr(t.rq)
	if s.ents[t.se].sumExec < t.workEnd {
		s.armRunEndOf(c, t)
		return
	}
	s.burstDone(ti, t)
}

// blockTask is the task going to sleep: deactivate_task(DEQUEUE_SLEEP), a
// voluntary context switch.
func (s *sim) blockTask(ti int32) {
	t := &s.tasks[ti]
	if t.pendingWake {
		// A wakeup arrived while it was still running: it doesn't sleep.
		t.pendingWake = false
		return
	}
	s.dequeueTask(ti, deqSleep)
	t.state = tsSleeping
	t.sleptAt = s.now
	if s.trace != nil {
		s.trace("block task%d on cpu%d", ti, t.cpu)
	}
	if s.inWindow() {
		t.vol++
	}
	s.reschedCurr(t.cpu, false)
}

// addHNr adds d to h_nr_running of the task's queues up to the root or the
// first throttled queue.
func (s *sim) addHNr(ti int32, d int32) {
	t := &s.tasks[ti]
	idle := int32(0)
	if t.policy == polIdle {
		idle = d
	}
	for se := t.se; se >= 0; {
		e := &s.ents[se]
		r := &s.rqs[e.rq]
		r.hNr += d
		r.idleHNr += idle
		if r.idle {
			idle = d
		}
		if r.throttled {
			break
		}
		se = e.parent
	}
	s.setIdle(t.cpu, s.cpuIdle(t.cpu))
}

// requeueDelayedEntity is requeue_delayed_entity() (v6.12): a delayed
// entity whose task (or one below it) wakes before it was picked becomes
// runnable where it is; with DELAY_ZERO a positive lag it gained while
// waiting is dropped.
func (s *sim) requeueDelayedEntity(se int32) {
	e := &s.ents[se]
	cq := e.rq
	r := &s.rqs[cq]
	// No update_curr() first (v6.12..v6.18): update_entity_lag() and
	// place_entity() below see curr's vruntime as of its last update.
	// The wake-up preemption check that follows runs update_curr(), so a
	// waker that ran since then (a PingPong writer's write(), from its
	// last clock read to the wake-up) moves past the wakee placed at that
	// stale average and is no longer eligible: the wakee preempts it.
	s.updateRqLoadIn(cq, r)
	if s.feat.delayZero {
		s.updateEntityLag(cq, se)
		if e.vlag > 0 {
			inTree := r.curr != se
			if inTree {
				s.dequeueTree(cq, se)
			}
			r.nr--
			e.vlag = 0
			s.placeEntity(cq, se, 0)
			r.nr++
			if inTree {
				s.enqueueTree(cq, se)
			}
		}
	}
	e.delayed = false
}

// tick is scheduler_tick() on every CPU at once (ticks are not skewed by
// default). Idle CPUs are tickless (NO_HZ_IDLE); a busy CPU kicks the idle
// load balance for them (nohz_balancer_kick()).
func (s *sim) tick() {
	anyIdleDue, anyIdle := false, false
	for c := int32(0); c < s.nCPU; c++ {
		cpu := &s.cpus[c]
		if cpu.curr < 0 {
			anyIdle = true
			if cpu.nextBalance <= s.now {
				anyIdleDue = true
			}
			continue
		}
		if s.vs.on && s.vs.cpu[c].entered {
			// A stalled vCPU takes its tick when it runs again.
			s.vs.cpu[c].missedTick = true
			continue
		}
		s.tickBusyCPU(c)
	}
	if s.nCPU == 1 || !anyIdle {
		return
	}
	// nohz_balancer_kick() from the busy CPUs' tick (some CPU runs here:
	// an all-idle machine has no tick): a balance kick carries
	// NOHZ_STATS_KICK too; without one, the stats alone every
	// LOAD_AVG_PERIOD while idle CPUs have blocked load.
	if anyIdleDue && (s.topo == nil && s.overloaded() || s.topo != nil && s.nohzKickTopo()) {
		s.nohzStatsStart()
		hasBlocked := false
		for c := int32(0); c < s.nCPU; c++ {
			cpu := &s.cpus[c]
			if s.cpuIdle(c) && s.updateNohzStats(c) {
				hasBlocked = true
			}
			if cpu.curr < 0 && cpu.ttwuPending == 0 && cpu.nextBalance <= s.now {
				if s.topo != nil {
					if s.rebalanceDomains(c, cpuIdleBal); s.rqs[cpu.root].hNr > 0 {
						s.reschedCurr(c, false)
					}
					continue
				}
				s.decayNewidleCost(c)
				if s.loadBalance(c, true, false) {
					s.reschedCurr(c, false)
				}
				cpu.nextBalance = s.now + s.balanceIntervalNs
				cpu.lastBalance = s.now
			}
		}
		s.nohzStatsEnd(hasBlocked)
		return
	}
	if s.nohzStatsDue() {
		s.nohzStatsPass(-1)
	}
}

// tickBusyCPU is scheduler_tick() on a busy CPU c: the lazy resched, the
// fair class's task tick, and the periodic balance when due.
func (s *sim) tickBusyCPU(c int32) {
	cpu := &s.cpus[c]
	if cpu.lazyResched {
		s.reschedCurr(c, false)
	}
	s.taskTickFair(c)
	if cpu.nextBalance <= s.now && s.nCPU > 1 {
		// sched_balance_softirq(): the blocked averages, then the
		// domains (a single CPU has none: sched_balance_trigger()
		// returns on a null domain).
		s.updateBlockedAverages(c)
		if s.topo != nil {
			s.rebalanceDomains(c, cpuNotIdle) // per level: topology.go
			return
		}
		s.rebalanceFlat(c)
	}
}

// armTimer arms the timer of a sleep until at (clock_nanosleep(), an
// hrtimer on the task's CPU with the task's timer slack: hrtimer_start_range_ns()
// in kernel/time/hrtimer.c, v6.18). The timer's soft expiry is at, its hard
// expiry at+slack; it is queued on the CPU's timer queue in the order of
// hard expiries (enqueue_hrtimer(): the timerqueue is keyed by the hard
// expiry, equal keys after the ones already queued), and the clock event
// device is programmed for the earliest hard expiry (hrtimer_reprogram()).
// Whichever interrupt runs on that CPU, a timer's own or the tick, expires
// every queued timer whose soft expiry has passed (hrtimerInterrupt). The
// tick runs on a busy CPU only (NO_HZ_IDLE), so a tick between a timer's
// two expiries ends its sleep early on a busy CPU (timerSoftExpiry). The
// wake-up then pays the timer interrupt's cost.
func (s *sim) armTimer(ti int32, at int64) {
	t := &s.tasks[ti]
	t.waitReason = at
	t.waker = -1 // the timer fires on the task's CPU
	t.pendingSync = false
	t.timerWake = true
	s.drawFloor(ti)
	if t.timerArmed {
		// hrtimer_start_range_ns() on a queued timer removes it first.
		s.dequeueTimer(ti)
	}
	s.enqueueTimer(ti)
	s.pushTimer(ti, at)
}

// enqueueTimer queues ti's sleep timer on its CPU's timer queue after every
// timer whose hard expiry is not later (enqueue_hrtimer() ->
// timerqueue_add(), v6.18).
func (s *sim) enqueueTimer(ti int32) {
	t := &s.tasks[ti]
	hard := t.waitReason + t.slack
	cpu := &s.cpus[t.cpu]
	q := cpu.timers
	i := len(q)
	for i > 0 && q[i-1].hard > hard {
		i--
	}
	q = append(q, hrtimerEnt{})
	copy(q[i+1:], q[i:])
	q[i] = hrtimerEnt{soft: t.waitReason, hard: hard, ti: ti}
	cpu.timers = q
	t.timerArmed = true
	t.timerCPU = t.cpu
}

// dequeueTimer takes ti's sleep timer off its CPU's timer queue.
func (s *sim) dequeueTimer(ti int32) {
	t := &s.tasks[ti]
	cpu := &s.cpus[t.timerCPU]
	for i, x := range cpu.timers {
		if x.ti == ti {
			cpu.timers = append(cpu.timers[:i], cpu.timers[i+1:]...)
			break
		}
	}
	t.timerArmed = false
}

// pushTimer queues the next expiry check of ti's timer at or after from:
// the first tick in [from, hard expiry), else the hard expiry's interrupt.
// The check's sequence number is the timer's (timerSeq): an expiry by
// another interrupt makes it stale.
func (s *sim) pushTimer(ti int32, from int64) {
	t := &s.tasks[ti]
	hard := t.waitReason + t.slack
	t.timerSeq = s.seq
	if tk := (from + s.tickNs - 1) / s.tickNs * s.tickNs; tk < hard {
		s.push(event{t: tk, kind: evTimerSoft, a: ti})
		return
	}
	s.push(event{t: max(hard+s.timerCost(t), from), kind: evWake, a: ti})
}

// timerCost is what the timer interrupt that ends t's sleep costs on t's
// timer CPU: its wake-up's draw of the timer expiry (drawFloor), moved by
// that CPU's shift (Node.TimerExpiryShiftNs), at least 1 ns when moved.
func (s *sim) timerCost(t *task) int64 {
	c := s.floorTab[t.floorIdx].timer
	if s.cpuTimerShift != nil {
		if d := s.cpuTimerShift[t.timerCPU]; d != 0 {
			c = max(c+d, 1)
		}
	}
	return c
}

// timerLive reports whether a timer event of ti is its timer's pending
// check, not one left by a timer another interrupt expired or re-armed.
func (s *sim) timerLive(ti int32, seq uint64) bool {
	t := &s.tasks[ti]
	return t.timerArmed && t.timerSeq == seq
}

// timerSoftExpiry is a tick at which ti's timer is past its soft expiry:
// the tick (tick_nohz_handler(), run from hrtimer_interrupt()) expires it if
// the CPU is busy, so its tick is running; an idle CPU sleeps on.
func (s *sim) timerSoftExpiry(ti int32) {
	t := &s.tasks[ti]
	if s.cpus[t.timerCPU].curr >= 0 {
		t.timerSeq = s.seq
		s.push(event{t: s.now + s.timerCost(t), kind: evWake, a: ti})
		return
	}
	s.pushTimer(ti, s.now+1)
}

// hrtimerInterrupt is the timer interrupt on ti's timer CPU that ti's
// pending check stands for (its hard expiry's, or a tick's on a busy CPU):
// hrtimer_interrupt() -> __hrtimer_run_queues() (v6.18) walks the CPU's
// timer queue in order and runs every timer whose soft expiry is not after
// now, stopping at the first that is; each run is hrtimer_wakeup(), which
// wakes its task there and then (try_to_wake_up()), so a sleep whose soft
// expiry has passed ends at another timer's interrupt, in queue order. The
// schedule that follows (on the return from the interrupt) sees all of
// them queued. If the walk stopped before ti (a timer ahead of it, with
// less slack, is not due yet), ti's timer waits for the next check.
func (s *sim) hrtimerInterrupt(ti int32) {
	c := s.tasks[ti].timerCPU
	cpu := &s.cpus[c]
	run := s.expired[:0]
	n := 0
	for n < len(cpu.timers) && cpu.timers[n].soft <= s.now {
		run = append(run, cpu.timers[n].ti)
		n++
	}
	cpu.timers = append(cpu.timers[:0], cpu.timers[n:]...)
	self := false
	for _, x := range run {
		s.tasks[x].timerArmed = false
		self = self || x == ti
	}
	for _, x := range run {
		t := &s.tasks[x]
		s.tryToWakeUp(x, t.waker, t.pendingSync, t.waitReason)
	}
	s.expired = run[:0]
	if !self {
		s.pushTimer(ti, s.now+1)
	}
}

// wakeTask wakes ti on behalf of the task running on wakerCPU (a pipe write).
func (s *sim) wakeTask(ti, wakerCPU int32, sync bool) {
	s.tasks[ti].timerWake = false
	s.drawFloor(ti)
	s.tryToWakeUp(ti, wakerCPU, sync, s.now)
}

// tryToWakeUp is try_to_wake_up(), run by the waker (or the timer
// interrupt) on wakerCPU: select a CPU, migrate if it changed, then
// ttwu_queue(): enqueue with ENQUEUE_WAKEUP and check preemption at once,
// or, for an idle CPU other than wakerCPU, through that CPU's wake list.
func (s *sim) tryToWakeUp(ti, wakerCPU int32, sync bool, reason int64) {
	t := &s.tasks[ti]
	if t.state == tsWaking {
		// TASK_WAKING (on a wake list): ttwu_state_match() fails, the task
		// is already on its way.
		return
	}
	if t.state != tsSleeping {
		t.pendingWake = true
		return
	}
	if wakerCPU < 0 {
		wakerCPU = t.cpu
	}
	if s.ents[t.se].delayed {
		// ttwu_runnable(): still queued, so it wakes where it is.
		s.cpuPelt(t.cpu)
		// Its averages first: it was not runnable while delayed
		// (se_runnable() is false for a sched_delayed entity).
		s.taskPelt(ti)
		s.countDelayed(ti, -1)
		s.requeueDelayedEntity(t.se)
		t.state = tsQueued
		s.addHNr(ti, 1)
		t.wakeAt = reason
		if s.trace != nil {
			s.trace("wake delayed task%d on cpu%d", ti, t.cpu)
		}
		if t.running {
			return
		}
		s.checkPreemptCurr(t.cpu, ti, wakerCPU)
		return
	}
	c := t.cpu
	if !t.running {
		// (A task that blocked but has not been switched out yet wakes
		// where it is, as ttwu() waits for p->on_cpu.)
		c = s.selectTaskRq(ti, wakerCPU, sync)
	}
	if c != t.cpu {
		s.migrateTask(ti, c, true)
	}
	// ttwu_queue_wakelist() with ttwu_queue_cond() (v6.12..v6.18): within
	// an LLC (the simulated node is one), a wake-up onto another CPU goes
	// through that CPU's wake list only when nothing runs there
	// (!cpu_rq(cpu)->nr_running): an IPI, and the idle CPU enqueues the task
	// itself (sched_ttwu_pending()). Onto the waker's own CPU, or a busy
	// one, the waker enqueues it at once under that CPU's lock.
	// Across LLCs (a node with a topology) every remote wake-up takes the
	// wake list (!cpus_share_cache()).
	if s.wakeNs > 0 && c != wakerCPU && !t.running && (s.rqIdle(c) || s.topo != nil && !s.topo.sharesCache(c, wakerCPU)) {
		t.state = tsWaking
		t.waitReason = reason
		t.pendingSync = sync
		t.waker = wakerCPU
		s.cpus[c].ttwuPending++ // rq->ttwu_pending: idle_cpu() is false
		s.setIdle(c, false)
		s.push(event{t: s.now + s.floorTab[t.floorIdx].wake, kind: evWakeList, a: ti})
		return
	}
	s.ttwuActivate(ti, wakerCPU, sync, reason)
}

// ttwuPending is sched_ttwu_pending() on the CPU of a task queued on its
// wake list: the IPI has arrived and the CPU enqueues the task.
func (s *sim) ttwuPending(ti int32) {
	t := &s.tasks[ti]
	s.cpus[t.cpu].ttwuPending--
	t.state = tsSleeping
	s.ttwuActivate(ti, t.waker, t.pendingSync, t.waitReason)
}

// ttwuActivate is ttwu_do_activate(): enqueue the task on its CPU with
// ENQUEUE_WAKEUP and check preemption of the CPU's current task.
func (s *sim) ttwuActivate(ti, wakerCPU int32, sync bool, reason int64) {
	t := &s.tasks[ti]
	c := t.cpu
	cpu := &s.cpus[c]
	if s.rqIdle(c) {
		// Update rq->avg_idle with this idle period (rq->idle_stamp):
		// update_avg(), then the clamp to twice rq->max_idle_balance_cost
		// (ttwu_do_activate(), v6.12 and v6.18).
		d := s.now - cpu.idleStamp
		cpu.avgIdle += (d - cpu.avgIdle) / 8
		cpu.avgIdle = min(cpu.avgIdle, 2*cpu.maxIdleBalanceCost)
	}
	// enqueue_entity() updates the entity's averages before it sets
	// se->on_rq: the sleep ends here, not runnable.
	s.taskPelt(ti)
	t.state = tsQueued
	t.wakeAt = reason
	s.enqueueTask(ti, enqWakeup)
	if s.trace != nil {
		s.trace("wake task%d on cpu%d", ti, c)
	}
	// WF_SYNC only steers the CPU choice (wake_affine()); the wake-up
	// preemption check runs for every wake-up (ttwu_do_activate() ->
	// wakeup_preempt(), v6.1..v6.18).
	s.checkPreemptCurr(c, ti, wakerCPU)
}

// migrateTask moves a task that is not queued to CPU c:
// migrate_task_rq_fair() plus the PELT detach/attach that follows
// (detach_entity_load_avg / attach_entity_load_avg, propagated to the group
// entities above as update_tg_cfs_load() does). wake is a move at the
// task's wake-up (select_task_rq() chose another CPU), whose load leaves
// the old queues the deferred way (detachTaskLoad).
func (s *sim) migrateTask(ti, c int32, wake bool) {
	t := &s.tasks[ti]
	e := &s.ents[t.se]
	if !s.eevdf && !t.vNormalized {
		// A sleeping task's vruntime was not made relative at dequeue.
		e.vruntime -= s.rqs[e.rq].minV
		t.vNormalized = true
	}
	// "We have migrated, no longer consider this task hot": se->exec_start
	// = 0, so task_hot() lets the balancer move it again at once. v6.1 does
	// it in migrate_task_rq_fair(); v6.12 and v6.18 in enqueue_entity()
	// with ENQUEUE_MIGRATED, which activate_task() sets for a task being
	// migrated (the balancer's) and ttwu_do_activate() for a wake-up on
	// another CPU (WF_MIGRATED). v6.6 was not read.
	e.execStart = -1 << 62
	old := t.cpu
	s.detachTaskLoad(ti, !wake)
	s.cpuPelt(old)
	s.taskPelt(ti)
	s.cpus[old].pl.util = max(0, s.cpus[old].pl.util-t.pl.util)
	s.cpus[old].pl.runnable = max(0, s.cpus[old].pl.runnable-t.pl.runnable)
	s.placeTaskOnCPU(ti, c)
	s.cpuPelt(c)
	s.cpus[c].pl.util += t.pl.util
	s.cpus[c].pl.runnable += t.pl.runnable
	s.attachTaskLoad(ti)
	if s.trace != nil {
		s.trace("migrate task%d cpu%d->cpu%d", ti, old, c)
	}
}

// detachTaskLoad takes a migrating task's load off its old queues. The
// balancer's move (detach_task() -> dequeue_entity() with DO_DETACH,
// v6.1..v6.18) detaches it at once and publishes the queue's new load to
// tg->load_avg (update_load_avg(): detach_entity_load_avg(), then
// update_tg_load_avg()); publish is then true. A move at the wake-up
// (migrate_task_rq_fair() -> remove_entity_load_avg()) only adds the load
// to cfs_rq->removed, which the old queue subtracts at its next
// update_cfs_rq_load_avg(), and only then does update_tg_load_avg()
// publish it: until the old CPU's next blocked-averages update
// (updateBlockedAverages) or an enqueue there, tg->load_avg keeps the old
// contribution, and the group's entity on the new CPU gets shares divided
// by that load. The simulator's queue average drops at once (nothing else
// reads a queue its tasks have left); with publish false only the
// publication waits, for whichever update of that queue comes next.
func (s *sim) detachTaskLoad(ti int32, publish bool) {
	se := s.tasks[ti].se
	s.updateSeLoad(se)
	amt := s.ents[se].load.avg
	cq := s.ents[se].rq
	for {
		r := &s.rqs[cq]
		if publish {
			s.updateRqLoadIn(cq, r)
		} else if s.now-r.loadAvg.t >= 1<<peltPeriodShift {
			r.loadAvg.update(s.pt, s.now, float64(r.load)) // decay, not published
		}
		before := r.loadAvg.avg
		r.loadAvg.avg = max(0, before-amt)
		if publish {
			s.syncTgContrib(cq)
		}
		if r.ge < 0 {
			return
		}
		ge := r.ge
		s.updateSeLoad(ge)
		g := &s.ents[ge]
		dec := 0.0
		if before > 0 {
			dec = g.load.avg * min(1, amt/before)
		}
		g.load.avg -= dec
		amt = dec
		cq = g.rq
	}
}

func (s *sim) attachTaskLoad(ti int32) {
	se := s.tasks[ti].se
	amt := s.ents[se].load.avg
	s.ents[se].load.t = s.now &^ peltQuantMask
	cq := s.ents[se].rq
	for {
		s.updateRqLoad(cq)
		r := &s.rqs[cq]
		r.loadAvg.avg += amt
		s.syncTgContrib(cq)
		s.listAddLeafCfsRq(cq)
		if r.ge < 0 {
			return
		}
		ge := r.ge
		s.updateSeLoad(ge)
		// The group entity's load moves towards its weight in proportion
		// to the part of the queue's load just attached: its runnable
		// average grows by the task's, times its weight now (se_weight(se)
		// in update_tg_cfs_load(), v6.1..v6.12), not the shares it will
		// get at its next update_cfs_group(): reweight_entity() then
		// scales the load to that weight (reweightLoadAvg).
		g := &s.ents[ge]
		w := float64(g.weight)
		inc := (w - g.load.avg) * min(1, amt/max(r.loadAvg.avg, 1))
		if inc < 0 {
			inc = 0
		}
		g.load.avg += inc
		amt = inc
		cq = g.rq
	}
}
