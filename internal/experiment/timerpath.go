package experiment

import (
	"fmt"
	"slices"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/simengine"
)

// TimerShift is how much later (negative: earlier) one measured window's
// timer path was than the calibration window's, in the calibration's
// constants.
//
// The calibration window (calib.Raw.Constants) derives the timer path's
// two terms from two medians: a 1 ms sleep's lateness beside a SCHED_IDLE
// spinner, BusyTimerLate = TimerExpiryNs + CtxSwitchNs, and on the idle
// CPU, IdleTimerLate = TimerExpiryNs + IdleExitNs + CtxSwitchNs (the
// calibration's timerLatenessNs). A window's edges measure the same two
// medians (calib.TimerPath); the window's constants are what the
// calibration would have derived with them, the rest of it as measured:
// its timer expiry moves by the busy median's difference, its idle exit by
// what the idle median moved beyond that. The context switch is measured
// by the calibration's pipe ping-pong alone, which the edges do not run: it
// stays, and what the busy path moved is counted as the timer's (in the
// stored campaign's 54 calibration windows the slow phase raised the timer
// expiry's median by 10-16 µs and the context switch's by 1.5-2). The
// other constants follow no timer path or are differences of two timer
// paths measured side by side (the process switch, the cold wake-up), or
// the CPU time of a sleep (the timer arm): they stay.
//
// CPUTimerExpiryNs is, by CPU number, how much later still the timer
// expiry was on that CPU than on the CPU the calibration measured, from
// the edges' samples of the other CPUs (WindowTimerPath.beforeOtherCPUs,
// afterOtherCPUs: a host runs each vCPU's timer path in phases of its
// own); nil when the window has none. The simulator adds it to that CPU's
// timer expiry (simengine.Node.TimerExpiryShiftNs).
//
// TimerExpiryQuantilesNs, when the window's edges recorded their busy
// sleeps' quantiles (TimerPathSample.busyTimerQuantilesNs), is the
// window's timer expiry spread in place of the calibration's moved by
// TimerExpiryNs (edgeTimerExpiryQuantiles): a host's slow phase widens the
// spread as well as moving it, and a calibration window that met it would
// otherwise carry its tail into every window. Nil otherwise.
//
// Source says where the window's timer expiry came from: TimerSourceTrace
// (its in-window timer trace, traceTimerShift), TimerSourceEdges (its
// edges), or "" (nothing moved it).
type TimerShift struct {
	TimerExpiryNs, IdleExitNs int64
	CPUTimerExpiryNs          []int64
	TimerExpiryQuantilesNs    []int64
	Source                    TimerSource
}

// TimerSource is where the prediction takes a window's timer path from.
type TimerSource string

const (
	// TimerSourceNone: from no window; every window is predicted with the
	// calibration window's timer path, as before windows recorded theirs.
	TimerSourceNone TimerSource = "none"
	// TimerSourceEdges: from the window's edges (WindowResult.timerPath).
	TimerSourceEdges TimerSource = "edges"
	// TimerSourceTrace: from the window's own timer trace
	// (WindowResult.timerTrace) where it is usable, from its edges
	// otherwise. The default.
	TimerSourceTrace TimerSource = "in-window"
)

// ParseTimerSource reads a TimerSource's name ("" is the default).
func ParseTimerSource(s string) (TimerSource, error) {
	switch TimerSource(s) {
	case "":
		return TimerSourceTrace, nil
	case TimerSourceNone, TimerSourceEdges, TimerSourceTrace:
		return TimerSource(s), nil
	}
	return "", fmt.Errorf("timer path source %q: want %s, %s or %s", s, TimerSourceTrace, TimerSourceEdges, TimerSourceNone)
}

// minTraceInterrupts: a CPU whose trace counted fewer interrupts than this
// gives no quantiles the prediction takes (its 99 % level would be one or
// two interrupts).
const minTraceInterrupts = 200

// minIdleCPUIdle: an edge whose idle sleeps' CPU was idle less than this
// share of their time measured another CPU's path than an idle one's
// (other work ran there, SCHED_IDLE work too, which the sleeper preempts
// with no idle exit); its idle median is not used.
const minIdleCPUIdle = 0.5

// minBusyQuiet: an edge with fewer quiet busy sleeps than this share
// recorded the median of all of them (calib.TimerPath), other processes'
// work on its CPU included; its busy median is not used (nor its idle
// one, which is read against it).
const minBusyQuiet = 0.1

// WindowConditions are, per variant name, what each measured window of
// the nodes (one node's windows after another's) met on its node: its
// grid phases (as WindowGridPhases) and its timer path against cal's
// (windowTimerShift), for PredictOptions.GridPhases and
// PredictOptions.TimerShifts, where replica i of a prediction takes entry
// i mod their number of both, so that the seeds spread over the windows
// as the measurement pools them.
//
// When no window recorded a timer path (runs of older agents, or without
// a calibration window) or cal is nil, the phases are WindowGridPhases's
// and there are no shifts: the prediction is the one made before windows
// recorded their timer paths. Otherwise both lists have an entry for every
// supported window of the variant, in the same order (a window without
// phases lets the simulator draw them, one without a timer path moves
// nothing). user, the constants the shape sets (nil for none), wins as it
// does over the calibration's (userConstants): a timer expiry or idle exit
// the user sets is not moved.
func WindowConditions(cal *v1alpha1.NodeCalibration, user *v1alpha1.NodeConstants, nodes ...[]v1alpha1.WindowResult) (map[string][]map[string][]int64, map[string][]TimerShift) {
	return WindowConditionsFrom(TimerSourceTrace, cal, user, nodes...)
}

// WindowConditionsFrom is WindowConditions with the windows' timer paths
// taken from src: TimerSourceNone gives WindowGridPhases's phases and no
// shifts, TimerSourceEdges only the edges' shifts.
func WindowConditionsFrom(src TimerSource, cal *v1alpha1.NodeCalibration, user *v1alpha1.NodeConstants, nodes ...[]v1alpha1.WindowResult) (map[string][]map[string][]int64, map[string][]TimerShift) {
	if src == TimerSourceNone {
		return WindowGridPhases(nodes...), nil
	}
	recorded := false
	for _, ws := range nodes {
		for i := range ws {
			if ws[i].Unsupported == "" && (ws[i].TimerPath != nil || src == TimerSourceTrace && ws[i].TimerTrace != nil && ws[i].TimerTrace.Unsupported == "") {
				recorded = true
			}
		}
	}
	if !recorded || cal == nil {
		return WindowGridPhases(nodes...), nil
	}
	phases := map[string][]map[string][]int64{}
	shifts := map[string][]TimerShift{}
	withPhases := map[string]bool{}
	for _, ws := range nodes {
		for i := range ws {
			w := &ws[i]
			if w.Unsupported != "" {
				continue
			}
			m := windowGridPhases(w)
			withPhases[w.Variant] = withPhases[w.Variant] || m != nil
			phases[w.Variant] = append(phases[w.Variant], m)
			s := windowTimerShift(cal, w.TimerPath)
			if src == TimerSourceTrace {
				if ts, ok := traceTimerShift(cal, w.TimerTrace); ok {
					ts.IdleExitNs = s.IdleExitNs
					s = ts
				}
			}
			if user != nil {
				if user.TimerExpiryNs != 0 || len(user.TimerExpiryQuantilesNs) > 0 {
					s.TimerExpiryNs, s.CPUTimerExpiryNs, s.TimerExpiryQuantilesNs = 0, nil, nil
					if s.IdleExitNs == 0 {
						s.Source = ""
					}
				}
				if user.IdleExitNs != 0 || len(user.IdleExitQuantilesNs) > 0 {
					s.IdleExitNs = 0
				}
			}
			shifts[w.Variant] = append(shifts[w.Variant], s)
		}
	}
	for v := range phases {
		if !withPhases[v] {
			delete(phases, v)
		}
	}
	if len(phases) == 0 {
		phases = nil
	}
	return phases, shifts
}

// windowTimerShift is one window's timer path against the calibration
// window's (see TimerShift and CalibrationTimerPath): the window's busy and
// idle medians are the means of its two edges' (those measured with enough
// quiet busy sleeps, minBusyQuiet; an edge's idle median only when its CPU
// was idle, minIdleCPUIdle). Zero when either side lacks what it takes.
func windowTimerShift(cal *v1alpha1.NodeCalibration, tp *v1alpha1.WindowTimerPath) TimerShift {
	k := cal.Constants
	if tp == nil || k.TimerExpiryNs <= 0 || k.CtxSwitchNs <= 0 {
		return TimerShift{}
	}
	var busy, idle []int64
	var busyQ [][]int64
	for _, s := range []*v1alpha1.TimerPathSample{tp.Before, tp.After} {
		if s == nil || !usableBusyEdge(s) {
			continue
		}
		busy = append(busy, s.BusyTimerNs)
		busyQ = append(busyQ, s.BusyTimerQuantilesNs)
		if s.IdleTimerNs > 0 && (s.IdleCPUIdle == nil || *s.IdleCPUIdle >= minIdleCPUIdle) {
			idle = append(idle, s.IdleTimerNs)
		}
	}
	if len(busy) == 0 {
		return TimerShift{}
	}
	calBusy, calIdle := CalibrationTimerPath(cal)
	out := TimerShift{TimerExpiryNs: meanNs(busy) - calBusy}
	if len(idle) > 0 && calIdle > 0 {
		out.IdleExitNs = (meanNs(idle) - calIdle) - out.TimerExpiryNs
	}
	out.CPUTimerExpiryNs = otherCPUsTimerShift(tp, meanNs(busy))
	out.TimerExpiryQuantilesNs = edgeTimerExpiryQuantiles(cal, busyQ)
	out.Source = TimerSourceEdges
	return out
}

// traceTimerShift is one window's timer expiry from its in-window timer
// trace against the calibration window's trace: the trace measures the
// interrupt's lateness after a timer's hard expiry (TimerTrace), the part
// of the timer expiry the host sets; the rest (from the interrupt to the
// enqueue) is taken as the calibration's. The calibration's busy sleeps,
// whose quantiles are constants.timerExpiryQuantilesNs, ran on its last
// CPU (calib.Measure), the highest its trace has: its lateness there is
// what those quantiles hold of the interrupt. The window's reference CPU
// is the one whose trace counted the most interrupts (the CPU the
// workload's sleepers mostly lived on): the window's timer expiry
// quantiles are the calibration's moved, level by level, by what that
// CPU's interrupts were later than the calibration's (TimerExpiryNs is the
// 50 % level's move), and each other CPU's timer expiry is moved by its
// median lateness less the reference CPU's (CPUTimerExpiryNs). A CPU whose
// trace lost events or counted fewer than minTraceInterrupts is not used
// (its entry stays 0, as the reference's); without a usable CPU on either
// side the window has no trace shift (ok false: the edges give it), nor
// has a calibration trace without any interrupt that found its CPU idle:
// the calibration's idle sleeps always do, so its agent did not tell them
// apart (the first traces of 2026-12-08 01:07), and its lateness mixes the
// idle vCPU's wake-up into the busy path's.
func traceTimerShift(cal *v1alpha1.NodeCalibration, tt *v1alpha1.TimerTrace) (TimerShift, bool) {
	n := len(simengine.QuantileLevels)
	if cal == nil || cal.TimerTrace == nil || tt == nil || tt.Unsupported != "" || len(cal.Constants.TimerExpiryQuantilesNs) != n {
		return TimerShift{}, false
	}
	usable := func(c *v1alpha1.TimerTraceCPU) bool {
		return c.LostEvents == 0 && c.Interrupts >= minTraceInterrupts && len(c.LatenessQuantilesNs) == n
	}
	var ref *v1alpha1.TimerTraceCPU
	for i := range cal.TimerTrace.CPUs {
		if c := &cal.TimerTrace.CPUs[i]; ref == nil || c.CPU > ref.CPU {
			ref = c
		}
	}
	if ref == nil || !usable(ref) {
		return TimerShift{}, false
	}
	apart := false
	for i := range cal.TimerTrace.CPUs {
		apart = apart || cal.TimerTrace.CPUs[i].IdleInterrupts > 0
	}
	if !apart {
		return TimerShift{}, false
	}
	var win *v1alpha1.TimerTraceCPU
	top := int32(-1)
	for i := range tt.CPUs {
		c := &tt.CPUs[i]
		if usable(c) && (win == nil || c.Interrupts > win.Interrupts) {
			win = c
		}
		top = max(top, c.CPU)
	}
	if win == nil || !usable(win) {
		return TimerShift{}, false
	}
	m := simengine.QuantileMedian
	out := TimerShift{Source: TimerSourceTrace, TimerExpiryNs: win.LatenessQuantilesNs[m] - ref.LatenessQuantilesNs[m]}
	out.TimerExpiryQuantilesNs = make([]int64, n)
	for i, q := range cal.Constants.TimerExpiryQuantilesNs {
		out.TimerExpiryQuantilesNs[i] = max(q+win.LatenessQuantilesNs[i]-ref.LatenessQuantilesNs[i], 1)
	}
	slices.Sort(out.TimerExpiryQuantilesNs)
	out.CPUTimerExpiryNs = make([]int64, top+1)
	for i := range tt.CPUs {
		if c := &tt.CPUs[i]; c.CPU >= 0 && usable(c) {
			out.CPUTimerExpiryNs[c.CPU] = c.LatenessQuantilesNs[m] - win.LatenessQuantilesNs[m]
		}
	}
	return out, true
}

// usableBusyEdge: an edge's busy median is read when it has one and at
// least minBusyQuiet of its busy sleeps were quiet (or it does not say).
func usableBusyEdge(s *v1alpha1.TimerPathSample) bool {
	return s.BusyTimerNs > 0 && (s.BusyQuiet == nil || *s.BusyQuiet >= minBusyQuiet)
}

// meanNs is the integer mean of xs (not empty).
func meanNs(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s / int64(len(xs))
}

// edgeTimerExpiryQuantiles is the window's timer expiry spread from its
// usable edges' busy quantiles (busyQ, one list per edge): at each level
// the mean of the edges' less the calibration's context switch at that
// level, at least 1 ns, sorted. The calibration derives its own the same
// way (calib.Raw.Constants: the busy path's quantile less the switch's at
// each level, the busy path being timer expiry and context switch), and
// its busy median, against which TimerExpiryNs is taken, is the two
// terms' 50 % levels together (CalibrationTimerPath): edges whose spread
// is the calibration's moved by d give the calibration's timer expiry
// quantiles moved by d, what TimerExpiryNs alone would. Nil when an edge
// lacks quantiles (runs of older agents) or the calibration lacks the two
// terms' quantiles.
func edgeTimerExpiryQuantiles(cal *v1alpha1.NodeCalibration, busyQ [][]int64) []int64 {
	n := len(simengine.QuantileLevels)
	k := cal.Constants
	if len(busyQ) == 0 || len(k.TimerExpiryQuantilesNs) != n || len(k.CtxSwitchQuantilesNs) != n {
		return nil
	}
	for _, q := range busyQ {
		if len(q) != n {
			return nil
		}
	}
	out := make([]int64, n)
	at := make([]int64, len(busyQ))
	for i := range out {
		for e, q := range busyQ {
			at[e] = q[i]
		}
		out[i] = max(meanNs(at)-k.CtxSwitchQuantilesNs[i], 1)
	}
	slices.Sort(out)
	return out
}

// otherCPUsTimerShift is, by CPU number, how much later the busy timer
// path of each other CPU was than busy, the last CPU's (the mean of its
// edges' busy medians): the mean of that CPU's usable edges (minBusyQuiet)
// less busy; nil when no other CPU has one.
func otherCPUsTimerShift(tp *v1alpha1.WindowTimerPath, busy int64) []int64 {
	per := map[int32][]int64{}
	top := int32(-1)
	for _, ss := range [][]v1alpha1.TimerPathSample{tp.BeforeOtherCPUs, tp.AfterOtherCPUs} {
		for _, s := range ss {
			if s.CPU == nil || *s.CPU < 0 || !usableBusyEdge(&s) {
				continue
			}
			per[*s.CPU] = append(per[*s.CPU], s.BusyTimerNs)
			top = max(top, *s.CPU)
		}
	}
	if top < 0 {
		return nil
	}
	out := make([]int64, top+1)
	for c, xs := range per {
		out[c] = meanNs(xs) - busy
	}
	return out
}

// CalibrationTimerPath is the calibration window's busy and idle timer
// paths as a window's edges measure theirs (TimerPathSample): the median
// of its quiet sleeps, which is the 50 % level of its quantiles (the
// simulator draws a wake-up's path from those): timer expiry and context
// switch, and with the idle exit. A calibration without quantiles gives
// its medians of all sleeps (timerExpiryNs + ctxSwitchNs, and
// timerLatenessNs); idle 0 when neither is there.
func CalibrationTimerPath(cal *v1alpha1.NodeCalibration) (busy, idle int64) {
	k := cal.Constants
	level := func(q []int64) (int64, bool) {
		for i, l := range simengine.QuantileLevels {
			if l == 0.5 && len(q) == len(simengine.QuantileLevels) {
				return q[i], true
			}
		}
		return 0, false
	}
	busy, idle = k.TimerExpiryNs+k.CtxSwitchNs, cal.TimerLatenessNs
	t, okT := level(k.TimerExpiryQuantilesNs)
	c, okC := level(k.CtxSwitchQuantilesNs)
	if !okT || !okC {
		return busy, idle
	}
	busy = t + c
	if e, ok := level(k.IdleExitQuantilesNs); ok {
		return busy, busy + e
	}
	return busy, 0
}

// shiftTimerPath is c with its timer expiry and idle exit moved by s,
// each figure and its quantiles alike (the simulator draws from the
// quantiles when they are there), at least 1 ns each; with
// s.TimerExpiryQuantilesNs, the timer expiry's quantiles are those
// instead. A constant left at the simulator's default (0, no quantiles)
// stays: there is no measured path to move.
func shiftTimerPath(c simengine.Constants, s TimerShift) simengine.Constants {
	move := func(v *int64, q *[]int64, d int64) {
		if d == 0 {
			return
		}
		if *v != 0 {
			*v = max(*v+d, 1)
		}
		if len(*q) > 0 {
			moved := make([]int64, len(*q))
			for i, x := range *q {
				moved[i] = max(x+d, 1)
			}
			*q = moved
		}
	}
	move(&c.TimerExpiryNs, &c.TimerExpiryQuantilesNs, s.TimerExpiryNs)
	move(&c.IdleExitNs, &c.IdleExitQuantilesNs, s.IdleExitNs)
	if len(c.TimerExpiryQuantilesNs) > 0 && len(s.TimerExpiryQuantilesNs) == len(c.TimerExpiryQuantilesNs) {
		c.TimerExpiryQuantilesNs = slices.Clone(s.TimerExpiryQuantilesNs)
	}
	return c
}
