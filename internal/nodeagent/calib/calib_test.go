package calib

import (
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
	if got != want {
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
