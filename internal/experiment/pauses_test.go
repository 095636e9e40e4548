package experiment

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func pauseWindow(observedNs int64, lengths ...int64) v1alpha1.WindowResult {
	return v1alpha1.WindowResult{Variant: "stock", Groups: []v1alpha1.GroupMeasurement{{Name: "probe"}},
		HostPauses: &v1alpha1.HostPauseMeasurement{Hogs: 2, ObservedNs: observedNs, Count: int32(len(lengths)), LengthsNs: lengths}}
}

func TestPoolHostPauses(t *testing.T) {
	noHog := v1alpha1.WindowResult{Variant: "stock", Groups: []v1alpha1.GroupMeasurement{{Name: "probe"}}}
	unsupported := pauseWindow(30e9, 50e6)
	unsupported.Unsupported = "no such knob"
	got := PoolHostPauses([]v1alpha1.WindowResult{noHog, pauseWindow(30e9), pauseWindow(30e9, 20e6, 6e6), unsupported})
	want := &HostPauses{Windows: 2, WindowsRun: 3, ObservedNs: 60e9, Count: 2, PerHour: 120,
		QuantilesNs: []int64{6e6, 6e6, 20e6, 20e6, 20e6, 20e6, 20e6}, Prediction: PausesNone}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pooled (-want +got):\n%s", diff)
	}
	if PoolHostPauses([]v1alpha1.WindowResult{unsupported}) != nil {
		t.Error("no measured window pooled to something")
	}
	if got := PoolHostPauses([]v1alpha1.WindowResult{noHog}); got == nil || got.Windows != 0 || got.ObservedNs != 0 || got.PerHour != 0 {
		t.Errorf("windows without a Hog observed nothing: %+v", got)
	}
}

// The prediction next to a run takes the run's measured pauses unless its
// calibration sets some; nothing observed means no pauses, as does nothing seen.
func TestWithWindowPauses(t *testing.T) {
	base := &v1alpha1.NodeCalibration{Constants: v1alpha1.NodeConstants{TimerExpiryNs: 40_000}, BackgroundLoad: 0.02}
	seen := []v1alpha1.WindowResult{pauseWindow(60e9, 10e6, 20e6, 30e6)}

	cal, hp := WithWindowPauses(base, seen)
	if hp.Prediction != PausesMeasured || cal.Constants.HostPausesPerHour != 180 ||
		!cmp.Equal(cal.Constants.HostPauseQuantilesNs, []int64{10e6, 10e6, 20e6, 30e6, 30e6, 30e6, 30e6}) ||
		cal.Constants.TimerExpiryNs != 40_000 || cal.BackgroundLoad != 0.02 {
		t.Errorf("measured: %+v, %+v", hp, cal)
	}
	if base.Constants.HostPausesPerHour != 0 {
		t.Error("the caller's calibration was changed")
	}
	if cal, hp := WithWindowPauses(nil, seen); cal == nil || cal.Constants.HostPausesPerHour != 180 || hp.Prediction != PausesMeasured {
		t.Errorf("without a calibration window: %+v, %+v", hp, cal)
	}

	set := base.DeepCopy()
	set.Constants.HostPausesPerHour, set.Constants.HostPauseQuantilesNs = 450, []int64{1, 2, 3, 4, 5, 6, 7}
	if cal, hp := WithWindowPauses(set, seen); cal != set || hp.Prediction != PausesSet || hp.SetPerHour != 450 || hp.Count != 3 {
		t.Errorf("a calibration that sets pauses keeps them: %+v, %+v", hp, cal)
	}

	if cal, hp := WithWindowPauses(base, []v1alpha1.WindowResult{pauseWindow(60e9)}); cal != base || hp.Prediction != PausesMeasured || hp.Count != 0 {
		t.Errorf("observed, none seen: %+v, %+v", hp, cal)
	}
	noHog := v1alpha1.WindowResult{Variant: "stock", Groups: []v1alpha1.GroupMeasurement{{Name: "probe"}}}
	if cal, hp := WithWindowPauses(base, []v1alpha1.WindowResult{noHog}); cal != base || hp.Prediction != PausesNone {
		t.Errorf("nothing observed: %+v, %+v", hp, cal)
	}
}

// A shape's pauses are its nodes' pooled: 2 pauses in one node's hour and
// none in another's are one an hour, not the 2 of the node that saw any.
func TestShapeCalibrationPoolsPauses(t *testing.T) {
	hour := int64(3600e9)
	cals := []*v1alpha1.NodeCalibration{
		{Constants: v1alpha1.NodeConstants{TimerExpiryNs: 40_000}},
		{Constants: v1alpha1.NodeConstants{TimerExpiryNs: 50_000}},
		{Constants: v1alpha1.NodeConstants{TimerExpiryNs: 60_000}},
	}
	windows := [][]v1alpha1.WindowResult{
		{pauseWindow(hour/2, 8e6), pauseWindow(hour/2, 10e6)},
		{pauseWindow(hour)},
		{{Variant: "stock", Groups: []v1alpha1.GroupMeasurement{{Name: "probe"}}}}, // no Hog: observed nothing
	}
	cal, hp := ShapeCalibration(cals, windows)
	if cal.Constants.HostPausesPerHour != 1 || hp.Count != 2 || hp.ObservedNs != 2*hour || hp.Prediction != PausesMeasured {
		t.Errorf("pooled %d pauses an hour (%+v), want 2 pauses in 2 hours observed: 1", cal.Constants.HostPausesPerHour, hp)
	}
	if cal.Constants.TimerExpiryNs != 50_000 {
		t.Errorf("timer %d ns, want the nodes' median 50000", cal.Constants.TimerExpiryNs)
	}
	if cal, _ := ShapeCalibration(cals, [][]v1alpha1.WindowResult{{pauseWindow(hour)}, {pauseWindow(hour)}}); cal.Constants.HostPausesPerHour != 0 {
		t.Errorf("two hours without a pause predict %d an hour", cal.Constants.HostPausesPerHour)
	}
}

// A probe's prediction with the run's measured pauses has the late
// wake-ups the pauses make; without them it has none beyond 10 ms.
func TestPredictWithMeasuredPauses(t *testing.T) {
	exp := mustParse(t, probeAlone)
	exp.Spec.Duration.Duration = 20e9
	shape := exp.Spec.Simulation.Nodes[0]
	over10 := func(cal *v1alpha1.NodeCalibration) float64 {
		t.Helper()
		s, o := WithNodeCalibration(shape, cal, PredictOptions{})
		preds, err := Predict(&exp.Spec, []v1alpha1.NodeShape{s}, o)
		if err != nil {
			t.Fatal(err)
		}
		return preds[0].Metrics.LateFraction.Over10ms
	}
	// 2 pauses a second of about 20 ms, as a run measured them.
	var ls []int64
	for i := 0; i < 60; i++ {
		ls = append(ls, 18e6+int64(i%5)*1e6)
	}
	cal, hp := WithWindowPauses(&v1alpha1.NodeCalibration{}, []v1alpha1.WindowResult{pauseWindow(30e9, ls...)})
	without, with := over10(&v1alpha1.NodeCalibration{}), over10(cal)
	t.Logf("beyond 10 ms: %.5f without pauses, %.5f with the measured %.0f per hour", without, with, hp.PerHour)
	// About one late wake-up per pause: 2 of 1000 wake-ups a second.
	if without != 0 || with < 0.001 || with > 0.004 {
		t.Errorf("beyond 10 ms %.5f without pauses (want 0), %.5f with 2 a second of 18-22 ms (want about 0.002)", without, with)
	}
}
