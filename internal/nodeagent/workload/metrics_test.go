package workload

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func hist(vals ...int64) *Histogram {
	h := NewHistogram()
	for _, v := range vals {
		h.Record(v)
	}
	return h
}

func TestHistogramMergeIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a, b, all := NewHistogram(), NewHistogram(), NewHistogram()
	for i := range 100000 {
		v := int64(r.ExpFloat64() * 50e3)
		if i%3 == 0 {
			v *= 1000 // some in the milliseconds and seconds
		}
		all.Record(v)
		if i%2 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	a.Merge(b)
	if !a.h.Equals(all.h) {
		t.Fatalf("merged histogram differs from the one that saw every value: %+v vs %+v", a.SummaryUs(), all.SummaryUs())
	}
	if a.Clamped() != all.Clamped() {
		t.Errorf("clamped %d vs %d", a.Clamped(), all.Clamped())
	}
}

func TestHistogramEncodingRoundTrip(t *testing.T) {
	h := hist(0, 1, 999, 1000, 1001, 123456, 10_000_000_000, 20_000_000_000, -5)
	b, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got Histogram
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !got.h.Equals(h.h) || got.Clamped() != 2 || got.Count() != 9 {
		t.Errorf("round trip: %+v clamped %d, want %+v clamped 2", got.SummaryUs(), got.Clamped(), h.SummaryUs())
	}
	if err := got.UnmarshalBinary(b[:4]); err == nil {
		t.Error("decoding 4 bytes succeeded")
	}
	if err := got.UnmarshalBinary(b); err != nil || !got.h.Equals(h.h) {
		t.Errorf("decoding again: %v", err)
	}
	for _, bad := range [][]byte{
		append([]byte{wireVersion}, 0, 1, 0, 1),                // a gap of 0
		append([]byte{wireVersion}, 0, 1, 0xff, 0xff, 0x7f, 1), // an index past the end
		append([]byte{wireVersion}, 0, 2, 1, 1),                // one bucket short
		append([]byte{wireVersion}, 0, 1, 1, 1, 9),             // a byte too many
		append([]byte{wireVersion}, 0, 1, 1, 0),                // a zero count
		{2, 0, 0},                                              // another version
	} {
		if err := got.UnmarshalBinary(bad); err == nil {
			t.Errorf("decoding %v succeeded", bad)
		}
	}
	if len(b) > 64 {
		t.Errorf("9 values encode into %d bytes", len(b))
	}
}

func TestHistogramSummaryUs(t *testing.T) {
	var vals []int64
	for i := int64(1); i <= 1000; i++ {
		vals = append(vals, i*1000) // 1µs … 1000µs
	}
	got := hist(vals...).SummaryUs()
	want := v1alpha1.LatencySummary{P50: 500, P90: 900, P99: 990, P999: 999, Max: 1000, Mean: 500.5, Count: 1000}
	// 3 significant digits: within 0.1%.
	if d := cmp.Diff(want, got, cmpopts.EquateApprox(0.001, 0)); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
	if (&Histogram{h: NewHistogram().h}).SummaryUs() != (v1alpha1.LatencySummary{}) {
		t.Error("an empty histogram has a non-zero summary")
	}
}

func TestHistogramLateFraction(t *testing.T) {
	got := hist(50e3, 99e3, 101e3, 150e3, 2e6, 20e6, 30e6, 9.9e6).LateFraction()
	want := v1alpha1.LateFraction{Over100us: 6.0 / 8, Over1ms: 4.0 / 8, Over10ms: 2.0 / 8}
	if got != want {
		t.Errorf("late fractions %+v, want %+v", got, want)
	}
}

func TestGroupMetrics(t *testing.T) {
	w := &Window{Duration: 2 * time.Second, Tasks: []TaskStats{
		{Group: "hog", Pattern: v1alpha1.PatternHog, CPUNs: 1.5e9, Voluntary: 2, Involuntary: 400, Latency: NewHistogram()},
		{Group: "hog", Pattern: v1alpha1.PatternHog, CPUNs: 0.5e9, Voluntary: 0, Involuntary: 200, Latency: NewHistogram()},
		{Group: "frame", Pattern: v1alpha1.PatternPeriodic, CPUNs: 0.2e9, Voluntary: 50, Latency: hist(10e3, 20e3), Ops: 49, Periods: 50, Misses: 1},
		{Group: "frame", Pattern: v1alpha1.PatternPeriodic, CPUNs: 0.2e9, Voluntary: 50, Latency: hist(30e3, 40e3), Ops: 50, Periods: 50, Misses: 0},
	}}
	f := func(v float64) *float64 { return &v }
	want := map[string]v1alpha1.Metrics{
		"hog": {CPU: 1, CPUPerTask: 0.5, Share: 2.0 / 2.4,
			CtxSwitchesPerSec: &v1alpha1.ContextSwitches{Voluntary: 1, Involuntary: 300}},
		"frame": {CPU: 0.2, CPUPerTask: 0.1, Share: 0.4 / 2.4,
			CtxSwitchesPerSec: &v1alpha1.ContextSwitches{Voluntary: 50},
			WakeupLatencyUs:   &v1alpha1.LatencySummary{P50: 20, P90: 40, P99: 40, P999: 40, Max: 40, Mean: 25, Count: 4},
			DeadlineMissRatio: f(0.01), OpsPerSec: f(49.5), LateFraction: &v1alpha1.LateFraction{}},
	}
	got := WindowMetrics(w)
	if d := cmp.Diff(want, got, cmpopts.EquateApprox(0.001, 1e-9)); d != "" {
		t.Errorf("metrics (-want +got):\n%s", d)
	}
	// A Server group: offered is the arrivals drawn (admitted or dropped),
	// throughput the completed requests, per second of the window; request
	// latency, and no wakeupLatencyUs (the simulator fills none either).
	sw := &Window{Duration: 2 * time.Second, Tasks: []TaskStats{
		{Group: "web", Pattern: v1alpha1.PatternServer, CPUNs: 0.3e9, Voluntary: 300, Involuntary: 10, Latency: hist(1e6, 3e6), Ops: 150, Arrivals: 150, Dropped: 4},
		{Group: "web", Pattern: v1alpha1.PatternServer, CPUNs: 0.3e9, Voluntary: 300, Involuntary: 30, Latency: hist(2e6, 2e6), Ops: 148, Arrivals: 155, Dropped: 0},
	}}
	sm := GroupMetrics(sw, "web")
	if sm.Offered == nil || sm.Throughput == nil || sm.Dropped == nil || sm.RequestLatencyUs == nil {
		t.Fatalf("Server group metrics: offered %v throughput %v dropped %v requestLatencyUs %v", sm.Offered, sm.Throughput, sm.Dropped, sm.RequestLatencyUs)
	}
	if *sm.Offered != 152.5 || *sm.Throughput != 149 || *sm.Dropped != 2 || sm.RequestLatencyUs.Count != 4 || sm.WakeupLatencyUs != nil {
		t.Errorf("Server group: offered %v/s (want 152.5), throughput %v/s (149), dropped %v/s (2), %d latencies (4), wakeupLatencyUs %v (none)",
			*sm.Offered, *sm.Throughput, *sm.Dropped, sm.RequestLatencyUs.Count, sm.WakeupLatencyUs)
	}
	if g := GroupMetrics(w, "hog"); g.Share != 0 {
		t.Errorf("GroupMetrics fills share %v; only WindowMetrics can", g.Share)
	}
	if d := cmp.Diff(v1alpha1.Metrics{}, GroupMetrics(w, "nobody")); d != "" {
		t.Errorf("unknown group: %s", d)
	}
	if d := cmp.Diff(v1alpha1.Metrics{}, GroupMetrics(&Window{}, "hog")); d != "" {
		t.Errorf("empty window: %s", d)
	}
}

// A grid's phase is its first deadline modulo its interval, per task in the
// window's order; a group with a task without a grid has none.
func TestGroupGridPhases(t *testing.T) {
	const ms = int64(time.Millisecond)
	w := &Window{Duration: time.Second, Tasks: []TaskStats{
		{Group: "probe", Pattern: v1alpha1.PatternLatencyProbe, GridNs: 2 * ms, FirstDeadlineNs: 1000*ms + 37_000},
		{Group: "frame", Pattern: v1alpha1.PatternPeriodic, GridNs: 40 * ms, FirstDeadlineNs: 1041 * ms},
		{Group: "probe", Pattern: v1alpha1.PatternLatencyProbe, GridNs: 2 * ms, FirstDeadlineNs: 1003*ms + 5},
		{Group: "hog", Pattern: v1alpha1.PatternHog},
		{Group: "late", Pattern: v1alpha1.PatternLatencyProbe, GridNs: 2 * ms},
		{Group: "late", Pattern: v1alpha1.PatternLatencyProbe, GridNs: 2 * ms, FirstDeadlineNs: 5 * ms},
	}}
	for group, want := range map[string][]int64{"probe": {37_000, 1*ms + 5}, "frame": {1 * ms}, "hog": nil, "late": nil, "nobody": nil} {
		if d := cmp.Diff(want, GroupGridPhases(w, group)); d != "" {
			t.Errorf("group %s: grid phases (-want +got):\n%s", group, d)
		}
	}
}

// BenchmarkHistogramRecord: recording is on the probe's path between waking
// and sleeping again; goal: well under 100 ns per value.
func BenchmarkHistogramRecord(b *testing.B) {
	h := NewHistogram()
	for i := 0; b.Loop(); i++ {
		h.Record(int64(i&0xffff) * 997)
	}
}

// BenchmarkHistogramEncodeDecodeMerge: what End costs per task (the worker
// encodes, the parent decodes and merges); goal: under 2 ms per task, so 512
// tasks end within a second of CPU.
func BenchmarkHistogramEncodeDecodeMerge(b *testing.B) {
	h := NewHistogram()
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		h.Record(int64(r.ExpFloat64() * 80e3))
	}
	all := NewHistogram()
	for b.Loop() {
		enc, err := h.MarshalBinary()
		if err != nil {
			b.Fatal(err)
		}
		var d Histogram
		if err := d.UnmarshalBinary(enc); err != nil {
			b.Fatal(err)
		}
		all.Merge(&d)
	}
}
