package controllers

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// shapeRecorder records the node shapes the reconciler asks to predict.
type shapeRecorder struct {
	stubAnalyzer
	shapes []v1alpha1.NodeShape
}

func (a *shapeRecorder) Analyze(ctx context.Context, in AnalyzeInput) (*Analysis, error) {
	a.shapes = in.Shapes
	return a.stubAnalyzer.Analyze(ctx, in)
}

// A Simulate experiment over selected nodes predicts each distinct shape
// once, with the count of nodes of that shape: the fleet a sweep's answer
// is summed over.
func TestSimulateShapesCarryNodeCounts(t *testing.T) {
	e := testExperiment("x", true)
	e.Spec.Mode = v1alpha1.ModeSimulate
	big := readyNode("n3")
	big.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	f := newFixture(t, interceptor.Funcs{}, e, readyNode("n1"), readyNode("n2"), big)
	rec := &shapeRecorder{}
	f.r.Analyzer = rec
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range rec.shapes {
		n := int32(0)
		if s.Count != nil {
			n = *s.Count
		}
		got = append(got, fmt.Sprintf("%s × %d", v1alpha1.ShapeName(s.CPUs, s.Scheduler), n))
	}
	if diff := cmp.Diff([]string{"4cpu-EEVDF × 2", "8cpu-EEVDF × 1"}, got); diff != "" {
		t.Errorf("shapes (-want +got):\n%s", diff)
	}
}
