package experiment

import (
	"math"
	"strings"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/simengine"
)

// A constraint on a latency quantile ("wakeupLatencyUs.p99 ≤ 2000") is the
// same statement as one on a tail fraction: at most 1 % of the wake-ups
// later than 2000 µs. The two differ in how they behave over seeds. A p99
// sits on the distribution's knee: a seed with one burst of late wake-ups
// in its window has a p99 of milliseconds, the next seed one of 84 µs, so
// the seeds' mean p99 jumps between points and its interval spans the
// limit whatever the load (the capacity sample's web p99 at one pod on 8
// CPUs: 84 µs for 7 of 10 seeds with 2 s windows and 18 of 20 with 10 s
// windows, 2.2–2.4 ms for the others). The fraction
// of wake-ups beyond the limit moves smoothly with the load, each seed's
// fraction estimates the same long-run fraction, and their mean is the
// fraction of the seeds' wake-ups pooled (equal windows).
//
// So a sweep asks the simulator for the fraction of each seed's values
// above a grid of latencies around the limit (half to twice it, eight
// steps an octave, the limit itself on the grid), takes the mean and 95 %
// interval of the fraction at each, and reads the quantile where the mean,
// the interval's upper end and its lower end fall to 1 − q: the quantile of
// the pooled seeds with an interval that is the fraction's, turned into
// latency. The limit is met across the interval exactly when the
// fraction's upper end at the limit is at most 1 − q. Outside the grid the
// seeds' mean quantile and its interval stand in, clamped to the grid's
// ends.

// tailGridSteps is the grid's points per octave, tailGridOctaves its
// octaves on either side of the limit.
const (
	tailGridSteps   = 8
	tailGridOctaves = 1
)

// tailColumn is a constrained latency-quantile column and its grid of
// thresholds (µs, ascending), which sits at [from, from+len(grid)) of the
// simulator's LatencyThresholdsNs.
type tailColumn struct {
	col  int
	tail float64 // 1 − q: the fraction allowed above the quantile
	from int
	grid []float64
}

// quantileTail returns 1 − q for a latency-quantile metric
// (wakeupLatencyUs.p99 → 0.01) and whether the metric is one.
func quantileTail(metric string) (float64, bool) {
	for _, p := range []string{"wakeupLatencyUs.", "requestLatencyUs."} {
		if !strings.HasPrefix(metric, p) {
			continue
		}
		switch strings.TrimPrefix(metric, p) {
		case "p50":
			return 0.5, true
		case "p90":
			return 0.1, true
		case "p95":
			return 0.05, true
		case "p99":
			return 0.01, true
		case "p999":
			return 0.001, true
		}
	}
	return 0, false
}

// tailColumns lists the columns whose constraints bound a latency quantile,
// each with its grid around every limit set on it, and the thresholds (ns)
// to ask the simulator for.
func tailColumns(cs []v1alpha1.Constraint, cols []SweepColumn) ([]tailColumn, []int64) {
	var out []tailColumn
	var ns []int64
	for i, c := range cols {
		tail, ok := quantileTail(c.Metric)
		if !ok {
			continue
		}
		var limits []float64
		for _, k := range cs {
			if k.Group != c.Group || string(k.Metric) != c.Metric {
				continue
			}
			for _, l := range []*float64{k.Max, k.Min} {
				if l != nil && *l > 0 && *l < 1e12 {
					limits = append(limits, *l)
				}
			}
		}
		if len(limits) == 0 {
			continue
		}
		grid := tailGrid(limits)
		tc := tailColumn{col: i, tail: tail, from: len(ns), grid: grid}
		for _, us := range grid {
			ns = append(ns, int64(math.Round(us*1000)))
		}
		out = append(out, tc)
	}
	return out, ns
}

// tailGrid is the union of each limit's grid, ascending, each limit on it.
func tailGrid(limits []float64) []float64 {
	var g []float64
	n := tailGridSteps * tailGridOctaves
	for _, l := range limits {
		for k := -n; k <= n; k++ {
			g = append(g, l*math.Exp2(float64(k)/tailGridSteps))
		}
	}
	// Sort and drop the points closer than a part in 10⁶ to the previous.
	for i := 1; i < len(g); i++ {
		for j := i; j > 0 && g[j] < g[j-1]; j-- {
			g[j], g[j-1] = g[j-1], g[j]
		}
	}
	out := g[:0]
	for _, v := range g {
		if len(out) == 0 || v > out[len(out)-1]*(1+1e-6) {
			out = append(out, v)
		}
	}
	return out
}

// seedTails picks a seed's fractions above a column's grid out of the
// simulator's group result (nil when the group is not in it).
func (tc *tailColumn) seedTails(cols []SweepColumn, r *simengine.Result) []float64 {
	for _, g := range r.Groups {
		if g.Name != cols[tc.col].Group {
			continue
		}
		l := g.Metrics.WakeupLatencyUs
		if strings.HasPrefix(cols[tc.col].Metric, "requestLatencyUs.") {
			l = g.Metrics.RequestLatencyUs
		}
		out := make([]float64, len(tc.grid))
		if l != nil && len(l.Above) >= tc.from+len(tc.grid) {
			copy(out, l.Above[tc.from:tc.from+len(tc.grid)])
		}
		return out
	}
	return nil
}

// tailQuantile sets a column's value, low and high (µs) from the seeds'
// fractions above its grid (seeds × grid points): the latencies where the
// fractions' mean, upper and lower 95 % ends fall to the column's tail.
// value, low and high come in as the seeds' mean quantile and its interval
// and stand in where a crossing lies off the grid.
func (tc *tailColumn) tailQuantile(seeds [][]float64, value, low, high float64) (float64, float64, float64) {
	m := len(tc.grid)
	if len(seeds) == 0 || m == 0 {
		return value, low, high
	}
	mid, up, lo := make([]float64, m), make([]float64, m), make([]float64, m)
	v := make([]float64, len(seeds))
	for j := 0; j < m; j++ {
		for s := range seeds {
			v[s] = seeds[s][j]
		}
		mu, half := mean(v), 0.0
		if len(v) > 1 {
			half = tCritical95(float64(len(v)-1)) * stddev(v) / math.Sqrt(float64(len(v)))
		}
		mid[j], up[j], lo[j] = mu, mu+half, max(0, mu-half)
	}
	// A tail fraction does not grow with the latency: make the mean and
	// the upper end non-increasing from the right (the larger fraction
	// further out wins) and the lower end from the left (the smaller one
	// further in wins), so each crosses the tail once, and the upper end
	// stays conservative.
	for j := m - 2; j >= 0; j-- {
		mid[j] = max(mid[j], mid[j+1])
		up[j] = max(up[j], up[j+1])
	}
	for j := 1; j < m; j++ {
		lo[j] = min(lo[j], lo[j-1])
	}
	value = tc.crossing(mid, value)
	high = tc.crossing(up, high)
	low = tc.crossing(lo, low)
	low = min(low, value)
	high = max(high, value)
	return value, low, high
}

// crossing is the least latency at which the non-increasing fraction f
// (over the grid) is at most the tail, interpolated between grid points
// (geometric in the latency, linear in the fraction); off the grid, the
// stand-in clamped to the grid's end.
func (tc *tailColumn) crossing(f []float64, standIn float64) float64 {
	g := tc.grid
	if f[0] <= tc.tail {
		return min(standIn, g[0])
	}
	for j := 1; j < len(g); j++ {
		if f[j] <= tc.tail {
			t := (f[j-1] - tc.tail) / (f[j-1] - f[j])
			return g[j-1] * math.Pow(g[j]/g[j-1], t)
		}
	}
	return max(standIn, g[len(g)-1])
}
