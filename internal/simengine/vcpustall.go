package simengine

import "math"

// vcpuStalls is the node's process of stalls of one vCPU
// (Constants.VCPUStallsPerHour and VCPUShortStallsPerHour): the host does
// not run one of the machine's vCPUs for a while and runs the others. On
// that CPU nothing happens meanwhile:
//
//   - its current task stands still but is charged the stall: without steal
//     accounting rq_clock_task() moves with the clock (update_rq_clock_task()
//     in kernel/sched/core.c, v6.18), so the update_curr() that runs when the
//     vCPU is back (or that another CPU runs on its queue meanwhile, e.g. an
//     enqueue there) charges it the gap, as the node's hogs see (their CPU
//     clock moves over a one-vCPU stall as over a pause);
//   - its interrupts wait: the hrtimers due on it (a sleep's expiry on its
//     timer queue, its tick), the IPIs sent to it (a wake list's, a
//     reschedule) are taken when it runs again, in their order (the timer
//     interrupt then expires every sleep due, hrtimerInterrupt); the
//     tick's hrtimer is forwarded
//     past the periods it missed (hrtimer_forward()), so it ticks once;
//   - the other CPUs go on: a wake-up they run may still choose the stalled
//     CPU (an idle vCPU the host does not run looks idle to
//     available_idle_cpu(): vcpu_is_preempted() needs the host's steal-time
//     page, which this node's host does not give) and then waits with it,
//     or enqueue a task on its queue directly (its lock is free), where a
//     balancing CPU may pull it (sched_balance_rq()/newidle balance detach
//     queued tasks, never the current one); the stalled CPU balances
//     nothing.
//
// Each class is a Poisson process per CPU: from the end of one stall of a
// CPU to the start of its next one of that class the time is exponential
// with the class's rate; the length is drawn at a uniform level of the
// class's quantiles. A stall due while the CPU is stalled begins when that
// one ends. The stalls draw from their own random stream (in event order),
// so a node without them runs as before.
type vcpuStalls struct {
	on bool
	// perNs are the classes' rates per CPU per nanosecond; q their lengths at
	// QuantileLevels. Class 0: VCPUStalls; class 1: VCPUShortStalls.
	perNs [2]float64
	q     [2][]int64
	rnd   uint64
	cpu   []cpuStall
	// due is the earliest time at which some CPU enters or leaves a stall.
	due int64
}

// cpuStall is one CPU's stalls: the next of each class, and the one under
// way.
type cpuStall struct {
	start, length [2]int64 // the next stall of each class (never: none)
	// The stall under way when entered: [from, to), of class cls.
	from, to int64
	cls      int
	entered  bool
	// missedTick: the tick came due while it was stalled.
	missedTick bool
}

// initVCPUStalls arms every CPU's first stalls when the node has any.
func (s *sim) initVCPUStalls(k Constants) {
	if k.VCPUStallsPerHour <= 0 && k.VCPUShortStallsPerHour <= 0 {
		return
	}
	v := &s.vs
	v.on = true
	v.perNs = [2]float64{float64(k.VCPUStallsPerHour) / 3.6e12, float64(k.VCPUShortStallsPerHour) / 3.6e12}
	v.q = [2][]int64{k.VCPUStallQuantilesNs, k.VCPUShortStallQuantilesNs}
	v.rnd = s.in.Seed*0x9fb21c651e98df25 + 0x3c6ef372fe94f82b
	v.cpu = make([]cpuStall, s.nCPU)
	for c := range v.cpu {
		for cls := range v.perNs {
			s.nextVCPUStall(int32(c), cls, 0)
		}
	}
	s.vcpuStallDue()
}

// stallRand is a uniform draw in [0, 1) from the stalls' stream.
func (s *sim) stallRand() float64 {
	return float64(splitmix64(&s.vs.rnd)>>11) / (1 << 53)
}

// nextVCPUStall draws CPU c's next stall of class cls after time from.
func (s *sim) nextVCPUStall(c int32, cls int, from int64) {
	cs := &s.vs.cpu[c]
	if s.vs.perNs[cls] <= 0 {
		cs.start[cls] = never
		return
	}
	gap := -math.Log(1-s.stallRand()) / s.vs.perNs[cls]
	cs.start[cls] = from + int64(math.Min(gap, 1e17))
	cs.length[cls] = max(quantileAt(s.vs.q[cls], 0, s.stallRand()), 1)
}

// vcpuStallDue sets due: the earliest entry or exit over the CPUs.
func (s *sim) vcpuStallDue() {
	s.vs.due = never
	for c := range s.vs.cpu {
		cs := &s.vs.cpu[c]
		if cs.entered {
			s.vs.due = min(s.vs.due, cs.to)
			continue
		}
		s.vs.due = min(s.vs.due, cs.start[0], cs.start[1])
	}
}

// stalled says whether CPU c's vCPU is stalled now.
func (s *sim) stalled(c int32) bool {
	return s.vs.on && s.vs.cpu[c].entered
}

// stepVCPUStalls enters or leaves the stall due first (at or before the next
// event's time te).
func (s *sim) stepVCPUStalls() {
	v := &s.vs
	for c := range v.cpu {
		cs := &v.cpu[c]
		if cs.entered {
			if cs.to == v.due {
				s.leaveVCPUStall(int32(c))
				break
			}
			continue
		}
		if cs.start[0] == v.due {
			s.enterVCPUStall(int32(c), 0)
			break
		}
		if cs.start[1] == v.due {
			s.enterVCPUStall(int32(c), 1)
			break
		}
	}
	s.vcpuStallDue()
}

// enterVCPUStall begins CPU c's stall of class cls: as a host pause does to
// every CPU (enterHostPause), its running task's work end and run end move
// by the stall, a clock reader's run end to the stall's end.
func (s *sim) enterVCPUStall(c int32, cls int) {
	cs := &s.vs.cpu[c]
	cs.from, cs.to, cs.cls, cs.entered = cs.start[cls], cs.start[cls]+cs.length[cls], cls, true
	s.now = max(s.now, cs.from)
	d := cs.to - cs.from
	if s.trace != nil {
		s.trace("cpu%d stalled for %d ns", c, d)
	}
	s.stallCurr(c, d, cs.to)
}

// leaveVCPUStall ends CPU c's stall: its next of that class is drawn from
// here (one of the other class due meanwhile begins now), and the stall's
// end event (after whatever was deferred to it) runs the missed tick and the
// pending reschedule.
func (s *sim) leaveVCPUStall(c int32) {
	cs := &s.vs.cpu[c]
	cs.entered = false
	s.now = max(s.now, cs.to)
	s.nextVCPUStall(c, cs.cls, cs.to)
	other := 1 - cs.cls
	cs.start[other] = max(cs.start[other], cs.to)
	s.push(event{t: cs.to, kind: evStallEnd, a: c})
}

// stallEnd is the stalled CPU running again: the tick it missed (once), then
// the reschedule another CPU asked of it meanwhile.
func (s *sim) stallEnd(c int32) {
	cs := &s.vs.cpu[c]
	if cs.missedTick {
		cs.missedTick = false
		if s.cpus[c].curr >= 0 {
			s.tickBusyCPU(c)
		}
	}
	if cpu := &s.cpus[c]; cpu.needResched {
		s.pending = append(s.pending, c)
	}
}

// deferToStall says whether event e is one the stalled CPU would take (its
// run end, an hrtimer due on it, an IPI to it) and, if so, moves it to the
// stall's end: the caller takes the next event instead.
func (s *sim) deferToStall(e *event, heapFirst bool) bool {
	var c int32
	timer := false
	switch e.kind {
	case evRunEnd:
		c = e.a
	case evWake, evTimerSoft:
		if !s.timerLive(e.a, e.seq) {
			return false // stale: the loop drops it
		}
		c, timer = s.tasks[e.a].timerCPU, true
	case evWakeList:
		c = s.tasks[e.a].cpu
	default:
		return false
	}
	cs := &s.vs.cpu[c]
	if !cs.entered || e.t >= cs.to {
		return false
	}
	if !heapFirst {
		s.setRunEnd(c, cs.to)
		return true
	}
	ev := s.pop()
	ev.t = cs.to
	s.push(ev)
	if timer {
		// The timer's pending check is now this one (pushTimer's rule).
		s.tasks[ev.a].timerSeq = s.seq - 1
	}
	return true
}
