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
		if t.readPending {
			// Back on the CPU after the preemption: the read(). Its
			// work on the reply comes after it, whether the reply was
			// already there or wakes it later.
			t.readPending = false
			t.workEnd = se.sumExec + s.pingRun(t)
			s.blockTask(ti)
			if t.state == tsQueued {
				s.armRunEnd(t.cpu)
			}
			return
		}
		if inWin {
			t.ops++
		}
		t.workEnd = se.sumExec + s.pingRun(t)
		// write() to the partner's pipe wakes it (WF_SYNC), then read()
		// blocks until the reply arrives. WF_SYNC does not spare the
		// waker the wake-up preemption check (ttwu_do_activate() calls
		// wakeup_preempt() for every wake-up, v6.1..v6.18): when the
		// partner preempts it, the writer is switched out on its return
		// from write(), still runnable, and reads when it runs again.
		s.wakeTask(t.partner, t.cpu, true)
		if s.cpus[t.cpu].needResched && s.cpus[t.cpu].curr == ti {
			t.readPending = true
			t.workEnd = se.sumExec
			return
		}
		s.blockTask(ti)
		if t.state == tsQueued {
			// The reply was already there: keep running.
			s.armRunEnd(t.cpu)
		}
	case patServer:
		s.serviceDone(ti)
	default:
		t.workEnd = never
	}
}
