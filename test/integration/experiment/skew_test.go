package experiment_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/agent"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/test/envtest"
)

// olderAgentStatus is a NodeRun status as an agent built before the
// calibration window, the knob-record counts and the per-window writes
// wrote it (the agent of an upgraded cluster whose pods have not been
// replaced: the DaemonSet is OnDelete): plain JSON, the fields that agent
// knew, windows only in the final write.
func olderAgentStatus(phase string, gen int64, done, total int, windows []map[string]any) map[string]any {
	now := time.Now().UTC().Format(time.RFC3339)
	st := map[string]any{
		"phase": phase, "experimentGeneration": gen, "message": fmt.Sprintf("%d/%d", done, total),
		"startTime": now, "lastUpdateTime": now, "stepsDone": done, "stepsTotal": total,
		"capabilities": map[string]any{"cpus": 4, "kernelVersion": "6.8.0-45-generic", "scheduler": "EEVDF", "cgroupVersion": "v2"},
	}
	if phase == "Completed" {
		st["completionTime"] = now
		st["windows"] = windows
		st["knobs"] = []map[string]any{{"name": "autogroup", "original": "1", "set": "0", "restored": "1", "ok": true}}
		st["restored"] = true
	}
	return st
}

// TestSkewOlderAgentNewerManager: an agent of the previous version keeps
// running through a manager upgrade and writes its NodeRun in its own
// shape (no calibration, no knob counts, no windows until the end); the
// new manager tracks its progress and completes the experiment with every
// result.
func TestSkewOlderAgentNewerManager(t *testing.T) {
	h := newHarness(t, harnessOptions{}) // no kubelet: the test plays the older agent
	node := h.prefix + "-a"
	h.createNodes(nodeSpec{name: node})
	spec := h.experimentSpec()
	name := h.createExperiment("exp", spec)
	var nr v1alpha1.NodeRun
	h.eventually(30*time.Second, "NodeRun", func() (bool, string) {
		runs := h.nodeRuns(name)
		if len(runs) == 1 {
			nr = runs[0]
		}
		return len(runs) == 1, ""
	})
	write := func(st map[string]any) {
		t.Helper()
		patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/status", "value": st}})
		if err != nil {
			t.Fatal(err)
		}
		if err := k8s.Status().Patch(h.ctx, &v1alpha1.NodeRun{ObjectMeta: metav1.ObjectMeta{Name: nr.Name}}, client.RawPatch(types.JSONPatchType, patch)); err != nil {
			t.Fatalf("the older agent's status write was refused: %v", err)
		}
	}
	gen := nr.Spec.ExperimentGeneration
	write(olderAgentStatus("Running", gen, 1, 4, nil))
	h.eventually(30*time.Second, "progress seen", func() (bool, string) {
		e := h.get(name)
		return e.Status.NodeProgress != "" && len(e.Status.Nodes) == 1 && e.Status.Nodes[0].Phase == v1alpha1.NodeRunRunning, conditions(e)
	})
	var windows []map[string]any
	for rep := 0; rep < 2; rep++ {
		for vi, v := range spec.Variants {
			w := map[string]any{"variant": v.Name, "repetition": rep, "attempts": 1}
			var groups []map[string]any
			for _, g := range spec.Workload.Groups {
				m := scriptedMetrics(node, vi, rep, g.Name)
				raw, _ := json.Marshal(m)
				var mm map[string]any
				_ = json.Unmarshal(raw, &mm)
				groups = append(groups, map[string]any{"name": g.Name, "metrics": mm})
			}
			w["groups"] = groups
			windows = append(windows, w)
		}
	}
	write(olderAgentStatus("Completed", gen, 4, 4, windows))
	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 60*time.Second)
	if len(e.Status.Results) != 4 {
		t.Fatalf("%d result rows, want 4", len(e.Status.Results))
	}
	for _, r := range e.Status.Results {
		if r.Measured == nil || r.Measured.N != 2 {
			t.Errorf("row %s/%s: measured %+v, want n=2", r.Variant, r.Group, r.Measured)
		}
	}
	h.eventually(30*time.Second, "node unlocked", func() (bool, string) { return len(h.leases()) == 0, "" })
}

// olderManagerCommit is a manager from before the knob-record aggregation
// (records with counts) and the per-window NodeRun writes: the manager a
// cluster runs again after rolling an upgrade back, while the newer
// agents it started keep running (the DaemonSet is OnDelete).
const olderManagerCommit = "4f74fd9bc9f707fa211fe2fb93bb1fb1875ac773"

// TestSkewNewerAgentOlderManager: the mirror of
// TestSkewOlderAgentNewerManager. The manager is the binary of
// olderManagerCommit, built from the repository's history, as a process;
// the agents are this tree's agent loop, which writes windows as they
// arrive and knob records aggregated with counts (a group of 300 replicas:
// more cgroup records than status.knobs holds), and a calibration window.
// The older manager tracks the runs and completes the experiment with
// every result; the nodes are unlocked.
func TestSkewNewerAgentOlderManager(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the control plane (bin/k8s); skipped in -short mode")
	}
	root, err := envtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", root, "rev-parse", "--is-shallow-repository").Output(); err == nil && strings.TrimSpace(string(out)) == "true" {
		t.Skipf("a shallow clone has no commit %s to build the older manager from (git fetch --unshallow)", olderManagerCommit)
	}
	older := buildSchedlab(t, olderManagerCommit)
	gate := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	defer open()
	h := newHarness(t, harnessOptions{Process: older, Runner: func(_, node string) agent.Runner {
		return &scriptedRunner{node: node, cpus: 4, cgroups: 300, firstWindow: true, gate: gate,
			cal: &v1alpha1.NodeCalibration{Constants: v1alpha1.NodeConstants{TimerExpiryNs: 40_000, IdleExitNs: 30_000, CtxSwitchNs: 7_000, WakeupNs: 20_000}, Samples: 1000}}
	}})
	h.createNodes(nodeSpec{name: h.prefix + "-a"}, nodeSpec{name: h.prefix + "-b"})
	name := h.createExperiment("exp", h.experimentSpec())
	h.eventually(2*time.Minute, "both agents running with their first window written", func() (bool, string) {
		n := 0
		for _, r := range h.nodeRuns(name) {
			if r.Status.Phase == v1alpha1.NodeRunRunning && len(r.Status.Windows) == 1 {
				n++
			}
		}
		return n == 2, fmt.Sprintf("%d of 2", n)
	})
	open()
	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 3*time.Minute)
	if len(e.Status.Results) != 4 {
		t.Fatalf("%d result rows, want 4: %s", len(e.Status.Results), conditions(e))
	}
	for _, r := range e.Status.Results {
		if r.Measured == nil || r.Measured.N != 4 {
			t.Errorf("row %s/%s: measured %+v, want n=4 (2 nodes × 2 repetitions)", r.Variant, r.Group, r.Measured)
		}
	}
	counted := 0
	for _, nr := range h.nodeRuns(name) {
		for _, k := range nr.Status.Knobs {
			if k.Count > 1 {
				counted++
			}
		}
		if !nr.Status.Restored {
			t.Errorf("NodeRun %s not restored", nr.Name)
		}
	}
	if counted == 0 {
		t.Errorf("no aggregated knob record (count > 1) in the NodeRuns: the newer agent's shape was not exercised")
	}
	h.eventually(60*time.Second, "nodes unlocked", func() (bool, string) { return len(h.leases()) == 0, fmt.Sprintf("%d leases", len(h.leases())) })
}
