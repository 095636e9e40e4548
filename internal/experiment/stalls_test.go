package experiment

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// stallWindow is a window whose Hog group "hogs" used hogCPU CPUs.
func stallWindow(hogCPU float64, hp v1alpha1.HostPauseMeasurement) v1alpha1.WindowResult {
	hp.Hogs = 2
	return v1alpha1.WindowResult{Variant: "stock", HostPauses: &hp,
		Groups: []v1alpha1.GroupMeasurement{{Name: "hogs", Metrics: v1alpha1.Metrics{CPU: hogCPU}}, {Name: "probe", Metrics: v1alpha1.Metrics{CPU: 0.5}}}}
}

// Windows recorded with the hogs' CPU time and the stalls' lengths give
// rates per CPU and pooled lengths; older ones give their one long stall
// with its longest, over the Hog groups' CPU times the window's length,
// and their short stalls are not modelled; a window with more long stalls
// than lengths is left out of that rate.
func TestPoolVCPUStalls(t *testing.T) {
	q := []int64{1.0e6, 1.1e6, 1.2e6, 1.2e6, 1.4e6, 2e6, 4e6}
	recorded := stallWindow(1.8, v1alpha1.HostPauseMeasurement{ObservedNs: 20e9, HogCPUNs: 36e9,
		ShortStalls: 12, ShortStallsSeenByMore: 2, ShortStallQuantilesNs: q, VCPUStalls: 1, VCPUStallLongestNs: 7e6, VCPUStallLengthsNs: []int64{7e6}})
	old := stallWindow(1.8, v1alpha1.HostPauseMeasurement{ObservedNs: 20e9, ShortStalls: 5, VCPUStalls: 1, VCPUStallLongestNs: 100e6})
	oldTwo := stallWindow(1.8, v1alpha1.HostPauseMeasurement{ObservedNs: 20e9, ShortStalls: 3, VCPUStalls: 2, VCPUStallLongestNs: 9e6})
	noHog := v1alpha1.WindowResult{Variant: "stock", Groups: []v1alpha1.GroupMeasurement{{Name: "probe"}}}
	h := HogWindow{Groups: []string{"hogs"}, LengthNs: 20e9}
	got := PoolVCPUStalls([]v1alpha1.WindowResult{recorded, old, oldTwo, noHog}, h)
	// Long: 7 and 100 ms over 36 + 36 s: 2 in 72 s = 100 an hour per CPU.
	// Short: the 10 one hog saw, over the recorded window's 36 s: 1000 an
	// hour; their lengths stand for the window's quantiles.
	want := &VCPUStalls{Windows: 3, HogCPUEstimated: 2,
		LongHogCPUNs: 72e9, Long: 2, LongPerHour: 100, LongQuantilesNs: []int64{7e6, 7e6, 100e6, 100e6, 100e6, 100e6, 100e6}, LongLeftOut: 2,
		ShortHogCPUNs: 36e9, Short: 10, ShortPerHour: 1000, ShortNotModelled: 8, Prediction: PausesNone}
	if len(got.ShortQuantilesNs) != 7 || got.ShortQuantilesNs[2] < 1.15e6 || got.ShortQuantilesNs[2] > 1.25e6 || got.ShortQuantilesNs[0] < 1e6 || got.ShortQuantilesNs[6] > 4e6 {
		t.Errorf("short stalls' pooled lengths %v, want about the window's %v", got.ShortQuantilesNs, q)
	}
	got.ShortQuantilesNs = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pooled (-want +got):\n%s", diff)
	}
	// Without the Hog groups the old windows have no time: nothing of theirs
	// is counted.
	if got := PoolVCPUStalls([]v1alpha1.WindowResult{old}, HogWindow{}); got.Long != 0 || got.LongLeftOut != 1 || got.ShortNotModelled != 5 || got.LongHogCPUNs != 0 {
		t.Errorf("an old window without its hogs' time: %+v", got)
	}
}

// The prediction takes the measured stalls into the node constants unless
// the calibration sets some; old runs' short stalls stay out.
func TestWithWindowStalls(t *testing.T) {
	q := []int64{1.0e6, 1.1e6, 1.2e6, 1.2e6, 1.4e6, 2e6, 4e6}
	base := &v1alpha1.NodeCalibration{Constants: v1alpha1.NodeConstants{TimerExpiryNs: 40_000}}
	ws := []v1alpha1.WindowResult{stallWindow(1.8, v1alpha1.HostPauseMeasurement{ObservedNs: 20e9, HogCPUNs: 36e9,
		ShortStalls: 10, ShortStallQuantilesNs: q, VCPUStalls: 1, VCPUStallLengthsNs: []int64{7e6}})}
	cal, st := WithWindowStalls(base, ws, HogWindow{})
	k := cal.Constants
	if cal == base || k.TimerExpiryNs != 40_000 || k.VCPUStallsPerHour != 100 || k.VCPUShortStallsPerHour != 1000 ||
		len(k.VCPUStallQuantilesNs) != 7 || len(k.VCPUShortStallQuantilesNs) != 7 || st.Prediction != PausesMeasured || base.Constants.VCPUStallsPerHour != 0 {
		t.Errorf("measured: %+v, %+v", k, st)
	}
	set := &v1alpha1.NodeCalibration{Constants: v1alpha1.NodeConstants{VCPUShortStallsPerHour: 5, VCPUShortStallQuantilesNs: q}}
	if cal, st := WithWindowStalls(set, ws, HogWindow{}); cal != set || st.Prediction != PausesSet {
		t.Errorf("set: %+v, %+v", cal, st)
	}
	old := []v1alpha1.WindowResult{stallWindow(1.8, v1alpha1.HostPauseMeasurement{ObservedNs: 20e9, ShortStalls: 30})}
	if cal, st := WithWindowStalls(base, old, HogWindow{Groups: []string{"hogs"}, LengthNs: 20e9}); cal != base || st.ShortNotModelled != 30 || st.Prediction != PausesMeasured {
		t.Errorf("old run, no stall of 5 ms: %+v, %+v", cal, st)
	}
}

func TestHogWindowOf(t *testing.T) {
	spec := &v1alpha1.SchedExperimentSpec{Duration: metav1.Duration{Duration: 20 * time.Second},
		Workload: v1alpha1.Workload{Groups: []v1alpha1.Group{{Name: "hogs", Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}},
			{Name: "probe", Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternLatencyProbe}}}}}
	if diff := cmp.Diff(HogWindow{Groups: []string{"hogs"}, LengthNs: 20e9}, HogWindowOf(spec)); diff != "" {
		t.Error(diff)
	}
}
