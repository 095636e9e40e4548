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
	for _, want := range []string{"cold wake-up 0.4 µs per doubling", "95 % -0.2 to 0.7", "40 ms sleep woke 22.3 µs late, the 2 ms one 20.4", "of 19 and 39 quiet sleeps beside a spinner process"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q\nlacks %q", got, want)
		}
	}
	if strings.Contains(got, "not recorded") {
		t.Errorf("%q: an accepted figure reads as rejected", got)
	}
	cw.Rejected = "other processes took 0.24 of the CPU, more than 0.10"
	cw.Neighbour = "" // a run recorded before the field: a thread spun
	got = coldWakeLine(cw)
	for _, want := range []string{"not recorded, other processes took 0.24", "the predictions keep the default 4.0 µs", "beside a spinner thread"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q\nlacks %q", got, want)
		}
	}
}
