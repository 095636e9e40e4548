package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// VALIDATION.md: at k = 10 the measured count's own 95 % interval is
// 4.8–18.4.
func TestPoisson95(t *testing.T) {
	for _, tc := range []struct {
		k      int64
		lo, hi float64
	}{
		{0, 0, 3.689},
		{1, 0.0253, 5.572},
		{10, 4.795, 18.39},
	} {
		lo, hi := poisson95(tc.k)
		if !near(lo, tc.lo, 0.001) || !near(hi, tc.hi, 0.01) {
			t.Errorf("poisson95(%d) = %.4f–%.4f, want %.4f–%.4f", tc.k, lo, hi, tc.lo, tc.hi)
		}
	}
}

func TestTHalf95(t *testing.T) {
	// mean 2, s = 1, t(0.975, 2) = 4.303: 4.303/√3.
	if got := tHalf95([]float64{1, 2, 3}); !near(got, 2.484, 0.001) {
		t.Errorf("tHalf95 = %.4f, want 2.484", got)
	}
	if got := tHalf95([]float64{5}); got != 0 {
		t.Errorf("tHalf95 of one value = %v, want 0", got)
	}
}

func TestJudgeLate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		k, n       int64
		pf, pk, pn float64
		holds      bool
		rule       string
	}{
		{"both zero", 0, 20000, 0, 0, 100000, true, "both 0"},
		{"factor 2 at the edge", 20, 10000, 0.001, 100, 100000, true, "×2"},
		{"below half", 20, 10000, 0.00099, 99, 100000, false, "×2"},
		{"above twice", 20, 10000, 0.0041, 410, 100000, false, "×2"},
		{"nothing predicted, 10 measured", 10, 10000, 0, 0, 100000, false, "×2"},
		// 2 of 20 000 (interval 1.2e-5–3.6e-4) against 1 of 100 000
		// (2.5e-7–5.6e-5): they overlap.
		{"few events, overlapping", 2, 20000, 0.00001, 1, 100000, true, "Poisson"},
		// none of a million (up to 3.7e-6) against 50 of 100 000 (from 3.7e-4).
		{"none measured, many predicted", 0, 1000000, 0.0005, 50, 100000, false, "Poisson"},
		{"few measured, none predicted", 9, 10000, 0, 0, 100000, false, "Poisson"},
		{"few measured, none simulated", 3, 10000, 0, 0, 0, false, "Poisson"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeLate(tc.k, tc.n, tc.pf, tc.pk, tc.pn)
			if v.Holds != tc.holds || v.Rule != tc.rule {
				t.Errorf("judgeLate = %+v, want holds %v by %q", v, tc.holds, tc.rule)
			}
		})
	}
}

func lat(p50, p99 float64, n int64, f100, f1, f10 float64) (*v1alpha1.LatencySummary, *v1alpha1.LateFraction) {
	return &v1alpha1.LatencySummary{P50: p50, P99: p99, Count: n}, &v1alpha1.LateFraction{Over100us: f100, Over1ms: f1, Over10ms: f10}
}

func window(variant string, hogCPU float64, probe *v1alpha1.Metrics) v1alpha1.WindowResult {
	return v1alpha1.WindowResult{Variant: variant, Groups: []v1alpha1.GroupMeasurement{
		{Name: "hogs", Metrics: v1alpha1.Metrics{CPU: hogCPU}},
		{Name: "probe", Metrics: *probe},
	}}
}

func testRun(start time.Time, w1, w2 *v1alpha1.Metrics, predHog, predProbe v1alpha1.Metrics) *Run {
	st := metav1.NewTime(start)
	return &Run{
		Dir: start.Format("150405"),
		Status: v1alpha1.NodeRunStatus{StartTime: &st, Windows: []v1alpha1.WindowResult{
			window("on", 1.9, w1), window("on", 1.95, w2),
			{Variant: "off", Unsupported: "no autogroup here"},
		}},
		Pred: &experiment.Report{Experiment: "probe-hogs", Variants: []experiment.VariantReport{{
			Name: "on",
			Groups: []experiment.GroupReport{
				{Name: "hogs", Predicted: &predHog},
				{Name: "probe", Predicted: &predProbe},
				// a parent group: predicted, never measured
				{Name: "parent", Predicted: &v1alpha1.Metrics{}},
			},
		}}},
	}
}

func TestBuildRowsAndCount(t *testing.T) {
	l1, f1 := lat(100, 300, 1000, 0.5, 0.01, 0)
	l2, f2 := lat(110, 500, 3000, 0.6, 0.02, 0.001)
	m1 := &v1alpha1.Metrics{CPU: 0.02, WakeupLatencyUs: l1, LateFraction: f1}
	m2 := &v1alpha1.Metrics{CPU: 0.03, WakeupLatencyUs: l2, LateFraction: f2}
	pl, pf := lat(105, 400, 2000, 0.55, 0.012, 0)
	t0 := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	runs := []*Run{
		testRun(t0.Add(time.Minute), m1, m2, v1alpha1.Metrics{CPU: 1.95}, v1alpha1.Metrics{CPU: 0.025, WakeupLatencyUs: pl, LateFraction: pf}),
		testRun(t0, m1, m1, v1alpha1.Metrics{CPU: 1.80}, v1alpha1.Metrics{CPU: 0.027, WakeupLatencyUs: pl, LateFraction: pf}),
	}
	rows, err := BuildRows(runs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	hogs, probe := rows[0], rows[1]
	if diff := cmp.Diff([]float64{1.9, 1.95, 1.9, 1.95}, hogs.CPU); diff != "" {
		t.Errorf("hogs' window CPUs (-want +got):\n%s", diff)
	}
	// 1.875 predicted against 1.925: −0.05, a miss.
	if hogs.CPUHolds() || !near(hogs.CPUDiff(), -0.05, 1e-9) {
		t.Errorf("hogs: diff %.3f holds %v, want −0.050 missing", hogs.CPUDiff(), hogs.CPUHolds())
	}
	if !probe.CPUHolds() {
		t.Errorf("probe: diff %.3f should hold", probe.CPUDiff())
	}
	// windows: 1000 + 1000 (run at t0) + 1000 + 3000.
	if probe.N != 6000 {
		t.Errorf("probe N = %d, want 6000", probe.N)
	}
	wantK := [3]int64{500 + 500 + 500 + 1800, 10 + 10 + 10 + 60, 3}
	if probe.K != wantK {
		t.Errorf("probe K = %v, want %v", probe.K, wantK)
	}
	// two runs × 5 seeds × 2000 wake-ups.
	if probe.PredN != 20000 || !near(probe.PredK[1], 240, 1e-9) {
		t.Errorf("probe predicted %.0f of %.0f beyond 1 ms, want 240 of 20000", probe.PredK[1], probe.PredN)
	}
	// beyond 100 µs: 0.55 against 0.55 (×2); beyond 1 ms 0.012 against
	// 0.015 (×2); beyond 10 ms 3 of 6000 against 0 of 20000 (Poisson:
	// 1.4e-4–1.5e-3 against 0–1.8e-4, overlapping).
	for i, want := range []LateVerdict{{true, "×2", 0.55, 0.55}, {true, "×2", 0.015, 0.012}, {true, "Poisson", 0.0005, 0}} {
		got := probe.Late(i)
		if got.Holds != want.Holds || got.Rule != want.Rule || !near(got.Measured, want.Measured, 1e-9) || !near(got.Predicted, want.Predicted, 1e-9) {
			t.Errorf("beyond %s: %+v, want %+v", Thresholds[i], got, want)
		}
	}
	tally := Count(rows)
	if want := (Tally{CPUHeld: 1, CPURows: 2, LateHeld: [3]int{1, 1, 1}, LateRows: [3]int{1, 1, 1}}); tally != want {
		t.Errorf("tally %+v, want %+v", tally, want)
	}

	var b bytes.Buffer
	WriteTable(&b, rows)
	WriteTally(&b, tally)
	for _, want := range []string{
		"| probe-hogs | on | hogs | 4 | 1.925 ± 0.046 | 1.875 (1.800–1.950) | -0.050 | **misses** |",
		"0.000500 (3) / 0 (0 of 20k simulated): holds (Poisson)",
		"CPU within 0.03: 1 of 2 rows hold.",
		"Late fractions: 3 of 3 hold (beyond 100 µs 1 of 1; beyond 1 ms 1 of 1; beyond 10 ms 1 of 1).",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

// A window whose group the replay did not predict is an error, not a
// silently dropped sample.
func TestBuildRowsUnknownGroup(t *testing.T) {
	l, f := lat(100, 300, 1000, 0.5, 0.01, 0)
	m := &v1alpha1.Metrics{WakeupLatencyUs: l, LateFraction: f}
	r := testRun(time.Now(), m, m, v1alpha1.Metrics{}, v1alpha1.Metrics{})
	r.Status.Windows[0].Groups = append(r.Status.Windows[0].Groups, v1alpha1.GroupMeasurement{Name: "stray"})
	if _, err := BuildRows([]*Run{r}, nil); err == nil || !strings.Contains(err.Error(), "stray") {
		t.Errorf("BuildRows = %v, want an error naming the group", err)
	}
}

func TestFrac(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.621: "0.621", 0.0092: "0.00920", 0.000301: "0.000301", 1.5: "1.500"} {
		if got := frac(v); got != want {
			t.Errorf("frac(%v) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]string{-0.0004: "+0.000", 0.0004: "+0.000", -0.0006: "-0.001", 0.05: "+0.050"} {
		if got := signed(v); got != want {
			t.Errorf("signed(%v) = %q, want %q", v, got, want)
		}
	}
}
