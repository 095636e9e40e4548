package workload

import (
	"fmt"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// GroupMetrics summarises one group's tasks over the window in the API's
// vocabulary: cpu (CPUs, summed over the group's tasks), cpuPerTask, the
// merged wakeup latencies (µs), context switches per second, the deadline
// miss ratio (Periodic) and ops per second (every pattern but Hog); for a
// Server group request latency, throughput and dropped instead of wakeup
// latency. Share is
// left 0: it needs every group (see Shares and WindowMetrics).
func GroupMetrics(w *Window, group string) v1alpha1.Metrics {
	var m v1alpha1.Metrics
	if w == nil || w.Duration <= 0 {
		return m
	}
	// Rates are summed task by task, each over the task's own window.
	var (
		n                    int
		cpu, vol, invol, ops float64
		periods, misses      int64
		arrivals, dropped    float64
		pattern              v1alpha1.PatternType
		lat                  = NewHistogram()
	)
	for i := range w.Tasks {
		t := &w.Tasks[i]
		if t.Group != group {
			continue
		}
		n++
		pattern = t.Pattern
		secs := t.seconds(w)
		cpu += t.CPU(w)
		vol += float64(t.Voluntary) / secs
		invol += float64(t.Involuntary) / secs
		ops += float64(t.Ops) / secs
		periods += t.Periods
		misses += t.Misses
		arrivals += float64(t.Arrivals) / secs
		dropped += float64(t.Dropped) / secs
		lat.Merge(t.Latency)
	}
	if n == 0 {
		return m
	}
	m.CPU = cpu
	m.CPUPerTask = m.CPU / float64(n)
	m.CtxSwitchesPerSec = &v1alpha1.ContextSwitches{Voluntary: vol, Involuntary: invol}
	if pattern == v1alpha1.PatternServer {
		// Request latency (scheduled arrival to completion), completed
		// requests and dropped arrivals per second, as the simulator
		// reports them.
		s := lat.SummaryUs()
		if lat.Count() > 0 {
			s.P95 = float64(lat.Quantile(0.95)) / 1e3
		}
		m.RequestLatencyUs = &s
		of, tp, dr := arrivals, ops, dropped
		m.Offered, m.Throughput, m.Dropped, m.OpsPerSec = &of, &tp, &dr, &tp
		return m
	}
	if pattern != v1alpha1.PatternHog {
		s := lat.SummaryUs()
		m.WakeupLatencyUs = &s
		f := lat.LateFraction()
		m.LateFraction = &f
		o := ops
		m.OpsPerSec = &o
	}
	if pattern == v1alpha1.PatternPeriodic {
		r := 0.0
		if periods > 0 {
			r = float64(misses) / float64(periods)
		}
		m.DeadlineMissRatio = &r
	}
	return m
}

// Shares returns each group's fraction of all the window's CPU time.
func Shares(w *Window) map[string]float64 {
	out := map[string]float64{}
	if w == nil {
		return out
	}
	var total float64
	for i := range w.Tasks {
		total += w.Tasks[i].CPU(w)
		out[w.Tasks[i].Group] += 0
	}
	if total <= 0 {
		return out
	}
	for i := range w.Tasks {
		out[w.Tasks[i].Group] += w.Tasks[i].CPU(w) / total
	}
	return out
}

// seconds is the length of t's own window (TaskStats.Window), or of w's
// where the task has none.
func (t *TaskStats) seconds(w *Window) float64 {
	if t.Window > 0 {
		return t.Window.Seconds()
	}
	return w.Duration.Seconds()
}

// CPU is the CPUs t used over its own window in w.
func (t *TaskStats) CPU(w *Window) float64 { return float64(t.CPUNs) / 1e9 / t.seconds(w) }

// WindowMetrics is GroupMetrics for every group of the window, with Share
// filled in.
func WindowMetrics(w *Window) map[string]v1alpha1.Metrics {
	out := map[string]v1alpha1.Metrics{}
	if w == nil {
		return out
	}
	shares := Shares(w)
	for g, s := range shares {
		m := GroupMetrics(w, g)
		m.Share = s
		out[g] = m
	}
	return out
}

// GroupGridPhases is the phase of each of the group's tasks' deadline grids
// (TaskStats.GridPhaseNs) in the window's task order; nil when the group has
// no task, or a task without a grid (a pattern other than LatencyProbe and
// Periodic, or one that had not reached its first sleep).
func GroupGridPhases(w *Window, group string) []int64 {
	if w == nil {
		return nil
	}
	var out []int64
	for i := range w.Tasks {
		t := &w.Tasks[i]
		if t.Group != group {
			continue
		}
		p, ok := t.GridPhaseNs()
		if !ok {
			return nil
		}
		out = append(out, p)
	}
	return out
}

// GroupInvariants sums what the group's workers did besides their pattern
// over the window (see v1alpha1.WorkerInvariants); nil when the window has
// no task of the group.
func GroupInvariants(w *Window, group string) *v1alpha1.WorkerInvariants {
	if w == nil || w.Duration <= 0 {
		return nil
	}
	var inv v1alpha1.WorkerInvariants
	var side float64
	n := 0
	for i := range w.Tasks {
		t := &w.Tasks[i]
		if t.Group != group {
			continue
		}
		n++
		inv.WorkVoluntary += t.Voluntary
		inv.WorkInvoluntary += t.Involuntary
		inv.PatternBlocks += t.Blocks
		side += float64(t.SideCPUNs) / 1e9 / t.seconds(w)
		inv.SideSwitches += t.SideSwitches
	}
	if n == 0 {
		return nil
	}
	inv.SideCPU = side
	return &inv
}

// Invariant limits. A work thread may sleep beyond its pattern's own sleeps
// and blocks at most once per task per 10 s of window (at least once per task
// in a shorter window); a window's edges cannot add any (Set.Begin and End
// read the pattern's counters so that an edge only ever adds blocks). The
// workers' side threads together may use at most
// 0.2 % of a CPU, and wake at most once per task per 10 s (a worker that
// does only its pattern has side threads that do not wake at all).
const (
	MaxExtraSleepsPerTaskPer10s = 1
	MaxSideWakeupsPerTaskPer10s = 1
	MaxSideCPU                  = 0.002
)

// Perturbed says why a group's workers perturbed the window ("" when they
// did not): tasks is the group's number of tasks, secs the window's length.
func Perturbed(inv *v1alpha1.WorkerInvariants, tasks int, secs float64) string {
	if inv == nil || tasks <= 0 {
		return ""
	}
	per10s := float64(tasks) * max(1, secs/10)
	allowed := MaxExtraSleepsPerTaskPer10s * per10s
	if extra := inv.WorkVoluntary - inv.PatternBlocks; float64(extra) > allowed {
		return fmt.Sprintf("work threads slept %d times beyond their pattern's %d sleeps and blocks in %.1f s (at most %.0f allowed for %d tasks)",
			extra, inv.PatternBlocks, secs, allowed, tasks)
	}
	if inv.SideCPU > MaxSideCPU {
		return fmt.Sprintf("the workers' other threads used %.4f CPUs (at most %.3f allowed), waking %d times", inv.SideCPU, MaxSideCPU, inv.SideSwitches)
	}
	if float64(inv.SideSwitches) > MaxSideWakeupsPerTaskPer10s*per10s {
		return fmt.Sprintf("the workers' other threads woke %d times in %.1f s (at most %.0f allowed for %d tasks), using %.4f CPUs",
			inv.SideSwitches, secs, MaxSideWakeupsPerTaskPer10s*per10s, tasks, inv.SideCPU)
	}
	return ""
}
