package calib

import (
	"context"
	"testing"
)

// The window on this machine: every figure is a real, positive duration in
// the range a wake-up path takes (not a default, not a timeout), and the
// paths are ordered as the hardware orders them.
func TestMeasureThisNode(t *testing.T) {
	r, noise, err := MeasureRaw(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("raw %+v, noise %.3f CPUs; constants %+v", r, noise, r.Constants())
	if r.BusyQuiet <= 0 || r.BusyQuiet > 1 {
		t.Errorf("quiet fraction of the busy sleeps %.3f: want (0, 1] (the spinner's CPU clock is read)", r.BusyQuiet)
	}
	if r.IdleQuiet <= 0 || r.IdleQuiet > 1 {
		t.Errorf("quiet fraction of the idle sleeps %.3f: want (0, 1] (the run delay is read)", r.IdleQuiet)
	}
	for name, v := range map[string]int64{"idle timer lateness": r.IdleTimerLate, "busy timer lateness": r.BusyTimerLate,
		"timer CPU": r.TimerCPU, "local wake-up": r.LocalWakeLate, "local message": r.LocalMessage} {
		if v <= 0 || v > 5_000_000 {
			t.Errorf("%s %d ns: want a wake-up path's duration, 0 to 5 ms", name, v)
		}
	}
	if r.BusyTimerCPU <= 0 || r.BusyTimerCPU >= 1_000_000 {
		t.Errorf("busy timer sleep CPU %d ns: want a sleep's system call and switch, more than 0 and less than the 1 ms sleep", r.BusyTimerCPU)
	}
	if r.LocalMessage < r.LocalWakeLate/2 {
		t.Errorf("a local message took %d ns of wall time but its wake-up %d ns: the ping-pong is not timed", r.LocalMessage, r.LocalWakeLate)
	}
	if r.BackgroundLoad < 0 || r.BackgroundLoad > 0.5 {
		t.Errorf("background load %.3f: want the small share a spinner loses", r.BackgroundLoad)
	}
}
