package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func TestJudgeSwitches(t *testing.T) {
	for _, tc := range []struct {
		name                string
		measured, predicted float64
		holds               bool
		rule                string
	}{
		{"both zero", 0, 0, true, "floor"},
		{"probe preempted by the node's threads, none predicted", 4.1, 0, true, "floor"},
		{"just beyond the floor", 5.2, 0, false, "×1.5"},
		{"×1.5 above, at the edge", 1000, 1500, true, "×1.5"},
		{"×1.5 below, at the edge", 1500, 1000, true, "×1.5"},
		{"hogs on the node against the model (eleventh session)", 1599, 483, false, "×1.5"},
		{"above ×1.5", 1000, 1501, false, "×1.5"},
		{"predicted, never measured", 0, 20, false, "×1.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeSwitches(tc.measured, tc.predicted)
			if v.Holds != tc.holds || v.Rule != tc.rule {
				t.Errorf("judgeSwitches(%v, %v) = %+v, want holds %v by %q", tc.measured, tc.predicted, v, tc.holds, tc.rule)
			}
		})
	}
}

func csw(vol, invol float64) *v1alpha1.ContextSwitches {
	return &v1alpha1.ContextSwitches{Voluntary: vol, Involuntary: invol}
}

// The windows' and the runs' rates reach the rows, a window without rates
// (a run from before the agent measured them) is left out of them, and the
// table prints means, ranges and verdicts.
func TestSwitchesRows(t *testing.T) {
	l, f := lat(100, 300, 1000, 0.5, 0.01, 0)
	probe := func(c *v1alpha1.ContextSwitches) *v1alpha1.Metrics {
		return &v1alpha1.Metrics{CPU: 0.02, WakeupLatencyUs: l, LateFraction: f, CtxSwitchesPerSec: c}
	}
	t0 := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	runs := []*Run{
		testRun(t0, probe(csw(990, 0)), probe(csw(1000, 2)),
			v1alpha1.Metrics{CPU: 1.9, CtxSwitchesPerSec: csw(0, 500)},
			v1alpha1.Metrics{CPU: 0.02, CtxSwitchesPerSec: csw(1000, 0)}),
		testRun(t0.Add(time.Minute), probe(csw(980, 1)), probe(nil),
			v1alpha1.Metrics{CPU: 1.9, CtxSwitchesPerSec: csw(0, 700)},
			v1alpha1.Metrics{CPU: 0.02, CtxSwitchesPerSec: csw(1010, 0)}),
	}
	// The hogs' windows: 1300/s, three of them, and one without rates.
	for i, r := range runs {
		for j := range r.Status.Windows {
			w := &r.Status.Windows[j]
			if w.Unsupported != "" || (i == 1 && j == 1) {
				continue
			}
			w.Groups[0].Metrics.CtxSwitchesPerSec = csw(0, 1200+100*float64(j))
		}
	}
	rows, err := BuildRows(runs, nil)
	if err != nil {
		t.Fatal(err)
	}
	hogs, pr := rows[0], rows[1]
	if diff := cmp.Diff([]float64{1200, 1300, 1200}, hogs.Invol); diff != "" {
		t.Errorf("hogs' measured involuntary (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{500, 700}, hogs.PredInvol); diff != "" {
		t.Errorf("hogs' predicted involuntary (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{990, 1000, 980}, pr.Vol); diff != "" {
		t.Errorf("probe's measured voluntary (-want +got):\n%s", diff)
	}
	// hogs: 600 predicted against 1233: ×0.49, a miss; voluntary 0 and 0.
	if v := hogs.SwitchesInvol(); v.Holds {
		t.Errorf("hogs involuntary %+v holds, want a miss", v)
	}
	if v := hogs.SwitchesVol(); !v.Holds || v.Rule != "floor" {
		t.Errorf("hogs voluntary %+v, want holds by the floor", v)
	}
	if got, want := CountSwitches(rows), (SwitchTally{Rows: 2, VolHeld: 2, InvolHeld: 1}); got != want {
		t.Errorf("CountSwitches = %+v, want %+v", got, want)
	}
	var b bytes.Buffer
	WriteSwitches(&b, rows)
	for _, want := range []string{
		"| probe-hogs | on | hogs | 3 | 0.0 (0.0–0.0) | 0.0 (0.0–0.0) | holds (≤ 5/s) | 1233 (1200–1300) | 600 (500–700) | **misses** ×0.49 |",
		"|  | on | probe | 3 | 990 (980–1000) | 1005 (1000–1010) | holds ×1.02 | 1.0 (0.0–2.0) | 0.0 (0.0–0.0) | holds (≤ 5/s) |",
		"Context switches within ×1.5 (or 5 per second): voluntary 2 of 2 rows hold, involuntary 1 of 2.",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}
