package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
	"github.com/schedlab/schedlab/internal/simengine"
)

var simengineZero simengine.Calibration

func init() { register("calibrate", newCalibrateCmd) }

// calibrationFileName and calibrationConfigMapFileName are what calibrate
// writes into --output-dir.
const (
	calibrationFileName          = "calibration.json"
	calibrationConfigMapFileName = "calibration-configmap.yaml"
)

func newCalibrateCmd() *cobra.Command {
	var (
		files, measured []string
		out             calibrateOutputs
		duration        time.Duration
		seed            int64
		check           string
	)
	cmd := &cobra.Command{
		Use:   "calibrate [-f] EXPERIMENT.yaml --measured RUN.json [...]",
		Short: "fit the simulator's overheads for a node shape to measurements of 'schedlab run'",
		Long: `Fits the simulator's calibration (timer, wake-up and context-switch overheads, background
load) for one node shape to what 'schedlab run' measured there. Give each manifest
(-f or argument) with the report of its run (--measured), in the same order.

--output-dir writes ` + calibrationFileName + ` (entries for other shapes already in it are kept;
read it with 'schedlab plan --calibration') and ` + calibrationConfigMapFileName + `, a ConfigMap
for 'kubectl apply -f' that the controller reads for the shape's predictions.`,
		Example: `  schedlab calibrate weights.yaml --measured out/report.json --output-dir calib/
  schedlab calibrate -f a.yaml --measured a.json -f b.yaml --measured b.json --check calib/calibration.json`,
		Args: func(cmd *cobra.Command, args []string) error { return nil },
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			opts := experiment.CalibrateOptions{Duration: duration}
			if seed >= 0 {
				s := uint64(seed)
				opts.Seed = &s
			}
			return calibrate(ctx, cmd.OutOrStdout(), append(files, args...), measured, out, check, opts)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&files, "filename", "f", nil, "SchedExperiment manifest that was run (repeat, each with its --measured; or give them as arguments)")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	fs.StringArrayVar(&measured, "measured", nil, "JSON report of 'schedlab run … -o json' (or --output-dir DIR/report.json) for the manifest of the same position")
	_ = cmd.MarkFlagFilename("measured", "json")
	addOutputFlag(cmd, &out.format)
	addOutputDirFlag(cmd, &out.dir, calibrationFileName+" and "+calibrationConfigMapFileName)
	fs.StringVar(&out.namespace, "namespace", "schedlab-system", "namespace of the ConfigMap: the operator's")
	fs.DurationVar(&duration, "duration", 0, fmt.Sprintf("simulated window of each candidate (default %s)", experiment.DefaultSweepWindow))
	fs.Int64Var(&seed, "seed", -1, "simulator seed (overrides spec.simulation.seed)")
	fs.StringVar(&check, "check", "", "calibration file to check instead of fitting: print the error of the measurements without and with its calibration for the shape")
	_ = cmd.MarkFlagFilename("check", "json")
	cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"yaml", "yml", "json"}, cobra.ShellCompDirectiveFilterFileExt
	}
	return cmd
}

// CalibrateOutput is what schedlab calibrate prints with -o json or yaml.
type CalibrateOutput struct {
	Fit   *experiment.CalibrationFit `json:"fit"`
	Saved *v1alpha1.ShapeCalibration `json:"saved"`
}

// calibrateOutputs says where a fit goes and how it is printed.
type calibrateOutputs struct {
	dir, namespace string
	format         outputFormat
}

func calibrate(ctx context.Context, w io.Writer, files, measured []string, out calibrateOutputs, check string, opts experiment.CalibrateOptions) error {
	format := out.format
	if len(files) == 0 || len(files) != len(measured) {
		return usagef("give each manifest (-f or argument) with its --measured RUN.json, in pairs (%d manifests, %d --measured)", len(files), len(measured))
	}
	var data []experiment.CalibrationData
	var shape v1alpha1.NodeShape
	for i, f := range files {
		exp, err := experiment.LoadLocal(f)
		if err != nil {
			return invalidInput(err)
		}
		raw, err := os.ReadFile(measured[i])
		if err != nil {
			return invalidInput(err)
		}
		var rep experiment.Report
		if err := json.Unmarshal(raw, &rep); err != nil {
			return invalidInput(fmt.Errorf("%s: not a 'schedlab run -o json' report: %w", measured[i], err))
		}
		rows, s, err := experiment.ResultsFromReport(&rep)
		if err != nil {
			return invalidInput(fmt.Errorf("%s: %w", measured[i], err))
		}
		if i > 0 && experiment.ShapeName(s) != experiment.ShapeName(shape) {
			return invalidInput(fmt.Errorf("%s was measured on %s, %s on %s: calibrate one node shape at a time",
				measured[i], experiment.ShapeName(s), measured[0], experiment.ShapeName(shape)))
		}
		shape = s
		data = append(data, experiment.CalibrationData{Spec: &exp.Spec, Measured: rows})
	}
	if check != "" {
		return checkCalibration(ctx, w, shape, data, check, format, opts)
	}
	start := time.Now()
	fit, err := experiment.Calibrate(ctx, shape, data, opts)
	if err != nil {
		return err
	}
	saved := fit.Status()
	var outFile, cmFile string
	if out.dir != "" {
		if err := os.MkdirAll(out.dir, 0o755); err != nil {
			return err
		}
		outFile, cmFile = filepath.Join(out.dir, calibrationFileName), filepath.Join(out.dir, calibrationConfigMapFileName)
		if err := experiment.WriteCalibrationFile(outFile, []v1alpha1.ShapeCalibration{saved}); err != nil {
			return err
		}
		if err := writeCalibrationConfigMap(cmFile, out.namespace, saved); err != nil {
			return err
		}
	}
	if format != outputTable {
		return printStructured(w, format, CalibrateOutput{Fit: fit, Saved: &saved})
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
	if cmFile != "" {
		fmt.Fprintf(w, "ConfigMap manifest written to %s: 'kubectl apply -f %s' and the controller uses the fit for %s\n", cmFile, cmFile, fit.Shape)
	}
	return nil
}

// checkCalibration prints the prediction error of measurements without and
// with a stored calibration: the test of a calibration on runs it was not
// fitted to.
func checkCalibration(ctx context.Context, w io.Writer, shape v1alpha1.NodeShape, data []experiment.CalibrationData, file string, format outputFormat, opts experiment.CalibrateOptions) error {
	cf, err := experiment.LoadCalibrationFile(file)
	if err != nil {
		return invalidInput(err)
	}
	name := experiment.ShapeName(shape)
	cal, ok := experiment.CalibrationMap(cf.Shapes)[name]
	if !ok {
		return invalidInput(fmt.Errorf("%s has no calibration for %s", file, name))
	}
	before, err := experiment.CalibrationError(ctx, shape, data, simengineZero, opts)
	if err != nil {
		return err
	}
	after, err := experiment.CalibrationError(ctx, shape, data, cal, opts)
	if err != nil {
		return err
	}
	if format != outputTable {
		return printStructured(w, format, CalibrationCheck{Shape: name, Samples: after.Samples, Calibration: file,
			ErrorBefore: before.Mean, ErrorAfter: after.Mean, CPUErrorBefore: before.CPU, CPUErrorAfter: after.CPU})
	}
	fmt.Fprintf(w, "%s, %d row × metric pairs: prediction error %.1f%% without calibration, %.1f%% with %s (cpu alone: %.1f%% -> %.1f%%)\n",
		name, after.Samples, 100*before.Mean, 100*after.Mean, file, 100*before.CPU, 100*after.CPU)
	return nil
}

// CalibrationCheck is what schedlab calibrate --check prints with -o json or
// yaml: mean |relative| prediction errors without and with the calibration.
type CalibrationCheck struct {
	Shape          string  `json:"shape"`
	Samples        int     `json:"samples"`
	Calibration    string  `json:"calibration"`
	ErrorBefore    float64 `json:"errorBefore"`
	ErrorAfter     float64 `json:"errorAfter"`
	CPUErrorBefore float64 `json:"cpuErrorBefore"`
	CPUErrorAfter  float64 `json:"cpuErrorAfter"`
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
