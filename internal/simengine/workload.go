package simengine

import "math"

// This file drives the workload patterns: what a task does when its CPU
// burst ends, and when it wakes again.

// expDraw draws an exponentially distributed duration (at least 1ns) from
// the task's own generator.
func (s *sim) expDraw(t *task, mean int64) int64 {
	d := int64(math.Round(t.rng.ExpFloat64() * float64(mean)))
	if d < 1 {
		d = 1
	}
	return d
}

// pingWriteNs is the CPU time of a PingPong worker from the last clock
// read of its spin (an update_curr(), see clockReadSliceEnd) to the
// try_to_wake_up() of its partner inside write(): the loop's exit, the
// system call entry and pipe_write(). Traced on the 2-CPU 6.18.44 node
// (sched_waking against the writer's last clock_gettime exit, raw_syscalls
// events, 2 December 2026): 1-2 µs at the trace's 1 µs resolution, with
// the tracing's own cost in it.
const pingWriteNs = 1_000

// pingReadNs is the CPU time of a PingPong worker from the wake-up of its
// partner to the dequeue when read() blocks (or to the return of read()
// with the reply there): the rest of pipe_write(), the system call's exit
// and the read()'s entry, pipe_read(), schedule() up to
// deactivate_task(). The same trace: 1-2 µs from sched_waking to the
// writer's sched_switch. WakeupCPUNs (charged when the task is switched in)
// keeps the return from the blocking read() and schedule() on the way in.
const pingReadNs = 1_000

// The phases of a PingPong message (task.pingPhase).
const (
	pingWork uint8 = iota
	pingWrite
	pingRead
)

func (s *sim) pingRun(t *task) int64 {
	if t.pat.RunNs > 0 {
		return t.pat.RunNs
	}
	return defaultProbeRun
}

// burstDone is called when the running task ti has consumed its current
// burst; it starts the next burst or puts the task to sleep.
func (s *sim) burstDone(ti int32) {
	t := &s.tasks[ti]
	se := &s.ents[t.se]
	inWin := s.inWindow()
	switch t.kind {
	case patBurst:
		if inWin {
			t.ops++
		}
		sleep := s.expDraw(t, t.pat.MeanSleepNs)
		t.workEnd = se.sumExec + s.expDraw(t, t.pat.MeanRunNs)
		s.blockTask(ti)
		s.armTimer(ti, s.now+sleep)
	case patPeriodic:
		if inWin {
			t.ops++
			t.periods++
			if s.now > t.release+t.pat.PeriodNs {
				t.misses++
			}
		}
		// The next release is the next period boundary.
		next := t.release + t.pat.PeriodNs
		if next < s.now {
			next += (s.now - next + t.pat.PeriodNs - 1) / t.pat.PeriodNs * t.pat.PeriodNs
		}
		t.release = next
		t.workEnd = se.sumExec + t.pat.RunNs
		if next <= s.now {
			// clock_nanosleep() to a time already passed returns at once.
			s.armRunEnd(t.cpu)
			return
		}
		s.blockTask(ti)
		s.armTimer(ti, next)
	case patProbe:
		if inWin {
			t.ops++
		}
		run := t.pat.RunNs
		if run <= 0 {
			run = defaultProbeRun
		}
		t.workEnd = se.sumExec + run
		// The next deadline on the interval's grid that lies ahead. A
		// probe that wakes after later deadlines have passed skips them
		// and sleeps to the first one in the future, as the agent's
		// LatencyProbe (nodeagent/workload latencyProbe()) and cyclictest
		// do: a late wake-up is one latency sample however many intervals
		// it spans. (Recording each passed deadline as a back-to-back
		// wake-up counted one wait of 3.5 ms as samples of 3.5, 2.5, 1.5
		// and 0.5 ms, which tripled the fraction beyond 1 ms.)
		next := t.release + t.pat.IntervalNs
		if next <= s.now {
			next += ((s.now-next)/t.pat.IntervalNs + 1) * t.pat.IntervalNs
		}
		t.release = next
		s.blockTask(ti)
		s.armTimer(ti, next)
	case patPingPong:
		switch t.pingPhase {
		case pingWork:
			// The work is done at a clock read of the spin, an
			// update_curr() (runEnd); the write() that wakes the
			// partner runs pingWriteNs past it, uncommitted.
			t.pingPhase = pingWrite
			t.workEnd = se.sumExec + pingWriteNs
			s.armRunEnd(t.cpu)
		case pingWrite:
			if inWin {
				t.ops++
			}
			// try_to_wake_up() inside write(), WF_SYNC. The writer's
			// vruntime is as of its last clock read: a partner left
			// delayed on this queue is placed against that stale
			// average (requeue_delayed_entity() runs no update_curr()),
			// and the preemption check's update_curr() then moves the
			// writer past it. WF_SYNC does not spare the waker that
			// check (ttwu_do_activate() and ttwu_runnable() call
			// wakeup_preempt() for every wake-up, v6.1..v6.18).
			exec := se.sumExec + s.scaleExec(s.now-s.rqs[se.rq].currStart)
			t.pingPhase = pingRead
			t.workEnd = exec + pingReadNs
			s.wakeTask(t.partner, t.cpu, true)
			if s.cpus[t.cpu].needResched && s.cpus[t.cpu].curr == ti {
				// Preempted on its way back from write(): switched out
				// still runnable; the read() comes when it runs again.
				return
			}
			s.armRunEnd(t.cpu)
		case pingRead:
			// read(): it blocks until the reply comes, or the reply is
			// there (a wake-up came while the task ran) and read()
			// returns at once. Either way the work on the reply follows.
			t.pingPhase = pingWork
			t.workEnd = se.sumExec + s.pingRun(t)
			s.blockTask(ti)
			if t.state == tsQueued {
				// The return from read() that a blocked reader pays when
				// it is switched back in (WakeupCPUNs, switchIn).
				t.workEnd += s.scaleExec(s.wakeCPUNs)
				s.armRunEnd(t.cpu)
			}
		}
	case patServer:
		s.serviceDone(ti)
	default:
		t.workEnd = never
	}
}
