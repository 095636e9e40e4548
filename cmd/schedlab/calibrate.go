package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
	"github.com/schedlab/schedlab/internal/simengine"
)

var simengineZero simengine.Calibration

func init() {
	register(command{name: "calibrate", summary: "fit the simulator's overheads for a node shape to measurements of 'schedlab run'", run: runCalibrate})
}

// repeated is a flag that may be given more than once.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func runCalibrate(args []string) int {
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	var files, measured repeated
	fs.Var(&files, "f", "SchedExperiment manifest that was run (repeat with --measured for more experiments)")
	fs.Var(&measured, "measured", "JSON report of 'schedlab run -f … -o json' (or --report DIR/report.json) for the -f of the same position")
	outFile := fs.String("o", "", "calibration file to write (entries for other shapes in it are kept); read it with 'schedlab plan --calibration'")
	format := fs.String("output", "table", "what to print: table or json")
	duration := fs.Duration("duration", 0, fmt.Sprintf("simulated window of each candidate (default %s)", experiment.DefaultSweepWindow))
	seed := fs.Int64("seed", -1, "simulator seed (overrides spec.simulation.seed)")
	cmFile := fs.String("configmap", "", "also write the fit as a ConfigMap manifest to this file, for 'kubectl apply -f' (the controller reads it for the shape's predictions)")
	cmNamespace := fs.String("namespace", "schedlab-system", "namespace of the ConfigMap: the operator's")
	check := fs.String("check", "", "calibration file to check instead of fitting: print the error of the measurements without and with its calibration for the shape")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "Usage: schedlab calibrate -f EXPERIMENT.yaml --measured RUN.json [-f … --measured …] [-o CALIBRATION.json] [--output table|json]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opts := experiment.CalibrateOptions{Duration: *duration}
	if *seed >= 0 {
		s := uint64(*seed)
		opts.Seed = &s
	}
	out := calibrateOutputs{file: *outFile, configMap: *cmFile, namespace: *cmNamespace, format: *format}
	if err := calibrate(ctx, os.Stdout, files, measured, out, *check, opts); err != nil {
		fmt.Fprintln(os.Stderr, "schedlab calibrate:", err)
		return 1
	}
	return 0
}

// CalibrateOutput is what schedlab calibrate prints with --output json.
type CalibrateOutput struct {
	Fit   *experiment.CalibrationFit `json:"fit"`
	Saved *v1alpha1.ShapeCalibration `json:"saved"`
}

// calibrateOutputs says where a fit goes.
type calibrateOutputs struct {
	file, configMap, namespace, format string
}

func calibrate(ctx context.Context, w io.Writer, files, measured []string, out calibrateOutputs, check string, opts experiment.CalibrateOptions) error {
	outFile, format := out.file, out.format
	if len(files) == 0 || len(files) != len(measured) {
		return fmt.Errorf("give -f EXPERIMENT.yaml and --measured RUN.json in pairs (%d -f, %d --measured)", len(files), len(measured))
	}
	if format != "table" && format != "json" {
		return fmt.Errorf("--output %q: use table or json", format)
	}
	var data []experiment.CalibrationData
	var shape v1alpha1.NodeShape
	for i, f := range files {
		exp, err := experiment.Load(f)
		if err != nil {
			return err
		}
		raw, err := os.ReadFile(measured[i])
		if err != nil {
			return err
		}
		var rep experiment.Report
		if err := json.Unmarshal(raw, &rep); err != nil {
			return fmt.Errorf("%s: not a 'schedlab run -o json' report: %w", measured[i], err)
		}
		rows, s, err := experiment.ResultsFromReport(&rep)
		if err != nil {
			return fmt.Errorf("%s: %w", measured[i], err)
		}
		if i > 0 && experiment.ShapeName(s) != experiment.ShapeName(shape) {
			return fmt.Errorf("%s was measured on %s, %s on %s: calibrate one node shape at a time",
				measured[i], experiment.ShapeName(s), measured[0], experiment.ShapeName(shape))
		}
		shape = s
		data = append(data, experiment.CalibrationData{Spec: &exp.Spec, Measured: rows})
	}
	if check != "" {
		return checkCalibration(ctx, w, shape, data, check, opts)
	}
	start := time.Now()
	fit, err := experiment.Calibrate(ctx, shape, data, opts)
	if err != nil {
		return err
	}
	saved := fit.Status()
	if outFile != "" {
		if err := experiment.WriteCalibrationFile(outFile, []v1alpha1.ShapeCalibration{saved}); err != nil {
			return err
		}
	}
	if out.configMap != "" {
		if err := writeCalibrationConfigMap(out.configMap, out.namespace, saved); err != nil {
			return err
		}
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(CalibrateOutput{Fit: fit, Saved: &saved})
	}
	c := fit.Calibration
	fmt.Fprintf(w, "%s: calibrated from %d experiment(s), %d measured row × metric pairs, %d candidate calibrations simulated in %s\n\n",
		fit.Shape, len(data), fit.Samples, fit.Evaluations, time.Since(start).Round(100*time.Millisecond))
	fmt.Fprintf(w, "  timer overhead     %8.1f us\n", float64(c.TimerOverheadNs)/1e3)
	fmt.Fprintf(w, "  wake-up overhead   %8.1f us\n", float64(c.WakeupOverheadNs)/1e3)
	fmt.Fprintf(w, "  context switch     %8.1f us\n", float64(c.CtxSwitchNs)/1e3)
	fmt.Fprintf(w, "  background load    %8.1f %%\n\n", 100*c.BackgroundLoad)
	fmt.Fprintf(w, "prediction error (mean |relative|, cpu, wake-up latency p50/p99/mean, ops/s): %.1f%% before, %.1f%% after\n",
		100*fit.ErrorBefore, 100*fit.ErrorAfter)
	fmt.Fprintf(w, "prediction error of cpu alone:                                           %.1f%% before, %.1f%% after\n",
		100*fit.CPUErrorBefore, 100*fit.CPUErrorAfter)
	if outFile != "" {
		fmt.Fprintf(w, "\nwritten to %s: use it with 'schedlab plan --calibration %s'\n", outFile, outFile)
	}
	if out.configMap != "" {
		fmt.Fprintf(w, "ConfigMap manifest written to %s: 'kubectl apply -f %s' and the controller uses the fit for %s\n", out.configMap, out.configMap, fit.Shape)
	}
	return nil
}

// checkCalibration prints the prediction error of measurements without and
// with a stored calibration: the test of a calibration on runs it was not
// fitted to.
func checkCalibration(ctx context.Context, w io.Writer, shape v1alpha1.NodeShape, data []experiment.CalibrationData, file string, opts experiment.CalibrateOptions) error {
	cf, err := experiment.LoadCalibrationFile(file)
	if err != nil {
		return err
	}
	name := experiment.ShapeName(shape)
	cal, ok := experiment.CalibrationMap(cf.Shapes)[name]
	if !ok {
		return fmt.Errorf("%s has no calibration for %s", file, name)
	}
	before, err := experiment.CalibrationError(ctx, shape, data, simengineZero, opts)
	if err != nil {
		return err
	}
	after, err := experiment.CalibrationError(ctx, shape, data, cal, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s, %d row × metric pairs: prediction error %.1f%% without calibration, %.1f%% with %s (cpu alone: %.1f%% -> %.1f%%)\n",
		name, after.Samples, 100*before.Mean, 100*after.Mean, file, 100*before.CPU, 100*after.CPU)
	return nil
}

// writeCalibrationConfigMap writes the ConfigMap the controller reads a
// shape's calibration from.
func writeCalibrationConfigMap(path, namespace string, c v1alpha1.ShapeCalibration) error {
	data, err := experiment.CalibrationConfigMapData(c)
	if err != nil {
		return err
	}
	cm := corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      experiment.CalibrationConfigMapName(c.Shape),
			Namespace: namespace,
			Labels:    map[string]string{"app.kubernetes.io/part-of": "schedlab"},
		},
		Data: data,
	}
	b, err := yaml.Marshal(cm)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
