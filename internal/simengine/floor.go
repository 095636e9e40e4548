package simengine

import "math"

// The latency floor as a distribution: each wake-up draws one level u and
// pays every term of its path (timer expiry, wake list IPI, idle exit,
// context switch) at u. The quantile functions are tabulated at
// floorBuckets equally likely levels, so a draw is one random number and
// one table row.

const floorBuckets = 64

// floorCosts are the latency terms at one level; cold is ColdWakeNs at the
// level (per doubling of the sleep, see coldWake), mm ProcessSwitchNs
// (switchMM).
type floorCosts struct {
	timer, wake, idle, ctx, cold, mm int64
}

// The sleeps over which a wake-up grows colder (Constants.ColdWakeNs): from
// 2 ms (the calibration window's 1 ms sleeps hold the path of short sleeps
// already, and 2 ms LatencyProbes woke as fast as 1 ms ones on the node) to
// 100 ms, the longest sleep measured.
const (
	coldWakeFromNs = 2_000_000
	coldWakeToNs   = 100_000_000
)

// quantileAt is the value at level u of the distribution given by its
// values q at QuantileLevels: geometric between levels (a latency's tail is
// heavy: between a p95 of 100 µs and a p99 of 3 ms, half-way is 550 µs,
// not 1.5 ms), linear where a value is 0, flat beyond the first and the
// last level. An empty q is the fixed value v.
func quantileAt(q []int64, v int64, u float64) int64 {
	if len(q) == 0 {
		return v
	}
	L := QuantileLevels[:]
	if u <= L[0] {
		return q[0]
	}
	for i := 1; i < len(L); i++ {
		if u <= L[i] {
			f := (u - L[i-1]) / (L[i] - L[i-1])
			a, b := float64(q[i-1]), float64(q[i])
			if a <= 0 || a == b {
				return q[i-1] + int64(f*(b-a)+0.5)
			}
			return int64(a*math.Pow(b/a, f) + 0.5)
		}
	}
	return q[len(q)-1]
}

// initFloor tabulates the resolved constants k plus the fleet overheads of
// cal; it reports whether any term is spread (else no draw is needed).
func (s *sim) initFloor(k Constants, cal Calibration) {
	spread := false
	for i := range s.floorTab {
		u := (float64(i) + 0.5) / floorBuckets
		ctx := quantileAt(k.CtxSwitchQuantilesNs, k.CtxSwitchNs, u)
		// The cold part follows the context switch's spread (the incoming
		// task's cache and TLB state), its median at ColdWakeNs.
		// So does the address space's switch (its TLB refill).
		cold, mm := k.ColdWakeNs, k.ProcessSwitchNs
		if k.CtxSwitchNs > 0 {
			cold = int64(float64(k.ColdWakeNs)*float64(ctx)/float64(k.CtxSwitchNs) + 0.5)
			mm = int64(float64(k.ProcessSwitchNs)*float64(ctx)/float64(k.CtxSwitchNs) + 0.5)
		}
		s.floorTab[i] = floorCosts{
			timer: quantileAt(k.TimerExpiryQuantilesNs, k.TimerExpiryNs, u) + cal.TimerOverheadNs,
			wake:  quantileAt(k.WakeupQuantilesNs, k.WakeupNs, u) + cal.WakeupOverheadNs,
			idle:  quantileAt(k.IdleExitQuantilesNs, k.IdleExitNs, u),
			ctx:   ctx + cal.CtxSwitchNs,
			cold:  cold,
			mm:    mm,
		}
		if s.floorTab[i] != s.floorTab[0] {
			spread = true
		}
	}
	s.floorSpread = spread
	s.floorRnd = s.in.Seed*0x9e3779b97f4a7c15 + 0x2545f4914f6cdd1d
}

// drawFloor gives task ti the level of its next wake-up (splitmix64 over
// one stream per run, so a run is a function of its seed).
func (s *sim) drawFloor(ti int32) {
	if !s.floorSpread {
		return
	}
	s.tasks[ti].floorIdx = uint8(splitmix64(&s.floorRnd) >> (64 - 6))
}

// coldWake is what task t, switched in now after a sleep, pays for the cache
// and TLB state it lost while it slept (Constants.ColdWakeNs): f.cold per
// doubling of the time since it blocked beyond coldWakeFromNs, the time
// counted up to coldWakeToNs.
func (s *sim) coldWake(t *task, f *floorCosts) int64 {
	d := s.now - t.sleptAt
	if f.cold == 0 || d <= coldWakeFromNs {
		return 0
	}
	d = min(d, coldWakeToNs)
	return int64(float64(f.cold)*math.Log2(float64(d)/coldWakeFromNs) + 0.5)
}
