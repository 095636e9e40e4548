package experiment

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/simengine"
)

func TestTailGrid(t *testing.T) {
	g := tailGrid([]float64{2000, 1000})
	has := func(v float64) bool {
		for _, x := range g {
			if x == v {
				return true
			}
		}
		return false
	}
	if !has(2000) || !has(1000) || g[0] != 500 || g[len(g)-1] != 4000 {
		t.Fatalf("grid %v: want 500..4000 with both limits on it", g)
	}
	for i := 1; i < len(g); i++ {
		if g[i] <= g[i-1] {
			t.Fatalf("grid %v not ascending at %d", g, i)
		}
	}
}

// The quantile of seeds pooled, not the seeds' mean quantile: four seeds
// with no wake-up beyond 2 ms and one with 3 % beyond it have a pooled p99
// below 2 ms (0.6 % beyond), though that seed's own p99 is milliseconds;
// the interval's upper end is above 2 ms because the seeds disagree.
func TestTailQuantilePooled(t *testing.T) {
	tc := tailColumn{tail: 0.01, grid: tailGrid([]float64{2000})}
	seeds := make([][]float64, 5)
	for s := range seeds {
		seeds[s] = make([]float64, len(tc.grid))
	}
	for j, x := range tc.grid {
		// Seed 0: 3 % beyond 2 ms, falling to 0.5 % at 4 ms.
		seeds[0][j] = 0.03 * math.Pow(2000/x, 2.6)
		// Every seed: 5 % beyond 1 ms, none beyond 1.5 ms.
		if x < 1500 {
			for s := range seeds {
				seeds[s][j] += 0.05
			}
		}
	}
	v, lo, hi := tc.tailQuantile(seeds, 1234, 1000, 9999)
	if !(v < 2000) || !(hi > 2000) || !(lo <= v) {
		t.Errorf("value %v [%v, %v]: want the pooled p99 below 2000 and the interval's upper end above it", v, lo, hi)
	}
	// The value is where the mean fraction falls to 1 %: at the grid
	// point just above 1.5 ms the mean is 3 % × (2000/x)^2.6 / 5.
	if v < 1000 || v > 1700 {
		t.Errorf("pooled p99 %v, want between 1000 and 1700", v)
	}
	// Every seed alike, no interval: value, low and high agree.
	same := [][]float64{seeds[1], seeds[1], seeds[1]}
	v, lo, hi = tc.tailQuantile(same, 0, 0, 0)
	if lo != v || hi != v || v < 1414 || v > 1543 {
		t.Errorf("identical seeds: %v [%v, %v], want one value between the grid points around 1500 (1414..1543)", v, lo, hi)
	}
	// Off the grid: the stand-ins, clamped to its ends.
	far := [][]float64{make([]float64, len(tc.grid)), make([]float64, len(tc.grid))}
	v, lo, hi = tc.tailQuantile(far, 84, 80, 88)
	if v != 84 || lo != 80 || hi != 88 {
		t.Errorf("nothing on the grid: %v [%v, %v], want the stand-ins 84 [80, 88]", v, lo, hi)
	}
	for j := range far[0] {
		far[0][j], far[1][j] = 0.5, 0.5
	}
	v, lo, hi = tc.tailQuantile(far, 84, 80, 88)
	if v != 4000 || lo != 4000 || hi != 4000 {
		t.Errorf("everything beyond the grid: %v [%v, %v], want 4000 (its end)", v, lo, hi)
	}
}

// A sweep point meets "p99 ≤ L" exactly when the upper end of the 95 %
// interval of its seeds' fraction of wake-ups beyond L is at most 1 %: run
// the same seeds again and compare.
func TestSweepQuantileConstraintIsTailFraction(t *testing.T) {
	exp := mustParse(t, `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: knee}
spec:
  mode: Simulate
  duration: 1s
  warmup: 200ms
  variants: [{name: stock}]
  workload:
    groups:
    - {name: hogs, tasks: 3, pattern: {type: Hog}}
    - {name: web, replicas: 1, tasks: 1, pattern: {type: Periodic, run: 500us, period: 5ms}}
  sweep:
    parameters: [{target: Replicas, group: web, values: [1, 2, 3, 4, 6]}]
    answer: Largest
  constraints:
  - {metric: wakeupLatencyUs.p99, group: web, max: 3300}
  simulation:
    seed: 1
    nodes: [{cpus: 2, hz: 250}]
`)
	spec := &exp.Spec
	sh, err := RunSweep(context.Background(), spec, spec.Simulation.Nodes, SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	axes := SweepAxes(spec.Sweep)
	limit := *spec.Constraints[0].Max
	met, broke := 0, 0
	for _, r := range sh.Results {
		s, shape := ApplySweepPoint(spec, spec.Simulation.Nodes[0], axes, r.At)
		s.Warmup = spec.Warmup
		window := spec.Duration.Duration
		if r.Window != "" {
			if window, err = time.ParseDuration(r.Window); err != nil {
				t.Fatal(err)
			}
		}
		in, err := SimInput(s, 0, shape, PredictOptions{Duration: window})
		if err != nil {
			t.Fatal(err)
		}
		// The value is the seeds' pooled quantile: 1 % of their wake-ups
		// lie beyond it (checked 5 % either side).
		v := r.Values[0]
		in.LatencyThresholdsNs = []int64{int64(limit * 1000), int64(v * 950), int64(v * 1050)}
		var f, below, above []float64
		for i := 0; i < r.Replicas; i++ {
			in.Seed = 1 + uint64(i)
			res, err := simengine.Run(in)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range res.Groups {
				if g.Name == "web" {
					a := g.Metrics.WakeupLatencyUs.Above
					f, below, above = append(f, a[0]), append(below, a[1]), append(above, a[2])
				}
			}
		}
		up := mean(f) + tCritical95(float64(len(f)-1))*stddev(f)/math.Sqrt(float64(len(f)))
		ok := r.High[0] <= limit
		if ok != (up <= 0.01) {
			t.Errorf("web.replicas=%d: p99 %v [%v, %v] (%d seeds) but the fraction beyond %v µs is %.4f, upper end %.4f", r.At[0], r.Values[0], r.Low[0], r.High[0], r.Replicas, limit, mean(f), up)
		}
		if v > limit/2 && v < 2*limit && !(mean(below) >= 0.01 && mean(above) <= 0.01) {
			t.Errorf("web.replicas=%d: p99 %v, but %.4f of the seeds' wake-ups lie beyond %v and %.4f beyond %v: not the pooled p99", r.At[0], v, mean(below), v*0.95, mean(above), v*1.05)
		}
		if !(r.Low[0] <= r.Values[0] && r.Values[0] <= r.High[0]) {
			t.Errorf("web.replicas=%d: value %v outside [%v, %v]", r.At[0], r.Values[0], r.Low[0], r.High[0])
		}
		if ok {
			met++
		} else {
			broke++
		}
		t.Logf("web.replicas=%d: window %q: p99 %v [%v, %v], %d seeds; beyond %v µs %.4f (upper %.4f)", r.At[0], r.Window, r.Values[0], r.Low[0], r.High[0], r.Replicas, limit, mean(f), up)
	}
	if met == 0 || broke == 0 {
		t.Errorf("%d points met the limit and %d broke it: the sample should have both", met, broke)
	}
	_ = v1alpha1.SweepLargest
}

// A point whose seeds see too few wake-ups to judge a p99's limit runs them
// again with a longer window: one Periodic task at 5 ms sees 200 wake-ups
// in a second, a tenth of the 2000 a p99 needs; with many tasks the window
// stays.
func TestSweepLongerWindowForFewWakeups(t *testing.T) {
	exp := mustParse(t, `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: few}
spec:
  mode: Simulate
  duration: 1s
  warmup: 200ms
  variants: [{name: stock}]
  workload:
    groups:
    - {name: hogs, tasks: 3, pattern: {type: Hog}}
    - {name: web, replicas: 1, tasks: 1, pattern: {type: Periodic, run: 500us, period: 5ms}}
  sweep:
    parameters: [{target: Replicas, group: web, values: [1, 12]}]
    answer: Largest
  constraints:
  - {metric: wakeupLatencyUs.p99, group: web, max: 3000}
  simulation:
    seed: 1
    nodes: [{cpus: 2, hz: 250}]
`)
	sh, err := RunSweep(context.Background(), &exp.Spec, exp.Spec.Simulation.Nodes, SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one := sh.Results[0]
	t.Logf("web.replicas=1: p99 %v [%v, %v], %d seeds, window %q", one.Values[0], one.Low[0], one.High[0], one.Replicas, one.Window)
	// Whatever the seeds gave, the first sweep (1 s) straddled 3000 µs
	// or cleared it; only a straddling point may be lengthened, and then
	// by the most allowed (200 wake-ups a seed against 2000 needed).
	if one.Window != "" && one.Window != "8s" {
		t.Errorf("window %q: want 8s (the most, as one task at 5 ms sees 200 wake-ups a second) or none", one.Window)
	}
	many := sh.Results[1]
	if many.Window != "" {
		t.Errorf("web.replicas=12: window %q; 12 tasks see 2400 wake-ups a second, enough for a p99", many.Window)
	}
	// The unit: a straddling p99 column with 200 wake-ups a seed.
	cols := SweepColumns(&exp.Spec)
	tails, _ := tailColumns(exp.Spec.Constraints, cols)
	res := &SweepJobResult{Values: []float64{2900}, Low: []float64{2500}, High: []float64{3100}}
	count := func(c int64) map[string][]*v1alpha1.Metrics {
		m := &v1alpha1.Metrics{WakeupLatencyUs: &v1alpha1.LatencySummary{Count: c}}
		return map[string][]*v1alpha1.Metrics{"web": {m, m}}
	}
	if k := windowScale(exp.Spec.Constraints, cols, tails, res, count(400), 2); k != 5 {
		t.Errorf("400 wake-ups a seed: scale %d, want 5 (2000 needed)", k)
	}
	if k := windowScale(exp.Spec.Constraints, cols, tails, res, count(100), 2); k != MaxWindowScale {
		t.Errorf("100 wake-ups a seed: scale %d, want the most, %d", k, MaxWindowScale)
	}
	if k := windowScale(exp.Spec.Constraints, cols, tails, res, count(2000), 2); k != 1 {
		t.Errorf("2000 wake-ups a seed: scale %d, want 1", k)
	}
	res.High[0] = 2999
	if k := windowScale(exp.Spec.Constraints, cols, tails, res, count(100), 2); k != 1 {
		t.Errorf("interval clear of the limit: scale %d, want 1", k)
	}
}
