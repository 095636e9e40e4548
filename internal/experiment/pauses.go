package experiment

import (
	"math"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/simengine"
)

// HostPauses is a run's host pauses pooled over its measured windows (each
// window's v1alpha1.HostPauseMeasurement) and what the prediction shown next
// to the run did with them.
type HostPauses struct {
	// Windows is how many windows ran a Hog and so observed; WindowsRun how
	// many were measured at all.
	Windows    int `json:"windows"`
	WindowsRun int `json:"windowsRun"`
	// ObservedNs, Count: the time observed and the pauses seen in it, over
	// those windows.
	ObservedNs int64 `json:"observedNs"`
	Count      int64 `json:"count"`
	// PerHour is Count over ObservedNs (0 when nothing was observed).
	PerHour float64 `json:"perHour"`
	// QuantilesNs are the pooled lengths at simengine.QuantileLevels (the
	// lengths each window lists); absent without pauses.
	QuantilesNs []int64 `json:"quantilesNs,omitempty"`
	// Prediction is what the prediction used: "measured" (this rate and
	// these lengths; a rate of 0 is no pauses), "set" (the node's
	// calibration already set pauses, e.g. hack/validation -host-pauses:
	// kept), or "none" (nothing observed: no pauses).
	Prediction string `json:"prediction"`
	// SetPerHour and SetQuantilesNs are the pauses the prediction used when
	// Prediction is "set".
	SetPerHour     int64   `json:"setPerHour,omitempty"`
	SetQuantilesNs []int64 `json:"setQuantilesNs,omitempty"`
}

// Prediction values of HostPauses.
const (
	PausesMeasured = "measured"
	PausesSet      = "set"
	PausesNone     = "none"
)

// PoolHostPauses pools the host pauses of a node's measured windows (those
// not unsupported). Nil when no window was measured.
func PoolHostPauses(windows []v1alpha1.WindowResult) *HostPauses {
	out := &HostPauses{Prediction: PausesNone}
	var lengths []int64
	for i := range windows {
		w := &windows[i]
		if w.Unsupported != "" || len(w.Groups) == 0 {
			continue
		}
		out.WindowsRun++
		hp := w.HostPauses
		if hp == nil {
			continue
		}
		out.Windows++
		out.ObservedNs += hp.ObservedNs
		out.Count += int64(hp.Count)
		lengths = append(lengths, hp.LengthsNs...)
	}
	if out.WindowsRun == 0 {
		return nil
	}
	if out.ObservedNs > 0 {
		out.PerHour = float64(out.Count) * 3.6e12 / float64(out.ObservedNs)
	}
	out.QuantilesNs = simengine.OrderQuantiles(lengths)
	return out
}

// WithWindowPauses is cal (nil: a calibration with the default constants)
// with the host pauses that the node's windows measured
// (constants.hostPausesPerHour and hostPauseQuantilesNs), so that the
// prediction shown next to the run has the pauses the run had. A
// calibration that already sets pauses keeps them (a user's, e.g.
// hack/validation -host-pauses). With nothing observed (no window ran a
// Hog) cal is returned as is: no pauses. A run that observed and saw none
// predicts none. The second result says which (nil without measured
// windows).
func WithWindowPauses(cal *v1alpha1.NodeCalibration, windows []v1alpha1.WindowResult) (*v1alpha1.NodeCalibration, *HostPauses) {
	hp := PoolHostPauses(windows)
	if cal != nil && cal.Constants.HostPausesPerHour > 0 {
		if hp == nil {
			hp = &HostPauses{}
		}
		hp.Prediction, hp.SetPerHour, hp.SetQuantilesNs = PausesSet, cal.Constants.HostPausesPerHour, cal.Constants.HostPauseQuantilesNs
		return cal, hp
	}
	if hp == nil || hp.ObservedNs <= 0 {
		return cal, hp
	}
	hp.Prediction = PausesMeasured
	if hp.Count == 0 || len(hp.QuantilesNs) == 0 {
		return cal, hp // observed, none seen: no pauses, as without them
	}
	out := &v1alpha1.NodeCalibration{}
	if cal != nil {
		out = cal.DeepCopy()
	}
	k := &out.Constants
	k.HostPausesPerHour = min(max(int64(math.Round(hp.PerHour)), 1), 3_600_000)
	k.HostPauseQuantilesNs = make([]int64, len(hp.QuantilesNs))
	for i, q := range hp.QuantilesNs {
		k.HostPauseQuantilesNs[i] = min(max(q, 1), 1_000_000_000) // the simulator's bounds
	}
	return out, hp
}

// ShapeCalibration is the calibration a prediction for one node shape
// uses beside the measurements of several of its nodes: the median of the
// nodes' calibration windows (MedianCalibration), with the host pauses of
// all their windows pooled (WithWindowPauses over every node's windows), and
// so the stalls of one vCPU (WithWindowStalls).
// Pauses are pooled, not taken as a median of the nodes' rates: a node
// that observed an hour and saw none counts as that hour, where a median
// over the nodes that saw pauses would leave it out and a median over all
// would make the fleet's rate whatever the middle node's luck was. Pass
// the nodes' calibrations without their window pauses.
func ShapeCalibration(cals []*v1alpha1.NodeCalibration, windows [][]v1alpha1.WindowResult) (*v1alpha1.NodeCalibration, *HostPauses) {
	var all []v1alpha1.WindowResult
	for _, ws := range windows {
		all = append(all, ws...)
	}
	cal, hp := WithWindowPauses(MedianCalibration(cals), all)
	// The stalls of one vCPU likewise, over the windows that recorded the
	// hogs' CPU time (WithWindowStalls).
	cal, _ = WithWindowStalls(cal, all, HogWindow{})
	return cal, hp
}
