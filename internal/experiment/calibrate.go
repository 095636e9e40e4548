package experiment

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"gonum.org/v1/gonum/optimize"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/simengine"
)

// calibrationMetrics are the metrics a calibration fits, each with the
// floor below which a measured value counts as that floor (so that a
// near-zero measurement does not make a huge relative error): cpu in CPUs,
// latencies in microseconds, operations per second.
var calibrationMetrics = []struct {
	name  string
	floor float64
}{
	{"cpu", 0.01},
	{"wakeupLatencyUs.p50", 5},
	{"wakeupLatencyUs.p99", 5},
	{"wakeupLatencyUs.mean", 5},
	{"opsPerSec", 1},
}

// CalibrateOptions tune a calibration.
type CalibrateOptions struct {
	// Duration of each simulation (default DefaultSweepWindow); the warmup
	// is capped at DefaultSweepWarmup as in a sweep.
	Duration time.Duration
	// Seed overrides spec.simulation.seed.
	Seed *uint64
	// Workers simulating candidates at once; 0 means GOMAXPROCS.
	Workers int
	// Rounds bounds the simulations of the refinement after the first
	// scan (default 150).
	Rounds int
}

// CalibrationFit is a fitted calibration for one node shape.
type CalibrationFit struct {
	Shape       string                `json:"shape"`
	Calibration simengine.Calibration `json:"calibration"`
	// ErrorBefore and ErrorAfter are the mean absolute relative errors of
	// the predictions over every measured row × fitted metric, with no
	// calibration and with the fit.
	ErrorBefore float64 `json:"errorBefore"`
	ErrorAfter  float64 `json:"errorAfter"`
	// CPUErrorBefore and CPUErrorAfter are the same over cpu alone (what
	// status.predictionError shows).
	CPUErrorBefore float64 `json:"cpuErrorBefore"`
	CPUErrorAfter  float64 `json:"cpuErrorAfter"`
	// Samples is the number of row × metric pairs compared.
	Samples int `json:"samples"`
	// Evaluations is the number of calibrations simulated.
	Evaluations int `json:"evaluations"`
}

// Status is the fit as status.calibration and the calibration file store it.
func (f *CalibrationFit) Status() v1alpha1.ShapeCalibration {
	return v1alpha1.ShapeCalibration{
		Shape:            f.Shape,
		TimerOverheadNs:  f.Calibration.TimerOverheadNs,
		WakeupOverheadNs: f.Calibration.WakeupOverheadNs,
		CtxSwitchNs:      f.Calibration.CtxSwitchNs,
		BackgroundLoad:   f.Calibration.BackgroundLoad,
		ErrorBefore:      fmt.Sprintf("%.1f%%", 100*f.ErrorBefore),
		ErrorAfter:       fmt.Sprintf("%.1f%%", 100*f.ErrorAfter),
	}
}

// calibParam is one coordinate of the search.
type calibParam struct {
	name string
	scan []float64 // first-round candidates
	max  float64
	get  func(c *simengine.Calibration) float64
	set  func(c *simengine.Calibration, v float64)
}

var calibParams = []calibParam{
	{"backgroundLoad", []float64{0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3}, 0.95,
		func(c *simengine.Calibration) float64 { return c.BackgroundLoad },
		func(c *simengine.Calibration, v float64) { c.BackgroundLoad = math.Round(v*1e4) / 1e4 }},
	{"timerOverheadNs", []float64{0, 1e3, 2e3, 5e3, 10e3, 20e3, 50e3, 100e3, 200e3}, 10e6,
		func(c *simengine.Calibration) float64 { return float64(c.TimerOverheadNs) },
		func(c *simengine.Calibration, v float64) { c.TimerOverheadNs = int64(math.Round(v)) }},
	{"wakeupOverheadNs", []float64{0, 1e3, 2e3, 5e3, 10e3, 20e3, 50e3, 100e3, 200e3}, 10e6,
		func(c *simengine.Calibration) float64 { return float64(c.WakeupOverheadNs) },
		func(c *simengine.Calibration, v float64) { c.WakeupOverheadNs = int64(math.Round(v)) }},
	{"ctxSwitchNs", []float64{0, 500, 1e3, 2e3, 5e3, 10e3, 20e3}, 10e6,
		func(c *simengine.Calibration) float64 { return float64(c.CtxSwitchNs) },
		func(c *simengine.Calibration, v float64) { c.CtxSwitchNs = int64(math.Round(v)) }},
}

// CalibrationData is one earlier experiment on the node shape: its spec and
// its measured rows (variant × group with Measured, from a `schedlab run`
// report or NodeRuns aggregated with Aggregate).
type CalibrationData struct {
	Spec     *v1alpha1.SchedExperimentSpec
	Measured []v1alpha1.GroupResult
}

// Calibrate fits the simulator's calibration for one node shape to the
// measured results of one or more experiments on it: a coordinate search that scans each
// parameter over a wide log-spaced set, then refines around the best value
// in shrinking steps, minimising the mean absolute relative error of the
// predictions over cpu, wakeup latency (p50, p99, mean) and opsPerSec.
// Every candidate is simulated with the same seed, so the error surface has
// no simulator noise; candidates of one coordinate run in parallel.
func Calibrate(ctx context.Context, shape v1alpha1.NodeShape, data []CalibrationData, opts CalibrateOptions) (*CalibrationFit, error) {
	rows := 0
	for _, d := range data {
		for _, r := range d.Measured {
			if r.Measured != nil && r.Unsupported == "" {
				rows++
			}
		}
	}
	if rows == 0 {
		return nil, fmt.Errorf("no measured rows to calibrate %s against: run the experiment first", ShapeName(shape))
	}
	ev := &calibEvaluator{data: data, shape: shape, opts: opts, cache: map[simengine.Calibration]PredictionErrors{}}
	before, err := ev.eval(ctx, []simengine.Calibration{{}})
	if err != nil {
		return nil, err
	}
	if before[0].Samples == 0 {
		return nil, fmt.Errorf("the measurements of %s have no metric the simulator predicts", ShapeName(shape))
	}
	best, bestScore := simengine.Calibration{}, before[0]
	try := func(cands []simengine.Calibration) error {
		scores, err := ev.eval(ctx, cands)
		if err != nil {
			return err
		}
		for i, s := range scores {
			if s.MeanSquare < bestScore.MeanSquare-1e-15 {
				best, bestScore = cands[i], s
			}
		}
		return nil
	}
	// Scan each coordinate over its wide set, and again while that moves
	// the fit (the parameters interact: a context-switch cost adds CPU time
	// that a background load would take away).
	for pass := 0; pass < 4; pass++ {
		start := best
		for _, p := range calibParams {
			var cands []simengine.Calibration
			for _, v := range p.scan {
				c := best
				p.set(&c, v)
				cands = append(cands, c)
			}
			if err := try(cands); err != nil {
				return nil, err
			}
		}
		if best == start {
			break
		}
	}
	// Refinement: Nelder-Mead from the scan's best, in units where one step
	// is 1 us of overhead or 1% of background load. The overheads add up in
	// every wake-up's latency, so the data pin their sums before the parts;
	// the simplex follows such ridges where single-coordinate moves crawl.
	iters := opts.Rounds
	if iters <= 0 {
		iters = 150
	}
	for restart := 0; restart < 2; restart++ { // a restart escapes a collapsed simplex
		if err := nelderMead(ctx, ev, &best, &bestScore, iters/2); err != nil {
			return nil, err
		}
	}
	return &CalibrationFit{
		Shape:          ShapeName(shape),
		Calibration:    best,
		ErrorBefore:    before[0].Mean,
		ErrorAfter:     bestScore.Mean,
		CPUErrorBefore: before[0].CPU,
		CPUErrorAfter:  bestScore.CPU,
		Samples:        bestScore.Samples,
		Evaluations:    len(ev.cache),
	}, nil
}

// CalibrationError is the prediction error over the experiments' measured
// rows with calibration c for the shape: how well a stored calibration
// predicts measurements it was not fitted to.
func CalibrationError(ctx context.Context, shape v1alpha1.NodeShape, data []CalibrationData, c simengine.Calibration, opts CalibrateOptions) (PredictionErrors, error) {
	if err := ctx.Err(); err != nil {
		return PredictionErrors{}, err
	}
	ev := &calibEvaluator{data: data, shape: shape, opts: opts}
	return ev.score(c)
}

// PredictionErrors are the mean absolute relative errors of predictions
// against measurements: Mean over every row × calibration metric (cpu,
// wakeup latency p50/p99/mean, opsPerSec), CPU over cpu alone.
type PredictionErrors struct {
	Mean, CPU float64
	// MeanSquare is the mean squared relative error: the search minimises
	// it (smooth where Mean has kinks) and reports Mean.
	MeanSquare float64
	// Samples is the number of row × metric pairs compared.
	Samples int
}

type calibEvaluator struct {
	data  []CalibrationData
	shape v1alpha1.NodeShape
	opts  CalibrateOptions
	mu    sync.Mutex
	cache map[simengine.Calibration]PredictionErrors
}

// eval scores candidates in parallel (cached: the search revisits points).
func (e *calibEvaluator) eval(ctx context.Context, cands []simengine.Calibration) ([]PredictionErrors, error) {
	out := make([]PredictionErrors, len(cands))
	workers := e.opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i, c := range cands {
		e.mu.Lock()
		s, ok := e.cache[c]
		e.mu.Unlock()
		if ok {
			out[i] = s
			continue
		}
		if err := gctx.Err(); err != nil {
			break
		}
		g.Go(func() error {
			s, err := e.score(c)
			if err != nil {
				return err
			}
			e.mu.Lock()
			e.cache[c] = s
			e.mu.Unlock()
			out[i] = s
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

// score predicts every variant of every experiment with calibration c and
// compares with the measurements.
func (e *calibEvaluator) score(c simengine.Calibration) (PredictionErrors, error) {
	var acc errAccumulator
	name := ShapeName(e.shape)
	for _, d := range e.data {
		window, warmup := sweepWindow(d.Spec, PredictOptions{Duration: e.opts.Duration})
		s := d.Spec.DeepCopy()
		s.Warmup = &metav1.Duration{Duration: warmup}
		preds, err := Predict(s, []v1alpha1.NodeShape{e.shape}, PredictOptions{
			Duration: window, Seed: e.opts.Seed, Replicas: 1, Calibration: map[string]simengine.Calibration{name: c}})
		if err != nil {
			return PredictionErrors{}, err
		}
		acc.add(d.Measured, preds)
	}
	return acc.result(), nil
}

// PredictionError compares predictions with measured rows (matched by
// variant and group) over the calibration metrics.
func PredictionError(measured []v1alpha1.GroupResult, preds []Prediction) PredictionErrors {
	var acc errAccumulator
	acc.add(measured, preds)
	return acc.result()
}

type errAccumulator struct {
	sum, sq, cpuSum float64
	n, cpuN         int
}

func (a *errAccumulator) add(measured []v1alpha1.GroupResult, preds []Prediction) {
	type key struct{ variant, group string }
	by := map[key]*v1alpha1.Metrics{}
	for i := range preds {
		if preds[i].Unsupported == "" {
			by[key{preds[i].Variant, preds[i].Group}] = &preds[i].Metrics
		}
	}
	for _, r := range measured {
		if r.Measured == nil || r.Unsupported != "" {
			continue
		}
		p := by[key{r.Variant, r.Group}]
		if p == nil {
			continue
		}
		for _, m := range calibrationMetrics {
			mv, ok1 := MetricValue(&r.Measured.Metrics, m.name)
			pv, ok2 := MetricValue(p, m.name)
			if !ok1 || !ok2 || math.IsNaN(mv) || math.IsNaN(pv) {
				continue
			}
			if m.name == "cpu" && mv < m.floor {
				continue // an idle group's cpu says nothing about the node
			}
			e := math.Abs(pv-mv) / math.Max(math.Abs(mv), m.floor)
			a.sum += e
			a.sq += e * e
			a.n++
			if m.name == "cpu" {
				a.cpuSum += e
				a.cpuN++
			}
		}
	}
}

func (a *errAccumulator) result() PredictionErrors {
	s := PredictionErrors{Samples: a.n}
	if a.n > 0 {
		s.Mean = a.sum / float64(a.n)
		s.MeanSquare = a.sq / float64(a.n)
	}
	if a.cpuN > 0 {
		s.CPU = a.cpuSum / float64(a.cpuN)
	}
	return s
}

// ResultsFromReport turns a `schedlab run` JSON report back into measured
// rows, and returns the node shape its predictions were for.
func ResultsFromReport(rep *Report) ([]v1alpha1.GroupResult, v1alpha1.NodeShape, error) {
	var rows []v1alpha1.GroupResult
	var shape v1alpha1.NodeShape
	for _, v := range rep.Variants {
		if shape.CPUs == 0 {
			// The whole shape: one written without its kernel release
			// named a calibration the predictions never looked up.
			shape = v.Node.Shape()
		}
		for _, g := range v.Groups {
			if g.Measured == nil {
				continue
			}
			rows = append(rows, v1alpha1.GroupResult{Variant: v.Name, Group: g.Name, Measured: g.Measured, Unsupported: v.Unsupported})
		}
	}
	if len(rows) == 0 {
		return nil, shape, fmt.Errorf("the report has no measured results: give the JSON of 'schedlab run -o json' (or its --output-dir DIR/report.json)")
	}
	if shape.CPUs == 0 {
		return nil, shape, fmt.Errorf("the report names no node shape")
	}
	return rows, shape, nil
}

// calibUnits are the search's units per parameter, in calibParams order.
var calibUnits = []float64{0.01, 1000, 1000, 1000}

func toVec(c simengine.Calibration) []float64 {
	v := make([]float64, len(calibParams))
	for i, p := range calibParams {
		v[i] = p.get(&c) / calibUnits[i]
	}
	return v
}

func fromVec(v []float64) simengine.Calibration {
	var c simengine.Calibration
	for i, p := range calibParams {
		x := math.Max(0, math.Min(v[i]*calibUnits[i], p.max))
		p.set(&c, x)
	}
	return c
}

// nelderMead minimises the prediction error from *best with at most iters
// evaluations with gonum's Nelder–Mead (standard coefficients), updating
// *best and *score. The first simplex is evaluated in parallel.
func nelderMead(ctx context.Context, ev *calibEvaluator, best *simengine.Calibration, score *PredictionErrors, iters int) error {
	n := len(calibParams)
	x0 := toVec(*best)
	vertices := [][]float64{x0}
	values := []float64{score.MeanSquare}
	var starts []simengine.Calibration
	for i := 0; i < n; i++ {
		x := append([]float64(nil), x0...)
		x[i] += math.Max(0.25*x[i], 2)
		starts = append(starts, fromVec(x))
	}
	sc, err := ev.eval(ctx, starts)
	if err != nil {
		return err
	}
	for i, c := range starts {
		vertices = append(vertices, toVec(c))
		values = append(values, sc[i].MeanSquare)
		if sc[i].MeanSquare < score.MeanSquare-1e-15 {
			*best, *score = c, sc[i]
		}
	}
	var evalErr error
	problem := optimize.Problem{Func: func(x []float64) float64 {
		if evalErr != nil {
			return math.Inf(1)
		}
		c := fromVec(x) // rounded and clamped to the parameters' grid
		s, err := ev.eval(ctx, []simengine.Calibration{c})
		if err != nil {
			evalErr = err
			return math.Inf(1)
		}
		if s[0].MeanSquare < score.MeanSquare-1e-15 {
			*best, *score = c, s[0]
		}
		return s[0].MeanSquare
	}}
	// Only the evaluation budget ends the search: the best vertex often
	// stays put for several Nelder–Mead iterations while the simplex turns
	// along a ridge, so "no improvement for k iterations" stops too early.
	settings := &optimize.Settings{
		FuncEvaluations: max(iters-n, 1),
		Converger:       &optimize.FunctionConverge{Absolute: 1e-12, Iterations: iters},
	}
	method := &optimize.NelderMead{InitialVertices: vertices, InitialValues: values}
	if _, err := optimize.Minimize(problem, x0, settings, method); err != nil && evalErr == nil {
		return fmt.Errorf("calibration search: %w", err)
	}
	return evalErr
}
