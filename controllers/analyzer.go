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
	// ShapeFromCapabilities is the simulator's shape of a node as its
	// agent detected it.
	ShapeFromCapabilities(c *v1alpha1.NodeCapabilities) v1alpha1.NodeShape
	// Analyze predicts for the shapes and, when runs are given, aggregates
	// their measurements and compares them with the predictions. With no
	// runs (mode Simulate) the results carry predictions only.
	Analyze(ctx context.Context, in AnalyzeInput) (*Analysis, error)
}

// AnalyzeInput is what Analyze works on.
type AnalyzeInput struct {
	Spec   *v1alpha1.SchedExperimentSpec
	Shapes []v1alpha1.NodeShape
	// Runs are the measured NodeRuns (none in mode Simulate).
	Runs []v1alpha1.NodeRun
	// NodeShapes names the shape of each run's node.
	NodeShapes map[string]string
	// Calibration of the simulator per shape, where one is stored.
	Calibration []v1alpha1.ShapeCalibration
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
