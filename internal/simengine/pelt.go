package simengine

import "math"

// PELT (per-entity load tracking, kernel/sched/pelt.c) decays a signal by
// y per 1024µs period with y^32 = 1/2. The simulator keeps the same period
// (2^20 ns) and half-life, with time quantised to 16µs steps (2^14 ns); the
// decay factor is a product of table entries built by repeated multiplication
// from literal constants, so it is bit-identical on every platform.
const (
	peltPeriodShift = 20 // 1024µs ≈ 2^20 ns
	peltQuantShift  = 14 // 16µs resolution
	peltQuantMask   = int64(1)<<peltQuantShift - 1
	peltFracSteps   = 1 << (peltPeriodShift - peltQuantShift) // 64
)

type peltTables struct {
	y    [32]float64            // y^i, i < 32
	frac [peltFracSteps]float64 // y^(j/64)
}

// newPeltTables is computed per run (it is cheap) so the package holds no
// mutable state.
func newPeltTables() *peltTables {
	t := &peltTables{}
	const y = 0.9785720620877001     // 2^(-1/32)
	const yFrac = 0.9996616064962437 // 2^(-1/2048) = y^(1/64)
	t.y[0] = 1
	for i := 1; i < 32; i++ {
		t.y[i] = float64(t.y[i-1] * y)
	}
	t.frac[0] = 1
	for j := 1; j < peltFracSteps; j++ {
		t.frac[j] = float64(t.frac[j-1] * yFrac)
	}
	return t
}

// decay returns y^(dt/period) for a dt that is a multiple of the quantum.
func (t *peltTables) decay(dt int64) float64 {
	if dt <= 0 {
		return 1
	}
	p := dt >> peltPeriodShift
	if p >= 32*40 {
		return 0
	}
	f := (dt >> peltQuantShift) & (peltFracSteps - 1)
	return math.Ldexp(float64(t.y[p&31]*t.frac[f]), -int(p>>5))
}

// pelt is one decaying average of a piecewise-constant signal.
type pelt struct {
	avg float64
	t   int64
}

// update advances the average to now, assuming the signal had value v since
// the last update. Only whole quanta are consumed; the remainder is carried.
func (p *pelt) update(tab *peltTables, now int64, v float64) {
	dt := (now - p.t) &^ peltQuantMask
	if dt <= 0 {
		return
	}
	d := tab.decay(dt)
	p.avg = float64(p.avg*d) + float64(v*float64(1-d))
	p.t += dt
}
