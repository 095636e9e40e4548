package experiment

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/simengine"
)

func f64(v float64) *float64 { return &v }

// testCal is a calibration window of the development VM's fast phase
// (the stored campaign's r4/probe-hogs, rounded): idle path 44 µs, busy
// path 18.4 + 6.0 = 24.4 µs, at the median and at the quantiles' 50 %
// level alike.
func testCal() *v1alpha1.NodeCalibration {
	return &v1alpha1.NodeCalibration{
		TimerLatenessNs: 44_000,
		Constants: v1alpha1.NodeConstants{
			TimerExpiryNs: 18_400, IdleExitNs: 19_600, CtxSwitchNs: 6_000,
			TimerExpiryQuantilesNs: []int64{18_100, 18_300, 18_400, 19_200, 19_400, 19_800, 35_200},
			IdleExitQuantilesNs:    []int64{16_900, 18_600, 19_600, 20_600, 25_300, 29_000, 33_000},
			CtxSwitchQuantilesNs:   []int64{4_200, 4_200, 6_000, 6_900, 7_000, 7_200, 8_000},
		},
	}
}

// A window's shift is its edges' medians against the calibration
// window's, in the calibration's terms: the busy path's difference is the
// timer expiry's, what the idle path moved beyond it the idle exit's; an
// edge whose idle CPU was busy gives no idle median, one with few quiet
// busy sleeps no figure; the user's constants
// are not moved; runs without timer paths keep WindowGridPhases's phases
// and no shifts.
func TestWindowConditions(t *testing.T) {
	cal := testCal()
	slow := &v1alpha1.WindowTimerPath{
		Before: &v1alpha1.TimerPathSample{IdleTimerNs: 74_000, BusyTimerNs: 39_400, Samples: 150, IdleCPUIdle: f64(0.92)},
		After:  &v1alpha1.TimerPathSample{IdleTimerNs: 70_000, BusyTimerNs: 37_400, Samples: 150, IdleCPUIdle: f64(0.93)},
	}
	busyIdleCPU := &v1alpha1.WindowTimerPath{
		Before: &v1alpha1.TimerPathSample{IdleTimerNs: 30_000, BusyTimerNs: 24_400, Samples: 150, IdleCPUIdle: f64(0.1)},
	}
	probe := func(ph int64) []v1alpha1.GroupMeasurement {
		return []v1alpha1.GroupMeasurement{{Name: "hogs"}, {Name: "probe", GridPhasesNs: []int64{ph}}}
	}
	ws := []v1alpha1.WindowResult{
		{Variant: "on", Groups: probe(5), TimerPath: slow},
		{Variant: "off", Groups: probe(6), TimerPath: busyIdleCPU},
		{Variant: "x", Unsupported: "no knob", TimerPath: slow},
		{Variant: "on", Groups: probe(7)}, // no timer path: nothing moves
		{Variant: "hogs", Groups: []v1alpha1.GroupMeasurement{{Name: "hogs"}}, TimerPath: slow},
		// Too few quiet busy sleeps before: the after edge alone.
		{Variant: "hogs", Groups: []v1alpha1.GroupMeasurement{{Name: "hogs"}}, TimerPath: &v1alpha1.WindowTimerPath{
			Before: &v1alpha1.TimerPathSample{IdleTimerNs: 90_000, BusyTimerNs: 60_000, Samples: 150, IdleCPUIdle: f64(0.9), BusyQuiet: f64(0.05)},
			After:  &v1alpha1.TimerPathSample{IdleTimerNs: 44_000, BusyTimerNs: 26_400, Samples: 150, IdleCPUIdle: f64(0.9), BusyQuiet: f64(0.9)},
		}},
	}
	phases, shifts := WindowConditions(cal, nil, ws)
	wantPhases := map[string][]map[string][]int64{
		"on":  {{"probe": {5}}, {"probe": {7}}},
		"off": {{"probe": {6}}},
	}
	// on/0: busy 38.4 against 24.4 µs, +14.0; idle 72.0 against 44.0,
	// +28.0, of which 14.0 beyond the timer's.
	wantShifts := map[string][]TimerShift{
		"on":   {{TimerExpiryNs: 14_000, IdleExitNs: 14_000, Source: TimerSourceEdges}, {}},
		"off":  {{Source: TimerSourceEdges}},
		"hogs": {{TimerExpiryNs: 14_000, IdleExitNs: 14_000, Source: TimerSourceEdges}, {TimerExpiryNs: 2_000, IdleExitNs: -2_000, Source: TimerSourceEdges}},
	}
	if d := cmp.Diff(wantPhases, phases); d != "" {
		t.Errorf("phases (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantShifts, shifts); d != "" {
		t.Errorf("shifts (-want +got):\n%s", d)
	}

	_, shifts = WindowConditions(cal, &v1alpha1.NodeConstants{TimerExpiryNs: 20_000}, ws[:1])
	if d := cmp.Diff(map[string][]TimerShift{"on": {{IdleExitNs: 14_000, Source: TimerSourceEdges}}}, shifts); d != "" {
		t.Errorf("a user's timer expiry: shifts (-want +got):\n%s", d)
	}

	old := []v1alpha1.WindowResult{ws[3], {Variant: "off", Groups: probe(6)}}
	phases, shifts = WindowConditions(cal, nil, old)
	if d := cmp.Diff(WindowGridPhases(old), phases); d != "" || shifts != nil {
		t.Errorf("windows without timer paths: phases differ from WindowGridPhases's (-want +got):\n%s\nshifts %v, want none", d, shifts)
	}
	if _, shifts = WindowConditions(nil, nil, ws); shifts != nil {
		t.Errorf("no calibration: shifts %v, want none", shifts)
	}
}

// A window whose edges measured the other CPUs too: each other CPU's
// shift is how much later its busy path was than the last CPU's (the mean
// of its usable edges), by CPU number; an edge of few quiet busy sleeps
// gives none, and a CPU without a usable edge none either (0, or past
// the list's end).
func TestWindowConditionsOtherCPUs(t *testing.T) {
	cal := testCal()
	cpu := func(c int32) *int32 { return &c }
	sample := func(c int32, busy int64, quiet float64) v1alpha1.TimerPathSample {
		return v1alpha1.TimerPathSample{CPU: cpu(c), IdleTimerNs: 45_000, BusyTimerNs: busy, Samples: 150, IdleCPUIdle: f64(0.9), BusyQuiet: f64(quiet)}
	}
	before, after := sample(3, 24_400, 1), sample(3, 26_400, 1)
	ws := []v1alpha1.WindowResult{{Variant: "v", Groups: []v1alpha1.GroupMeasurement{{Name: "hogs"}}, TimerPath: &v1alpha1.WindowTimerPath{
		Before: &before, After: &after,
		BeforeOtherCPUs: []v1alpha1.TimerPathSample{sample(0, 44_400, 0.9), sample(1, 30_000, 0.05), sample(2, 25_000, 0.05)},
		AfterOtherCPUs:  []v1alpha1.TimerPathSample{sample(0, 42_400, 0.8), sample(1, 20_400, 0.9), sample(2, 60_000, 0.01)},
	}}}
	_, shifts := WindowConditions(cal, nil, ws)
	// The last CPU: busy 25.4 against 24.4 µs, +1.0; idle 45.0 against
	// 44.0, +1.0, nothing beyond the timer's. CPU 0: 43.4, 18.0 later
	// than the last CPU; CPU 1: its after edge alone, 20.4, 5.0 earlier;
	// CPU 2: no usable edge.
	want := map[string][]TimerShift{"v": {{TimerExpiryNs: 1_000, CPUTimerExpiryNs: []int64{18_000, -5_000}, Source: TimerSourceEdges}}}
	if d := cmp.Diff(want, shifts); d != "" {
		t.Errorf("shifts (-want +got):\n%s", d)
	}
	if _, shifts = WindowConditions(cal, &v1alpha1.NodeConstants{TimerExpiryNs: 20_000}, ws); shifts["v"][0].CPUTimerExpiryNs != nil {
		t.Errorf("a user's timer expiry: the other CPUs' shifts %v, want none", shifts["v"][0].CPUTimerExpiryNs)
	}
}

// The shift moves a figure and its quantiles alike, never below 1 ns,
// and leaves a default (0) where it is.
func TestShiftTimerPath(t *testing.T) {
	c := simengine.Constants{TimerExpiryNs: 18_000, TimerExpiryQuantilesNs: []int64{5_000, 18_000, 30_000}, IdleExitNs: 0, CtxSwitchNs: 6_000}
	got := shiftTimerPath(c, TimerShift{TimerExpiryNs: -10_000, IdleExitNs: 5_000})
	want := simengine.Constants{TimerExpiryNs: 8_000, TimerExpiryQuantilesNs: []int64{1, 8_000, 20_000}, IdleExitNs: 0, CtxSwitchNs: 6_000}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("shifted (-want +got):\n%s", d)
	}
	if c.TimerExpiryQuantilesNs[0] != 5_000 {
		t.Errorf("the shift changed its input's quantiles: %v", c.TimerExpiryQuantilesNs)
	}
}

// With the same calibration, a window that met a slow timer path (the
// development VM's slow phase: the busy path 14 µs later, the idle path
// 28 µs) is predicted later than one that met the calibration's: the
// probe beside six hogs wakes later at the median and more of its
// wake-ups are beyond 100 µs.
func TestPredictSlowTimerPathLaterTail(t *testing.T) {
	exp := mustParse(t, `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: t}
spec:
  mode: Simulate
  duration: 3s
  warmup: 500ms
  variants: [{name: autogroup-on, knobs: {autogroup: Enabled}}]
  workload:
    groups:
    - {name: hogs, session: batch, tasks: 6, pattern: {type: Hog}}
    - {name: probe, session: terminal, pattern: {type: LatencyProbe, interval: 1ms}}
  simulation: {replicas: 4, nodes: [{cpus: 2, hz: 250, kernel: "6.18.44"}]}
`)
	cal := testCal()
	predict := func(tp *v1alpha1.WindowTimerPath) *v1alpha1.Metrics {
		t.Helper()
		phases, shifts := WindowConditions(cal, nil, []v1alpha1.WindowResult{{Variant: "autogroup-on", Groups: []v1alpha1.GroupMeasurement{{Name: "probe"}}, TimerPath: tp}})
		shape, opts := WithNodeCalibration(exp.Spec.Simulation.Nodes[0], cal, PredictOptions{GridPhases: phases, TimerShifts: shifts})
		preds, err := Predict(&exp.Spec, []v1alpha1.NodeShape{shape}, opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range preds {
			if preds[i].Group == "probe" {
				return &preds[i].Metrics
			}
		}
		t.Fatal("no prediction for the probe")
		return nil
	}
	edge := func(idle, busy int64) *v1alpha1.TimerPathSample {
		return &v1alpha1.TimerPathSample{IdleTimerNs: idle, BusyTimerNs: busy, Samples: 150, IdleCPUIdle: f64(0.93)}
	}
	fast := predict(&v1alpha1.WindowTimerPath{Before: edge(44_000, 24_400), After: edge(44_000, 24_400)})
	slow := predict(&v1alpha1.WindowTimerPath{Before: edge(72_000, 38_400), After: edge(72_000, 38_400)})
	t.Logf("probe, fast timer path: p50 %.1f µs, p99 %.1f µs, beyond 100 µs %.4f; slow: p50 %.1f µs, p99 %.1f µs, beyond 100 µs %.4f",
		fast.WakeupLatencyUs.P50, fast.WakeupLatencyUs.P99, fast.LateFraction.Over100us,
		slow.WakeupLatencyUs.P50, slow.WakeupLatencyUs.P99, slow.LateFraction.Over100us)
	if d := slow.WakeupLatencyUs.P50 - fast.WakeupLatencyUs.P50; d < 7 {
		t.Errorf("p50 %.1f µs slow against %.1f fast: want the slow path's at least half its 14 µs later", slow.WakeupLatencyUs.P50, fast.WakeupLatencyUs.P50)
	}
	if slow.LateFraction.Over100us <= fast.LateFraction.Over100us {
		t.Errorf("beyond 100 µs %.4f slow against %.4f fast: want more with the slow path", slow.LateFraction.Over100us, fast.LateFraction.Over100us)
	}
}

// The stored runs of the fourteenth session's campaign, measured before
// the agent recorded timer paths, are predicted as they were:
// WindowConditions gives each WindowGridPhases's phases and no shifts.
func TestStoredRunsPredictedAsBefore(t *testing.T) {
	root := filepath.Join("..", "simengine", "testdata", "validation", "runs", "2026-12-07-1624")
	runs, err := filepath.Glob(filepath.Join(root, "r*", "*", "noderun.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) < 50 {
		t.Fatalf("%d stored runs under %s, want the campaign's 54", len(runs), root)
	}
	for _, p := range runs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var st v1alpha1.NodeRunStatus
		if err := json.NewDecoder(bytes.NewReader(b)).Decode(&st); err != nil {
			t.Fatal(err)
		}
		if st.Calibration == nil || len(st.Windows) == 0 {
			t.Fatalf("%s: no calibration or windows", p)
		}
		phases, shifts := WindowConditions(st.Calibration, nil, st.Windows)
		if d := cmp.Diff(WindowGridPhases(st.Windows), phases); d != "" || shifts != nil {
			t.Errorf("%s: phases differ from WindowGridPhases's (-want +got):\n%s\nshifts %v, want none", p, d, shifts)
		}
	}
}

// The calibration's timer path as an edge measures it: the quantiles'
// 50 % level when the calibration has them (the simulator draws from
// those), its medians otherwise.
func TestCalibrationTimerPath(t *testing.T) {
	cal := testCal()
	cal.Constants.TimerExpiryQuantilesNs[2] = 20_000
	if busy, idle := CalibrationTimerPath(cal); busy != 26_000 || idle != 45_600 {
		t.Errorf("with quantiles: busy %d, idle %d ns, want 20000+6000 and that +19600", busy, idle)
	}
	k := &cal.Constants
	k.TimerExpiryQuantilesNs, k.IdleExitQuantilesNs, k.CtxSwitchQuantilesNs = nil, nil, nil
	if busy, idle := CalibrationTimerPath(cal); busy != 24_400 || idle != 44_000 {
		t.Errorf("without quantiles: busy %d, idle %d ns, want 18400+6000 and timerLatenessNs 44000", busy, idle)
	}
}

// Edges that record their busy sleeps' quantiles give the window's timer
// expiry spread: edges whose spread is the calibration's moved by d give
// exactly the constants the median shift alone gives; narrower edges (a
// calibration window in the host's slow phase, edges in its fast one) a
// narrower spread, at each level the edges' mean less the calibration's
// context switch; an edge without quantiles, or a user's timer expiry,
// leaves the shifted calibration quantiles.
func TestWindowConditionsEdgeQuantiles(t *testing.T) {
	cal := testCal()
	k := cal.Constants
	busyOf := func(d int64) []int64 {
		q := make([]int64, len(k.TimerExpiryQuantilesNs))
		for i := range q {
			q[i] = k.TimerExpiryQuantilesNs[i] + k.CtxSwitchQuantilesNs[i] + d
		}
		return q
	}
	edge := func(q []int64) *v1alpha1.TimerPathSample {
		return &v1alpha1.TimerPathSample{IdleTimerNs: 44_000, BusyTimerNs: q[simengine.QuantileMedian], BusyTimerQuantilesNs: q, Samples: 150, IdleCPUIdle: f64(0.9), BusyQuiet: f64(0.9)}
	}
	window := func(before, after *v1alpha1.TimerPathSample) []v1alpha1.WindowResult {
		return []v1alpha1.WindowResult{{Variant: "v", Groups: []v1alpha1.GroupMeasurement{{Name: "hogs"}}, TimerPath: &v1alpha1.WindowTimerPath{Before: before, After: after}}}
	}
	simConsts := simengine.Constants{
		TimerExpiryNs: k.TimerExpiryNs, CtxSwitchNs: k.CtxSwitchNs, IdleExitNs: k.IdleExitNs,
		TimerExpiryQuantilesNs: k.TimerExpiryQuantilesNs, CtxSwitchQuantilesNs: k.CtxSwitchQuantilesNs, IdleExitQuantilesNs: k.IdleExitQuantilesNs,
	}

	// The same spread 3.0 and 4.0 µs later: +3.5 µs, as by the medians.
	_, shifts := WindowConditions(cal, nil, window(edge(busyOf(3_000)), edge(busyOf(4_000))))
	s := shifts["v"][0]
	if s.TimerExpiryNs != 3_500 {
		t.Errorf("same spread: timer expiry %+d ns, want +3500", s.TimerExpiryNs)
	}
	byMedian := s
	byMedian.TimerExpiryQuantilesNs = nil
	if d := cmp.Diff(shiftTimerPath(simConsts, byMedian), shiftTimerPath(simConsts, s)); d != "" {
		t.Errorf("same spread: constants differ from the median shift's (-median +quantiles):\n%s", d)
	}

	// A narrow fast phase (the stored check's 2026-12-07-2311 edges'
	// shape) against the calibration's wider spread.
	narrow := []int64{21_400, 21_800, 22_200, 22_500, 23_000, 25_600, 60_300}
	narrow2 := []int64{21_600, 22_000, 22_400, 22_700, 23_200, 25_800, 60_500}
	_, shifts = WindowConditions(cal, nil, window(edge(narrow), edge(narrow2)))
	s = shifts["v"][0]
	want := []int64{21_500 - 4_200, 21_900 - 4_200, 22_300 - 6_000, 22_600 - 6_900, 23_100 - 7_000, 25_700 - 7_200, 60_400 - 8_000}
	slices.Sort(want)
	if d := cmp.Diff(want, s.TimerExpiryQuantilesNs); d != "" {
		t.Errorf("narrow edges: timer expiry quantiles (-want +got):\n%s", d)
	}
	if got := shiftTimerPath(simConsts, s); !slices.Equal(got.TimerExpiryQuantilesNs, want) || got.TimerExpiryNs != k.TimerExpiryNs+s.TimerExpiryNs {
		t.Errorf("narrow edges: predicted with timer expiry %d ns, quantiles %v; want %d, %v", got.TimerExpiryNs, got.TimerExpiryQuantilesNs, k.TimerExpiryNs+s.TimerExpiryNs, want)
	}

	// One usable edge without quantiles: the median shift alone.
	old := edge(narrow2)
	old.BusyTimerQuantilesNs = nil
	_, shifts = WindowConditions(cal, nil, window(edge(narrow), old))
	if q := shifts["v"][0].TimerExpiryQuantilesNs; q != nil {
		t.Errorf("an edge without quantiles: timer expiry quantiles %v, want none", q)
	}
	// An unusable edge (few quiet busy sleeps) does not count.
	noisy := edge([]int64{50_000, 60_000, 70_000, 80_000, 90_000, 95_000, 99_000})
	noisy.BusyQuiet = f64(0.05)
	_, shifts = WindowConditions(cal, nil, window(noisy, edge(narrow)))
	if q := shifts["v"][0].TimerExpiryQuantilesNs; len(q) != len(narrow) || q[6] != 60_300-8_000 {
		t.Errorf("a noisy before-edge: timer expiry quantiles %v, want the after-edge's alone", q)
	}
	_, shifts = WindowConditions(cal, &v1alpha1.NodeConstants{TimerExpiryNs: 20_000}, window(edge(narrow), edge(narrow2)))
	if q := shifts["v"][0].TimerExpiryQuantilesNs; q != nil {
		t.Errorf("a user's timer expiry: timer expiry quantiles %v, want none", q)
	}
}

// traceCPU is one CPU's in-window timer trace with its lateness at every
// level moved from base by d.
func traceCPU(cpu int32, n int64, base []int64, d int64) v1alpha1.TimerTraceCPU {
	q := make([]int64, len(base))
	for i, x := range base {
		q[i] = x + d
	}
	return v1alpha1.TimerTraceCPU{CPU: cpu, Interrupts: n, LatenessQuantilesNs: q}
}

// A window with its own timer trace takes each CPU's timer expiry from it,
// not from its edges: with CPU 0's interrupts 20 µs later than in the
// calibration window and CPU 1's as then, the probe pinned to CPU 0 is
// predicted later and the one pinned to CPU 1 as with a trace of two fast
// CPUs, whatever the edges said. A CPU whose trace lost events is not
// used, and without a usable trace the edges give the shift.
func TestPredictInWindowTimerTracePerCPU(t *testing.T) {
	exp := mustParse(t, `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: t}
spec:
  mode: Simulate
  duration: 3s
  warmup: 500ms
  variants: [{name: v}]
  workload:
    groups:
    - {name: hogs0, session: b0, tasks: 2, cpus: "0", pattern: {type: Hog}}
    - {name: hogs1, session: b1, tasks: 2, cpus: "1", pattern: {type: Hog}}
    - {name: probe0, session: t0, cpus: "0", pattern: {type: LatencyProbe, interval: 1ms}}
    - {name: probe1, session: t1, cpus: "1", pattern: {type: LatencyProbe, interval: 1ms}}
  simulation: {replicas: 4, nodes: [{cpus: 2, hz: 250, kernel: "6.18.44"}]}
`)
	fastQ := []int64{15_000, 15_400, 15_800, 16_300, 17_000, 18_500, 25_000}
	cal := testCal()
	cal.TimerTrace = &v1alpha1.TimerTrace{DurationNs: 3e9, CPUs: []v1alpha1.TimerTraceCPU{traceCPU(0, 6000, fastQ, 0), traceCPU(1, 2500, fastQ, 0)}}
	cal.TimerTrace.CPUs[1].IdleInterrupts = 1000
	edge := func(busy int64) *v1alpha1.TimerPathSample {
		return &v1alpha1.TimerPathSample{IdleTimerNs: 44_000, BusyTimerNs: busy, Samples: 150, IdleCPUIdle: f64(0.93)}
	}
	// Slow edges: the trace, not they, must set the window's path.
	slowEdges := &v1alpha1.WindowTimerPath{Before: edge(44_400), After: edge(44_400)}
	predict := func(tt *v1alpha1.TimerTrace) (map[string]*v1alpha1.Metrics, TimerShift) {
		t.Helper()
		phases, shifts := WindowConditions(cal, nil, []v1alpha1.WindowResult{{Variant: "v", Groups: []v1alpha1.GroupMeasurement{{Name: "probe0"}}, TimerPath: slowEdges, TimerTrace: tt}})
		shape, opts := WithNodeCalibration(exp.Spec.Simulation.Nodes[0], cal, PredictOptions{GridPhases: phases, TimerShifts: shifts})
		preds, err := Predict(&exp.Spec, []v1alpha1.NodeShape{shape}, opts)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*v1alpha1.Metrics{}
		for i := range preds {
			out[preds[i].Group] = &preds[i].Metrics
		}
		return out, shifts["v"][0]
	}
	fast, sf := predict(&v1alpha1.TimerTrace{DurationNs: 3e9, CPUs: []v1alpha1.TimerTraceCPU{traceCPU(0, 3000, fastQ, 0), traceCPU(1, 3000, fastQ, 0)}})
	slow0, s0 := predict(&v1alpha1.TimerTrace{DurationNs: 3e9, CPUs: []v1alpha1.TimerTraceCPU{traceCPU(0, 3000, fastQ, 20_000), traceCPU(1, 3100, fastQ, 0)}})
	for name, s := range map[string]TimerShift{"fast": sf, "slow CPU 0": s0} {
		if s.Source != TimerSourceTrace {
			t.Errorf("%s: shift %+v from %q, want the in-window trace's", name, s, s.Source)
		}
	}
	if d := cmp.Diff([]int64{20_000, 0}, s0.CPUTimerExpiryNs); d != "" || s0.TimerExpiryNs != 0 {
		t.Errorf("slow CPU 0: shift %+v; want CPU 0 20 µs later than CPU 1, which is as in the calibration (-want +got):\n%s", s0, d)
	}
	for _, g := range []string{"probe0", "probe1"} {
		t.Logf("%s: fast trace p50 %.1f µs, beyond 100 µs %.4f; CPU 0 slow: p50 %.1f µs, beyond 100 µs %.4f", g,
			fast[g].WakeupLatencyUs.P50, fast[g].LateFraction.Over100us, slow0[g].WakeupLatencyUs.P50, slow0[g].LateFraction.Over100us)
	}
	if d := slow0["probe0"].WakeupLatencyUs.P50 - fast["probe0"].WakeupLatencyUs.P50; d < 15 {
		t.Errorf("probe0 (CPU 0) p50 %.1f µs with CPU 0 slow against %.1f: want it about 20 µs later", slow0["probe0"].WakeupLatencyUs.P50, fast["probe0"].WakeupLatencyUs.P50)
	}
	if d := slow0["probe1"].WakeupLatencyUs.P50 - fast["probe1"].WakeupLatencyUs.P50; d < -2 || d > 2 {
		t.Errorf("probe1 (CPU 1) p50 %.1f µs with CPU 0 slow against %.1f: want it where it was", slow0["probe1"].WakeupLatencyUs.P50, fast["probe1"].WakeupLatencyUs.P50)
	}

	// CPU 0's events lost: not used; CPU 1 alone, as the calibration.
	lost := traceCPU(0, 3000, fastQ, 20_000)
	lost.LostEvents = 12
	if _, s := predict(&v1alpha1.TimerTrace{DurationNs: 3e9, CPUs: []v1alpha1.TimerTraceCPU{lost, traceCPU(1, 1000, fastQ, 0)}}); s.Source != TimerSourceTrace || slices.ContainsFunc(s.CPUTimerExpiryNs, func(x int64) bool { return x != 0 }) {
		t.Errorf("CPU 0 lost events: shift %+v, want the trace's with no CPU moved", s)
	}
	// No usable CPU (too few interrupts), or no trace: the edges'.
	for name, tt := range map[string]*v1alpha1.TimerTrace{"few": {DurationNs: 3e9, CPUs: []v1alpha1.TimerTraceCPU{traceCPU(1, 10, fastQ, 0)}}, "unsupported": {Unsupported: "no tracefs"}, "none": nil} {
		if _, s := predict(tt); s.Source != TimerSourceEdges || s.TimerExpiryNs != 20_000 {
			t.Errorf("%s trace: shift %+v, want the slow edges' (+20 µs)", name, s)
		}
	}
	// A calibration trace that did not tell idle interrupts apart: the
	// edges'.
	cal.TimerTrace.CPUs[1].IdleInterrupts = 0
	if _, s := predict(&v1alpha1.TimerTrace{DurationNs: 3e9, CPUs: []v1alpha1.TimerTraceCPU{traceCPU(0, 3000, fastQ, 20_000), traceCPU(1, 3100, fastQ, 0)}}); s.Source != TimerSourceEdges {
		t.Errorf("calibration trace without idle interrupts apart: shift %+v, want the edges'", s)
	}
	cal.TimerTrace.CPUs[1].IdleInterrupts = 1000
	// The edges alone when asked.
	_, shifts := WindowConditionsFrom(TimerSourceEdges, cal, nil, []v1alpha1.WindowResult{{Variant: "v", Groups: []v1alpha1.GroupMeasurement{{Name: "probe0"}}, TimerPath: slowEdges,
		TimerTrace: &v1alpha1.TimerTrace{DurationNs: 3e9, CPUs: []v1alpha1.TimerTraceCPU{traceCPU(0, 3000, fastQ, 20_000), traceCPU(1, 3100, fastQ, 0)}}}})
	if s := shifts["v"][0]; s.Source != TimerSourceEdges || s.TimerExpiryNs != 20_000 {
		t.Errorf("edges asked for: shift %+v, want the edges' (+20 µs)", s)
	}
}
