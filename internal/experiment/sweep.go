package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/simengine"
)

// DefaultSweepWindow is the simulated window of each point of a sweep when
// no duration is given: a grid multiplies the cost of one prediction by its
// points, and the steady-state metrics a capacity question bounds (cpu,
// p99 wakeup latency, deadline misses) settle within a couple of seconds of
// simulated time. On the capacity sample's 64-CPU node with 112 web pods
// the fraction of wake-ups beyond 2 ms is 0.02 % in the first two seconds
// after the warmup and 0.05-0.08 % in windows from 6.5 s to 32 s (six
// seeds each); it grew to 8 % while the simulator's flat machine scanned
// its whole LLC for an idle CPU at every wake-up (no SIS_UTIL limit). A
// single 2 s window still sees one placement of the tasks, which the
// balancer changes about once a second, so seeds differ. The warmup is
// capped at DefaultSweepWarmup.
const (
	DefaultSweepWindow = 2 * time.Second
	DefaultSweepWarmup = 500 * time.Millisecond
)

// SweepAxis is one parameter of a sweep with its values expanded, sorted.
type SweepAxis struct {
	// Name is how the parameter is shown: "web.replicas", "cpus",
	// "baseSliceUs", "batch.baseSliceUs" (a knob of one variant).
	Name   string
	Param  v1alpha1.SweepParameter
	Values []int64
}

// SweepAxes expands the sweep's parameters into their values (a range
// from..to by step, or the listed values), sorted ascending.
func SweepAxes(s *v1alpha1.Sweep) []SweepAxis {
	if s == nil {
		return nil
	}
	axes := make([]SweepAxis, 0, len(s.Parameters))
	for _, p := range s.Parameters {
		axes = append(axes, SweepAxis{Name: sweepParamName(p), Param: p, Values: p.Points()})
	}
	return axes
}

func sweepParamName(p v1alpha1.SweepParameter) string {
	switch p.Target {
	case v1alpha1.SweepReplicas:
		return p.Group + ".replicas"
	case v1alpha1.SweepTasks:
		return p.Group + ".tasks"
	case v1alpha1.SweepCPUWeight:
		return p.Group + ".cpuWeight"
	case v1alpha1.SweepRate:
		return p.Group + ".rate"
	case v1alpha1.SweepCPUs:
		return "cpus"
	case v1alpha1.SweepNrMigrate:
		return variantPrefix(p) + "nrMigrate"
	}
	// Duration knobs: BaseSlice → baseSliceUs.
	t := string(p.Target)
	return variantPrefix(p) + string(t[0]+'a'-'A') + t[1:] + "Us"
}

func variantPrefix(p v1alpha1.SweepParameter) string {
	if p.Variant == "" {
		return ""
	}
	return p.Variant + "."
}

// SweepGrid is the cartesian product of the axes' values, the first axis
// varying slowest. A spec without a sweep has one point with no values.
func SweepGrid(axes []SweepAxis) [][]int64 {
	grid := [][]int64{{}}
	for _, a := range axes {
		next := make([][]int64, 0, len(grid)*len(a.Values))
		for _, pt := range grid {
			for _, v := range a.Values {
				next = append(next, append(append([]int64(nil), pt...), v))
			}
		}
		grid = next
	}
	return grid
}

// ApplySweepPoint returns a copy of spec and shape with the parameters set
// to the point's values. The spec given is not changed.
func ApplySweepPoint(spec *v1alpha1.SchedExperimentSpec, shape v1alpha1.NodeShape, axes []SweepAxis, at []int64) (*v1alpha1.SchedExperimentSpec, v1alpha1.NodeShape) {
	s := spec.DeepCopy()
	for i, a := range axes {
		v := at[i]
		p := a.Param
		switch p.Target {
		case v1alpha1.SweepReplicas, v1alpha1.SweepTasks, v1alpha1.SweepCPUWeight, v1alpha1.SweepRate:
			s.SetGroupParameter(p, v)
		case v1alpha1.SweepCPUs:
			shape.CPUs = int32(v)
		default:
			for vi := range s.Variants {
				if p.Variant != "" && s.Variants[vi].Name != p.Variant {
					continue
				}
				setKnob(&s.Variants[vi].Knobs, p.Target, v)
			}
		}
	}
	return s, shape
}

func setKnob(k *v1alpha1.Knobs, t v1alpha1.SweepTarget, v int64) {
	d := &metav1.Duration{Duration: time.Duration(v) * time.Microsecond}
	switch t {
	case v1alpha1.SweepBaseSlice:
		k.BaseSlice = d
	case v1alpha1.SweepLatency:
		k.Latency = d
	case v1alpha1.SweepMinGranularity:
		k.MinGranularity = d
	case v1alpha1.SweepWakeupGranularity:
		k.WakeupGranularity = d
	case v1alpha1.SweepMigrationCost:
		k.MigrationCost = d
	case v1alpha1.SweepNrMigrate:
		k.NrMigrate = ptr(int32(v))
	}
}

// SweepColumn is one metric of one group that the curve follows: every
// constrained metric, then every objective not already constrained.
type SweepColumn struct {
	Group  string
	Metric string
}

// Name is "group/metric".
func (c SweepColumn) Name() string { return c.Group + "/" + c.Metric }

// SweepColumns lists the curve's columns for a spec.
func SweepColumns(spec *v1alpha1.SchedExperimentSpec) []SweepColumn {
	var cols []SweepColumn
	seen := map[SweepColumn]bool{}
	add := func(c SweepColumn) {
		if !seen[c] {
			seen[c] = true
			cols = append(cols, c)
		}
	}
	for _, c := range spec.Constraints {
		add(SweepColumn{c.Group, string(c.Metric)})
	}
	for _, o := range spec.Objectives {
		add(SweepColumn{o.Group, string(o.Metric)})
	}
	return cols
}

// SweepOptions tune a sweep run.
type SweepOptions struct {
	// PredictOptions of every point; Duration 0 means DefaultSweepWindow
	// (with the warmup capped at DefaultSweepWarmup).
	PredictOptions
	// Workers simulating points at once; 0 means GOMAXPROCS.
	Workers int
	// Shard (0-based) of Shards: run only the jobs whose index is Shard
	// modulo Shards. Shards 0 or 1 runs every job.
	Shard, Shards int
	// Progress, when set, is called after each job with the jobs done and
	// the jobs of this run (from the workers' goroutines, one at a time).
	Progress func(done, total int)
}

// SweepJobResult is one simulated job: one point of the grid on one node
// shape for one variant.
type SweepJobResult struct {
	// Job is the index of the job: shape-major, then variant, then point.
	Job         int       `json:"job"`
	Shape       string    `json:"shape"`
	Variant     string    `json:"variant"`
	Point       int       `json:"point"`
	At          []int64   `json:"at"`
	Values      []float64 `json:"values,omitempty"`
	Low         []float64 `json:"low,omitempty"`
	High        []float64 `json:"high,omitempty"`
	Unsupported string    `json:"unsupported,omitempty"`
	// Replicas is the number of seeds the point ran (more than the spec's
	// where its interval straddled a constraint's limit or ended near it).
	Replicas int `json:"replicas,omitempty"`
	// Window is the point's simulated window where it is longer than the
	// sweep's (its seeds saw too few wake-ups to judge a quantile's limit).
	Window string `json:"window,omitempty"`
}

// SweepShard is what a (possibly partial) sweep run produces, and what
// `schedlab simulate --shard i/n` prints: merge the shards with MergeSweep.
type SweepShard struct {
	Experiment string           `json:"experiment,omitempty"`
	Shard      int              `json:"shard"`
	Shards     int              `json:"shards"`
	Jobs       int              `json:"jobs"`
	Parameters []string         `json:"parameters"`
	Columns    []string         `json:"columns"`
	Window     string           `json:"simulatedWindow"`
	Results    []SweepJobResult `json:"results"`
}

// sweepJob identifies a job by its indices.
type sweepJob struct{ shape, variant, point int }

func jobOf(k, variants, points int) sweepJob {
	return sweepJob{shape: k / (variants * points), variant: (k / points) % variants, point: k % points}
}

// sweepWindow resolves the simulated window and warmup of each point.
func sweepWindow(spec *v1alpha1.SchedExperimentSpec, opts PredictOptions) (window, warmup time.Duration) {
	window = opts.Duration
	if window <= 0 {
		window = DefaultSweepWindow
		if spec.Duration.Duration > 0 && spec.Duration.Duration < window {
			window = spec.Duration.Duration
		}
	}
	warmup = time.Second
	if spec.Warmup != nil {
		warmup = spec.Warmup.Duration
	}
	if opts.Duration <= 0 && warmup > DefaultSweepWarmup {
		warmup = DefaultSweepWarmup
	}
	return window, warmup
}

// RunSweep simulates every point of the spec's sweep on every shape for
// every variant (or one shard of those jobs), on a pool of workers. The
// result is the same whatever the number of workers: each job's seed is the
// spec's, so neighbouring points see the same random draws and the curve is
// smooth, and results are placed by job index.
func RunSweep(ctx context.Context, spec *v1alpha1.SchedExperimentSpec, shapes []v1alpha1.NodeShape, opts SweepOptions) (*SweepShard, error) {
	axes := SweepAxes(spec.Sweep)
	grid := SweepGrid(axes)
	cols := SweepColumns(spec)
	nv, np := len(spec.Variants), len(grid)
	total := len(shapes) * nv * np
	shards := opts.Shards
	if shards < 1 {
		shards = 1
	}
	if opts.Shard < 0 || opts.Shard >= shards {
		return nil, fmt.Errorf("shard %d of %d: use 0..%d", opts.Shard, shards, shards-1)
	}
	window, warmup := sweepWindow(spec, opts.PredictOptions)
	popts := opts.PredictOptions
	popts.Duration = window

	var jobs []int
	for k := opts.Shard; k < total; k += shards {
		jobs = append(jobs, k)
	}
	out := &SweepShard{Shard: opts.Shard, Shards: shards, Jobs: total, Window: window.String(),
		Results: make([]SweepJobResult, len(jobs))}
	for _, a := range axes {
		out.Parameters = append(out.Parameters, a.Name)
	}
	for _, c := range cols {
		out.Columns = append(out.Columns, c.Name())
	}

	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers > len(jobs) {
		workers = len(jobs)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	var mu sync.Mutex
	done := 0
	for i := range jobs {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			res, err := runSweepJob(spec, shapes, axes, grid, cols, jobs[i], warmup, popts)
			if err != nil {
				return err
			}
			out.Results[i] = res
			if opts.Progress != nil {
				mu.Lock()
				done++
				opts.Progress(done, len(jobs))
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func runSweepJob(spec *v1alpha1.SchedExperimentSpec, shapes []v1alpha1.NodeShape, axes []SweepAxis, grid [][]int64,
	cols []SweepColumn, k int, warmup time.Duration, opts PredictOptions) (SweepJobResult, error) {
	j := jobOf(k, len(spec.Variants), len(grid))
	base := shapes[j.shape]
	s, shape := ApplySweepPoint(spec, base, axes, grid[j.point])
	s.Warmup = &metav1.Duration{Duration: warmup}
	res := SweepJobResult{Job: k, Shape: ShapeName(base), Variant: s.Variants[j.variant].Name, Point: j.point, At: grid[j.point]}
	in, err := SimInput(s, j.variant, shape, opts)
	var unsupported *UnsupportedError
	if errors.As(err, &unsupported) {
		res.Unsupported = unsupported.Reason
		return res, nil
	}
	if err != nil {
		return res, err
	}
	// The seeds run one after another here: the sweep's workers already
	// keep every core busy.
	n := Replicas(s, opts)
	byGroup := map[string][]*v1alpha1.Metrics{}
	tails, thresholds := tailColumns(s.Constraints, cols)
	in.LatencyThresholdsNs = thresholds
	tailSeeds := make([][][]float64, len(tails)) // tail column × seed × grid point
	seed := in.Seed
	runSeeds := func(from, to int) error {
		for i := from; i < to; i++ {
			in.Seed = seed + uint64(i)
			r, err := simengine.Run(in)
			if err != nil {
				return fmt.Errorf("simulating %s=%v, variant %q on %s: %w", axisNames(axes), grid[j.point], res.Variant, ShapeName(shape), err)
			}
			for _, g := range r.Groups {
				m := FromSim(g.Metrics)
				byGroup[g.Name] = append(byGroup[g.Name], &m)
			}
			for k := range tails {
				if f := tails[k].seedTails(cols, r); f != nil {
					tailSeeds[k] = append(tailSeeds[k], f)
				}
			}
		}
		return nil
	}
	summarize := func() {
		summarizeSweepPoint(&res, cols, byGroup, n)
		for k, tc := range tails {
			if n < 2 || len(res.Low) <= tc.col {
				continue
			}
			v, lo, hi := tc.tailQuantile(tailSeeds[k], res.Values[tc.col], res.Low[tc.col], res.High[tc.col])
			// The interval's ends rounded outwards, so that rounding never
			// moves an end across a limit on the grid.
			res.Values[tc.col] = math.Round(v*1e4) / 1e4
			res.Low[tc.col] = math.Floor(lo*1e4) / 1e4
			res.High[tc.col] = math.Ceil(hi*1e4) / 1e4
		}
	}
	if err := runSeeds(0, n); err != nil {
		return res, err
	}
	summarize()
	// A quantile's limit is judged by the fraction of wake-ups beyond it,
	// and a seed that sees few wake-ups estimates a 1 % tail from a handful
	// of them: one web pod sees 400 in a 2 s window, so one burst of 19
	// late ones is 4.75 %. A point whose interval straddles such a limit
	// and whose seeds saw fewer than MinTailWakeups per tail (2000 for a
	// p99) runs its seeds again with a window long enough for that, up to
	// MaxWindowScale times the sweep's; its Window says so.
	if k := windowScale(s.Constraints, cols, tails, &res, byGroup, n); k > 1 && n > 1 {
		byGroup = map[string][]*v1alpha1.Metrics{}
		tailSeeds = make([][][]float64, len(tails))
		in.DurationNs *= int64(k)
		res.Window = time.Duration(in.DurationNs).String()
		if err := runSeeds(0, n); err != nil {
			return res, err
		}
		summarize()
	}
	// A point whose interval straddles a constraint's limit is decided by
	// the seeds' spread, which near a knee (a p99 over a few thousand
	// wake-ups, a miss ratio of a few periods) one seed can swing: it runs
	// more seeds, up to MaxSweepReplicas, until the interval clears the
	// limit by NearLimitMargin. So does a point whose interval ends within
	// that margin of a limit it meets: five seeds of a quantity as skewed
	// as a tail fraction give an interval too narrow, and which five a
	// base seed picks decided such points (see NearLimitMargin). The other
	// points keep the spec's replicas.
	for n > 1 && n < MaxSweepReplicas && nearLimit(s.Constraints, cols, &res) {
		more := min(n, MaxSweepReplicas-n)
		if err := runSeeds(n, n+more); err != nil {
			return res, err
		}
		n += more
		summarize()
	}
	res.Replicas = n
	return res, nil
}

// MinTailWakeups is the number of wake-ups per seed, in units of the
// tail a quantile constraint allows (1 − q), below which a straddling
// point's window is lengthened; MaxWindowScale bounds the lengthening.
const (
	MinTailWakeups = 20
	MaxWindowScale = 8
)

// windowScale is the factor by which a point's window must grow for its
// seeds to see MinTailWakeups/(1 − q) wake-ups of every quantile-
// constrained group whose limit the point's interval straddles (1: none).
func windowScale(cs []v1alpha1.Constraint, cols []SweepColumn, tails []tailColumn, res *SweepJobResult, byGroup map[string][]*v1alpha1.Metrics, n int) int {
	k := 1
	for _, tc := range tails {
		c := cols[tc.col]
		var own []v1alpha1.Constraint
		for _, x := range cs {
			if x.Group == c.Group && string(x.Metric) == c.Metric {
				own = append(own, x)
			}
		}
		if !straddles(own, cols, res) {
			continue
		}
		var count float64
		for _, m := range byGroup[c.Group] {
			l := m.WakeupLatencyUs
			if strings.HasPrefix(c.Metric, "requestLatencyUs.") {
				l = m.RequestLatencyUs
			}
			if l != nil {
				count += float64(l.Count)
			}
		}
		count /= float64(max(n, 1))
		need := MinTailWakeups / tc.tail
		if count >= need {
			continue
		}
		f := MaxWindowScale
		if count > 0 {
			f = min(MaxWindowScale, int(math.Ceil(need/count)))
		}
		k = max(k, f)
	}
	return k
}

// MaxSweepReplicas bounds the seeds a sweep point runs when its interval
// straddles a constraint's limit or ends near it.
const MaxSweepReplicas = 20

// NearLimitMargin is how close to a limit (a fraction of it) the far end
// of a point's interval may come before the point runs more seeds. The
// capacity sample's 64-CPU points near the knee have a fraction of late
// wake-ups that is skewed across seeds (at 256 web pods with the 1 ms
// slice, 2 s windows: 0.08 % to 2.3 % per seed, mean 0.70 % over 24
// seeds): seeds 1-5 put the p99's upper end at 1834 µs and passed the
// point, seeds 3-7 at 2015 µs and ran 20 seeds, which failed it. Twenty
// seeds from any of the base seeds 1-5 fail it (the fraction's upper end
// 1.01-1.06 %); 10 % of a 2000 µs limit takes the first case to 20 seeds
// as well.
const NearLimitMargin = 0.1

// nearLimit reports whether a point's interval straddles a constraint's
// limit or ends, on the side that meets it, within NearLimitMargin of it.
func nearLimit(cs []v1alpha1.Constraint, cols []SweepColumn, res *SweepJobResult) bool {
	return limitWithin(cs, cols, res, NearLimitMargin)
}

// limitWithin reports whether a point meets a constraint at one end of its
// interval and, at the other end, breaks it or comes within margin (a
// fraction of the limit) of it.
func limitWithin(cs []v1alpha1.Constraint, cols []SweepColumn, res *SweepJobResult, margin float64) bool {
	if len(res.Low) == 0 {
		return false
	}
	for _, c := range cs {
		for i, x := range cols {
			if x.Group != c.Group || x.Metric != string(c.Metric) || i >= len(res.Low) {
				continue
			}
			lo, hi := res.Low[i], res.High[i]
			if m := c.Max; m != nil && lo <= *m && hi > *m-margin*math.Abs(*m) {
				return true
			}
			if m := c.Min; m != nil && hi >= *m && lo < *m+margin*math.Abs(*m) {
				return true
			}
		}
	}
	return false
}

// summarizeSweepPoint sets a point's values (the seeds' mean) and, with
// more than one seed, their 95% intervals.
func summarizeSweepPoint(res *SweepJobResult, cols []SweepColumn, byGroup map[string][]*v1alpha1.Metrics, n int) {
	res.Values = make([]float64, len(cols))
	res.Low, res.High = nil, nil
	if n > 1 {
		res.Low = make([]float64, len(cols))
		res.High = make([]float64, len(cols))
	}
	short := func(v float64) float64 { return math.Round(v*1e4) / 1e4 } // short, stable status values
	for i, c := range cols {
		mid, low, high := summarizeReplicas(byGroup[c.Group])
		v, ok := MetricValue(&mid, c.Metric)
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		res.Values[i] = short(v)
		if n > 1 {
			lo, _ := MetricValue(&low, c.Metric)
			hi, _ := MetricValue(&high, c.Metric)
			res.Low[i], res.High[i] = short(lo), short(hi)
		}
	}
}

// straddles reports whether a constraint's limit lies inside a point's
// interval: the point meets it at one end and breaks it at the other.
func straddles(cs []v1alpha1.Constraint, cols []SweepColumn, res *SweepJobResult) bool {
	return limitWithin(cs, cols, res, 0)
}

func axisNames(axes []SweepAxis) []string {
	n := make([]string, len(axes))
	for i, a := range axes {
		n[i] = a.Name
	}
	return n
}
