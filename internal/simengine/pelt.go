package simengine

// PELT (per-entity load tracking, kernel/sched/pelt.c) decays a signal by y
// per 1024µs period with y^32 = 1/2, and the averages change only when a
// period boundary is crossed. The simulator keeps that granularity: the
// period is 2^20 ns, an update consumes whole periods only, and the time
// left over is carried to the next update (and attributed to the signal's
// value then, which is unbiased over many updates). The decay factor is a
// product of table entries built by repeated multiplication from a literal
// constant, so it is bit-identical on every platform.
const (
	peltPeriodShift = 20 // 1024µs ≈ 2^20 ns
	peltQuantMask   = int64(1)<<peltPeriodShift - 1
	peltMaxPeriods  = 32 * 40
)

type peltTables struct {
	y    [32]float64 // y^i, i < 32
	pow2 [41]float64 // 2^-k
}

// newPeltTables is built per run (it is cheap) so the package holds no
// mutable state.
func newPeltTables() *peltTables {
	t := &peltTables{}
	const y = 0.9785720620877001 // 2^(-1/32)
	t.y[0] = 1
	for i := 1; i < 32; i++ {
		t.y[i] = float64(t.y[i-1] * y)
	}
	t.pow2[0] = 1
	for k := 1; k < len(t.pow2); k++ {
		t.pow2[k] = t.pow2[k-1] / 2
	}
	return t
}

// decay returns y^p for p whole periods.
func (t *peltTables) decay(p int64) float64 {
	if p >= peltMaxPeriods {
		return 0
	}
	return float64(t.y[p&31] * t.pow2[p>>5])
}

// pelt is one decaying average of a piecewise-constant signal.
type pelt struct {
	avg float64
	t   int64
}

// update advances the average to now, assuming the signal had value v since
// the last update.
func (p *pelt) update(tab *peltTables, now int64, v float64) {
	n := (now - p.t) >> peltPeriodShift
	if n <= 0 {
		return
	}
	d := tab.decay(n)
	p.avg = float64(p.avg*d) + float64(v*float64(1-d))
	p.t += n << peltPeriodShift
}

// pelt2 is two averages that change state together (util and runnable).
type pelt2 struct {
	util, runnable float64
	t              int64
}

func (p *pelt2) update(tab *peltTables, now int64, u, r float64) {
	n := (now - p.t) >> peltPeriodShift
	if n <= 0 {
		return
	}
	d := tab.decay(n)
	p.util = float64(p.util*d) + float64(u*float64(1-d))
	p.runnable = float64(p.runnable*d) + float64(r*float64(1-d))
	p.t += n << peltPeriodShift
}
