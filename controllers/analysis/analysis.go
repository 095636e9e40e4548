package analysis

import (
	"context"
	"math"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/controllers"
	"github.com/schedlab/schedlab/internal/experiment"
)

// Analyzer implements controllers.Analyzer with internal/experiment.
type Analyzer struct {
	// Options tune the simulator runs (e.g. a shorter simulated window).
	Options experiment.PredictOptions
}

var _ controllers.Analyzer = Analyzer{}

// ShapeFromCapabilities implements controllers.Analyzer.
func (Analyzer) ShapeFromCapabilities(c *v1alpha1.NodeCapabilities) v1alpha1.NodeShape {
	return experiment.ShapeFromCapabilities(c)
}

// ShapeForKernel implements controllers.Analyzer.
func (Analyzer) ShapeForKernel(cpus int32, kernelVersion string) v1alpha1.NodeShape {
	return experiment.ShapeForKernel(cpus, kernelVersion)
}

// Analyze implements controllers.Analyzer. With runs, the rows are the
// measured ones over all nodes, and their predictions are weighted by the
// number of measured nodes of each shape; without, there is one predicted
// row per shape × variant × group.
func (a Analyzer) Analyze(ctx context.Context, in controllers.AnalyzeInput) (*controllers.Analysis, error) {
	sp := in.Spec.DeepCopy()
	sp.Default()
	shapes, runs, nodeShapes := in.Shapes, in.Runs, in.NodeShapes
	opts := a.Options
	if len(in.Calibration) > 0 {
		opts.Calibration = experiment.CalibrationMap(in.Calibration)
	}
	// A shape whose measured nodes ran the agent's calibration window is
	// predicted with their constants (the median over the shape's nodes;
	// the rows aggregate the nodes anyway), the others with the
	// simulator's defaults.
	// The CPU other processes took in a node's windows is its background
	// load (experiment.WithWindowNoise).
	cals := map[string][]*v1alpha1.NodeCalibration{}
	// The threads of other processes in a node's windows run as tasks
	// beside the workload (experiment.ForeignTasks), pooled over the
	// shape's nodes.
	windows := map[string][][]v1alpha1.WindowResult{}
	for i := range runs {
		st := &runs[i].Status
		var cpus int32
		if st.Capabilities != nil {
			cpus = st.Capabilities.CPUs
		}
		// The host pauses its windows' hogs saw are pooled over the
		// shape's nodes below (experiment.ShapeCalibration).
		c := experiment.WithWindowNoise(st.Calibration, st.Windows, cpus)
		if c != nil || len(st.Windows) > 0 {
			name := nodeShapes[runs[i].Spec.NodeName]
			if name == "" {
				name = nodeShape(&runs[i], shapes)
			}
			cals[name] = append(cals[name], c)
			windows[name] = append(windows[name], st.Windows)
		}
	}
	var preds []experiment.Prediction
	for _, shape := range shapes {
		cal, _ := experiment.ShapeCalibration(cals[experiment.ShapeName(shape)], windows[experiment.ShapeName(shape)])
		s, o := experiment.WithNodeCalibration(shape, cal, opts)
		o.Foreign = experiment.ForeignTasks(shape.CPUs, sp.Duration.Duration, windows[experiment.ShapeName(shape)]...)
		// Each measured window is predicted with the grid phases and the
		// timer path it met (its replicas' share of the seeds).
		o.GridPhases, o.TimerShifts = experiment.WindowConditions(cal, shape.Constants, windows[experiment.ShapeName(shape)]...)
		p, err := experiment.Predict(sp, []v1alpha1.NodeShape{s}, o)
		if err != nil {
			return nil, err
		}
		preds = append(preds, p...)
	}
	out := &controllers.Analysis{}
	if len(runs) == 0 {
		for i := range preds {
			out.Results = append(out.Results, experiment.PredictedResult(&preds[i]))
		}
		out.BestVariant, out.BestVariantReason = experiment.BestPredictedVariant(sp, out.Results)
		if sp.Sweep != nil {
			sw, err := experiment.Plan(ctx, sp, shapes, experiment.SweepOptions{PredictOptions: opts})
			if err != nil {
				return nil, err
			}
			out.Sweep = sw
		}
		return out, nil
	}

	// One prediction per measured node, so that Compare weights the
	// shapes as the fleet measured them.
	byShape := map[string][]experiment.Prediction{}
	for _, p := range preds {
		if p.Unsupported == "" {
			byShape[p.Shape] = append(byShape[p.Shape], p)
		}
	}
	var weighted []experiment.Prediction
	for _, nr := range runs {
		shape := nodeShapes[nr.Spec.NodeName]
		if shape == "" {
			shape = nodeShape(&nr, shapes)
		}
		weighted = append(weighted, byShape[shape]...)
	}
	out.Results = experiment.Aggregate(sp, runs)
	out.PredictionError = experiment.Compare(out.Results, weighted)
	out.BestVariant, out.BestVariantReason = experiment.BestVariant(sp, out.Results)
	for _, r := range out.Results {
		if r.RelativeError != nil && r.Measured != nil && r.Measured.CPU >= 0.01 {
			out.RelativeErrors = append(out.RelativeErrors, math.Abs(r.RelativeError.CPU))
		}
	}
	return out, nil
}

// nodeShape is the shape name of a run's node: what its agent detected, else
// the only shape given.
func nodeShape(nr *v1alpha1.NodeRun, shapes []v1alpha1.NodeShape) string {
	if c := nr.Status.Capabilities; c != nil && c.CPUs > 0 {
		return experiment.ShapeName(experiment.ShapeFromCapabilities(c))
	}
	if len(shapes) == 1 {
		return experiment.ShapeName(shapes[0])
	}
	return ""
}
