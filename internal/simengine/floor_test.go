package simengine

import (
	"math"
	"strings"
	"testing"
)

// The latency floor: a probe alone on an idle node wakes at its hard expiry
// (deadline + slack), then pays the timer interrupt, the idle exit and the
// context switch; nothing else. Each term is checked by changing it.
func TestLatencyFloorIdle(t *testing.T) {
	k := Constants{TimerExpiryNs: 4_000, IdleExitNs: 7_000, CtxSwitchNs: 2_000, WakeupNs: 1_000, WakeupCPUNs: 1_000, TimerArmCPUNs: 1_000}
	for _, tc := range []struct {
		name  string
		slack int64
		want  float64 // µs
	}{
		{"default slack", 0, 50 + 4 + 7 + 2},
		{"1ns slack", 1, 4 + 7 + 2},
		{"200us slack", 200_000, 200 + 4 + 7 + 2},
	} {
		r := mustRun(t, Input{Node: Node{CPUs: 1, Constants: k},
			Groups: []Group{{Name: "probe", Tasks: 1, TimerSlackNs: tc.slack,
				Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_000_000}}},
			DurationNs: 1e9, WarmupNs: 1e8, Seed: 1})
		l := group(t, r, "probe").Metrics.WakeupLatencyUs
		near(t, tc.name+" p50", l.P50, tc.want, tc.want*0.03)
		near(t, tc.name+" max", l.Max, tc.want, tc.want*0.03)
		// CPU per wake-up: the probe's 2 µs, the switch, the idle exit, the
		// wake-up's own work and the timer arm.
		near(t, tc.name+" cpu", group(t, r, "probe").Metrics.CPU, 1000*(2+2+7+1+1)*1e-6, 0.0005)
	}
}

// On a busy CPU the tick runs, and a tick between the soft and the hard
// expiry ends the sleep early (hrtimer_interrupt() expires every timer past
// its soft expiry): with 2 ms of slack at HZ 1000 a sleep never lasts past
// the first tick after its deadline, so no wake-up is later than one tick
// plus the wake-up costs; on an idle CPU every sleep lasts the whole slack.
func TestTimerSlackTick(t *testing.T) {
	busy := mustRun(t, Input{Node: Node{CPUs: 1, HZ: 1000, Constants: freeWakeups},
		Groups: []Group{
			{Name: "hog", Tasks: 1, Session: "a"},
			{Name: "probe", Tasks: 1, Session: "b", TimerSlackNs: 2_000_000,
				Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_500_000}},
		},
		DurationNs: 2e9, WarmupNs: 1e8, Seed: 1})
	l := group(t, busy, "probe").Metrics.WakeupLatencyUs
	if l.Max > 1000*1.03 {
		t.Errorf("busy CPU: max latency %.0f µs, want ≤ one tick (1000 µs)", l.Max)
	}
	if l.P50 < 100 {
		t.Errorf("busy CPU: p50 %.0f µs, want the wait for a tick (deadlines fall between ticks)", l.P50)
	}
	idle := mustRun(t, Input{Node: Node{CPUs: 1, HZ: 1000, Constants: freeWakeups},
		Groups: []Group{{Name: "probe", Tasks: 1, TimerSlackNs: 2_000_000,
			Pattern: Pattern{Type: LatencyProbe, IntervalNs: 5_000_000}}},
		DurationNs: 2e9, WarmupNs: 1e8, Seed: 1})
	near(t, "idle CPU p50", group(t, idle, "probe").Metrics.WakeupLatencyUs.P50, 2000, 60)
}

// The late fractions and the log2 histogram count what was recorded.
func TestLateFractionsAndHistogram(t *testing.T) {
	h := &histogram{}
	for _, v := range []int64{500, 50_000, 99_000, 101_000, 150_000, 2_000_000, 20_000_000, 9_900_000} {
		h.record(v)
	}
	l := h.latency()
	if l.Over100us != 5.0/8 || l.Over1ms != 3.0/8 || l.Over10ms != 1.0/8 {
		t.Errorf("late fractions %v %v %v, want 0.625 0.375 0.125", l.Over100us, l.Over1ms, l.Over10ms)
	}
	got := h.log2Us()
	// 0.5 µs → bucket 0; 50 µs → [32,64) = 6; 99, 101 µs → [64,128) = 7;
	// 150 µs → 8; 2 ms → [1024,2048)... = 11; 9.9 ms → 14; 20 ms → 15.
	want := []int64{1, 0, 0, 0, 0, 0, 1, 2, 1, 0, 0, 1, 0, 0, 1, 1}
	if len(got) != len(want) {
		t.Fatalf("histogram %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("histogram %v, want %v", got, want)
		}
	}
}

// The floor as a distribution: a probe alone on an idle CPU pays, per
// wake-up, every term of its path at one drawn level, so its latency's
// quantiles are the slack plus the sum of the terms' quantiles at the same
// level, and its late fraction beyond a threshold inside the spread is
// the level where the sum crosses it.
func TestLatencyFloorDistribution(t *testing.T) {
	k := Constants{
		TimerExpiryQuantilesNs: []int64{20_000, 30_000, 40_000, 50_000, 60_000, 80_000, 150_000},
		IdleExitQuantilesNs:    []int64{5_000, 5_000, 10_000, 10_000, 20_000, 20_000, 40_000},
		CtxSwitchQuantilesNs:   []int64{1_000, 1_000, 2_000, 2_000, 2_000, 3_000, 5_000},
		WakeupCPUNs:            NoCost, TimerArmCPUNs: NoCost,
	}
	r := mustRun(t, Input{Node: Node{CPUs: 1, Constants: k},
		Groups: []Group{{Name: "probe", Tasks: 1, TimerSlackNs: 1,
			Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_000_000}}},
		DurationNs: 20e9, WarmupNs: 1e8, Seed: 3})
	l := group(t, r, "probe").Metrics.WakeupLatencyUs
	// Sums at the levels 0.5, 0.9 and 0.99: 52, 82, 195 µs.
	near(t, "p50", l.P50, 52, 52*0.05)
	near(t, "p90", l.P90, 82, 82*0.05)
	near(t, "p99", l.P99, 195, 195*0.08)
	// Beyond 100 µs: the sum is 82 at 0.9 and 103 at 0.95, so the level
	// where it crosses 100 is about 0.9 + 0.05*18/21 = 0.943 (each term is
	// interpolated geometrically, their sum nearly linearly here).
	near(t, "over 100 µs", l.Over100us, 1-0.943, 0.01)
	// A term set by its scalar alone is a fixed cost (TestLatencyFloorIdle);
	// the defaults are spread.
	d := mustRun(t, Input{Node: Node{CPUs: 1},
		Groups: []Group{{Name: "probe", Tasks: 1, TimerSlackNs: 1,
			Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_000_000}}},
		DurationNs: 5e9, WarmupNs: 1e8, Seed: 3})
	dl := group(t, d, "probe").Metrics.WakeupLatencyUs
	near(t, "defaults p50", dl.P50, 5+5+3, 13*0.05)
	if dl.P99 < 3*dl.P50 {
		t.Errorf("defaults: p99 %.1f µs, p50 %.1f µs; want a spread (p99 ≥ 3×p50)", dl.P99, dl.P50)
	}
}

// Quantile lists are checked: one value per level, none decreasing.
func TestFloorQuantilesValidated(t *testing.T) {
	for _, q := range [][]int64{{1, 2, 3}, {1, 2, 3, 4, 5, 6, 5}, {-1, 2, 3, 4, 5, 6, 7}} {
		in := Input{Node: Node{CPUs: 1, Constants: Constants{IdleExitQuantilesNs: q}},
			Groups: []Group{{Name: "a", Tasks: 1}}, DurationNs: 1e6, Seed: 1}
		if _, err := Run(in); err == nil || !strings.Contains(err.Error(), "idleExitQuantilesNs") {
			t.Errorf("quantiles %v: error %v, want one naming idleExitQuantilesNs", q, err)
		}
	}
}

// A wake-up after a long sleep is slower: the other tasks took the
// sleeper's caches and TLB entries, and it refills them on its way back
// (Constants.ColdWakeNs per doubling of the sleep past 2 ms, up to 100 ms).
// Alone on an idle CPU with fixed terms the cost is exact.
func TestColdWakeAfterLongSleep(t *testing.T) {
	k := Constants{TimerExpiryNs: 4_000, IdleExitNs: 7_000, CtxSwitchNs: 2_000, WakeupCPUNs: NoCost, TimerArmCPUNs: NoCost,
		ColdWakeNs: 4_000}
	base := 4.0 + 7 + 2 // µs: timer, idle exit, switch (1 ns of slack)
	for _, tc := range []struct {
		name       string
		intervalNs int64
		cold       int64
		want       float64 // µs
	}{
		{"2 ms sleeps", 2_000_000, 0, base},
		{"40 ms sleeps", 40_000_000, 0, base + 4*math.Log2(40.0/2)},
		{"400 ms sleeps count as 100 ms", 400_000_000, 0, base + 4*math.Log2(100.0/2)},
		{"40 ms sleeps, no cold cost", 40_000_000, NoCost, base},
	} {
		kc := k
		if tc.cold != 0 {
			kc.ColdWakeNs = tc.cold
		}
		r := mustRun(t, Input{Node: Node{CPUs: 1, Constants: kc},
			Groups: []Group{{Name: "probe", Tasks: 1, TimerSlackNs: 1,
				Pattern: Pattern{Type: LatencyProbe, IntervalNs: tc.intervalNs}}},
			DurationNs: 20e9, WarmupNs: 1e9, Seed: 1})
		l := group(t, r, "probe").Metrics.WakeupLatencyUs
		// The p50 within the histogram's bucket width, the max exact.
		near(t, tc.name+" p50", l.P50, tc.want, tc.want*0.03)
		near(t, tc.name+" max", l.Max, tc.want, 0.01)
	}
}

// The node's figure: LatencyProbes of 1 ms and 40 ms beside four hogs on
// 2 CPUs (6.18, HZ 250), three runs of 20 s on 2026-12-07: the 40 ms
// probe's median wake-up was 15.9, 21.0 and 14.8 µs later than the 1 ms
// probe's (its p90 40, 65 and 41 µs later). With the default constants the
// simulator must show a gap of that order, and none without the cold cost.
func TestColdWakeBesideHogs(t *testing.T) {
	gap := func(k Constants) float64 {
		r := mustRun(t, Input{Node: Node{CPUs: 2, HZ: 250, Constants: k},
			Groups: []Group{
				{Name: "hogs", Tasks: 4},
				{Name: "p1ms", Tasks: 1, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_000_000}},
				{Name: "p40ms", Tasks: 1, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 40_000_000}},
			},
			DurationNs: 20e9, WarmupNs: 1e9, Seed: 1})
		return group(t, r, "p40ms").Metrics.WakeupLatencyUs.P50 - group(t, r, "p1ms").Metrics.WakeupLatencyUs.P50
	}
	if g := gap(Constants{}); g < 10 || g > 25 {
		t.Errorf("default constants: the 40 ms probe's p50 is %.1f µs above the 1 ms probe's, want 10..25 (node: 14.8..21.0)", g)
	}
	if g := gap(Constants{ColdWakeNs: NoCost}); g < -3 || g > 3 {
		t.Errorf("no cold cost: the 40 ms probe's p50 is %.1f µs above the 1 ms probe's, want within 3", g)
	}
}
