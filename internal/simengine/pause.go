package simengine

import "math"

// hostPauses is the node's pause process (Constants.HostPausesPerHour): the
// host stops the whole virtual machine for a while. The guest kernel cannot
// tell: when the VM resumes, its clock has moved on (kvm-clock follows the
// host's), the timers that expired meanwhile fire at once in their order,
// the tick's hrtimer is forwarded past the periods it missed
// (hrtimer_forward() in tick_sched_timer()) and, without steal time
// accounting, update_curr() charges the task that was running the whole
// pause.
type hostPauses struct {
	on bool
	// perNs is the rate of pause starts per nanosecond; q the pause
	// lengths at QuantileLevels.
	perNs float64
	q     []int64
	rnd   uint64
	// The next pause (or the one under way, when entered): [start, end).
	start, end int64
	entered    bool
}

// initHostPauses arms the first pause when the node has any. Its random
// stream is its own and is drawn only here, so a node without pauses runs
// as before.
func (s *sim) initHostPauses(k Constants) {
	if k.HostPausesPerHour <= 0 {
		return
	}
	s.hp = hostPauses{on: true, perNs: float64(k.HostPausesPerHour) / 3.6e12, q: k.HostPauseQuantilesNs,
		rnd: s.in.Seed*0xd6e8feb86659fd93 + 0x9e3779b97f4a7c15}
	s.nextHostPause(0)
}

// pauseRand is a uniform draw in [0, 1) from the pause stream (splitmix64).
func (s *sim) pauseRand() float64 {
	return float64(splitmix64(&s.hp.rnd)>>11) / (1 << 53)
}

// nextHostPause draws the pause after time from: an exponential gap (a
// Poisson process of starts), then a length at a uniform level of the
// length quantiles.
func (s *sim) nextHostPause(from int64) {
	gap := -math.Log(1-s.pauseRand()) / s.hp.perNs
	start := from + int64(math.Min(gap, 1e17))
	l := max(quantileAt(s.hp.q, 0, s.pauseRand()), 1)
	s.hp.start, s.hp.end, s.hp.entered = start, start+l, false
}

// enterHostPause begins the pause: nothing runs until its end, so every
// running task's work stands still while its clock moves. Its run end moves
// by the pause; a task that reads its CPU clock while it spins (the slice
// end it was due to meet by a read, clockReadSliceEnd) reads it again at
// once when the VM resumes, so its run end comes at the pause's end, where
// runEnd's update_curr() charges the pause and re-arms it. The work end
// grows by the pause (scaled as the charge is), since the charge is CPU
// time the task got no work done in.
func (s *sim) enterHostPause() {
	d := s.hp.end - s.hp.start
	for c := range s.cpus {
		s.stallCurr(int32(c), d, s.hp.end)
	}
	s.hp.entered = true
}

// stallCurr moves CPU c's running task (if any) past a stop of d ns that
// ends at resume (a host pause or its vCPU's stall): its work end grows by
// the stop, scaled as the charge is (CPU time it got no work done in), and
// its run end moves by the stop, or to resume for a task that reads its CPU
// clock (it reads it again as soon as it runs).
func (s *sim) stallCurr(c int32, d, resume int64) {
	cpu := &s.cpus[c]
	if cpu.curr < 0 {
		return
	}
	t := &s.tasks[cpu.curr]
	if t.workEnd != never {
		t.workEnd += s.scaleExec(d)
	}
	if cpu.runEndT != never {
		end := cpu.runEndT + d
		if s.eevdf && readsCPUClock(t.kind) {
			end = resume
		}
		s.setRunEnd(c, end)
	}
}
