package promote

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func completed(best string) *v1alpha1.SchedExperiment {
	m := func(miss, sd float64, n int32) *v1alpha1.MeasuredMetrics {
		return &v1alpha1.MeasuredMetrics{Metrics: v1alpha1.Metrics{DeadlineMissRatio: &miss}, Stddev: &v1alpha1.Metrics{DeadlineMissRatio: &sd}, N: n}
	}
	return &v1alpha1.SchedExperiment{
		ObjectMeta: metav1.ObjectMeta{Name: "desktop", Generation: 2},
		Spec: v1alpha1.SchedExperimentSpec{
			Mode:         v1alpha1.ModeMeasure,
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"schedlab.io/pool": "lab"}},
			Duration:     metav1.Duration{Duration: 10 * time.Second},
			Variants: []v1alpha1.Variant{
				{Name: "autogroup-on", Knobs: v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupEnabled}},
				{Name: "autogroup-off", Knobs: v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupDisabled}},
			},
			Objectives: []v1alpha1.Objective{{Metric: "deadlineMissRatio", Group: "video", Goal: v1alpha1.Minimize}},
		},
		Status: v1alpha1.SchedExperimentStatus{
			Conditions:        []metav1.Condition{{Type: v1alpha1.ConditionCompleted, Status: metav1.ConditionTrue, ObservedGeneration: 2}},
			ResultsGeneration: 2,
			BestVariant:       best,
			BestVariantReason: "deadlineMissRatio of video: apart",
			Results: []v1alpha1.GroupResult{
				{Variant: "autogroup-on", Group: "video", Measured: m(0.40, 0.02, 4)},
				{Variant: "autogroup-off", Group: "video", Measured: m(0.10, 0.02, 4)},
			},
		},
	}
}

func TestPromoteBestVariant(t *testing.T) {
	src, err := FromExperiment(completed("autogroup-off"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Profile(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "desktop-autogroup-off" || p.Spec.Knobs.Autogroup != v1alpha1.AutogroupDisabled {
		t.Fatalf("profile: %+v", p)
	}
	want := &v1alpha1.Provenance{Experiment: "desktop", Generation: 2, Variant: "autogroup-off", Baseline: "autogroup-on",
		Reason: "deadlineMissRatio of video: apart",
		Effects: []v1alpha1.Effect{{Metric: "deadlineMissRatio", Group: "video", Goal: v1alpha1.Minimize,
			Baseline: "0.4", Variant: "0.1", Change: "-75.0%", Interval: "[-0.3346, -0.2654]", Significant: true}}}
	if diff := cmp.Diff(want, p.Spec.Provenance); diff != "" {
		t.Fatalf("provenance (-want +got):\n%s", diff)
	}
	b, err := yaml.Marshal(Manifest(p))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "status") || strings.Contains(string(b), "creationTimestamp") {
		t.Fatalf("manifest carries server fields:\n%s", b)
	}
}

func TestPromoteRefusesWithoutSignificance(t *testing.T) {
	src, err := FromExperiment(completed(v1alpha1.NoSignificantDifference))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Profile(src, Options{}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("want a refusal naming --force, got %v", err)
	}
	_, err = Profile(src, Options{Variant: "autogroup-off"})
	if err == nil || !strings.Contains(err.Error(), "not significantly better") || !strings.Contains(err.Error(), "[-0.3346, -0.2654]") {
		t.Fatalf("want a refusal with the measured interval, got %v", err)
	}
	p, err := Profile(src, Options{Variant: "autogroup-off", Force: true, Name: "forced"})
	if err != nil || !p.Spec.Provenance.Forced || p.Name != "forced" {
		t.Fatalf("forced: %+v %v", p, err)
	}
	if _, err := Profile(src, Options{Variant: "nope", Force: true}); err == nil || !strings.Contains(err.Error(), "autogroup-on, autogroup-off") {
		t.Fatalf("unknown variant: %v", err)
	}
}

func TestPromoteNeedsACompletedExperiment(t *testing.T) {
	e := completed("autogroup-off")
	e.Generation = 3
	if _, err := FromExperiment(e); err == nil || !strings.Contains(err.Error(), "kubectl wait") {
		t.Fatalf("want a refusal for a generation not completed, got %v", err)
	}
}
