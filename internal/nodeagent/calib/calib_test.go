package calib

import (
	"reflect"
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

func TestQuantiles(t *testing.T) {
	xs := make([]int64, 200)
	for i := range xs {
		xs[i] = int64(200 - i)
	}
	if got, want := quantiles(xs), []int64{11, 51, 101, 151, 181, 191, 199}; !reflect.DeepEqual(got, want) {
		t.Errorf("quantiles = %v, want %v", got, want)
	}
}
