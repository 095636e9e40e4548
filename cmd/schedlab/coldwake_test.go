package main

import (
	"strings"
	"testing"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// schedlab run says what the calibration window measured of the cold
// wake-up cost, and when it was not recorded, why and what the
// predictions use instead.
func TestColdWakeLine(t *testing.T) {
	cw := &v1alpha1.ColdWakeCalibration{ShortP50Ns: 20_400, LongP50Ns: 22_300, ShortSamples: 39, LongSamples: 19,
		PerDoublingNs: 440, LowNs: -200, HighNs: 700, OtherCPU: 0.028, Neighbour: v1alpha1.ColdWakeNeighbourProcess}
	got := coldWakeLine(cw)
	wantAll(t, got, "cold wake-up 0.4 µs per doubling", "95 % -0.2 to 0.7", "40 ms sleep woke 22.3 µs late, the 2 ms one 20.4", "of 19 and 39 quiet sleeps beside a spinner process")
	if strings.Contains(got, "not recorded") {
		t.Errorf("%q: an accepted figure reads as rejected", got)
	}
	cw.Rejected = "other processes took 0.24 of the CPU, more than 0.10"
	cw.Neighbour = "" // a run recorded before the field: a thread spun
	got = coldWakeLine(cw)
	wantAll(t, got, "not recorded, other processes took 0.24", "the predictions keep the default 4.0 µs", "beside a spinner thread")
}

// schedlab run says what the calibration window measured of the process
// switch, and when it was not recorded, why and what the predictions use
// instead.
func TestProcessSwitchLine(t *testing.T) {
	ps := &v1alpha1.ProcessSwitchCalibration{ThreadP50Ns: 19_900, ProcessP50Ns: 23_700, ThreadSamples: 480, ProcessSamples: 470,
		PerSwitchNs: 3_800, LowNs: 3_100, HighNs: 4_400}
	got := processSwitchLine(ps)
	wantAll(t, got, "process switch 3.8 µs", "95 % 3.1 to 4.4", "woke 23.7 µs late beside a spinner process, 19.9 beside a spinner thread", "of 470 and 480 quiet sleeps")
	if strings.Contains(got, "not recorded") {
		t.Errorf("%q: an accepted figure reads as rejected", got)
	}
	ps.Rejected = "95 % interval 1.0 to 6.0 µs, wider than 4 µs"
	got = processSwitchLine(ps)
	wantAll(t, got, "not recorded, 95 % interval 1.0 to 6.0", "the predictions keep the default 3.5 µs")
}

// wantAll reports every want that the line got lacks.
func wantAll(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("%q\nlacks %q", got, want)
		}
	}
}
