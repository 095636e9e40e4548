package experiment

import (
	"fmt"
	"math"
	"strconv"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// Effects compares variant with baseline on every objective, from measured
// results: both means, the relative change, the 95% Welch interval of
// variant − baseline, and whether the interval lies wholly on the goal's
// side of zero. Objectives without measurements on both sides are left out.
func Effects(spec *v1alpha1.SchedExperimentSpec, results []v1alpha1.GroupResult, variant, baseline string) []v1alpha1.Effect {
	find := func(v, g string) *v1alpha1.MeasuredMetrics {
		for i := range results {
			if results[i].Variant == v && results[i].Group == g && results[i].Shape == "" && results[i].Measured != nil && results[i].Measured.N > 0 {
				return results[i].Measured
			}
		}
		return nil
	}
	var out []v1alpha1.Effect
	for _, o := range spec.Objectives {
		a, b := find(variant, o.Group), find(baseline, o.Group)
		if a == nil || b == nil {
			continue
		}
		ma, ok1 := MetricValue(&a.Metrics, string(o.Metric))
		mb, ok2 := MetricValue(&b.Metrics, string(o.Metric))
		if !ok1 || !ok2 {
			continue
		}
		sa, _ := MetricValue(a.Stddev, string(o.Metric))
		sb, _ := MetricValue(b.Stddev, string(o.Metric))
		e := v1alpha1.Effect{Metric: o.Metric, Group: o.Group, Goal: o.Goal, Baseline: effectNum(mb), Variant: effectNum(ma)}
		if mb != 0 {
			e.Change = fmt.Sprintf("%+.1f%%", 100*(ma-mb)/math.Abs(mb))
		}
		lo, hi, ok := welch95(ma, sa, int(a.N), mb, sb, int(b.N))
		if ok {
			e.Interval = fmt.Sprintf("[%s, %s]", effectNum(lo), effectNum(hi))
			e.Significant = (o.Goal == v1alpha1.Minimize && hi < 0) || (o.Goal == v1alpha1.Maximize && lo > 0)
		}
		out = append(out, e)
	}
	return out
}

// welch95 is the 95% interval of mean a − mean b (Welch's t, with the
// Welch–Satterthwaite degrees of freedom). It needs two samples a side.
func welch95(ma, sa float64, na int, mb, sb float64, nb int) (lo, hi float64, ok bool) {
	if na < 2 || nb < 2 {
		return 0, 0, false
	}
	va, vb := sa*sa/float64(na), sb*sb/float64(nb)
	se := math.Sqrt(va + vb)
	df := 1
	if va+vb > 0 {
		d := (va + vb) * (va + vb) / (va*va/float64(na-1) + vb*vb/float64(nb-1))
		df = max(1, int(math.Floor(d)))
	}
	half := tCritical95(float64(df)) * se
	d := ma - mb
	return d - half, d + half, true
}

func effectNum(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

// Recommend is the experiment's recommendation: the best variant, when one
// won with significance, with its knobs and its effect against the
// baseline (the first variant; the second when the first won).
func Recommend(spec *v1alpha1.SchedExperimentSpec, results []v1alpha1.GroupResult, best string, gen int64) *v1alpha1.Recommendation {
	if best == "" || best == v1alpha1.NoSignificantDifference || len(spec.Variants) < 2 {
		return nil
	}
	var v *v1alpha1.Variant
	for i := range spec.Variants {
		if spec.Variants[i].Name == best {
			v = &spec.Variants[i]
		}
	}
	if v == nil {
		return nil
	}
	base := spec.Variants[0].Name
	if base == best {
		base = spec.Variants[1].Name
	}
	return &v1alpha1.Recommendation{
		Variant: best, Baseline: base, Knobs: *v.Knobs.DeepCopy(),
		Effects: Effects(spec, results, best, base), Generation: gen,
	}
}
