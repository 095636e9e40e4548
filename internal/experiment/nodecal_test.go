package experiment

import (
	"math"
	"strings"
	"testing"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

const probeAlone = `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: probe-alone}
spec:
  mode: Simulate
  duration: 1s
  warmup: 100ms
  variants: [{name: stock}]
  workload:
    groups:
    - {name: probe, pattern: {type: LatencyProbe, interval: 1ms}}
  simulation:
    seed: 1
    replicas: 1
    nodes: [{cpus: 2}]
`

// A node's calibration window replaces the default constants in its
// prediction: a probe alone on an idle CPU wakes after its timer slack
// (50 µs) plus the node's timer expiry, idle exit and context switch.
func TestWithNodeCalibration(t *testing.T) {
	exp := mustParse(t, probeAlone)
	shape := exp.Spec.Simulation.Nodes[0]
	p50 := func(s v1alpha1.NodeShape, o PredictOptions) float64 { return predictedP50(t, &exp.Spec, s, o) }
	def := p50(shape, PredictOptions{})
	cals := []*v1alpha1.NodeCalibration{
		{Constants: v1alpha1.NodeConstants{TimerExpiryNs: 40_000, IdleExitNs: 30_000, CtxSwitchNs: 6_000}, BackgroundLoad: 0.01},
		{Constants: v1alpha1.NodeConstants{TimerExpiryNs: 44_000, IdleExitNs: 34_000, CtxSwitchNs: 8_000}, BackgroundLoad: 0.03},
		{Constants: v1alpha1.NodeConstants{TimerExpiryNs: 90_000, IdleExitNs: 31_000, CtxSwitchNs: 7_000}, BackgroundLoad: 0.02},
		nil,
	}
	med := MedianCalibration(cals)
	if med.Constants.TimerExpiryNs != 44_000 || med.Constants.IdleExitNs != 31_000 || med.Constants.CtxSwitchNs != 7_000 || med.BackgroundLoad != 0.02 {
		t.Fatalf("median %+v, want timer 44 µs, idle exit 31 µs, switch 7 µs, background 0.02", med)
	}
	s, o := WithNodeCalibration(shape, med, PredictOptions{})
	got := p50(s, o)
	want := 50.0 + 44 + 31 + 7
	t.Logf("p50 with the defaults %.1f µs, with the node's window %.1f µs", def, got)
	if math.Abs(got-want) > 0.03*want {
		t.Errorf("p50 %.1f µs with the node's constants, want %.0f ± 3%%", got, want)
	}
	if o.Calibration[ShapeName(shape)].BackgroundLoad != 0.02 {
		t.Errorf("background load %v, want the window's 0.02", o.Calibration[ShapeName(shape)].BackgroundLoad)
	}
	if s2, o2 := WithNodeCalibration(shape, nil, PredictOptions{}); s2.Constants != nil || o2.Calibration != nil {
		t.Errorf("no window: shape %+v options %+v, want them unchanged", s2, o2)
	}
}

// The CPU other processes took in a node's windows becomes the background
// load of its prediction: hogs that fill the node are predicted to get the
// rest, as they were measured to.
func TestWithWindowNoise(t *testing.T) {
	ws := []v1alpha1.WindowResult{
		{Variant: "a", NoiseCPU: 0.04, Groups: []v1alpha1.GroupMeasurement{{Name: "hogs"}}},
		{Variant: "a", NoiseCPU: 0.08, Groups: []v1alpha1.GroupMeasurement{{Name: "hogs"}}},
		{Variant: "b", NoiseCPU: 1.5, Unsupported: "no autogroup"},
	}
	c := WithWindowNoise(nil, ws, 2)
	if c == nil || math.Abs(c.BackgroundLoad-0.03) > 1e-9 {
		t.Fatalf("no window: %+v, want background load 0.06/2 = 0.03", c)
	}
	cal := &v1alpha1.NodeCalibration{Constants: v1alpha1.NodeConstants{TimerExpiryNs: 40_000}, BackgroundLoad: 0.05}
	if c := WithWindowNoise(cal, ws, 2); c.BackgroundLoad != 0.05 || c.Constants.TimerExpiryNs != 40_000 {
		t.Errorf("window's background load 0.05 above the windows' 0.03: got %+v, want it kept", c)
	}
	if cal.BackgroundLoad != 0.05 {
		t.Errorf("the calibration passed in was changed")
	}
	if c := WithWindowNoise(cal, nil, 2); c != cal {
		t.Errorf("no windows: want the calibration as it was")
	}
	exp := mustParse(t, `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: hogs}
spec:
  mode: Simulate
  duration: 1s
  warmup: 100ms
  variants: [{name: stock}]
  workload:
    groups:
    - {name: hogs, tasks: 4, pattern: {type: Hog}}
  simulation: {seed: 1, replicas: 1, nodes: [{cpus: 2}]}
`)
	shape := exp.Spec.Simulation.Nodes[0]
	s, o := WithNodeCalibration(shape, WithWindowNoise(nil, ws, 2), PredictOptions{})
	preds, err := Predict(&exp.Spec, []v1alpha1.NodeShape{s}, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := preds[0].Metrics.CPU; math.Abs(got-2*(1-0.03)) > 0.005 {
		t.Errorf("hogs predicted %.3f CPUs beside 0.06 CPUs of others, want %.3f", got, 2*(1-0.03))
	}
}

// A node's measured cold wake-up cost reaches the prediction: a probe that
// sleeps 40 ms pays it per doubling of its sleep past 2 ms (log2(20) =
// 4.32 doublings), the nodes' median of it; a cost the shape sets stays.
func TestWithNodeCalibrationColdWake(t *testing.T) {
	exp := mustParse(t, strings.Replace(probeAlone, "interval: 1ms", "interval: 40ms", 1))
	shape := exp.Spec.Simulation.Nodes[0]
	p50 := func(s v1alpha1.NodeShape, o PredictOptions) float64 { return predictedP50(t, &exp.Spec, s, o) }
	k := v1alpha1.NodeConstants{TimerExpiryNs: 40_000, IdleExitNs: 30_000, CtxSwitchNs: 6_000}
	cal := func(cold int64) *v1alpha1.NodeCalibration {
		c := k
		c.ColdWakeNs = cold
		return &v1alpha1.NodeCalibration{Constants: c}
	}
	med := MedianCalibration([]*v1alpha1.NodeCalibration{cal(9_000), cal(0), cal(10_000), cal(30_000)})
	if med.Constants.ColdWakeNs != 10_000 {
		t.Fatalf("median cold wake-up %d ns over 9, 10 and 30 µs (and a node without), want 10000", med.Constants.ColdWakeNs)
	}
	base := 50.0 + 40 + 30 + 6
	doublings := math.Log2(20)
	for _, c := range []struct {
		name  string
		shape *v1alpha1.NodeConstants
		cal   *v1alpha1.NodeCalibration
		want  float64
	}{
		{"measured 10 µs", nil, med, base + 10*doublings},
		{"none measured: the default 4 µs", nil, cal(0), base + 4*doublings},
		{"the shape's 2 µs over the measured 10", &v1alpha1.NodeConstants{ColdWakeNs: 2_000}, med, base + 2*doublings},
		{"the shape's timer 90 µs over the measured 40", &v1alpha1.NodeConstants{TimerExpiryNs: 90_000}, med, base + 50 + 10*doublings},
	} {
		s := shape
		s.Constants = c.shape
		got := p50(WithNodeCalibration(s, c.cal, PredictOptions{}))
		// The latency histogram's buckets are 4.1 µs wide from 131 to
		// 262 µs; the cases lie 8.6 µs and more apart.
		if math.Abs(got-c.want) > 4.1 {
			t.Errorf("%s: a 40 ms probe's p50 %.1f µs, want %.1f", c.name, got, c.want)
		}
	}
}

// A node's measured process switch reaches the simulator's constants: the
// median over the nodes that measured it; a figure the shape sets stays.
func TestWithNodeCalibrationProcessSwitch(t *testing.T) {
	cal := func(ps int64) *v1alpha1.NodeCalibration {
		return &v1alpha1.NodeCalibration{Constants: v1alpha1.NodeConstants{CtxSwitchNs: 6_000, ProcessSwitchNs: ps}}
	}
	med := MedianCalibration([]*v1alpha1.NodeCalibration{cal(3_000), cal(0), cal(5_000), cal(4_500)})
	if got := SimConstants(&med.Constants).ProcessSwitchNs; got != 4_500 {
		t.Errorf("median process switch %d ns over 3, 4.5 and 5 µs (and a node without), want 4500", got)
	}
	shape := v1alpha1.NodeShape{CPUs: 2, Constants: &v1alpha1.NodeConstants{ProcessSwitchNs: 1_000}}
	s, _ := WithNodeCalibration(shape, med, PredictOptions{})
	if got := SimConstants(s.Constants).ProcessSwitchNs; got != 1_000 {
		t.Errorf("the shape's 1 µs over the measured 4.5: process switch %d ns, want 1000", got)
	}
	shape.Constants = nil
	s, _ = WithNodeCalibration(shape, med, PredictOptions{})
	if got := SimConstants(s.Constants).ProcessSwitchNs; got != 4_500 {
		t.Errorf("no shape figure: process switch %d ns, want the measured 4500", got)
	}
}

// A constant the shape sets wins over the node's measured one, and takes
// its quantiles with it (the simulator draws from quantiles when there
// are any, so the user's figure beside measured quantiles would be lost);
// what the shape leaves unset comes from the node.
func TestUserConstantsWinWithTheirQuantiles(t *testing.T) {
	q := []int64{1, 2, 3, 4, 5, 6, 7}
	measured := v1alpha1.NodeConstants{TimerExpiryNs: 40_000, TimerExpiryQuantilesNs: q, WakeupNs: 9_000, WakeupQuantilesNs: q,
		CtxSwitchNs: 6_000, ColdWakeNs: 1_000, HostPausesPerHour: 20, HostPauseQuantilesNs: q}
	got := userConstants(measured, v1alpha1.NodeConstants{TimerExpiryNs: 90_000, ColdWakeNs: 3_000, HostPausesPerHour: 5})
	if got.TimerExpiryNs != 90_000 || got.TimerExpiryQuantilesNs != nil {
		t.Errorf("timer %d ns with quantiles %v, want the user's 90000 without the measured quantiles", got.TimerExpiryNs, got.TimerExpiryQuantilesNs)
	}
	if got.HostPausesPerHour != 5 || got.HostPauseQuantilesNs != nil {
		t.Errorf("pauses %d an hour with quantiles %v, want the user's 5 without the measured quantiles", got.HostPausesPerHour, got.HostPauseQuantilesNs)
	}
	if got.ColdWakeNs != 3_000 {
		t.Errorf("cold wake-up %d ns, want the user's 3000", got.ColdWakeNs)
	}
	if got.WakeupNs != 9_000 || len(got.WakeupQuantilesNs) != 7 || got.CtxSwitchNs != 6_000 {
		t.Errorf("unset constants %d / %v / %d, want the measured 9000 / 7 quantiles / 6000", got.WakeupNs, got.WakeupQuantilesNs, got.CtxSwitchNs)
	}
}

// predictedP50 is the first group's predicted wake-up p50 (µs) of spec on
// shape.
func predictedP50(t *testing.T, spec *v1alpha1.SchedExperimentSpec, shape v1alpha1.NodeShape, o PredictOptions) float64 {
	t.Helper()
	preds, err := Predict(spec, []v1alpha1.NodeShape{shape}, o)
	if err != nil {
		t.Fatal(err)
	}
	return preds[0].Metrics.WakeupLatencyUs.P50
}
