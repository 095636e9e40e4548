package experiment

import (
	"strings"
	"testing"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// A prediction-only best variant needs intervals over the seeds that are
// apart, shape by shape, and over several shapes the same winner on each;
// schedlab simulate's report carries the intervals it was chosen on.
func TestBestPredictedVariant(t *testing.T) {
	spec := &v1alpha1.SchedExperimentSpec{Objectives: []v1alpha1.Objective{{Metric: "cpu", Group: "g", Goal: v1alpha1.Maximize}}}
	pred := func(shape, variant string, mean, lo, hi float64) Prediction {
		return Prediction{Shape: shape, Variant: variant, Group: "g", Tasks: 1, Replicas: 5,
			Metrics: v1alpha1.Metrics{CPU: mean}, Low: v1alpha1.Metrics{CPU: lo}, High: v1alpha1.Metrics{CPU: hi}}
	}
	cases := []struct {
		name   string
		preds  []Prediction
		best   string
		reason string
	}{
		{"apart", []Prediction{pred("2cpu", "a", 1.0, 0.95, 1.05), pred("2cpu", "b", 0.5, 0.45, 0.55)}, "a", "[0.95, 1.05]"},
		{"means apart, intervals overlap", []Prediction{pred("2cpu", "a", 1.0, 0.7, 1.3), pred("2cpu", "b", 0.9, 0.6, 1.2)}, v1alpha1.NoSignificantDifference, "overlap"},
		{"same winner on two shapes", []Prediction{pred("2cpu", "a", 1.0, 0.95, 1.05), pred("2cpu", "b", 0.5, 0.45, 0.55), pred("8cpu", "a", 4, 3.9, 4.1), pred("8cpu", "b", 3, 2.9, 3.1)}, "a", "best on every node shape"},
		{"winners differ by shape", []Prediction{pred("2cpu", "a", 1.0, 0.95, 1.05), pred("2cpu", "b", 0.5, 0.45, 0.55), pred("8cpu", "a", 3, 2.9, 3.1), pred("8cpu", "b", 4, 3.9, 4.1)}, v1alpha1.NoSignificantDifference, "no variant wins on every node shape"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := SimulationReport(spec, c.preds)
			if r.BestVariant != c.best || !strings.Contains(r.BestReason, c.reason) {
				t.Errorf("best %q (%s), want %q with %q", r.BestVariant, r.BestReason, c.best, c.reason)
			}
			for _, v := range r.Variants {
				for _, g := range v.Groups {
					if g.PredictedLow == nil || g.PredictedHigh == nil || g.PredictedLow.CPU > g.Predicted.CPU || g.PredictedHigh.CPU < g.Predicted.CPU {
						t.Errorf("%s/%s: interval %+v..%+v around %+v", v.Name, g.Name, g.PredictedLow, g.PredictedHigh, g.Predicted)
					}
				}
			}
		})
	}
}
