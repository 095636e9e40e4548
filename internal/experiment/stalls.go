package experiment

import (
	"math"
	"slices"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/simengine"
)

// VCPUStalls is a run's stalls of one vCPU pooled over its measured
// windows (each window's v1alpha1.HostPauseMeasurement) as rates per CPU,
// and what the prediction shown next to the run did with them.
//
// A hog sees the stalls of the vCPU it is current on, so a rate per CPU is
// the stalls over the hogs' CPU time (hogCPUNs). Windows recorded before
// hogCPUNs was give it as their Hog groups' CPU times the window's length
// (when the caller knows them: HogCPUEstimated counts those windows).
// Stalls of 5 ms or more (vcpuStalls) keep their lengths
// (vcpuStallLengthsNs; an older window that saw one has it as
// vcpuStallLongestNs); a window that saw more without their lengths is left
// out of that rate with its CPU time (LongLeftOut). Short stalls have
// lengths only in windows that record shortStallQuantilesNs (hogCPUNs set):
// older windows' short stalls are not modelled (ShortNotModelled), not
// given a length.
type VCPUStalls struct {
	// Windows is how many windows observed (ran a Hog); HogCPUEstimated
	// how many of them gave no hogCPUNs and had it estimated.
	Windows         int `json:"windows"`
	HogCPUEstimated int `json:"hogCPUEstimated,omitempty"`
	// Stalls of 5 ms or more: the hogs' CPU time they were counted over,
	// their count, rate per CPU per hour and lengths at the simulator's
	// levels; LongLeftOut counts the stalls of windows without lengths.
	LongHogCPUNs    int64   `json:"longHogCPUNs"`
	Long            int64   `json:"long"`
	LongPerHour     float64 `json:"longPerHour"`
	LongQuantilesNs []int64 `json:"longQuantilesNs,omitempty"`
	LongLeftOut     int64   `json:"longLeftOut,omitempty"`
	// Short stalls one hog saw (1 to 5 ms), over the windows that recorded
	// their lengths; ShortNotModelled counts those of the windows that did
	// not.
	ShortHogCPUNs    int64   `json:"shortHogCPUNs"`
	Short            int64   `json:"short"`
	ShortPerHour     float64 `json:"shortPerHour"`
	ShortQuantilesNs []int64 `json:"shortQuantilesNs,omitempty"`
	ShortNotModelled int64   `json:"shortNotModelled,omitempty"`
	// Prediction is what the prediction used: PausesMeasured (these rates
	// and lengths), PausesSet (the calibration already set stalls: kept) or
	// PausesNone (nothing observed).
	Prediction string `json:"prediction"`
}

// HogWindow says how to estimate the hogs' CPU time of a window recorded
// before hogCPUNs: the names of the workload's watching Hog groups and the
// window's length. The zero value estimates nothing.
type HogWindow struct {
	Groups   []string
	LengthNs int64
}

// hogCPU is a window's hogs' CPU time: recorded, or estimated from h;
// estimated says which; 0 when neither.
func (h HogWindow) hogCPU(w *v1alpha1.WindowResult) (ns int64, estimated bool) {
	if hp := w.HostPauses; hp.HogCPUNs > 0 {
		return hp.HogCPUNs, false
	}
	var cpu float64
	for _, g := range w.Groups {
		if slices.Contains(h.Groups, g.Name) {
			cpu += g.Metrics.CPU
		}
	}
	return int64(math.Round(cpu * float64(h.LengthNs))), true
}

// PoolVCPUStalls pools the one-vCPU stalls of a node's measured windows.
// Nil when no window was measured.
func PoolVCPUStalls(windows []v1alpha1.WindowResult, h HogWindow) *VCPUStalls {
	out := &VCPUStalls{Prediction: PausesNone}
	var long, short []int64
	run := 0
	for i := range windows {
		w := &windows[i]
		if w.Unsupported != "" || len(w.Groups) == 0 {
			continue
		}
		run++
		hp := w.HostPauses
		if hp == nil {
			continue
		}
		out.Windows++
		cpu, est := h.hogCPU(w)
		if est {
			out.HogCPUEstimated++
		}
		n := hp.ShortStalls - hp.ShortStallsSeenByMore
		if cpu <= 0 { // no time to count them over
			out.LongLeftOut += int64(hp.VCPUStalls)
			out.ShortNotModelled += n
			continue
		}
		switch ls := hp.VCPUStallLengthsNs; {
		case int(hp.VCPUStalls) == len(ls):
			long = append(long, ls...)
			out.LongHogCPUNs += cpu
		case hp.VCPUStalls == 1 && len(ls) == 0 && hp.VCPUStallLongestNs > 0:
			long = append(long, hp.VCPUStallLongestNs)
			out.LongHogCPUNs += cpu
		default: // more stalls than lengths: left out, with the time
			out.LongLeftOut += int64(hp.VCPUStalls)
		}
		switch {
		case hp.HogCPUNs > 0 && (n == 0 || len(hp.ShortStallQuantilesNs) == len(simengine.QuantileLevels)):
			out.ShortHogCPUNs += cpu
			short = append(short, samplesAt(hp.ShortStallQuantilesNs, n)...)
		default:
			out.ShortNotModelled += n
		}
	}
	if run == 0 {
		return nil
	}
	out.Long, out.Short = int64(len(long)), int64(len(short))
	if out.LongHogCPUNs > 0 {
		out.LongPerHour = float64(out.Long) * 3.6e12 / float64(out.LongHogCPUNs)
	}
	if out.ShortHogCPUNs > 0 {
		out.ShortPerHour = float64(out.Short) * 3.6e12 / float64(out.ShortHogCPUNs)
	}
	out.LongQuantilesNs, out.ShortQuantilesNs = orderQuantiles(long), orderQuantiles(short)
	return out
}

// samplesAt stands n lengths for a window's n stalls given at the
// simulator's levels: the quantile function (linear between the levels,
// flat beyond, as the simulator draws) at the levels (i+0.5)/n. Pooling
// these over windows weighs each window by its stalls.
func samplesAt(q []int64, n int64) []int64 {
	if n <= 0 || len(q) != len(simengine.QuantileLevels) {
		return nil
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = interpolate(q, (float64(i)+0.5)/float64(n))
	}
	return out
}

// interpolate is q's value at level u, linear between QuantileLevels and
// flat beyond the first and last.
func interpolate(q []int64, u float64) int64 {
	ls := simengine.QuantileLevels
	if u <= ls[0] {
		return q[0]
	}
	for i := 1; i < len(ls); i++ {
		if u <= ls[i] {
			f := (u - ls[i-1]) / (ls[i] - ls[i-1])
			return q[i-1] + int64(math.Round(f*float64(q[i]-q[i-1])))
		}
	}
	return q[len(q)-1]
}

// orderQuantiles are lengths at simengine.QuantileLevels by the order
// statistics the agent uses (simengine.OrderQuantiles), within the simulator's bounds;
// nil without lengths.
func orderQuantiles(lengths []int64) []int64 {
	out := simengine.OrderQuantiles(lengths)
	for i, v := range out {
		out[i] = min(max(v, 1), 1_000_000_000) // the simulator's bounds
	}
	return out
}

// WithWindowStalls is cal (nil: a calibration with the default constants)
// with the stalls of one vCPU that the node's windows measured
// (constants.vcpuStallsPerHour, vcpuShortStallsPerHour and their
// quantiles), beside the whole machine's pauses (WithWindowPauses), so
// that the prediction shown next to the run has the stalls the run had. A
// calibration that already sets stalls of either class keeps them (a
// user's). The second result says what was pooled (nil without measured
// windows).
func WithWindowStalls(cal *v1alpha1.NodeCalibration, windows []v1alpha1.WindowResult, h HogWindow) (*v1alpha1.NodeCalibration, *VCPUStalls) {
	st := PoolVCPUStalls(windows, h)
	if cal != nil && (cal.Constants.VCPUStallsPerHour > 0 || cal.Constants.VCPUShortStallsPerHour > 0) {
		if st == nil {
			st = &VCPUStalls{}
		}
		st.Prediction = PausesSet
		return cal, st
	}
	if st == nil || st.LongHogCPUNs+st.ShortHogCPUNs <= 0 {
		return cal, st
	}
	st.Prediction = PausesMeasured
	if st.Long == 0 && st.Short == 0 {
		return cal, st
	}
	out := &v1alpha1.NodeCalibration{}
	if cal != nil {
		out = cal.DeepCopy()
	}
	k := &out.Constants
	if st.Long > 0 {
		k.VCPUStallsPerHour = min(max(int64(math.Round(st.LongPerHour)), 1), 3_600_000)
		k.VCPUStallQuantilesNs = st.LongQuantilesNs
	}
	if st.Short > 0 {
		k.VCPUShortStallsPerHour = min(max(int64(math.Round(st.ShortPerHour)), 1), 3_600_000)
		k.VCPUShortStallQuantilesNs = st.ShortQuantilesNs
	}
	return out, st
}

// HogWindowOf is the HogWindow of a run of spec: its Hog groups (every Hog
// watches) and its windows' length.
func HogWindowOf(spec *v1alpha1.SchedExperimentSpec) HogWindow {
	var h HogWindow
	if spec == nil {
		return h
	}
	for _, g := range spec.Workload.Groups {
		if g.Pattern != nil && g.Pattern.Type == v1alpha1.PatternHog {
			h.Groups = append(h.Groups, g.Name)
		}
	}
	h.LengthNs = spec.Duration.Nanoseconds()
	return h
}
