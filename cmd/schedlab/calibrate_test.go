package main

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

const calibHogsSpec = `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: calib-hogs}
spec:
  nodeSelector: {matchLabels: {a: b}}
  duration: 1s
  warmup: 200ms
  variants: [{name: stock}]
  workload:
    groups:
    - {name: hogs, tasks: 2, pattern: {type: Hog}}
`

// writeCalibInputs writes the manifest and a 'schedlab run' report of it
// into dir: two hogs measured at 1.9 CPUs on a 2-CPU EEVDF node.
func writeCalibInputs(t *testing.T, dir, manifest string) (spec, run string) {
	t.Helper()
	spec = filepath.Join(dir, "hogs.yaml")
	if err := os.WriteFile(spec, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := experiment.Report{Variants: []experiment.VariantReport{{
		Name: "stock", Node: experiment.NodeReport{CPUs: 2, Scheduler: "EEVDF"},
		Groups: []experiment.GroupReport{{Name: "hogs", Tasks: 2,
			Measured: &v1alpha1.MeasuredMetrics{Metrics: v1alpha1.Metrics{CPU: 1.9, CPUPerTask: 0.95, Share: 1}, N: 3}}},
	}}}
	b, _ := json.Marshal(rep)
	run = filepath.Join(dir, "run.json")
	if err := os.WriteFile(run, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return spec, run
}

// schedlab calibrate reads a 'schedlab run' report, fits the background
// load that took 5% of two hogs' CPU, and writes the calibration file and
// a ConfigMap manifest the controller can read.
func TestCalibrateCommand(t *testing.T) {
	dir := t.TempDir()
	spec, run := writeCalibInputs(t, dir, calibHogsSpec)
	out := calibrateOutputs{dir: filepath.Join(dir, "out"), namespace: "ops", format: outputTable}
	calFile, cmFile := filepath.Join(out.dir, calibrationFileName), filepath.Join(out.dir, calibrationConfigMapFileName)
	var printed strings.Builder
	if err := calibrate(context.Background(), &printed, []string{spec}, []string{run}, out, "", experiment.CalibrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(printed.String(), "5.3% before, 0.0% after") {
		t.Errorf("output lacks the error before and after:\n%s", printed.String())
	}
	f, err := experiment.LoadCalibrationFile(calFile)
	if err != nil || len(f.Shapes) != 1 || f.Shapes[0].Shape != "2cpu-EEVDF" || math.Abs(f.Shapes[0].BackgroundLoad-0.05) > 0.005 {
		t.Fatalf("calibration file %+v, %v; want 2cpu-EEVDF with backgroundLoad 0.05", f, err)
	}
	raw, err := os.ReadFile(cmFile)
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Metadata struct{ Name, Namespace string }
		Data     map[string]string
	}
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		t.Fatal(err)
	}
	c, err := experiment.ParseCalibrationConfigMap(cm.Data)
	if err != nil || cm.Metadata.Name != "schedlab-calibration-2cpu-eevdf" || cm.Metadata.Namespace != "ops" || c != f.Shapes[0] {
		t.Errorf("ConfigMap %s/%s %+v (%v), want the file's calibration", cm.Metadata.Namespace, cm.Metadata.Name, c, err)
	}
	var checked strings.Builder
	if err := calibrate(context.Background(), &checked, []string{spec}, []string{run}, calibrateOutputs{format: outputTable}, calFile, experiment.CalibrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(checked.String(), "5.3% without calibration, 0.0% with") {
		t.Errorf("--check output: %s", checked.String())
	}
	if err := calibrate(context.Background(), io.Discard, []string{spec}, nil, calibrateOutputs{format: outputTable}, "", experiment.CalibrateOptions{}); err == nil {
		t.Errorf("-f without --measured accepted")
	}
}

// A manifest without a nodeSelector, as schedlab run takes it on this
// machine, is calibrated against that run's report: calibrate reads it as
// run does, not as the cluster's API would.
func TestCalibrateLocalManifest(t *testing.T) {
	dir := t.TempDir()
	local := strings.Replace(calibHogsSpec, "  nodeSelector: {matchLabels: {a: b}}\n", "", 1)
	if local == calibHogsSpec {
		t.Fatal("the spec's nodeSelector line was not found")
	}
	spec, run := writeCalibInputs(t, dir, local)
	out := calibrateOutputs{dir: filepath.Join(dir, "out"), format: outputTable}
	if err := calibrate(context.Background(), io.Discard, []string{spec}, []string{run}, out, "", experiment.CalibrateOptions{}); err != nil {
		t.Fatalf("calibrate refused a manifest schedlab run accepts: %v", err)
	}
}
