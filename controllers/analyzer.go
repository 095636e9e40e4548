package controllers

import (
	"context"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// Analyzer turns a spec, node shapes and measurements into the results of
// the status. The production implementation (controllers/analysis) is the
// one translation in internal/experiment: simulator predictions per shape,
// aggregation over nodes × repetitions, comparison and the best variant.
// Tests may stub it to exercise error paths.
type Analyzer interface {
	// ShapeForKernel is the simulator's shape of a node with cpus CPUs
	// running kernelVersion.
	ShapeForKernel(cpus int32, kernelVersion string) v1alpha1.NodeShape
	// Analyze predicts for shapes and, when runs are given, aggregates the
	// measurements of runs and compares them with the predictions. With no
	// runs (mode Simulate) the results carry predictions only. nodeShapes
	// names the shape of each run's node.
	Analyze(ctx context.Context, spec *v1alpha1.SchedExperimentSpec, shapes []v1alpha1.NodeShape, runs []v1alpha1.NodeRun, nodeShapes map[string]string) (*Analysis, error)
}

// Analysis is what Analyze found.
type Analysis struct {
	Results           []v1alpha1.GroupResult
	PredictionError   string
	BestVariant       string
	BestVariantReason string
	// Sweep is the answer of spec.sweep (mode Simulate), nil without one.
	Sweep *v1alpha1.SweepStatus
	// RelativeErrors are the relative errors of predicted cpu per result row
	// with a measurement, for the prediction error metric.
	RelativeErrors []float64
}
