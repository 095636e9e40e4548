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

// foreignRun draws a Foreign task's next burst: Erlang of shape 4 with the
// pattern's mean. Of the node's other tasks the agent measures only the
// mean burst per wake-up (CPU time over voluntary switches); the shape is
// an assumption, taken from the one such task traced on the 2-CPU 6.18.44
// node (kdamond.0, sched_switch, 2 December 2026: 39 bursts in 20 s of
// 0.15-3.5 ms, mean 1.5 ms, coefficient of variation about 0.5). An
// exponential burst (variation 1) would put more of the CPU time in rare
// long bursts, and so more late wake-ups behind them, than that trace shows.
func (s *sim) foreignRun(t *task) int64 {
	var x float64
	for range 4 {
		x += t.rng.ExpFloat64()
	}
	return max(int64(math.Round(x/4*float64(t.pat.MeanRunNs))), 1)
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

// spinClockReadNs is the CPU time between two reads of the thread's CPU
// clock in a worker's spin (the agent's spinCPU() and the plain programs of
// docs/wakeup-heavy-groups.md loop on clock_gettime(CLOCK_THREAD_CPUTIME_ID)
// until it passes the end of the work). That clock has no vDSO path: each
// read is a system call, posix_cpu_clock_get() -> cpu_clock_sample() ->
// task_sched_runtime(), which runs update_curr() of the running task's
// queue (kernel/time/posix-cpu-timers.c, kernel/sched/core.c,
// v6.6..v6.18), so the work ends at the first read at or past its target,
// up to one read's time late. Measured on the 2-CPU 6.18.44
// node (2 December 2026, 05:40 UTC, 20 000 spins of 20 µs by a C loop
// pinned to one CPU, load average 2.5): 1.27 µs of CPU time between two
// reads (median; p5 1.24, p95 2.05), and the last read's overshoot past
// the target spread over that period (p5 0.06, p25 0.33, p50 0.65, p75
// 1.02 µs: uniform over one read). The agent's loop adds busy(100)
// between reads; the read dominates.
const spinClockReadNs = 1_270

// spinOvershoot is how far past its target a spin's work ends: uniform over
// one clock read (spinClockReadNs), drawn per spin from the run's own
// stream (splitmix64), so the other draws of the run are not shifted. The
// spread matters where two tasks' runs are compared to a microsecond: the
// lock step of a ping-pong pair (the writer preempted by the partner it
// wakes, see TestDelayedWakeePreemptsWriter) breaks at a message when the
// partner's run exceeded the writer's by more than the write() costs, and
// with every spin ending exactly on its target those breaks came in
// bursts with lock-stepped stretches of up to 12 ms between them.
func (s *sim) spinOvershoot() int64 {
	return int64((splitmix64(&s.spinRnd) >> 11) % spinClockReadNs)
}

// The phases of a PingPong message (task.pingPhase).
const (
	pingWork uint8 = iota
	pingWrite
	pingRead
)

// pingRun is the work of a PingPong message: RunNs, or a draw uniform
// over RunNs ± RunJitterNs from the simulation's own stream (no draw
// without jitter, so no other draw of a run moves).
func (s *sim) pingRun(t *task) int64 {
	if t.pat.RunNs > 0 {
		if j := t.jitterNs; j > 0 {
			return t.pat.RunNs - j + int64(s.messageJitter()%uint64(2*j+1))
		}
		return t.pat.RunNs
	}
	return defaultProbeRun
}

// messageJitter is the next value of the message-work stream (53 bits).
func (s *sim) messageJitter() uint64 { return splitmix64(&s.jitterRnd) >> 11 }

// burstDone is called when the running task ti (t = &tasks[ti]) has
// consumed its current burst; it starts the next burst or puts the task to
// sleep.
func (s *sim) burstDone(ti int32, t *task) {
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
	case patForeign:
		// Sleeps are exponential: the other processes' wake-ups are not
		// tied to the experiment's timers (kdamond.0's ~512 ms period
		// is not known from a window, and a fixed period would lock its
		// phase to the probes' grid for the whole simulation).
		sleep := s.expDraw(t, t.pat.MeanSleepNs)
		t.workEnd = se.sumExec + s.foreignRun(t)
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
			s.armRunEndOf(t.cpu, t)
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
			exec := se.sumExec + s.scaleExec(s.now-s.rqs[t.rq].currStart)
			t.pingPhase = pingRead
			t.workEnd = exec + pingReadNs
			s.wakeTask(t.partner, t.cpu, true)
			if s.cpus[t.cpu].needResched && s.cpus[t.cpu].curr == ti {
				// Preempted on its way back from write(): switched out
				// still runnable; the read() comes when it runs again.
				return
			}
			s.armRunEndOf(t.cpu, t)
		case pingRead:
			// read(): it blocks until the reply comes, or the reply is
			// there (a wake-up came while the task ran) and read()
			// returns at once. Either way the work on the reply follows.
			t.pingPhase = pingWork
			t.workEnd = se.sumExec + s.pingRun(t)
			if t.pat.RunNs > 0 {
				// The spin ends at its first clock read past the work.
				t.workEnd += s.spinOvershoot()
			}
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
