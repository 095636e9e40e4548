package calib

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// The constants are differences of the measured paths, in the simulator's
// terms; a part the measurements cannot tell from zero is 1 ns.
func TestConstantsFromRaw(t *testing.T) {
	r := Raw{IdleTimerLate: 60_000, BusyTimerLate: 45_000, TimerCPU: 30_000, LocalWakeLate: 8_000,
		LocalMessage: 12_000, RemoteWakeLate: 50_000}
	got := r.Constants()
	want := v1alpha1.NodeConstants{TimerExpiryNs: 37_000, IdleExitNs: 15_000, CtxSwitchNs: 8_000, WakeupNs: 27_000}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Constants() = %+v, want %+v", got, want)
	}
	// A busy CPU that woke later than an idle one: no idle exit to see.
	r.BusyTimerLate = 70_000
	if c := r.Constants(); c.IdleExitNs != 1 || c.TimerExpiryNs != 62_000 {
		t.Errorf("busy later than idle: %+v, want idleExitNs 1 and timerExpiryNs 62000", c)
	}
	// One CPU: no remote wake-up measured, the default stays.
	r.RemoteWakeLate = 0
	if c := r.Constants(); c.WakeupNs != 0 {
		t.Errorf("one CPU: wakeupNs %d, want 0 (the default)", c.WakeupNs)
	}
}

// A timer sleep's CPU on a busy CPU is the context switch, the simulator's
// default CPU per wake-up (2 µs) and the timer's arm: the arm is what is
// left; unmeasured, the default stays.
func TestTimerArmCPUFromRaw(t *testing.T) {
	r := Raw{IdleTimerLate: 60_000, BusyTimerLate: 45_000, LocalWakeLate: 6_000, BusyTimerCPU: 18_000}
	if c := r.Constants(); c.TimerArmCPUNs != 10_000 || c.WakeupCPUNs != 0 {
		t.Errorf("18 µs per sleep, 6 µs switch: timerArmCPUNs %d, wakeupCPUNs %d; want 10000 and 0 (the default)", c.TimerArmCPUNs, c.WakeupCPUNs)
	}
	r.BusyTimerCPU = 7_000
	if c := r.Constants(); c.TimerArmCPUNs != 1 {
		t.Errorf("7 µs per sleep, 6 µs switch: timerArmCPUNs %d, want 1 (not told from zero)", c.TimerArmCPUNs)
	}
	r.BusyTimerCPU = 0
	if c := r.Constants(); c.TimerArmCPUNs != 0 {
		t.Errorf("not measured: timerArmCPUNs %d, want 0 (the default)", c.TimerArmCPUNs)
	}
}

// With the paths' quantiles, each term's spread is the difference of the
// paths' quantiles at the same level, so a busy-CPU timer wake-up (timer
// expiry plus switch) has the measured busy path's quantiles again.
func TestConstantQuantilesFromRaw(t *testing.T) {
	r := Raw{IdleTimerLate: 90_000, BusyTimerLate: 50_000, LocalWakeLate: 7_000, RemoteWakeLate: 80_000,
		IdleTimerQ:  []int64{70_000, 80_000, 90_000, 95_000, 120_000, 150_000, 300_000},
		BusyTimerQ:  []int64{40_000, 45_000, 50_000, 60_000, 80_000, 100_000, 200_000},
		LocalWakeQ:  []int64{5_000, 6_000, 7_000, 7_000, 8_000, 9_000, 20_000},
		RemoteWakeQ: []int64{50_000, 70_000, 80_000, 85_000, 100_000, 120_000, 250_000}}
	c := r.Constants()
	for i := range r.BusyTimerQ {
		if got := c.TimerExpiryQuantilesNs[i] + c.CtxSwitchQuantilesNs[i]; got != r.BusyTimerQ[i] {
			t.Errorf("level %d: timer expiry + switch = %d, want the busy path's %d", i, got, r.BusyTimerQ[i])
		}
	}
	// Idle exit: idle - busy = 30, 35, 40, 35, 40, 50, 100 µs, sorted.
	if want := []int64{30_000, 35_000, 35_000, 40_000, 40_000, 50_000, 100_000}; !reflect.DeepEqual(c.IdleExitQuantilesNs, want) {
		t.Errorf("idle exit quantiles %v, want %v", c.IdleExitQuantilesNs, want)
	}
	if c.WakeupQuantilesNs == nil || c.WakeupQuantilesNs[0] < 1 {
		t.Errorf("wake-up quantiles %v, want measured ones, each at least 1 ns", c.WakeupQuantilesNs)
	}
	r.RemoteWakeQ = nil
	if c := r.Constants(); c.WakeupQuantilesNs != nil {
		t.Errorf("no remote path measured: wake-up quantiles %v, want none (the default spread)", c.WakeupQuantilesNs)
	}
}

// The cold wake-up figure is the difference of the two lengths' median
// lateness over the doublings between them (log2(40/2) = 4.32), with an
// interval from the medians' order statistics; the node's coldWakeNs is
// set from it only when the measurement is judged sound.
func TestColdWakeFigure(t *testing.T) {
	// 40 short sleeps 20.0..23.9 µs late, 20 long ones 17.3 µs later.
	var short, long []int64
	for i := range 40 {
		short = append(short, 20_000+int64(i)*100)
	}
	for i := range 20 {
		long = append(long, 37_300+int64(i)*200)
	}
	c := coldWakeFigure(slices.Clone(short), slices.Clone(long), 2_000_000, 40_000_000, 20, 0.01)
	// Medians: short[20] = 22.0 µs, long[10] = 39.3 µs; 17.3 / 4.322 = 4.003 µs.
	if c.ShortLate != 22_000 || c.LongLate != 39_300 || c.PerDoubling != 4_003 || c.Rejected != "" {
		t.Fatalf("figure %+v, want medians 22000 and 39300, 4003 ns per doubling, accepted", c)
	}
	// Ranks n/2 ∓ 0.98√n: short 13th and 27th (21.2, 22.6 µs), long 5th and
	// 15th (38.1, 40.1 µs): (38.1-22.6)/4.322 = 3.586, (40.1-21.2)/4.322 = 4.373.
	if c.Low != 3_586 || c.High != 4_373 {
		t.Errorf("interval %d..%d ns, want 3586..4373", c.Low, c.High)
	}
	c.Neighbour = v1alpha1.ColdWakeNeighbourProcess
	r := Raw{IdleTimerLate: 60_000, BusyTimerLate: 45_000, LocalWakeLate: 8_000, Cold: c}
	if got := r.Constants().ColdWakeNs; got != 4_003 {
		t.Errorf("coldWakeNs %d, want the figure's 4003", got)
	}
	cal := r.Calibration(0)
	if cw := cal.ColdWake; cw == nil || cw.PerDoublingNs != 4_003 || cw.LongSamples != 20 || cw.ShortSamples != 40 || cw.Rejected != "" ||
		cw.Neighbour != v1alpha1.ColdWakeNeighbourProcess {
		t.Errorf("status coldWake %+v, want the figure recorded", cw)
	}

	// Long sleeps as late as short ones: no cold cost, recorded as 1 ns
	// (0 would read as the default).
	c = coldWakeFigure(slices.Clone(short), slices.Clone(short[:20]), 2_000_000, 40_000_000, 20, 0)
	r.Cold = c
	if c.PerDoubling >= 0 || r.Constants().ColdWakeNs != 1 {
		t.Errorf("long sleeps no later: %d ns per doubling, coldWakeNs %d; want below 0 and 1", c.PerDoubling, r.Constants().ColdWakeNs)
	}

	for _, tc := range []struct {
		name        string
		short, long []int64
		made        int
		other       float64
		why         string
	}{
		{"few quiet long sleeps", short, long[:9], 20, 0, "9 of 20 long sleeps quiet"},
		{"others on the CPU", short, long, 20, 0.2, "other processes took 0.20"},
		{"spread", short, append(slices.Clone(long[:10]), 60_000, 61_000, 62_000, 63_000, 64_000, 65_000, 66_000, 67_000, 68_000, 69_000), 20, 0, "wider than 6 µs"},
		// Long sleeps 10 µs earlier than short ones, surely: not a cold
		// cost, the blocks saw different timer paths.
		{"surely earlier", short, func() (e []int64) {
			for _, v := range short[:20] {
				e = append(e, v-10_000)
			}
			return e
		}(), 20, 0, "the long sleeps woke earlier than the short ones"},
	} {
		c := coldWakeFigure(slices.Clone(tc.short), slices.Clone(tc.long), 2_000_000, 40_000_000, tc.made, tc.other)
		r.Cold = c
		if !strings.Contains(c.Rejected, tc.why) || r.Constants().ColdWakeNs != 0 {
			t.Errorf("%s: %+v, coldWakeNs %d; want it rejected and the default (0) kept", tc.name, c, r.Constants().ColdWakeNs)
		}
		if cw := r.Calibration(0).ColdWake; cw == nil || cw.Rejected != c.Rejected {
			t.Errorf("%s: status coldWake %+v, want the rejection recorded", tc.name, cw)
		}
	}
	r.Cold = nil
	if r.Constants().ColdWakeNs != 0 || r.Calibration(0).ColdWake != nil {
		t.Errorf("not measured: want no coldWakeNs and no status coldWake")
	}
}

// The process switch is the difference of the busy timer path's medians
// beside a spinner process and beside a spinner thread, with an interval
// from the medians' order statistics; the node's processSwitchNs is set
// from it only when the measurement is judged sound.
func TestProcessSwitchFigure(t *testing.T) {
	// 100 sleeps beside the thread 18.00..22.95 µs late, 100 beside the
	// process 4 µs later.
	var thread, process []int64
	for i := range 100 {
		thread = append(thread, 18_000+int64(i)*50)
		process = append(process, 22_000+int64(i)*50)
	}
	p := processSwitchFigure(slices.Clone(thread), slices.Clone(process))
	// Medians: the 51st, 20.5 and 24.5 µs.
	if p.ThreadLate != 20_500 || p.ProcessLate != 24_500 || p.PerSwitch != 4_000 || p.Rejected != "" {
		t.Fatalf("figure %+v, want medians 20500 and 24500, 4000 ns, accepted", p)
	}
	// Ranks 50 ∓ 9.8: the 40th and the 60th, 19.95 and 20.95 µs beside the
	// thread, 23.95 and 24.95 beside the process: 23.95-20.95 = 3.0,
	// 24.95-19.95 = 5.0.
	if p.Low != 3_000 || p.High != 5_000 {
		t.Errorf("interval %d..%d ns, want 3000..5000", p.Low, p.High)
	}
	r := Raw{IdleTimerLate: 60_000, BusyTimerLate: 45_000, LocalWakeLate: 8_000, Switch: p}
	if got := r.Constants().ProcessSwitchNs; got != 4_000 {
		t.Errorf("processSwitchNs %d, want the figure's 4000", got)
	}
	if ps := r.Calibration(0).ProcessSwitch; ps == nil || ps.PerSwitchNs != 4_000 || ps.ThreadSamples != 100 || ps.ProcessSamples != 100 ||
		ps.ThreadP50Ns != 20_500 || ps.ProcessP50Ns != 24_500 || ps.Rejected != "" {
		t.Errorf("status processSwitch %+v, want the figure recorded", ps)
	}
	// A process neighbour no costlier than a thread: the medians 0.05 µs
	// apart the wrong way, the interval across 0: recorded as 1 ns (0
	// would read as the default).
	var early []int64
	for _, v := range thread {
		early = append(early, v-50)
	}
	r.Switch = processSwitchFigure(slices.Clone(thread), early)
	if r.Switch.PerSwitch != -50 || r.Switch.Rejected != "" || r.Constants().ProcessSwitchNs != 1 {
		t.Errorf("process no costlier: %+v, processSwitchNs %d; want -50 ns accepted as 1", r.Switch, r.Constants().ProcessSwitchNs)
	}
	spread := slices.Clone(process[:50])
	for i := range 50 {
		spread = append(spread, 40_000+int64(i)*1_000)
	}
	for _, tc := range []struct {
		name            string
		thread, process []int64
		why             string
	}{
		{"few quiet sleeps", thread, process[:49], "100 quiet sleeps beside the thread and 49 beside the process, fewer than 50"},
		{"spread", thread, spread, "wider than 4 µs"},
		// Beside the process 4 µs earlier, surely (the interval -5..-3 µs):
		// not a switch's cost, something else moved between the blocks.
		{"surely earlier", process, thread, "woke earlier than beside the thread (95 % interval -5.0 to -3.0 µs)"},
	} {
		p := processSwitchFigure(slices.Clone(tc.thread), slices.Clone(tc.process))
		r.Switch = p
		if !strings.Contains(p.Rejected, tc.why) || r.Constants().ProcessSwitchNs != 0 {
			t.Errorf("%s: %+v, processSwitchNs %d; want it rejected (%q) and the default (0) kept", tc.name, p, r.Constants().ProcessSwitchNs, tc.why)
		}
		if ps := r.Calibration(0).ProcessSwitch; ps == nil || ps.Rejected != p.Rejected {
			t.Errorf("%s: status processSwitch %+v, want the rejection recorded", tc.name, ps)
		}
	}
	r.Switch = nil
	if r.Constants().ProcessSwitchNs != 0 || r.Calibration(0).ProcessSwitch != nil {
		t.Errorf("not measured: want no processSwitchNs and no status processSwitch")
	}
}
