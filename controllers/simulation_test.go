package controllers

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// laneAnalyzer blocks every simulation (no runs) until release closes and
// answers a measured run's analysis at once.
type laneAnalyzer struct{ release chan struct{} }

func (laneAnalyzer) ShapeForKernel(int32, string) v1alpha1.NodeShape { return v1alpha1.NodeShape{} }
func (laneAnalyzer) ShapeFromCapabilities(*v1alpha1.NodeCapabilities) v1alpha1.NodeShape {
	return v1alpha1.NodeShape{}
}
func (a laneAnalyzer) Analyze(ctx context.Context, in AnalyzeInput) (*Analysis, error) {
	if len(in.Runs) == 0 {
		select {
		case <-a.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &Analysis{}, nil
}

// A finished Measure run's analysis is not queued behind simulations: with
// one worker busy with a long simulation and another simulation queued, it
// is done at once.
func TestMeasuredAnalysisNotBehindSimulations(t *testing.T) {
	an := laneAnalyzer{release: make(chan struct{})}
	defer close(an.release)
	p := NewSimulationPool(an, 1, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	exp := func(name string) *v1alpha1.SchedExperiment {
		return &v1alpha1.SchedExperiment{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("u-" + name), Generation: 1}}
	}
	spec := &v1alpha1.SchedExperimentSpec{}
	p.Analyze(exp("big-1"), "simulate", AnalyzeInput{Spec: spec})
	p.Analyze(exp("big-2"), "simulate", AnalyzeInput{Spec: spec})
	p.Analyze(exp("small"), measuredKind, AnalyzeInput{Spec: spec, Runs: []v1alpha1.NodeRun{{}}})
	select {
	case ev := <-p.Events():
		if ev.Object.GetName() != "small" {
			t.Fatalf("%s finished first, want the measured run's analysis", ev.Object.GetName())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the measured run's analysis waited behind the simulations")
	}
	if _, _, ok := p.Analyze(exp("big-1"), "simulate", AnalyzeInput{Spec: spec}); ok {
		t.Errorf("the blocked simulation finished")
	}
}
