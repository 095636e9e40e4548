package experiment

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func window(variant string, rep int32, cpu map[string]float64, p99 map[string]float64) v1alpha1.WindowResult {
	w := v1alpha1.WindowResult{Variant: variant, Repetition: rep}
	for _, g := range []string{"a", "b"} {
		m := v1alpha1.Metrics{CPU: cpu[g]}
		if v, ok := p99[g]; ok {
			m.WakeupLatencyUs = &v1alpha1.LatencySummary{P99: v, Count: 100}
		}
		w.Groups = append(w.Groups, v1alpha1.GroupMeasurement{Name: g, Metrics: m})
	}
	return w
}

func spec2() *v1alpha1.SchedExperimentSpec {
	return &v1alpha1.SchedExperimentSpec{
		Duration: metav1.Duration{},
		Variants: []v1alpha1.Variant{{Name: "x"}, {Name: "y"}},
		Workload: v1alpha1.Workload{Groups: []v1alpha1.Group{{Name: "a"}, {Name: "b"}}},
		Objectives: []v1alpha1.Objective{
			{Metric: "wakeupLatencyUs.p99", Group: "a", Goal: v1alpha1.Minimize},
		},
	}
}

func TestAggregateMeanStddevN(t *testing.T) {
	spec := spec2()
	runs := []v1alpha1.NodeRun{
		{Spec: v1alpha1.NodeRunSpec{NodeName: "n1"}, Status: v1alpha1.NodeRunStatus{Windows: []v1alpha1.WindowResult{
			window("x", 0, map[string]float64{"a": 1, "b": 0.5}, map[string]float64{"a": 100}),
			window("y", 0, map[string]float64{"a": 2, "b": 0.5}, map[string]float64{"a": 10}),
			{Variant: "x", Repetition: 1, Unsupported: "ignored: a later window"},
		}}},
		{Spec: v1alpha1.NodeRunSpec{NodeName: "n2"}, Status: v1alpha1.NodeRunStatus{Windows: []v1alpha1.WindowResult{
			window("x", 0, map[string]float64{"a": 3, "b": 0.5}, map[string]float64{"a": 120}),
			window("y", 0, map[string]float64{"a": 2, "b": 0.5}, map[string]float64{"a": 12}),
		}}},
		{Spec: v1alpha1.NodeRunSpec{NodeName: "n3"}, Status: v1alpha1.NodeRunStatus{Windows: []v1alpha1.WindowResult{
			window("x", 0, map[string]float64{"a": 2, "b": 0.5}, map[string]float64{"a": 110}),
			window("y", 0, map[string]float64{"a": 2, "b": 0.5}, map[string]float64{"a": 11}),
		}}},
	}
	res := Aggregate(spec, runs)
	if len(res) != 4 {
		t.Fatalf("got %d rows, want 4", len(res))
	}
	xa := res[0]
	if xa.Variant != "x" || xa.Group != "a" || xa.Measured.N != 3 || xa.Measured.CPU != 2 {
		t.Fatalf("x/a = %+v", xa.Measured)
	}
	if d := xa.Measured.Stddev.CPU - 1; d > 1e-9 || d < -1e-9 {
		t.Errorf("stddev cpu = %v, want 1 (samples 1, 3, 2)", xa.Measured.Stddev.CPU)
	}
	if xa.Measured.WakeupLatencyUs == nil || xa.Measured.WakeupLatencyUs.P99 != 110 {
		t.Errorf("p99 mean = %+v, want 110", xa.Measured.WakeupLatencyUs)
	}
	// y's latency (10, 12, 11) is far below x's (100, 120, 110): the 95%
	// intervals (t = 4.303 for n = 3) are apart, so y wins beyond noise.
	best, why := BestVariant(spec, res)
	if best != "y" {
		t.Fatalf("best = %q (%s), want y", best, why)
	}
}

func TestBestVariantNeedsSeparatedIntervals(t *testing.T) {
	spec := spec2()
	rows := []v1alpha1.GroupResult{
		{Variant: "x", Group: "a", Measured: &v1alpha1.MeasuredMetrics{N: 3,
			Metrics: v1alpha1.Metrics{WakeupLatencyUs: &v1alpha1.LatencySummary{P99: 100}},
			Stddev:  &v1alpha1.Metrics{WakeupLatencyUs: &v1alpha1.LatencySummary{P99: 30}}}},
		{Variant: "y", Group: "a", Measured: &v1alpha1.MeasuredMetrics{N: 3,
			Metrics: v1alpha1.Metrics{WakeupLatencyUs: &v1alpha1.LatencySummary{P99: 90}},
			Stddev:  &v1alpha1.Metrics{WakeupLatencyUs: &v1alpha1.LatencySummary{P99: 30}}}},
	}
	best, why := BestVariant(spec, rows)
	if best != v1alpha1.NoSignificantDifference || !strings.Contains(why, "overlap") {
		t.Fatalf("best = %q (%s), want no significant difference", best, why)
	}
	// One sample each: no interval can be computed, so no winner is claimed.
	rows[0].Measured.N, rows[1].Measured.N = 1, 1
	if best, _ := BestVariant(spec, rows); best != v1alpha1.NoSignificantDifference {
		t.Fatalf("n=1 picked %q", best)
	}
}

func TestCompareRelativeError(t *testing.T) {
	rows := []v1alpha1.GroupResult{{Variant: "x", Group: "a", Measured: &v1alpha1.MeasuredMetrics{N: 1, Metrics: v1alpha1.Metrics{CPU: 0.5}}}}
	preds := []Prediction{
		{Shape: "2cpu-EEVDF", Variant: "x", Group: "a", Metrics: v1alpha1.Metrics{CPU: 0.6}},
		{Shape: "4cpu-EEVDF", Variant: "x", Group: "a", Metrics: v1alpha1.Metrics{CPU: 0.4}},
		{Shape: "4cpu-EEVDF", Variant: "x", Group: "a", Metrics: v1alpha1.Metrics{CPU: 0.4}},
	}
	got := Compare(rows, preds)
	// Predictions are weighted by how many were passed: (0.6+0.4+0.4)/3.
	if d := rows[0].Predicted.CPU - 1.4/3; d > 1e-9 || d < -1e-9 {
		t.Fatalf("predicted = %v", rows[0].Predicted.CPU)
	}
	if diff := cmp.Diff("6.7%", got); diff != "" {
		t.Errorf("prediction error (-want +got):\n%s", diff)
	}
}

// The Student-t quantiles come from gonum's distribution: they match the
// printed table (df 1, 4, 30) and tend to the normal's 1.96.
func TestTCritical95(t *testing.T) {
	for df, want := range map[float64]float64{1: 12.706, 4: 2.776, 30: 2.042, 1e6: 1.960} {
		if got := tCritical95(df); math.Abs(got-want) > 0.0005 {
			t.Errorf("t(0.975, %g) = %.4f, want %.3f", df, got, want)
		}
	}
	if !math.IsInf(tCritical95(0), 1) {
		t.Errorf("df 0 must give an infinite interval")
	}
}

// Welch's t-test on the first example of its Wikipedia article (two samples
// of 15 with unequal variances): t = -2.46, df = 24.99, p = 0.021.
func TestWelch(t *testing.T) {
	a := []float64{27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4}
	b := []float64{27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4}
	ca := candidate{mean: mean(a), sd: stddev(a), n: int32(len(a))}
	cb := candidate{mean: mean(b), sd: stddev(b), n: int32(len(b))}
	p, df := welch(ca, cb)
	if math.Abs(p-0.021) > 0.001 || math.Abs(df-24.99) > 0.02 {
		t.Errorf("Welch p = %.4f df = %.3f, want 0.021 and 24.99", p, df)
	}
	if p, _ := welch(ca, candidate{mean: 1, n: 1}); !math.IsNaN(p) {
		t.Errorf("n = 1 gave p = %v, want NaN", p)
	}
}
