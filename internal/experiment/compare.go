package experiment

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// Aggregate turns the windows of NodeRuns into results: per variant × group
// the mean, sample standard deviation and n over nodes × repetitions. Noisy
// windows count (they are flagged on the NodeRun); unsupported ones do not.
// A variant that no node could run gets a row saying why.
func Aggregate(spec *v1alpha1.SchedExperimentSpec, runs []v1alpha1.NodeRun) []v1alpha1.GroupResult {
	type key struct{ variant, group string }
	samples := map[key][]*v1alpha1.Metrics{}
	unsupported := map[string]string{}
	for ri := range runs {
		for wi := range runs[ri].Status.Windows {
			w := &runs[ri].Status.Windows[wi]
			if w.Unsupported != "" {
				if _, seen := unsupported[w.Variant]; !seen {
					unsupported[w.Variant] = fmt.Sprintf("%s: %s", runs[ri].Spec.NodeName, w.Unsupported)
				}
				continue
			}
			for gi := range w.Groups {
				g := &w.Groups[gi]
				k := key{w.Variant, g.Name}
				samples[k] = append(samples[k], &g.Metrics)
			}
		}
	}
	var out []v1alpha1.GroupResult
	for _, v := range spec.Variants {
		for _, g := range spec.Workload.Groups {
			r := v1alpha1.GroupResult{Variant: v.Name, Group: g.Name}
			if s := samples[key{v.Name, g.Name}]; len(s) > 0 {
				r.Measured = Summarize(s)
			} else if why, ok := unsupported[v.Name]; ok {
				r.Unsupported = why
			}
			out = append(out, r)
		}
	}
	return out
}

// Summarize is the mean, standard deviation and count of metric samples.
func Summarize(samples []*v1alpha1.Metrics) *v1alpha1.MeasuredMetrics {
	sd := combine(samples, stddev)
	return &v1alpha1.MeasuredMetrics{
		Metrics: combine(samples, mean),
		N:       int32(len(samples)),
		Stddev:  &sd,
	}
}

// Compare fills Predicted and RelativeError into results from predictions.
// A row with an empty Shape takes the mean of the predictions for its
// variant and group over all the predictions given, so a caller weights
// shapes by passing one prediction per node. It returns the mean absolute
// relative error of cpu over rows with a measurable cpu, as "4.2%", or "".
func Compare(results []v1alpha1.GroupResult, preds []Prediction) string {
	type key struct{ shape, variant, group string }
	by := map[key][]*Prediction{}
	for i := range preds {
		p := &preds[i]
		by[key{p.Shape, p.Variant, p.Group}] = append(by[key{p.Shape, p.Variant, p.Group}], p)
		by[key{"", p.Variant, p.Group}] = append(by[key{"", p.Variant, p.Group}], p)
	}
	var errSum float64
	var errN int
	for i := range results {
		r := &results[i]
		ps := by[key{r.Shape, r.Variant, r.Group}]
		if len(ps) == 0 {
			continue
		}
		var mids, lows, highs []*v1alpha1.Metrics
		for _, p := range ps {
			mids = append(mids, &p.Metrics)
			if p.Replicas > 0 {
				lows = append(lows, &p.Low)
				highs = append(highs, &p.High)
			}
		}
		pm := combine(mids, mean)
		r.Predicted = &pm
		if len(lows) > 0 {
			lo, hi := combine(lows, mean), combine(highs, mean)
			r.PredictedLow, r.PredictedHigh = &lo, &hi
		}
		if r.Measured == nil {
			continue
		}
		re := relativeError(&r.Measured.Metrics, &pm)
		r.RelativeError = &re
		if r.Measured.CPU >= 0.01 {
			errSum += math.Abs(re.CPU)
			errN++
		}
	}
	if errN == 0 {
		return ""
	}
	return fmt.Sprintf("%.1f%%", 100*errSum/float64(errN))
}

// relativeError is (predicted − measured) / |measured| for every metric both
// have, where measured is not zero.
func relativeError(measured, predicted *v1alpha1.Metrics) v1alpha1.Metrics {
	var out v1alpha1.Metrics
	for _, name := range v1alpha1.MetricNames {
		m, ok1 := MetricValue(measured, name)
		p, ok2 := MetricValue(predicted, name)
		if !ok1 || !ok2 || m == 0 {
			continue
		}
		setMetric(&out, name, round4((p-m)/math.Abs(m)))
	}
	if out.WakeupLatencyUs != nil {
		out.WakeupLatencyUs.Count = 0
	}
	if out.RequestLatencyUs != nil {
		out.RequestLatencyUs.Count = 0
	}
	return out
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// tCritical95 is the two-sided 95% critical value of Student's t for df
// degrees of freedom (df may be fractional, as Welch's df is).
func tCritical95(df float64) float64 {
	if !(df > 0) {
		return math.Inf(1)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975)
}

// ConfidenceHalfWidth is the half-width of the 95% confidence interval of a
// mean of n samples with sample standard deviation sd (Student's t).
func ConfidenceHalfWidth(sd float64, n int) float64 {
	if n < 2 {
		return math.Inf(1)
	}
	return tCritical95(float64(n-1)) * sd / math.Sqrt(float64(n))
}

// welch is Welch's unequal-variances t-test of two means: the two-sided p
// value and the Welch–Satterthwaite degrees of freedom. With fewer than two
// samples on a side, or no variance at all, p is NaN.
func welch(a, b candidate) (p, df float64) {
	if a.n < 2 || b.n < 2 {
		return math.NaN(), 0
	}
	va, vb := a.sd*a.sd/float64(a.n), b.sd*b.sd/float64(b.n)
	if va+vb == 0 {
		return math.NaN(), 0
	}
	t := (a.mean - b.mean) / math.Sqrt(va+vb)
	df = (va + vb) * (va + vb) / (va*va/float64(a.n-1) + vb*vb/float64(b.n-1))
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.CDF(-math.Abs(t)), df
}

type candidate struct {
	variant    string
	mean, half float64 // 95% interval: mean ± half
	sd         float64
	n          int32
	// lo, hi: a prediction's 95% interval over its seeds (interval set).
	lo, hi   float64
	interval bool
}

// BestVariant picks the best variant by the objectives, in order: the first
// objective whose best variant differs from every other variant by Welch's
// t-test at the 5% level decides. Measured results are used where present;
// with only predictions (Simulate mode), the simulator's deterministic
// values decide. Otherwise the answer is NoSignificantDifference with why.
func BestVariant(spec *v1alpha1.SchedExperimentSpec, results []v1alpha1.GroupResult) (string, string) {
	if len(spec.Objectives) == 0 {
		return "", "no objectives in the spec"
	}
	var reasons []string
	for _, o := range spec.Objectives {
		var cands []candidate
		predictedOnly := true
		for _, r := range results {
			if r.Group != o.Group {
				continue
			}
			if r.Measured != nil && r.Measured.N > 0 {
				predictedOnly = false
			}
		}
		for _, r := range results {
			if r.Group != o.Group {
				continue
			}
			switch {
			case !predictedOnly && r.Measured != nil && r.Measured.N > 0:
				m, ok := MetricValue(&r.Measured.Metrics, string(o.Metric))
				if !ok {
					continue
				}
				sd, _ := MetricValue(r.Measured.Stddev, string(o.Metric))
				half := ConfidenceHalfWidth(sd, int(r.Measured.N))
				cands = append(cands, candidate{variant: r.Variant, mean: m, half: half, sd: sd, n: r.Measured.N})
			case predictedOnly && r.Predicted != nil:
				m, ok := MetricValue(r.Predicted, string(o.Metric))
				if !ok {
					continue
				}
				c := candidate{variant: r.Variant, mean: m}
				lo, ok1 := MetricValue(r.PredictedLow, string(o.Metric))
				hi, ok2 := MetricValue(r.PredictedHigh, string(o.Metric))
				if ok1 && ok2 {
					c.lo, c.hi, c.interval = lo, hi, true
				}
				cands = append(cands, c)
			}
		}
		if len(cands) < 2 {
			reasons = append(reasons, fmt.Sprintf("%s of %s: fewer than two variants have it", o.Metric, o.Group))
			continue
		}
		sort.SliceStable(cands, func(i, j int) bool {
			if o.Goal == v1alpha1.Maximize {
				return cands[i].mean > cands[j].mean
			}
			return cands[i].mean < cands[j].mean
		})
		best := cands[0]
		if predictedOnly {
			if best.mean == cands[1].mean {
				reasons = append(reasons, fmt.Sprintf("%s of %s: predicted equal for %s and %s", o.Metric, o.Group, best.variant, cands[1].variant))
				continue
			}
			// The prediction's own 95% intervals over its seeds must be
			// apart, as measured ones must.
			apart := true
			for _, c := range cands[1:] {
				if best.interval && c.interval && best.lo <= c.hi && c.lo <= best.hi {
					apart = false
					reasons = append(reasons, fmt.Sprintf("predicted %s of %s: %s %.4g [%.4g, %.4g] and %s %.4g [%.4g, %.4g] overlap (95%% over seeds)",
						o.Metric, o.Group, best.variant, best.mean, best.lo, best.hi, c.variant, c.mean, c.lo, c.hi))
					break
				}
			}
			if !apart {
				continue
			}
			if best.interval && cands[1].interval {
				return best.variant, fmt.Sprintf("predicted %s of %s: %.4g [%.4g, %.4g] (%s) vs %.4g [%.4g, %.4g] (%s), 95%% intervals over seeds apart, by the simulator alone",
					o.Metric, o.Group, best.mean, best.lo, best.hi, best.variant, cands[1].mean, cands[1].lo, cands[1].hi, cands[1].variant)
			}
			return best.variant, fmt.Sprintf("predicted %s of %s: %.4g (%s) vs %.4g (%s), by the simulator alone",
				o.Metric, o.Group, best.mean, best.variant, cands[1].mean, cands[1].variant)
		}
		separated := true
		worstP := 0.0
		for _, c := range cands[1:] {
			p, _ := welch(best, c)
			if !(p < 0.05) {
				separated = false
				ps := "not computable (fewer than 2 samples or no variance)"
				if !math.IsNaN(p) {
					ps = fmt.Sprintf("%.2g", p)
				}
				reasons = append(reasons, fmt.Sprintf("%s of %s: %s %.4g ± %.3g and %s %.4g ± %.3g overlap: Welch's t-test p = %s (95%%, n=%d)",
					o.Metric, o.Group, best.variant, best.mean, best.half, c.variant, c.mean, c.half, ps, best.n))
				break
			}
			worstP = max(worstP, p)
		}
		if separated {
			return best.variant, fmt.Sprintf("%s of %s: %.4g ± %.3g (%s) vs next best %.4g ± %.3g (%s), Welch's t-test p = %.2g",
				o.Metric, o.Group, best.mean, best.half, best.variant, cands[1].mean, cands[1].half, cands[1].variant, worstP)
		}
	}
	return v1alpha1.NoSignificantDifference, joinReasons(reasons)
}

// PredictedResult is a prediction as a result row of its shape: the mean,
// and the 95% interval over the seeds when there were several.
func PredictedResult(p *Prediction) v1alpha1.GroupResult {
	row := v1alpha1.GroupResult{Shape: p.Shape, Variant: p.Variant, Group: p.Group, Unsupported: p.Unsupported}
	if p.Unsupported != "" {
		return row
	}
	m := p.Metrics
	row.Predicted = &m
	if p.Replicas > 1 {
		lo, hi := p.Low, p.High
		row.PredictedLow, row.PredictedHigh = &lo, &hi
	}
	return row
}

// BestPredictedVariant chooses among predictions only (Simulate mode, or
// schedlab simulate): on each node shape as BestVariant does (a variant
// wins when its interval over the seeds is apart from every other's), and
// over several shapes only a variant that wins on every one of them.
func BestPredictedVariant(spec *v1alpha1.SchedExperimentSpec, results []v1alpha1.GroupResult) (string, string) {
	if len(spec.Objectives) == 0 {
		return BestVariant(spec, results)
	}
	var shapes []string
	byShape := map[string][]v1alpha1.GroupResult{}
	for _, r := range results {
		if _, ok := byShape[r.Shape]; !ok {
			shapes = append(shapes, r.Shape)
		}
		byShape[r.Shape] = append(byShape[r.Shape], r)
	}
	if len(shapes) <= 1 {
		return BestVariant(spec, results)
	}
	winner, agree := "", true
	reasons := make([]string, 0, len(shapes))
	for i, sh := range shapes {
		b, why := BestVariant(spec, byShape[sh])
		reasons = append(reasons, sh+": "+why)
		if i == 0 {
			winner = b
		}
		agree = agree && b != "" && b != v1alpha1.NoSignificantDifference && b == winner
	}
	if !agree {
		return v1alpha1.NoSignificantDifference, "no variant wins on every node shape: " + joinReasons(reasons)
	}
	return winner, "best on every node shape: " + joinReasons(reasons)
}

func joinReasons(r []string) string {
	s := ""
	for i, x := range r {
		if i > 0 {
			s += "; "
		}
		s += x
	}
	return s
}
