package experiment_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/controllers/analysis"
	"github.com/schedlab/schedlab/internal/experiment"
)

// TestCapacityPlanSample applies config/samples/capacity-plan.yaml and
// waits for its answer in status.sweep: per shape and over the fleet, and
// the same as `schedlab plan` computes with the same simulator options.
func TestCapacityPlanSample(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	path := filepath.Join("..", "..", "..", "config", "samples", "capacity-plan.yaml")
	exp, err := experiment.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// Apply the manifest as written (as kubectl would): a typed object
	// would re-encode 500us as Go's "500µs".
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	name := h.prefix + "-plan"
	u.SetName(name)
	if err := k8s.Create(h.ctx, u); err != nil {
		t.Fatalf("applying %s: %v", path, err)
	}
	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSimulated, 10*time.Minute)
	sw := e.Status.Sweep
	points := int(exp.Spec.Sweep.PointCount())
	if want := 2 * len(exp.Spec.Variants); sw == nil || len(sw.Shapes) != want {
		t.Fatalf("status.sweep %+v, want %d curves (2 shapes × variants)", sw, want)
	}
	for _, s := range sw.Shapes {
		if len(s.Points) != points || s.Reason == "" {
			t.Errorf("%s: %d points, reason %q; want %d points and a reason", s.Shape, len(s.Points), s.Reason, points)
		}
	}
	if len(sw.Fleet) != len(exp.Spec.Variants) || sw.Fleet[0].Nodes != 50 || sw.Fleet[0].Parameter != "web.replicas" {
		t.Fatalf("fleet %+v, want web.replicas over 50 nodes for each variant", sw.Fleet)
	}
	an, ok := h.rec.Analyzer.(analysis.Analyzer)
	if !ok {
		t.Fatalf("the harness's analyzer is a %T", h.rec.Analyzer)
	}
	local, err := experiment.Plan(context.Background(), &exp.Spec, exp.Spec.Simulation.Nodes, experiment.SweepOptions{PredictOptions: an.Options})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(local, sw); diff != "" {
		t.Errorf("status.sweep differs from the local plan (-local +status):\n%s", diff)
	}
}
