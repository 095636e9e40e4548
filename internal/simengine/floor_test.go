package simengine

import "testing"

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
