package nodeagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"golang.org/x/sys/unix"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/simengine"
)

// traceInstanceDir is where the run's trace instance lives on this host.
func traceInstanceDir(runID string) string {
	return filepath.Join("/sys/kernel/tracing/instances", timerTraceName(runID))
}

// TestRunRecordsTimerTrace runs a 1 ns-slack LatencyProbe pinned to each
// CPU beside a hog per CPU and holds the windows' timer traces to what the
// probes measured themselves: every CPU has its interrupts' lateness, the
// trace lost nothing, and a probe's own median lateness (user side: the
// interrupt's lateness, then its wake-up, the switch from the hog and the
// return to user space) is at least the trace's median on its CPU and at
// most 60 µs more, plus 100 µs per CPU of others' work in the window (their
// threads delay the probe, not the interrupt). The tracefs instance is gone
// after the run, and after a run whose window is cut short.
func TestRunRecordsTimerTrace(t *testing.T) {
	needRoot(t)
	if _, err := os.Stat("/sys/kernel/tracing/instances"); err != nil {
		t.Skipf("no tracefs here: %v", err)
	}
	cpus := allowedCPUList(t)
	var groups []v1alpha1.Group
	for _, c := range cpus {
		cs := strconv.Itoa(c)
		groups = append(groups,
			v1alpha1.Group{Name: "hog" + cs, Session: "h" + cs, CPUs: cs, Pattern: hog()},
			v1alpha1.Group{Name: "probe" + cs, Session: "p" + cs, CPUs: cs, TimerSlack: &metav1.Duration{Duration: time.Nanosecond},
				Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternLatencyProbe, Interval: &metav1.Duration{Duration: time.Millisecond}}})
	}
	spec := &v1alpha1.SchedExperimentSpec{
		Duration:    metav1.Duration{Duration: 3 * time.Second},
		Warmup:      &metav1.Duration{Duration: 300 * time.Millisecond},
		Repetitions: 1,
		Variants:    []v1alpha1.Variant{{Name: "a"}, {Name: "b"}},
		Workload:    v1alpha1.Workload{Groups: groups},
	}
	o := opts(t, "timertrace")
	o.MaxAttempts = 1
	st, err := Run(context.Background(), spec, o)
	if err != nil {
		t.Fatal(err)
	}
	checkNoWorkers(t, st)
	if _, err := os.Stat(traceInstanceDir(o.RunID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("trace instance %s after the run: %v, want it removed", traceInstanceDir(o.RunID), err)
	}
	if st.Calibration == nil || st.Calibration.TimerTrace == nil || len(st.Calibration.TimerTrace.CPUs) == 0 {
		t.Errorf("calibration window: timer trace %+v, want one with its CPUs' lateness", st.Calibration)
	}
	for _, w := range st.Windows {
		tt := w.TimerTrace
		if tt == nil || tt.Unsupported != "" {
			t.Errorf("window %s: timer trace %+v, want one", w.Variant, tt)
			continue
		}
		t.Logf("window %s: %d events in %v (%.0f a second), buffer %d KiB a CPU, noise %.3f CPUs", w.Variant, tt.Events, time.Duration(tt.DurationNs),
			float64(tt.Events)/time.Duration(tt.DurationNs).Seconds(), tt.BufferKB, w.NoiseCPU)
		if d := time.Duration(tt.DurationNs); d < spec.Duration.Duration*9/10 || d > 2*spec.Duration.Duration {
			t.Errorf("window %s: traced %v, want about the window's %v", w.Variant, d, spec.Duration.Duration)
		}
		byCPU := map[int32]v1alpha1.TimerTraceCPU{}
		for _, c := range tt.CPUs {
			byCPU[c.CPU] = c
		}
		probe := map[string]*v1alpha1.LatencySummary{}
		for _, g := range w.Groups {
			probe[g.Name] = g.Metrics.WakeupLatencyUs
		}
		for _, c := range cpus {
			tc, ok := byCPU[int32(c)]
			t.Logf("window %s CPU %d: %+v", w.Variant, c, tc)
			if !ok || tc.Interrupts < 1000 || len(tc.LatenessQuantilesNs) != len(simengine.QuantileLevels) {
				t.Errorf("window %s CPU %d: trace %+v, want the lateness of its probe's ~3000 interrupts at least", w.Variant, c, tc)
				continue
			}
			if tc.LostEvents != 0 {
				t.Errorf("window %s CPU %d: %d events lost; the buffer (%d KiB) is sized for the window", w.Variant, c, tc.LostEvents, tt.BufferKB)
			}
			if n := len(tc.SecondMediansNs); n < 3 || n > 4 {
				t.Errorf("window %s CPU %d: %d per-second medians for a 3 s window", w.Variant, c, n)
			}
			p := probe["probe"+strconv.Itoa(c)]
			if p == nil {
				t.Errorf("window %s: no latency for probe%d", w.Variant, c)
				continue
			}
			irq := float64(tc.LatenessQuantilesNs[simengine.QuantileMedian]) / 1e3
			slackUs := 60 + 100*w.NoiseCPU
			t.Logf("window %s CPU %d: probe p50 %.1f µs, interrupt p50 %.1f µs: %.1f µs after it (at most %.1f)", w.Variant, c, p.P50, irq, p.P50-irq, slackUs)
			if p.P50 < irq || p.P50 > irq+slackUs {
				t.Errorf("window %s CPU %d: the probe's median %.1f µs against the interrupts' %.1f µs: want it at least that and at most %.1f µs more", w.Variant, c, p.P50, irq, slackUs)
			}
		}
	}

	// A window cut short: the instance is there during it, gone after.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var during error
	onWindowStep = func(s string) {
		if s == "begin" {
			_, during = os.Stat(traceInstanceDir(o.RunID))
			go func() { time.Sleep(500 * time.Millisecond); cancel() }()
		}
	}
	defer func() { onWindowStep = nil }()
	st, err = Run(ctx, spec, o)
	if err == nil || st.Phase != v1alpha1.NodeRunAborted {
		t.Errorf("cut run: phase %s, error %v; want it aborted", st.Phase, err)
	}
	if during != nil {
		t.Errorf("trace instance during the window: %v, want it there", during)
	}
	if _, err := os.Stat(traceInstanceDir(o.RunID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("trace instance %s after the cut run: %v, want it removed", traceInstanceDir(o.RunID), err)
	}
	checkNoWorkers(t, st)
}

// allowedCPUList is the CPUs this process may run on.
func allowedCPUList(t *testing.T) []int {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var out []int
	for c := 0; c < 1024; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}
