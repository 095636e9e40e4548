package experiment_test

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/utils/ptr"

	"github.com/schedlab/schedlab/agent"
	"github.com/schedlab/schedlab/api/v1alpha1"
)

// scriptedRunner plays a node for the real agent loop: it reports progress
// and returns windows whose metrics are a function of node, variant,
// repetition and group, so that the test knows the aggregates to expect.
// With a gate it holds the run "mid-run" until the gate closes or the run is
// cancelled; a cancelled run returns its restore record, as the node agent
// does.
type scriptedRunner struct {
	node string
	cpus int32
	// gate, when not nil, holds the run until it is closed.
	gate <-chan struct{}
	// restoreFails: a cancelled run cannot restore (a node gone bad).
	restoreFails bool
	// fail makes the run fail with this error.
	fail error
	// cgroups adds this many per-replica cgroup records to the restore
	// record (a group with that many replicas).
	cgroups int
	// firstWindow, with a gate: the first window is measured (and handed
	// to the agent) before the run waits at the gate.
	firstWindow bool
	// cal is the node's calibration window as the run reports it; noise
	// the CPUs other processes took in each window.
	cal     *v1alpha1.NodeCalibration
	noise   float64
	mu      sync.Mutex
	started int
}

func (r *scriptedRunner) Recover(context.Context) ([]v1alpha1.KnobRecord, error) { return nil, nil }

func (r *scriptedRunner) caps() *v1alpha1.NodeCapabilities {
	return &v1alpha1.NodeCapabilities{CPUs: r.cpus, KernelVersion: "6.8.0-45-generic", Scheduler: v1alpha1.SchedulerEEVDF, CgroupVersion: "v2"}
}

func knobRecord(restored bool) []v1alpha1.KnobRecord {
	rec := v1alpha1.KnobRecord{Name: "autogroup", Original: "1", Set: "0", Restored: "1", OK: true}
	if !restored {
		rec.Restored, rec.OK = "0", false
	}
	return []v1alpha1.KnobRecord{rec}
}

func (r *scriptedRunner) Run(ctx context.Context, spec *v1alpha1.SchedExperimentSpec, runID string, report agent.Report) (*v1alpha1.NodeRunStatus, error) {
	r.mu.Lock()
	r.started++
	r.mu.Unlock()
	reps := int(spec.RepetitionCount())
	total := len(spec.Variants) * reps
	report.Progress(0, total, "detecting")
	if r.gate != nil {
		var first []v1alpha1.WindowResult
		if r.firstWindow {
			first = append(first, r.window(spec, 0, 0))
			report.Window(first[0])
		}
		report.Progress(1, total, fmt.Sprintf("variant %s repetition 0", spec.Variants[0].Name))
		select {
		case <-r.gate:
		case <-ctx.Done():
			return &v1alpha1.NodeRunStatus{Capabilities: r.caps(), Knobs: knobRecord(!r.restoreFails), Restored: !r.restoreFails, Windows: first}, ctx.Err()
		}
	}
	if r.fail != nil {
		return &v1alpha1.NodeRunStatus{Capabilities: r.caps(), Knobs: knobRecord(true), Restored: true}, r.fail
	}
	st := &v1alpha1.NodeRunStatus{Phase: v1alpha1.NodeRunCompleted, Capabilities: r.caps(), Knobs: knobRecord(true), Restored: true,
		StepsDone: int32(total), StepsTotal: int32(total), Calibration: r.cal.DeepCopy()}
	for i := 0; i < r.cgroups; i++ {
		st.Knobs = append(st.Knobs, v1alpha1.KnobRecord{Name: fmt.Sprintf("cgroup schedlab/%s/web-%d", runID, i), Set: "created", Restored: "removed", OK: true})
	}
	for rep := 0; rep < reps; rep++ {
		for vi := range spec.Variants {
			st.Windows = append(st.Windows, r.window(spec, vi, rep))
		}
	}
	return st, nil
}

func (r *scriptedRunner) window(spec *v1alpha1.SchedExperimentSpec, vi, rep int) v1alpha1.WindowResult {
	w := v1alpha1.WindowResult{Variant: spec.Variants[vi].Name, Repetition: int32(rep), Attempts: 1, NoiseCPU: r.noise}
	for _, g := range spec.Workload.Groups {
		w.Groups = append(w.Groups, v1alpha1.GroupMeasurement{Name: g.Name, Metrics: scriptedMetrics(r.node, vi, rep, g.Name)})
	}
	return w
}

// scriptedMetrics: cpu is 1.0 + 0.5·variant + a small per-node and
// per-repetition offset; the probe's p99 is 100µs for the baseline and
// 40µs for the other variant (± a little), so the second variant wins.
func scriptedMetrics(node string, variant, rep int, group string) v1alpha1.Metrics {
	off := float64(len(node)%3)*0.01 + float64(rep)*0.02
	m := v1alpha1.Metrics{CPU: 1.0 + 0.5*float64(variant) + off}
	if group == "probe" {
		p99 := 100.0 - 60*float64(variant) + 10*off
		m.CPU = 0.05
		m.WakeupLatencyUs = &v1alpha1.LatencySummary{P50: p99 / 4, P90: p99 / 2, P99: p99, P999: p99 * 1.5, Max: p99 * 2, Mean: p99 / 3, Count: 1000}
		m.OpsPerSec = ptr.To(1000.0)
	}
	return m
}
