package experiment_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/agent"
	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/controllers"
	"github.com/schedlab/schedlab/internal/experiment"
	"github.com/schedlab/schedlab/internal/nodeagent"
)

// TestContention: two experiments want the same nodes; the second waits,
// naming the holder, and runs once the first has completed and unlocked.
func TestContention(t *testing.T) {
	gate := make(chan struct{})
	h := newHarness(t, harnessOptions{Runner: runners(gate)})
	h.createNodes(nodeSpec{name: h.prefix + "-a"}, nodeSpec{name: h.prefix + "-b"})
	first := h.createExperiment("first", h.experimentSpec())
	h.waitCondition(first, v1alpha1.ConditionNodesLocked, metav1.ConditionTrue, v1alpha1.ReasonNodesLocked, 30*time.Second)
	second := h.createExperiment("second", h.experimentSpec())
	e := h.waitCondition(second, v1alpha1.ConditionNodesLocked, metav1.ConditionFalse, v1alpha1.ReasonWaitingForNodes, 30*time.Second)
	msg := meta.FindStatusCondition(e.Status.Conditions, v1alpha1.ConditionNodesLocked).Message
	if !strings.Contains(msg, "held by experiment "+first) {
		t.Errorf("waiting message %q does not name the holder %s", msg, first)
	}
	if _, ok := h.daemonSet(second); ok || len(h.nodeRuns(second)) != 0 {
		t.Errorf("a waiting experiment has a DaemonSet or NodeRuns")
	}
	for _, l := range h.leases() {
		if !strings.HasPrefix(*l.Spec.HolderIdentity, first+"/") {
			t.Errorf("lease %s held by %s, want %s", l.Name, *l.Spec.HolderIdentity, first)
		}
	}
	close(gate) // the first experiment's nodes finish
	h.waitCondition(first, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 30*time.Second)
	h.waitCondition(second, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 60*time.Second)
	h.eventually(10*time.Second, "all locks released", func() (bool, string) { return len(h.leases()) == 0, fmt.Sprint(len(h.leases()), " leases") })
}

// TestStaleLockReclaimed: a Lease whose holder experiment no longer exists
// is taken over.
func TestStaleLockReclaimed(t *testing.T) {
	h := newHarness(t, harnessOptions{Runner: runners(nil)})
	node := h.prefix + "-a"
	h.createNodes(nodeSpec{name: node})
	holder := names.LeaseHolder(h.prefix+"-gone", "00000000-dead")
	l := leaseFor(h, node, holder)
	if err := k8s.Create(h.ctx, l); err != nil {
		t.Fatal(err)
	}
	name := h.createExperiment("exp", h.experimentSpec())
	h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 60*time.Second)
}

// TestDeletionMidRun: deleting a running experiment removes the DaemonSet;
// the agents (SIGTERM) restore and report; only then are the locks released
// and the finalizer dropped.
func TestDeletionMidRun(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	h := newHarness(t, harnessOptions{Runner: runners(gate)})
	h.createNodes(nodeSpec{name: h.prefix + "-a"}, nodeSpec{name: h.prefix + "-b"})
	name := h.createExperiment("exp", h.experimentSpec())
	h.eventually(30*time.Second, "both agents running", func() (bool, string) {
		runs := h.nodeRuns(name)
		n := 0
		for _, r := range runs {
			if r.Status.Phase == v1alpha1.NodeRunRunning && r.Status.StartTime != nil {
				n++
			}
		}
		return n == 2, fmt.Sprintf("%d running", n)
	})
	if err := k8s.Delete(h.ctx, h.get(name)); err != nil {
		t.Fatal(err)
	}
	h.eventually(30*time.Second, "experiment gone", func() (bool, string) {
		err := k8s.Get(h.ctx, client.ObjectKey{Name: name}, &v1alpha1.SchedExperiment{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	// It went only after every node reported its restore.
	for _, nr := range h.nodeRuns(name) { // no garbage collector in envtest: the NodeRuns stay
		if !nr.Status.Restored || nr.Status.Phase != v1alpha1.NodeRunAborted {
			t.Errorf("NodeRun %s: phase %s restored %v, want Aborted and restored", nr.Name, nr.Status.Phase, nr.Status.Restored)
		}
	}
	if n := len(h.leases()); n != 0 {
		t.Errorf("%d leases left", n)
	}
	if _, ok := h.daemonSet(name); ok {
		t.Errorf("DaemonSet left")
	}
}

// TestDeletionWaitsForRestoreUntilForced: a node whose agent cannot restore
// holds the deletion (finalizer) until the force-cleanup annotation.
func TestDeletionWaitsForRestoreUntilForced(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	h := newHarness(t, harnessOptions{Runner: func(_, node string) agent.Runner {
		return &scriptedRunner{node: node, cpus: 4, gate: gate, restoreFails: strings.HasSuffix(node, "-b")}
	}})
	h.createNodes(nodeSpec{name: h.prefix + "-a"}, nodeSpec{name: h.prefix + "-b"})
	name := h.createExperiment("exp", h.experimentSpec())
	h.waitCondition(name, v1alpha1.ConditionRunning, metav1.ConditionTrue, v1alpha1.ReasonRunning, 30*time.Second)
	h.eventually(30*time.Second, "agents started", func() (bool, string) {
		n := 0
		for _, r := range h.nodeRuns(name) {
			if r.Status.StartTime != nil {
				n++
			}
		}
		return n == 2, ""
	})
	if err := k8s.Delete(h.ctx, h.get(name)); err != nil {
		t.Fatal(err)
	}
	e := h.waitCondition(name, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonDeleting, 30*time.Second)
	h.eventually(30*time.Second, "waiting for node b only", func() (bool, string) {
		e = h.get(name)
		msg := meta.FindStatusCondition(e.Status.Conditions, v1alpha1.ConditionReady).Message
		return strings.Contains(msg, "waiting for 1 nodes") && strings.Contains(msg, h.prefix+"-b"), msg
	})
	if len(h.leases()) != 2 {
		t.Errorf("locks released before the restore was reported")
	}
	patch := []byte(`{"metadata":{"annotations":{"` + v1alpha1.ForceCleanupAnnotation + `":"true"}}}`)
	if err := k8s.Patch(h.ctx, e, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	h.eventually(30*time.Second, "experiment gone after force-cleanup", func() (bool, string) {
		err := k8s.Get(h.ctx, client.ObjectKey{Name: name}, &v1alpha1.SchedExperiment{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if n := len(h.leases()); n != 0 {
		t.Errorf("%d leases left", n)
	}
}

// TestSpecChangeMidRun: a new generation aborts the run (the agents restore),
// then runs again; the results name the new generation.
func TestSpecChangeMidRun(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	var gated atomic.Bool
	gated.Store(true)
	h := newHarness(t, harnessOptions{Runner: func(_, node string) agent.Runner {
		r := &scriptedRunner{node: node, cpus: 4}
		if gated.Load() {
			r.gate = gate
		}
		return r
	}})
	h.createNodes(nodeSpec{name: h.prefix + "-a"}, nodeSpec{name: h.prefix + "-b"})
	name := h.createExperiment("exp", h.experimentSpec())
	h.eventually(30*time.Second, "agents running generation 1", func() (bool, string) {
		n := 0
		for _, r := range h.nodeRuns(name) {
			if r.Status.Phase == v1alpha1.NodeRunRunning && r.Status.ExperimentGeneration == 1 {
				n++
			}
		}
		return n == 2, ""
	})
	gated.Store(false) // the agents of the next DaemonSet run through
	if err := k8s.Patch(h.ctx, h.get(name), client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"duration":"3s"}}`))); err != nil {
		t.Fatal(err)
	}
	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 60*time.Second)
	if e.Generation != 2 || e.Status.ResultsGeneration != 2 || e.Status.ObservedGeneration != 2 {
		t.Errorf("generation %d resultsGeneration %d observedGeneration %d, want 2", e.Generation, e.Status.ResultsGeneration, e.Status.ObservedGeneration)
	}
	for _, nr := range h.nodeRuns(name) {
		if nr.Spec.ExperimentGeneration != 2 || nr.Status.ExperimentGeneration != 2 || nr.Status.Phase != v1alpha1.NodeRunCompleted {
			t.Errorf("NodeRun %s: spec gen %d status gen %d phase %s", nr.Name, nr.Spec.ExperimentGeneration, nr.Status.ExperimentGeneration, nr.Status.Phase)
		}
	}
	// Two agents per generation at least. One CI dry run saw 6 starts with
	// correct results; which agent started twice, and why, is not known yet
	// (the test harness's kubelet counts every start it makes).
	if got := h.kubelet.starts.Load(); got < 4 {
		t.Errorf("%d agents started, want at least 4 (two per generation)", got)
	} else if got != 4 {
		t.Logf("%d agents started (4 expected when nothing restarts)", got)
	}
	if !eventReasons(h, name)[v1alpha1.ReasonSpecChanged] {
		t.Errorf("no SpecChanged event")
	}
}

// TestTimeout: a node that never reports is TimedOut at the deadline (fake
// clock); the experiment completes Degraded with the others.
func TestTimeout(t *testing.T) {
	h := newHarness(t, harnessOptions{FakeClock: true, Runner: runners(nil)})
	silent := h.prefix + "-b"
	h.kubelet.kill(silent) // its agent never runs
	h.createNodes(nodeSpec{name: h.prefix + "-a"}, nodeSpec{name: silent})
	name := h.createExperiment("exp", h.experimentSpec())
	h.eventually(30*time.Second, "node a done, b pending", func() (bool, string) {
		e := h.get(name)
		return e.Status.NodeProgress == "1/2", e.Status.NodeProgress
	})
	h.clock.Step(2 * time.Minute) // (1s+2s) × 2 variants × 2 repetitions × 3 attempts + 1m margin = 1m36s
	h.poke(name)
	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonTimedOut, 30*time.Second)
	if e.Status.Nodes[1].Phase != v1alpha1.NodeRunTimedOut || !strings.Contains(e.Status.Nodes[1].Message, "no result within 1m36s") {
		t.Errorf("silent node %+v, want TimedOut", e.Status.Nodes[1])
	}
	d := meta.FindStatusCondition(e.Status.Conditions, v1alpha1.ConditionDegraded)
	if d == nil || d.Status != metav1.ConditionTrue || !strings.Contains(d.Message, silent+": TimedOut") {
		t.Errorf("Degraded %+v, want True naming %s", d, silent)
	}
	h.eventually(10*time.Second, "Degraded and NodeTimedOut events", func() (bool, string) {
		got := eventReasons(h, name)
		return got["Degraded"] && got["NodeTimedOut"] && got["Completed"], strings.Join(keys(got), ",")
	})
	for _, r := range e.Status.Results {
		if r.Measured == nil || r.Measured.N != 2 {
			t.Errorf("row %s/%s measured %+v, want n=2 (one node × 2 repetitions)", r.Variant, r.Group, r.Measured)
		}
	}
}

// TestTimeoutBeforeDeadlineIsNot: stepping short of the deadline times
// nothing out. The deadline counts every attempt of a noisy window: (1s+2s)
// × 2 variants × 2 repetitions × 3 attempts + 1m margin = 1m36s; a node that
// re-ran noisy windows for 94s is still within it.
func TestTimeoutBeforeDeadlineIsNot(t *testing.T) {
	h := newHarness(t, harnessOptions{FakeClock: true, Runner: runners(nil)})
	h.kubelet.kill(h.prefix + "-a")
	h.createNodes(nodeSpec{name: h.prefix + "-a"})
	name := h.createExperiment("exp", h.experimentSpec())
	h.waitCondition(name, v1alpha1.ConditionRunning, metav1.ConditionTrue, v1alpha1.ReasonRunning, 30*time.Second)
	h.clock.Step(94 * time.Second)
	before := h.reconciles.Load()
	h.poke(name)
	h.eventually(10*time.Second, "a reconcile after the poke", func() (bool, string) {
		return h.reconciles.Load() > before, ""
	})
	e := h.get(name)
	if e.Status.Nodes[0].Phase == v1alpha1.NodeRunTimedOut {
		t.Fatalf("timed out before the deadline: %+v", e.Status.Nodes[0])
	}
	h.clock.Step(3 * time.Second)
	h.poke(name)
	h.waitCondition(name, v1alpha1.ConditionFailed, metav1.ConditionTrue, v1alpha1.ReasonTimedOut, 30*time.Second)
}

// TestSimulate: no agents; predictions for each distinct node shape.
func TestSimulate(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.createNodes(nodeSpec{name: h.prefix + "-a", cpus: 4, kernel: "6.8.0"}, nodeSpec{name: h.prefix + "-b", cpus: 8, kernel: "5.15.0-100-generic"},
		nodeSpec{name: h.prefix + "-c", cpus: 4, kernel: "6.9.1"})
	spec := h.experimentSpec()
	spec.Mode = v1alpha1.ModeSimulate
	name := h.createExperiment("exp", spec)
	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSimulated, 60*time.Second)
	shapes := map[string]int{}
	for _, r := range e.Status.Results {
		shapes[r.Shape]++
		if r.Predicted == nil || r.Measured != nil {
			t.Errorf("row %+v: want predicted only", r)
		}
	}
	// The shape name carries the kernel release (it selects the
	// simulator's version-dependent rules), so the two 4-CPU nodes on
	// different kernels are two shapes.
	if len(shapes) != 3 || shapes["4cpu-EEVDF-k6.8.0"] != 4 || shapes["4cpu-EEVDF-k6.9.1"] != 4 || shapes["8cpu-CFS-k5.15.0"] != 4 {
		t.Errorf("rows per shape %v, want 4 for each of 4cpu-EEVDF-k6.8.0, 4cpu-EEVDF-k6.9.1 and 8cpu-CFS-k5.15.0", shapes)
	}
	if _, ok := h.daemonSet(name); ok || len(h.nodeRuns(name)) != 0 || len(h.leases()) != 0 {
		t.Errorf("Simulate made a DaemonSet, NodeRuns or Leases")
	}
	for _, n := range e.Status.Nodes {
		if n.Phase != "" || n.Shape == "" {
			t.Errorf("node %s: phase %q shape %q; a Simulate experiment runs nothing on its nodes and names their shapes", n.Name, n.Phase, n.Shape)
		}
	}
}

// TestSimulateSweep: a Simulate experiment with a sweep gets its curve and
// answer in status.sweep.
func TestSimulateSweep(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	spec := h.experimentSpec()
	spec.Mode = v1alpha1.ModeSimulate
	spec.NodeSelector = nil
	spec.Objectives = nil
	spec.Variants = spec.Variants[:1]
	spec.Simulation = &v1alpha1.Simulation{Seed: 1, Nodes: []v1alpha1.NodeShape{{CPUs: 2, Scheduler: v1alpha1.SchedulerEEVDF, Count: ptr.To[int32](10)}}}
	spec.Sweep = &v1alpha1.Sweep{
		Parameters: []v1alpha1.SweepParameter{{Target: v1alpha1.SweepReplicas, Group: "probe", Range: &v1alpha1.SweepRange{From: 1, To: 3, Step: 1}}},
		Answer:     v1alpha1.SweepLargest,
	}
	spec.Constraints = []v1alpha1.Constraint{{Metric: "wakeupLatencyUs.p99", Group: "probe", Max: ptr.To(1e9)}}
	name := h.createExperiment("exp", spec)
	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSimulated, 2*time.Minute)
	sw := e.Status.Sweep
	if sw == nil || len(sw.Shapes) != 1 || len(sw.Shapes[0].Points) != 3 {
		t.Fatalf("status.sweep %+v, want one shape with 3 points", sw)
	}
	if a := sw.Shapes[0].Answer; a == nil {
		t.Errorf("no answer: %s", sw.Shapes[0].Reason)
	}
}

// recoveringRunner is a node whose previous agent was killed mid-run: its
// journal holds one knob, which Recover restores.
type recoveringRunner struct{ scriptedRunner }

func (r *recoveringRunner) Recover(context.Context) ([]v1alpha1.KnobRecord, error) {
	return knobRecord(true), nil
}

// TestAgentRestartedMidRun: an agent starting on a node whose NodeRun says
// Running (its predecessor was killed) restores the journal first and ends
// that run Aborted with the restore record; the experiment fails with the
// node named.
func TestAgentRestartedMidRun(t *testing.T) {
	h := newHarness(t, harnessOptions{Runner: runners(nil)})
	node := h.prefix + "-a"
	h.kubelet.kill(node) // the test starts the agent itself
	h.createNodes(nodeSpec{name: node})
	name := h.createExperiment("exp", h.experimentSpec())
	var nr v1alpha1.NodeRun
	h.eventually(30*time.Second, "NodeRun", func() (bool, string) {
		runs := h.nodeRuns(name)
		if len(runs) == 1 {
			nr = runs[0]
		}
		return len(runs) == 1, ""
	})
	start := metav1.Now()
	nr.Status = v1alpha1.NodeRunStatus{Phase: v1alpha1.NodeRunRunning, ExperimentGeneration: 1, StartTime: &start, StepsTotal: 4, StepsDone: 2}
	if err := k8s.Status().Update(h.ctx, &nr); err != nil {
		t.Fatal(err)
	}
	runner := &recoveringRunner{scriptedRunner{node: node, cpus: 4}}
	a, err := agent.New(restCfg, scheme, agent.Options{Experiment: name, Node: node, Runner: runner, ProgressInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	e := h.waitCondition(name, v1alpha1.ConditionFailed, metav1.ConditionTrue, v1alpha1.ReasonNodesFailed, 30*time.Second)
	if p := e.Status.Nodes[0]; p.Phase != v1alpha1.NodeRunAborted || !strings.Contains(p.Message, "restarted mid-run") {
		t.Errorf("node %+v, want Aborted by the restart", p)
	}
	got := h.nodeRuns(name)[0]
	if !got.Status.Restored || len(got.Status.Knobs) != 1 || got.Status.Knobs[0].Name != "autogroup" {
		t.Errorf("NodeRun status restored %v knobs %+v, want the recovered record", got.Status.Restored, got.Status.Knobs)
	}
	runner.mu.Lock()
	defer runner.mu.Unlock()
	if runner.started != 0 {
		t.Errorf("the cut-off run was run again %d times", runner.started)
	}
}

// TestRealNodeAgentOnAnEmptyRoot runs the production runner (the node agent
// of internal/nodeagent) under the real agent loop against an empty
// temporary host root: it must fail cleanly before touching anything, and
// the failure must reach the NodeRun and the experiment.
func TestRealNodeAgentOnAnEmptyRoot(t *testing.T) {
	h := newHarness(t, harnessOptions{Runner: func(_, node string) agent.Runner {
		return agent.NodeAgentRunner{Options: nodeagent.Options{Root: t.TempDir(), StateDir: t.TempDir(), WorkerBinary: "/bin/false"}}
	}})
	h.createNodes(nodeSpec{name: h.prefix + "-a"})
	name := h.createExperiment("exp", h.experimentSpec())
	e := h.waitCondition(name, v1alpha1.ConditionFailed, metav1.ConditionTrue, v1alpha1.ReasonNodesFailed, 60*time.Second)
	if p := e.Status.Nodes[0]; p.Phase != v1alpha1.NodeRunFailed || p.Message == "" {
		t.Errorf("node %+v, want Failed with the node agent's reason", p)
	}
	t.Logf("node agent on an empty root: %s", e.Status.Nodes[0].Message)
	h.eventually(10*time.Second, "locks released", func() (bool, string) { return len(h.leases()) == 0, "" })
}

// TestWaitsForAReadyNode: with no usable node the experiment says why; a
// node turning Ready wakes it (the Node watch) and it runs.
func TestWaitsForAReadyNode(t *testing.T) {
	h := newHarness(t, harnessOptions{Runner: runners(nil)})
	node := h.prefix + "-a"
	h.createNodes(nodeSpec{name: node, notReady: true})
	name := h.createExperiment("exp", h.experimentSpec())
	e := h.waitCondition(name, v1alpha1.ConditionNodesLocked, metav1.ConditionFalse, v1alpha1.ReasonNoNodes, 30*time.Second)
	if msg := meta.FindStatusCondition(e.Status.Conditions, v1alpha1.ConditionNodesLocked).Message; !strings.Contains(msg, node+" NotReady") {
		t.Errorf("message %q does not say the node is NotReady", msg)
	}
	n := &corev1.Node{}
	if err := k8s.Get(h.ctx, client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions[0].Status = corev1.ConditionTrue
	if err := k8s.Status().Update(h.ctx, n); err != nil {
		t.Fatal(err)
	}
	h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 30*time.Second)
}

// TestCalibrationFromConfigMap: the calibration stored for a shape in the
// operator's namespace is used by the predictions and shown in the status.
func TestCalibrationFromConfigMap(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	cal := v1alpha1.ShapeCalibration{Shape: "4cpu-EEVDF-k6.8.0", WakeupOverheadNs: 50_000, ErrorBefore: "30.0%", ErrorAfter: "5.0%"}
	data, err := experiment.CalibrationConfigMapData(cal)
	if err != nil {
		t.Fatal(err)
	}
	cmName := experiment.CalibrationConfigMapName("4cpu-EEVDF-k6.8.0")
	if err := k8s.Create(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: cmName}, Data: data}); err != nil {
		t.Fatal(err)
	}
	h.createNodes(nodeSpec{name: h.prefix + "-a", cpus: 4}, nodeSpec{name: h.prefix + "-b", cpus: 8})
	spec := h.experimentSpec()
	spec.Mode = v1alpha1.ModeSimulate
	name := h.createExperiment("exp", spec)
	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSimulated, time.Minute)
	if len(e.Status.Calibration) != 1 || e.Status.Calibration[0].ConfigMap != cmName || e.Status.Calibration[0].WakeupOverheadNs != 50_000 {
		t.Fatalf("status.calibration %+v, want the 4cpu-EEVDF-k6.8.0 ConfigMap's", e.Status.Calibration)
	}
	var p99 float64
	for _, r := range e.Status.Results {
		if r.Shape == "4cpu-EEVDF-k6.8.0" && r.Group == "probe" && r.Variant == "baseline" && r.Predicted != nil && r.Predicted.WakeupLatencyUs != nil {
			p99 = r.Predicted.WakeupLatencyUs.P99
		}
	}
	if p99 < 45 {
		t.Errorf("calibrated p99 wakeup latency %vµs, want about the 50µs wake-up overhead or more", p99)
	}
}

// TestCalibratedRunsPredictions: the prediction next to a node's
// measurements uses what the node's agent reported: the constants of its
// calibration window (a probe alone on an idle CPU wakes after 50 µs of
// slack plus the node's timer expiry, idle exit and context switch, 127 µs
// here against about 63 µs with the defaults) and the CPU other processes
// took in its windows (0.4 of 4 CPUs: two hogs are predicted 1.8 CPUs,
// not 2).
func TestCalibratedRunsPredictions(t *testing.T) {
	cal := &v1alpha1.NodeCalibration{Constants: v1alpha1.NodeConstants{TimerExpiryNs: 40_000, IdleExitNs: 30_000, CtxSwitchNs: 7_000, WakeupNs: 20_000},
		TimerLatenessNs: 77_000, Samples: 1500}
	h := newHarness(t, harnessOptions{Runner: func(_, node string) agent.Runner {
		return &scriptedRunner{node: node, cpus: 4, cal: cal, noise: 0.4}
	}})
	h.createNodes(nodeSpec{name: h.prefix + "-a", cpus: 4})
	name := h.createExperiment("exp", h.experimentSpec())
	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, time.Minute)
	runs := h.nodeRuns(name)
	if len(runs) != 1 {
		t.Fatalf("%d NodeRuns, want 1", len(runs))
	}
	if c := runs[0].Status.Calibration; c == nil || c.Constants.TimerExpiryNs != 40_000 {
		t.Fatalf("NodeRun calibration %+v, want the agent's window", c)
	}
	seen := 0
	for _, r := range e.Status.Results {
		if r.Variant != "baseline" || r.Predicted == nil {
			continue
		}
		switch r.Group {
		case "probe":
			seen++
			l := r.Predicted.WakeupLatencyUs
			if l == nil || math.Abs(l.P50-127) > 127*0.04 {
				t.Errorf("probe predicted %+v, want p50 127 µs ± 4%% (50 slack + 40 timer + 30 idle exit + 7 switch)", l)
			}
		case "batch":
			seen++
			if math.Abs(r.Predicted.CPU-1.8) > 0.02 {
				t.Errorf("batch predicted %.3f CPUs, want 1.8 (2 hogs, 0.4 of 4 CPUs taken by others)", r.Predicted.CPU)
			}
		}
	}
	if seen != 2 {
		t.Errorf("saw %d baseline rows with predictions, want 2: %+v", seen, e.Status.Results)
	}
}

// journalRunner is a node whose journal still holds what a lost agent
// changed: Recover restores it once gate is closed.
type journalRunner struct {
	scriptedRunner
	gate <-chan struct{}
}

func (r *journalRunner) Recover(ctx context.Context) ([]v1alpha1.KnobRecord, error) {
	select {
	case <-r.gate:
		return knobRecord(true), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestLostAgentRestoredByRestoreOnlyPod: node b's agent goes without
// reporting its restore. After the restore timeout node a (restored) is
// unlocked, node b stays locked with NodesNotRestored and a restore-only Pod
// pinned to it; once that Pod has replayed the journal and reported, the
// lock and the Pod go and the experiment is released.
func TestLostAgentRestoredByRestoreOnlyPod(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	journal := make(chan struct{})
	var journalClosed atomic.Bool
	defer func() {
		if !journalClosed.Load() {
			close(journal)
		}
	}()
	h := newHarness(t, harnessOptions{
		Runner: func(_, node string) agent.Runner {
			return &scriptedRunner{node: node, cpus: 4, gate: gate, restoreFails: strings.HasSuffix(node, "-b")}
		},
		RestoreRunner: func(_, node string) agent.Runner {
			return &journalRunner{scriptedRunner: scriptedRunner{node: node, cpus: 4}, gate: journal}
		},
		Config: func(c *controllers.Config) { c.RestoreTimeout = 3 * time.Second },
	})
	a, b := h.prefix+"-a", h.prefix+"-b"
	h.createNodes(nodeSpec{name: a}, nodeSpec{name: b})
	name := h.createExperiment("exp", h.experimentSpec())
	h.eventually(30*time.Second, "agents started", func() (bool, string) {
		n := 0
		for _, r := range h.nodeRuns(name) {
			if r.Status.StartTime != nil {
				n++
			}
		}
		return n == 2, ""
	})
	if err := k8s.Delete(h.ctx, h.get(name)); err != nil {
		t.Fatal(err)
	}
	var e *v1alpha1.SchedExperiment
	h.eventually(60*time.Second, "NodesNotRestored for node b", func() (bool, string) {
		e = h.get(name)
		c := meta.FindStatusCondition(e.Status.Conditions, v1alpha1.ConditionNodesNotRestored)
		if c == nil {
			return false, "no NodesNotRestored condition"
		}
		return c.Status == metav1.ConditionTrue && strings.Contains(c.Message, b) && !strings.Contains(c.Message, a+" ") && strings.HasPrefix(c.Message, "1 nodes"), c.Message
	})
	pod := &corev1.Pod{}
	if err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: names.RestorePod(name, b)}, pod); err != nil {
		t.Fatalf("restore-only Pod for %s: %v", b, err)
	}
	if pod.Spec.NodeName != b || !slices.Contains(pod.Spec.Containers[0].Args, "--restore-only") || pod.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("restore-only Pod: nodeName %q args %v restartPolicy %s", pod.Spec.NodeName, pod.Spec.Containers[0].Args, pod.Spec.RestartPolicy)
	}
	if err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: names.RestorePod(name, a)}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("a restore-only Pod for node a, which reported its restore: %v", err)
	}
	leases := h.leases()
	if len(leases) != 1 || leases[0].Name != names.Lease(b) {
		var got []string
		for _, l := range leases {
			got = append(got, l.Name)
		}
		t.Errorf("leases held %v, want only node b's %s", got, names.Lease(b))
	}
	for _, p := range e.Status.Nodes {
		want := p.Name == a
		if p.Restored == nil || *p.Restored != want {
			t.Errorf("status.nodes %s restored = %v, want %v", p.Name, p.Restored, want)
		}
	}
	close(journal)
	journalClosed.Store(true)
	h.eventually(60*time.Second, "experiment gone after the restore-only Pod reported", func() (bool, string) {
		err := k8s.Get(h.ctx, client.ObjectKey{Name: name}, &v1alpha1.SchedExperiment{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if n := len(h.leases()); n != 0 {
		t.Errorf("%d leases left", n)
	}
	var pods corev1.PodList
	if err := k8s.List(h.ctx, &pods, client.InNamespace(h.ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() {
			t.Errorf("Pod %s left behind", p.Name)
		}
	}
	if n := h.kubelet.restorePodRuns(b); n != 1 {
		t.Errorf("restore-only Pod ran %d times on node b, want 1", n)
	}
}

// TestManyKnobRecordsFit: a group of 300 replicas leaves 300 cgroup records
// besides the knobs, more than NodeRun status.knobs holds (256). The agent
// aggregates them, so the final write is accepted and the node's
// measurements arrive; before, the write was refused and the node timed out.
func TestManyKnobRecordsFit(t *testing.T) {
	// Quiet: the test ends right after completion, while the event
	// recorder may still log a retry.
	h := newHarness(t, harnessOptions{Quiet: true, Runner: func(_, node string) agent.Runner {
		return &scriptedRunner{node: node, cpus: 4, cgroups: 303}
	}})
	h.createNodes(nodeSpec{name: h.prefix + "-a"})
	name := h.createExperiment("exp", h.experimentSpec())
	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 60*time.Second)
	if len(e.Status.Results) == 0 {
		t.Errorf("no results")
	}
	runs := h.nodeRuns(name)
	if len(runs) != 1 {
		t.Fatalf("%d NodeRuns", len(runs))
	}
	st := runs[0].Status
	if st.Phase != v1alpha1.NodeRunCompleted || len(st.Windows) == 0 || !st.Restored {
		t.Errorf("NodeRun phase %s windows %d restored %v, want Completed with windows, restored", st.Phase, len(st.Windows), st.Restored)
	}
	var knobs int32
	for _, r := range st.Knobs {
		knobs += max(r.Count, 1)
	}
	if len(st.Knobs) > v1alpha1.MaxKnobRecords || knobs != 304 {
		t.Errorf("%d knob records standing for %d knobs, want at most %d standing for 304", len(st.Knobs), knobs, v1alpha1.MaxKnobRecords)
	}
}

// TestWindowsWrittenAsTheyArrive: a window the runner has finished is in
// the NodeRun's status while the run goes on, not only at its end; and a
// run cut off keeps it.
func TestWindowsWrittenAsTheyArrive(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	h := newHarness(t, harnessOptions{Runner: func(_, node string) agent.Runner {
		return &scriptedRunner{node: node, cpus: 4, gate: gate, firstWindow: true}
	}})
	node := h.prefix + "-a"
	h.createNodes(nodeSpec{name: node})
	name := h.createExperiment("exp", h.experimentSpec())
	h.eventually(30*time.Second, "the first window in the running NodeRun", func() (bool, string) {
		runs := h.nodeRuns(name)
		if len(runs) != 1 {
			return false, fmt.Sprintf("%d NodeRuns", len(runs))
		}
		st := runs[0].Status
		return st.Phase == v1alpha1.NodeRunRunning && len(st.Windows) == 1, fmt.Sprintf("phase %s, %d windows", st.Phase, len(st.Windows))
	})
	w := h.nodeRuns(name)[0].Status.Windows[0]
	if w.Variant != "baseline" || w.Repetition != 0 || len(w.Groups) != 2 || w.Groups[0].Metrics.CPU != scriptedMetrics(node, 0, 0, "batch").CPU {
		t.Errorf("window %+v, want the runner's first (baseline, repetition 0, batch cpu %.2f)", w, scriptedMetrics(node, 0, 0, "batch").CPU)
	}
	// Deleting the experiment cuts the run off: the NodeRun keeps the window.
	if err := k8s.Delete(h.ctx, h.get(name)); err != nil {
		t.Fatal(err)
	}
	h.eventually(30*time.Second, "the run aborted", func() (bool, string) {
		st := h.nodeRuns(name)[0].Status
		return st.Phase == v1alpha1.NodeRunAborted, string(st.Phase)
	})
	if st := h.nodeRuns(name)[0].Status; len(st.Windows) != 1 || !st.Restored {
		t.Errorf("aborted NodeRun: %d windows restored %v, want the finished window kept and the node restored", len(st.Windows), st.Restored)
	}
}

// TestNodeGoneUnrestored: node b's Node object is deleted while its agent
// runs, and the agent goes without restoring (it says so). After the
// restore timeout the node is reported gone with its journal unrestored
// (NodesNotRestored, reason NodesGone, restored=false), its Lease is
// released and no restore-only Pod is left pinned to a node that does not
// exist. When a Node of the same name registers again, the restore-only
// Pod runs there, reports, and the condition turns False (Restored).
func TestNodeGoneUnrestored(t *testing.T) {
	gate := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	defer open()
	h := newHarness(t, harnessOptions{
		Runner: func(_, node string) agent.Runner {
			return &scriptedRunner{node: node, cpus: 4, gate: gate, restoreFails: strings.HasSuffix(node, "-b")}
		},
		RestoreRunner: func(_, node string) agent.Runner {
			return &journalRunner{scriptedRunner: scriptedRunner{node: node, cpus: 4}, gate: closedChan()}
		},
		Config: func(c *controllers.Config) { c.RestoreTimeout = 3 * time.Second },
	})
	a, b := h.prefix+"-a", h.prefix+"-b"
	h.createNodes(nodeSpec{name: a}, nodeSpec{name: b})
	name := h.createExperiment("exp", h.experimentSpec())
	h.eventually(30*time.Second, "agents started", runningOn(h, name, 2))
	if err := k8s.Delete(h.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: b}}); err != nil {
		t.Fatal(err)
	}
	h.kubelet.stopNode(b) // its agent cannot restore, and says so
	open()
	var e *v1alpha1.SchedExperiment
	h.eventually(60*time.Second, "node b reported gone", func() (bool, string) {
		e = h.get(name)
		c := meta.FindStatusCondition(e.Status.Conditions, v1alpha1.ConditionNodesNotRestored)
		if c == nil {
			return false, conditions(e)
		}
		return c.Status == metav1.ConditionTrue && c.Reason == "NodesGone" && strings.Contains(c.Message, b), conditions(e)
	})
	if !meta.IsStatusConditionTrue(e.Status.Conditions, v1alpha1.ConditionCompleted) {
		t.Errorf("the experiment is not Completed: %s", conditions(e))
	}
	for _, p := range e.Status.Nodes {
		if want := p.Name == a; p.Restored == nil || *p.Restored != want {
			t.Errorf("status.nodes %s restored = %v, want %v", p.Name, p.Restored, want)
		}
	}
	h.eventually(30*time.Second, "no Lease left, no restore-only Pod for the gone node", func() (bool, string) {
		err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: names.RestorePod(name, b)}, &corev1.Pod{})
		return len(h.leases()) == 0 && apierrors.IsNotFound(err), fmt.Sprintf("%d leases; restore-only Pod: %v", len(h.leases()), err)
	})
	if n := h.kubelet.restorePodRuns(b); n != 0 {
		t.Errorf("%d restore-only Pods ran on the gone node", n)
	}

	// The node registers again under its name: its restore runs.
	h.kubelet.revive(b)
	h.createNodes(nodeSpec{name: b})
	e = h.waitCondition(name, v1alpha1.ConditionNodesNotRestored, metav1.ConditionFalse, "Restored", 60*time.Second)
	for _, p := range e.Status.Nodes {
		if p.Restored == nil || !*p.Restored {
			t.Errorf("status.nodes %s restored = %v after the node came back", p.Name, p.Restored)
		}
	}
	if n := h.kubelet.restorePodRuns(b); n != 1 {
		t.Errorf("%d restore-only Pods ran on the node that came back, want 1", n)
	}
	h.eventually(30*time.Second, "restore-only Pods deleted, no Lease", func() (bool, string) {
		var pods corev1.PodList
		_ = k8s.List(h.ctx, &pods, client.InNamespace(h.ns))
		left := 0 // not being deleted (with no kubelet here, a bound Pod stays Terminating)
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				left++
			}
		}
		return left == 0 && len(h.leases()) == 0, fmt.Sprintf("%d pods, %d leases", left, len(h.leases()))
	})
}

func closedChan() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
