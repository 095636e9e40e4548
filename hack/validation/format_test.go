package main

import (
	"testing"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// The runs table's timer cell carries the calibration window's cold
// wake-up figure when the window measured one, and says when it was not
// recorded.
func TestColdWakeCell(t *testing.T) {
	for _, c := range []struct {
		cw   *v1alpha1.ColdWakeCalibration
		want string
	}{
		{nil, ""},
		{&v1alpha1.ColdWakeCalibration{PerDoublingNs: 520}, "; cold wake-up 0.5 µs per doubling"},
		{&v1alpha1.ColdWakeCalibration{PerDoublingNs: 1_700, Rejected: "others"}, "; cold wake-up not recorded (1.7 µs per doubling seen)"},
	} {
		if got := coldWakeCell(c.cw); got != c.want {
			t.Errorf("coldWakeCell(%+v) = %q, want %q", c.cw, got, c.want)
		}
	}
}

// The timer cell carries the process switch figure too when the window
// measured one.
func TestProcessSwitchCell(t *testing.T) {
	for _, c := range []struct {
		ps   *v1alpha1.ProcessSwitchCalibration
		want string
	}{
		{nil, ""},
		{&v1alpha1.ProcessSwitchCalibration{PerSwitchNs: 3_800}, "; process switch 3.8 µs"},
		{&v1alpha1.ProcessSwitchCalibration{PerSwitchNs: 900, Rejected: "wide"}, "; process switch not recorded (0.9 µs seen)"},
	} {
		if got := processSwitchCell(c.ps); got != c.want {
			t.Errorf("processSwitchCell(%+v) = %q, want %q", c.ps, got, c.want)
		}
	}
}
