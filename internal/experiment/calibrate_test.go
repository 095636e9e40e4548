package experiment

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/simengine"
)

// Earlier experiments on a 2-CPU shape, each showing some parameters
// cleanly: hogs alone (background load takes CPU from them); a
// timer-driven probe alone (timer overhead delays each wake-up on its idle
// CPU); a PingPong pair alone, whose partners wake each other on the other,
// idle CPU (the wake list: wake-up overhead delays each message, and the
// context-switch cost slows every round trip). A probe beside the pair
// would make the pair's wake-ups go to a busy CPU or to an idle one
// depending on the probe's timing, and the error surface rough.
const calibHogs = `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: calib-hogs}
spec:
  mode: Simulate
  duration: 2s
  warmup: 200ms
  variants: [{name: stock}]
  workload:
    groups:
    - {name: hogs, tasks: 2, pattern: {type: Hog}}
  simulation:
    seed: 1
    nodes: [{cpus: 2}]
`

const calibProbe = `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: calib-probe}
spec:
  mode: Simulate
  duration: 2s
  warmup: 200ms
  variants: [{name: stock}]
  workload:
    groups:
    - {name: probe, pattern: {type: LatencyProbe, interval: 1ms}}
  simulation:
    seed: 1
    nodes: [{cpus: 2}]
`

const calibPairs = `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: calib-pairs}
spec:
  mode: Simulate
  duration: 2s
  warmup: 200ms
  variants: [{name: stock}, {name: short, knobs: {baseSlice: 300us}}]
  workload:
    groups:
    - {name: pp, tasks: 2, pattern: {type: PingPong, run: 20us}}
  simulation:
    seed: 1
    nodes: [{cpus: 2}]
`

// syntheticData are "measurements": the simulator with known overheads and
// another seed, as a node whose true overheads are known would report them.
func syntheticData(t *testing.T, truth simengine.Calibration, manifests ...string) ([]CalibrationData, v1alpha1.NodeShape) {
	t.Helper()
	var data []CalibrationData
	var shape v1alpha1.NodeShape
	seed := uint64(7)
	for _, m := range manifests {
		exp := mustParse(t, m)
		shape = exp.Spec.Simulation.Nodes[0]
		preds, err := Predict(&exp.Spec, []v1alpha1.NodeShape{shape}, PredictOptions{Seed: &seed,
			Calibration: map[string]simengine.Calibration{ShapeName(shape): truth}})
		if err != nil {
			t.Fatal(err)
		}
		var rows []v1alpha1.GroupResult
		for _, p := range preds {
			rows = append(rows, v1alpha1.GroupResult{Variant: p.Variant, Group: p.Group,
				Measured: &v1alpha1.MeasuredMetrics{Metrics: p.Metrics, N: 1}})
		}
		data = append(data, CalibrationData{Spec: &exp.Spec, Measured: rows})
	}
	return data, shape
}

func TestCalibrateRecoversKnownOverheads(t *testing.T) {
	truth := simengine.Calibration{TimerOverheadNs: 30_000, WakeupOverheadNs: 15_000, CtxSwitchNs: 4_000, BackgroundLoad: 0.05}
	data, shape := syntheticData(t, truth, calibHogs, calibProbe, calibPairs)
	fit, err := Calibrate(context.Background(), shape, data, CalibrateOptions{Duration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fit %+v: error %.1f%% -> %.1f%% (cpu %.1f%% -> %.1f%%) over %d samples, %d evaluations",
		fit.Calibration, 100*fit.ErrorBefore, 100*fit.ErrorAfter, 100*fit.CPUErrorBefore, 100*fit.CPUErrorAfter, fit.Samples, fit.Evaluations)
	if fit.ErrorAfter > fit.ErrorBefore/5 {
		t.Errorf("error %.3f -> %.3f: calibration should cut it at least fivefold", fit.ErrorBefore, fit.ErrorAfter)
	}
	if fit.CPUErrorAfter >= fit.CPUErrorBefore {
		t.Errorf("cpu error %.3f -> %.3f: background load should explain the hogs' lost CPU", fit.CPUErrorBefore, fit.CPUErrorAfter)
	}
	got := fit.Calibration
	if math.Abs(got.BackgroundLoad-truth.BackgroundLoad) > 0.01 {
		t.Errorf("backgroundLoad %.3f, want %.3f ± 0.01", got.BackgroundLoad, truth.BackgroundLoad)
	}
	near := func(name string, got, want int64, tol float64) {
		if math.Abs(float64(got-want)) > tol*float64(want) {
			t.Errorf("%s %d ns, want %d ± %.0f%%", name, got, want, 100*tol)
		}
	}
	near("timerOverheadNs", got.TimerOverheadNs, truth.TimerOverheadNs, 0.1)
	near("wakeupOverheadNs", got.WakeupOverheadNs, truth.WakeupOverheadNs, 0.15)
	near("ctxSwitchNs", got.CtxSwitchNs, truth.CtxSwitchNs, 0.25)
}

// With nothing to fit (measurements from the uncalibrated simulator), the
// fit stays near zero and the error does not grow.
func TestCalibrateNothingToFit(t *testing.T) {
	data, shape := syntheticData(t, simengine.Calibration{}, calibHogs, calibProbe, calibPairs)
	fit, err := Calibrate(context.Background(), shape, data, CalibrateOptions{Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if fit.ErrorAfter > fit.ErrorBefore {
		t.Errorf("error grew: %.3f -> %.3f", fit.ErrorBefore, fit.ErrorAfter)
	}
	if c := fit.Calibration; c.BackgroundLoad > 0.01 || c.TimerOverheadNs > 5000 || c.WakeupOverheadNs > 5000 {
		t.Errorf("fit %+v, want near zero", c)
	}
	if _, err := Calibrate(context.Background(), shape, nil, CalibrateOptions{}); err == nil {
		t.Errorf("no measurements: want an error")
	}
}

func TestCalibrationFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calibration.json")
	a := v1alpha1.ShapeCalibration{Shape: "8cpu-EEVDF", TimerOverheadNs: 3000, BackgroundLoad: 0.02, ErrorBefore: "30.0%", ErrorAfter: "5.0%"}
	b := v1alpha1.ShapeCalibration{Shape: "64cpu-EEVDF", CtxSwitchNs: 1500}
	if err := WriteCalibrationFile(path, []v1alpha1.ShapeCalibration{a}); err != nil {
		t.Fatal(err)
	}
	a.TimerOverheadNs = 4000
	if err := WriteCalibrationFile(path, []v1alpha1.ShapeCalibration{b, a}); err != nil {
		t.Fatal(err)
	}
	f, err := LoadCalibrationFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]v1alpha1.ShapeCalibration{a, b}, f.Shapes); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	m := CalibrationMap(f.Shapes)
	if m["8cpu-EEVDF"].TimerOverheadNs != 4000 || m["64cpu-EEVDF"].CtxSwitchNs != 1500 {
		t.Errorf("CalibrationMap = %+v", m)
	}
	data, err := CalibrationConfigMapData(a)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseCalibrationConfigMap(data)
	if err != nil || back != a {
		t.Errorf("ConfigMap round trip: %+v, %v", back, err)
	}
	if got := CalibrationConfigMapName("64cpu-EEVDF"); got != "schedlab-calibration-64cpu-eevdf" {
		t.Errorf("ConfigMap name %q", got)
	}
	bad := map[string]string{CalibrationConfigMapKey: `{"shape":"x","backgroundLoad":2}`}
	if _, err := ParseCalibrationConfigMap(bad); err == nil {
		t.Errorf("backgroundLoad 2 accepted")
	}
}

// A measured report's shape is the whole shape its predictions were made
// for: calibrate keys its file by that name, and the predictions look
// their calibration up by it. Without the kernel release (and the tunable
// scaling) the file was written under 2cpu-EEVDF-none and never read for
// 2cpu-EEVDF-k6.18.44-none.
func TestResultsFromReportKeepsTheShape(t *testing.T) {
	node := NodeReport{CPUs: 2, Scheduler: "EEVDF", Kernel: "6.18.44-fc-v1272", HZ: 250, Preempt: "None", TunableScaling: "Linear"}
	rep := &Report{Variants: []VariantReport{{Name: "stock", Node: node,
		Groups: []GroupReport{{Name: "hogs", Measured: &v1alpha1.MeasuredMetrics{Metrics: v1alpha1.Metrics{CPU: 2}, N: 1}}}}}}
	_, shape, err := ResultsFromReport(rep)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ShapeName(shape), node.Name(); got != want {
		t.Errorf("calibration keyed as %q, predictions look up %q", got, want)
	}
	if shape.Kernel != node.Kernel || string(shape.TunableScaling) != node.TunableScaling {
		t.Errorf("shape %+v lost the report's kernel or tunable scaling (%+v)", shape, node)
	}
}
