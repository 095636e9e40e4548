package experiment_test

// The chaos suite: the operator against a real kube-apiserver under faults
// (a manager restarted mid-run and mid-Job, an agent process killed with
// SIGKILL mid-window, a Node object deleted mid-run) and load (50
// experiments contending for 5 nodes, the largest admitted Simulate
// experiment beside a small Measure one). Each test prints its figures on
// lines starting "CHAOS |" (test/RELIABILITY.md collects them) and fails
// when a result is lost, a node is left unrestored or two experiments hold
// a node at once.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/agent"
	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/controllers"
)

// nodeUse records which experiment runs on each node, to count overlaps:
// two runs on one node at once.
type nodeUse struct {
	mu       sync.Mutex
	busy     map[string]string
	runs     int
	overlaps []string
}

func (u *nodeUse) enter(node, exp string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.busy == nil {
		u.busy = map[string]string{}
	}
	if other := u.busy[node]; other != "" {
		u.overlaps = append(u.overlaps, fmt.Sprintf("%s: %s while %s ran", node, exp, other))
	}
	u.busy[node] = exp
	u.runs++
}

func (u *nodeUse) leave(node, exp string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.busy[node] == exp {
		delete(u.busy, node)
	}
}

// exclusiveRunner is a scripted node that takes hold to run and tells use
// when it starts and ends.
type exclusiveRunner struct {
	scriptedRunner
	exp  string
	use  *nodeUse
	hold time.Duration
}

func (r *exclusiveRunner) Run(ctx context.Context, spec *v1alpha1.SchedExperimentSpec, runID string, report agent.Report) (*v1alpha1.NodeRunStatus, error) {
	r.use.enter(r.node, r.exp)
	defer r.use.leave(r.node, r.exp)
	select {
	case <-time.After(r.hold):
	case <-ctx.Done():
	}
	return r.scriptedRunner.Run(ctx, spec, runID, report)
}

// chaosOutcome counts, over experiments that should have succeeded with n
// measurements per result row, the rows lost (missing, or with fewer
// measurements) and the nodes left unrestored (a NodeRun that started
// without reporting its restore, or NodesNotRestored), and the node Leases
// still held.
func (h *harness) chaosOutcome(exps []string, rows, n int) (lost, unrestored, held int, detail []string) {
	h.t.Helper()
	for _, name := range exps {
		e := h.get(name)
		got := 0
		for _, r := range e.Status.Results {
			if r.Measured != nil && int(r.Measured.N) == n {
				got++
			}
		}
		if !meta.IsStatusConditionTrue(e.Status.Conditions, v1alpha1.ConditionCompleted) {
			got = 0
		}
		if got < rows {
			lost += rows - got
			detail = append(detail, fmt.Sprintf("%s: %d of %d rows (%s)", name, got, rows, conditions(e)))
		}
		if meta.IsStatusConditionTrue(e.Status.Conditions, v1alpha1.ConditionNodesNotRestored) {
			unrestored++
			detail = append(detail, name+": NodesNotRestored")
		}
		for _, nr := range h.nodeRuns(name) {
			if nr.Status.StartTime != nil && !nr.Status.Restored {
				unrestored++
				detail = append(detail, fmt.Sprintf("NodeRun %s not restored", nr.Name))
			}
		}
	}
	return lost, unrestored, len(h.leases()), detail
}

func runningOn(h *harness, name string, n int) func() (bool, string) {
	return func() (bool, string) {
		running := 0
		for _, r := range h.nodeRuns(name) {
			if r.Status.Phase == v1alpha1.NodeRunRunning && r.Status.StartTime != nil {
				running++
			}
		}
		return running == n, fmt.Sprintf("%d of %d running", running, n)
	}
}

// TestChaosManagerKilledMidRun: the manager process (the real binary, with
// leader election) is killed with SIGKILL while both nodes run, leaving
// its leader Lease held and nothing flushed; a new process starts, takes
// the leadership once the dead one's Lease expires, and goes on from what
// the API holds: the run completes with every result, the nodes restored
// and unlocked.
func TestChaosManagerKilledMidRun(t *testing.T) {
	gate := make(chan struct{})
	h := newHarness(t, harnessOptions{Runner: runners(gate), Process: schedlabBinary(t)})
	h.createNodes(nodeSpec{name: h.prefix + "-a"}, nodeSpec{name: h.prefix + "-b"})
	name := h.createExperiment("exp", h.experimentSpec())
	h.eventually(60*time.Second, "both agents running", runningOn(h, name, 2))
	h.killManager()
	time.Sleep(500 * time.Millisecond) // the agents go on alone
	restarted := time.Now()
	h.startManager()
	close(gate)
	h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 3*time.Minute)
	took := time.Since(restarted)
	h.eventually(30*time.Second, "nodes unlocked", func() (bool, string) { return len(h.leases()) == 0, "" })
	lost, unrestored, held, detail := h.chaosOutcome([]string{name}, 4, 4)
	t.Logf("CHAOS | manager process SIGKILLed mid-run | 1 experiment, 2 nodes, %d manager processes | lost results %d | unrestored nodes %d | leases left %d | completed %s after the restart",
		h.managers, lost, unrestored, held, took.Round(100*time.Millisecond))
	if lost+unrestored+held != 0 {
		t.Errorf("lost %d, unrestored %d, leases %d: %v", lost, unrestored, held, detail)
	}
}

// TestChaosManagerKilledMidJob: the manager process is killed with SIGKILL
// while a sweep's Indexed Job runs; the new one neither recreates the Job
// nor simulates the sweep itself, and merges the shards when the Job
// completes. (TestSweepAsIndexedJob checks the merged answer against the
// pool's.)
func TestChaosManagerKilledMidJob(t *testing.T) {
	gate := make(chan struct{})
	jr := &jobRunner{gate: gate}
	h := newHarness(t, harnessOptions{Jobs: jr, Process: schedlabBinary(t),
		ProcessArgs: []string{"--sweep-job-min-jobs=4", "--sweep-job-parallelism=3"}})
	name := h.createExperiment("exp", h.sweepJobSpec())
	h.waitCondition(name, v1alpha1.ConditionRunning, metav1.ConditionTrue, "Simulating", 60*time.Second)
	h.eventually(30*time.Second, "the Job", func() (bool, string) { return len(jr.jobsSeen(names.SweepJob(name))) == 1, "" })
	h.killManager()
	h.startManager()
	close(gate)
	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSimulated, 3*time.Minute)
	lost := 0
	if e.Status.Sweep == nil || len(e.Status.Sweep.Shapes) != 2 {
		lost = 1
	} else {
		for _, sh := range e.Status.Sweep.Shapes {
			lost += 3 - len(sh.Points)
		}
	}
	jobs := len(jr.jobsSeen(names.SweepJob(name)))
	h.eventually(30*time.Second, "the Job and its ConfigMaps deleted", func() (bool, string) {
		err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: names.SweepJob(name)}, &batchv1.Job{})
		var cms corev1.ConfigMapList
		_ = k8s.List(h.ctx, &cms, client.InNamespace(h.ns), client.MatchingLabels{names.SweepOfLabel: name})
		return apierrors.IsNotFound(err) && len(cms.Items) == 0, fmt.Sprintf("job: %v, %d ConfigMaps", err, len(cms.Items))
	})
	t.Logf("CHAOS | manager process SIGKILLed mid-Job | 1 sweep of 6 simulator jobs in 3 shards, %d manager processes | lost sweep points %d | Jobs created %d", h.managers, lost, jobs)
	if lost != 0 || jobs != 1 {
		t.Errorf("lost %d sweep points, %d Jobs created", lost, jobs)
	}
}

// TestChaosNodeDeletedMidRun: a chosen node's Node object is deleted while
// both nodes run; its agent is stopped as the pod garbage collector would
// (SIGTERM), restores and reports. The experiment completes degraded
// (reason NodesFailed: the node's run was cut off) with the other node's
// results, every window the agents finished kept in the NodeRuns, both
// nodes restored and unlocked.
func TestChaosNodeDeletedMidRun(t *testing.T) {
	gate := make(chan struct{})
	h := newHarness(t, harnessOptions{Runner: func(_, node string) agent.Runner {
		return &scriptedRunner{node: node, cpus: 4, gate: gate, firstWindow: true}
	}})
	a, b := h.prefix+"-a", h.prefix+"-b"
	h.createNodes(nodeSpec{name: a}, nodeSpec{name: b})
	name := h.createExperiment("exp", h.experimentSpec())
	h.eventually(30*time.Second, "both agents running with a window", func() (bool, string) {
		n := 0
		for _, r := range h.nodeRuns(name) {
			if r.Status.Phase == v1alpha1.NodeRunRunning && len(r.Status.Windows) == 1 {
				n++
			}
		}
		return n == 2, fmt.Sprintf("%d", n)
	})
	if err := k8s.Delete(h.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: b}}); err != nil {
		t.Fatal(err)
	}
	h.kubelet.stopNode(b)
	close(gate)
	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonNodesFailed, 60*time.Second)
	h.eventually(30*time.Second, "nodes unlocked", func() (bool, string) { return len(h.leases()) == 0, "" })
	lost, unrestored := 0, 0
	for _, r := range e.Status.Results { // node a's 2 repetitions
		if r.Measured == nil || r.Measured.N != 2 {
			lost++
		}
	}
	if len(e.Status.Results) != 4 {
		lost += 4 - len(e.Status.Results)
	}
	for _, nr := range h.nodeRuns(name) {
		want := 4 // node a finished its 4 windows
		if nr.Spec.NodeName == b {
			want = 1 // node b had finished one when it was stopped
		}
		if len(nr.Status.Windows) < want {
			lost += want - len(nr.Status.Windows)
		}
		if !nr.Status.Restored {
			unrestored++
		}
	}
	t.Logf("CHAOS | Node object deleted mid-run | 2 nodes, one deleted | lost results and windows %d | unrestored nodes %d | leases left %d | %s", lost, unrestored, len(h.leases()), conditions(e))
	if lost+unrestored != 0 {
		t.Errorf("lost %d results and windows, %d nodes unrestored: %s", lost, unrestored, conditions(e))
	}
}

// TestChaos50ExperimentsOn5Nodes: 50 experiments created at once, each
// selecting two of 5 nodes (overlapping pairs), all contend for the node
// locks. Every one completes with all its results; no node is ever run by
// two experiments at once; every node is restored and unlocked at the end.
func TestChaos50ExperimentsOn5Nodes(t *testing.T) {
	use := &nodeUse{}
	h := newHarness(t, harnessOptions{Quiet: true, Runner: func(exp, node string) agent.Runner {
		return &exclusiveRunner{scriptedRunner: scriptedRunner{node: node, cpus: 4}, exp: exp, use: use, hold: 200 * time.Millisecond}
	}, Config: func(c *controllers.Config) { c.WaitRecheck = 5 * time.Second }})
	var nodes []nodeSpec
	for i := 0; i < 5; i++ {
		nodes = append(nodes, nodeSpec{name: fmt.Sprintf("%s-n%d", h.prefix, i), extraLabels: map[string]string{"slot": fmt.Sprint(i)}})
	}
	h.createNodes(nodes...)
	start := time.Now()
	var exps []string
	for i := 0; i < 50; i++ {
		spec := h.experimentSpec()
		spec.Repetitions = 1
		spec.NodeSelector = &metav1.LabelSelector{
			MatchLabels:      map[string]string{"pool": h.prefix},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "slot", Operator: metav1.LabelSelectorOpIn, Values: []string{fmt.Sprint(i % 5), fmt.Sprint((i + 1) % 5)}}},
		}
		exps = append(exps, h.createExperiment(fmt.Sprintf("e%02d", i), spec))
	}
	h.eventually(5*time.Minute, "all 50 finished", func() (bool, string) {
		var list v1alpha1.SchedExperimentList
		if err := k8s.List(h.ctx, &list); err != nil {
			return false, err.Error()
		}
		done := 0
		for i := range list.Items {
			e := &list.Items[i]
			if strings.HasPrefix(e.Name, h.prefix) && (meta.IsStatusConditionTrue(e.Status.Conditions, v1alpha1.ConditionCompleted) || meta.IsStatusConditionTrue(e.Status.Conditions, v1alpha1.ConditionFailed)) {
				done++
			}
		}
		return done == 50, fmt.Sprintf("%d of 50 finished", done)
	})
	took := time.Since(start)
	h.eventually(30*time.Second, "nodes unlocked", func() (bool, string) { return len(h.leases()) == 0, fmt.Sprintf("%d leases", len(h.leases())) })
	lost, unrestored, held, detail := h.chaosOutcome(exps, 4, 2) // 2 variants × 2 groups, 2 nodes × 1 repetition
	use.mu.Lock()
	runs, overlaps := use.runs, use.overlaps
	use.mu.Unlock()
	t.Logf("CHAOS | 50 experiments on 5 nodes | %d node runs in %s | lost results %d | unrestored nodes %d | overlapping holders %d | leases left %d",
		runs, took.Round(time.Second), lost, unrestored, len(overlaps), held)
	if lost+unrestored+held+len(overlaps) != 0 || runs != 100 {
		t.Errorf("lost %d, unrestored %d, leases %d, overlaps %v, %d runs (want 100): %v", lost, unrestored, held, overlaps, runs, detail)
	}
}

// largestSimulateSpec is the largest Simulate experiment the API admits
// along every axis the simulator's work grows with: 8 node shapes, 8
// variants, a sweep of 250 points × 8 variants (the 2000 grid points ×
// variants allowed), 512 tasks at the sweep's largest value.
func (h *harness) largestSimulateSpec() v1alpha1.SchedExperimentSpec {
	spec := v1alpha1.SchedExperimentSpec{
		Mode:     v1alpha1.ModeSimulate,
		Duration: metav1.Duration{Duration: time.Hour},
		Warmup:   &metav1.Duration{Duration: time.Second},
		Workload: v1alpha1.Workload{Groups: []v1alpha1.Group{
			{Name: "batch", Replicas: 64, Tasks: ptr.To[int32](4), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}},
			{Name: "web", Replicas: 1, Tasks: ptr.To[int32](1), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternPeriodic,
				Run: &metav1.Duration{Duration: 500 * time.Microsecond}, Period: &metav1.Duration{Duration: 5 * time.Millisecond}}},
		}},
		Sweep: &v1alpha1.Sweep{
			Parameters: []v1alpha1.SweepParameter{{Target: v1alpha1.SweepReplicas, Group: "web", Range: &v1alpha1.SweepRange{From: 1, To: 250, Step: 1}}},
			Answer:     v1alpha1.SweepLargest,
		},
		Constraints: []v1alpha1.Constraint{{Metric: "wakeupLatencyUs.p99", Group: "web", Max: ptr.To(2000.0)}},
		Simulation:  &v1alpha1.Simulation{Seed: 1},
	}
	for i := 0; i < 8; i++ {
		spec.Variants = append(spec.Variants, v1alpha1.Variant{Name: fmt.Sprintf("v%d", i),
			Knobs: v1alpha1.Knobs{BaseSlice: &metav1.Duration{Duration: time.Duration(i+1) * 500 * time.Microsecond}}})
		spec.Simulation.Nodes = append(spec.Simulation.Nodes, v1alpha1.NodeShape{CPUs: int32(8 << (i % 4)), Scheduler: []v1alpha1.SchedulerFamily{v1alpha1.SchedulerEEVDF, v1alpha1.SchedulerCFS}[i/4]})
	}
	return spec
}

// TestChaosLargestSimulateBesideSmallMeasure: the largest admitted Simulate
// experiment is in flight (its sweep an Indexed Job whose pods do not run
// here, its result rows in the manager's pool) while a small Measure
// experiment runs: the small one completes within 2× of its time alone.
// Deleting the large one removes its Job and ConfigMaps.
func TestChaosLargestSimulateBesideSmallMeasure(t *testing.T) {
	gate := make(chan struct{}) // the large Job's pods never get to run
	defer close(gate)
	use := &nodeUse{}
	h := newHarness(t, harnessOptions{Quiet: true, Jobs: &jobRunner{gate: gate}, Runner: func(exp, node string) agent.Runner {
		return &exclusiveRunner{scriptedRunner: scriptedRunner{node: node, cpus: 4}, exp: exp, use: use, hold: 3 * time.Second}
	}, Config: func(c *controllers.Config) { c.SweepJobMinJobs = 0 }}) // the manager's default threshold
	h.createNodes(nodeSpec{name: h.prefix + "-a"})
	small := func(suffix string) time.Duration {
		start := time.Now()
		name := h.createExperiment(suffix, h.experimentSpec())
		h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 2*time.Minute)
		return time.Since(start)
	}
	alone := small("alone")

	large := h.createExperiment("largest", h.largestSimulateSpec())
	h.waitCondition(large, v1alpha1.ConditionRunning, metav1.ConditionTrue, "Simulating", time.Minute)
	job := &batchv1.Job{}
	if err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: names.SweepJob(large)}, job); err != nil {
		t.Fatalf("the largest sweep is not an Indexed Job: %v", err)
	}
	beside := small("beside")
	e := h.get(large)
	stillRunning := meta.IsStatusConditionTrue(e.Status.Conditions, v1alpha1.ConditionRunning)

	if err := k8s.Delete(h.ctx, e); err != nil {
		t.Fatal(err)
	}
	h.eventually(30*time.Second, "the large experiment and its Job gone", func() (bool, string) {
		err1 := k8s.Get(h.ctx, client.ObjectKey{Name: large}, &v1alpha1.SchedExperiment{})
		err2 := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: names.SweepJob(large)}, &batchv1.Job{})
		var cms corev1.ConfigMapList
		_ = k8s.List(h.ctx, &cms, client.InNamespace(h.ns), client.MatchingLabels{names.SweepOfLabel: large})
		return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2) && len(cms.Items) == 0, fmt.Sprintf("%v; %v; %d ConfigMaps", err1, err2, len(cms.Items))
	})
	t.Logf("CHAOS | largest Simulate beside a small Measure | sweep 8 shapes × 8 variants × 250 points = 16000 simulator jobs as %d shards | small alone %s, beside %s (%.2f×) | large still running then: %v",
		ptr.Deref(job.Spec.Completions, 0), alone.Round(10*time.Millisecond), beside.Round(10*time.Millisecond), beside.Seconds()/alone.Seconds(), stillRunning)
	if beside > 2*alone {
		t.Errorf("the small experiment took %s beside the large one, %s alone: more than 2×", beside, alone)
	}
	if !stillRunning {
		t.Errorf("the large experiment had finished before the small one did: the test did not overlap them")
	}
}

// Agent processes for the SIGKILL test: the test binary re-executed with
// chaosAgentEnv set runs one agent (the real agent loop) over a node whose
// journal is a file: the run writes it, reports its first window, and
// stays mid-window until stopped; Recover restores (removes) it.

const chaosAgentEnv = "SCHEDLAB_CHAOS_AGENT"

type chaosAgentArgs struct {
	Host, CAData, CertData, KeyData string
	Experiment, Node, Journal       string
}

// fileJournalRunner is a node whose one knob is journaled in a file.
type fileJournalRunner struct {
	scriptedRunner
	journal string
}

func (r *fileJournalRunner) Recover(context.Context) ([]v1alpha1.KnobRecord, error) {
	if _, err := os.Stat(r.journal); os.IsNotExist(err) {
		return nil, nil
	}
	if err := os.Remove(r.journal); err != nil {
		return nil, err
	}
	return knobRecord(true), nil
}

func (r *fileJournalRunner) Run(ctx context.Context, spec *v1alpha1.SchedExperimentSpec, runID string, report agent.Report) (*v1alpha1.NodeRunStatus, error) {
	if err := os.WriteFile(r.journal, []byte("autogroup 1 -> 0\n"), 0o644); err != nil {
		return nil, err
	}
	report.Progress(0, 4, "detecting")
	w := r.window(spec, 0, 0)
	report.Window(w)
	report.Progress(1, 4, "repetition 1/2, variant no-autogroup") // mid-window from here on
	<-ctx.Done()
	_ = os.Remove(r.journal)
	return &v1alpha1.NodeRunStatus{Capabilities: r.caps(), Knobs: knobRecord(true), Restored: true, Windows: []v1alpha1.WindowResult{w}}, ctx.Err()
}

// chaosAgentMain is the child process: it runs until SIGTERM (or SIGKILL).
func chaosAgentMain() int {
	var a chaosAgentArgs
	if err := json.Unmarshal([]byte(os.Getenv(chaosAgentEnv)), &a); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg := &rest.Config{Host: a.Host, TLSClientConfig: rest.TLSClientConfig{CAData: []byte(a.CAData), CertData: []byte(a.CertData), KeyData: []byte(a.KeyData)}}
	ag, err := agent.New(cfg, scheme, agent.Options{Experiment: a.Experiment, Node: a.Node, ProgressInterval: 50 * time.Millisecond, FinalWriteTimeout: 10 * time.Second,
		Runner: &fileJournalRunner{scriptedRunner: scriptedRunner{node: a.Node, cpus: 4}, journal: a.Journal}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signalContext()
	defer stop()
	if err := ag.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func startChaosAgent(t *testing.T, exp, node, journal string) *exec.Cmd {
	t.Helper()
	args, _ := json.Marshal(chaosAgentArgs{Host: restCfg.Host, CAData: string(restCfg.CAData), CertData: string(restCfg.CertData), KeyData: string(restCfg.KeyData),
		Experiment: exp, Node: node, Journal: journal})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), chaosAgentEnv+"="+string(args))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// TestChaosAgentSIGKILLedMidWindow: the agent process is killed with
// SIGKILL mid-window, its journal left on the node; the next agent process
// (the pod restarted) restores the journal before anything else and ends
// the cut-off run Aborted with the restore record. The window the killed
// agent had finished is still in the NodeRun; the node is restored and
// unlocked.
func TestChaosAgentSIGKILLedMidWindow(t *testing.T) {
	h := newHarness(t, harnessOptions{}) // no kubelet: the test runs the agent processes
	node := h.prefix + "-a"
	h.createNodes(nodeSpec{name: node})
	name := h.createExperiment("exp", h.experimentSpec())
	journal := filepath.Join(t.TempDir(), "journal")
	first := startChaosAgent(t, name, node, journal)
	h.eventually(60*time.Second, "the agent mid-window with its first window written", func() (bool, string) {
		runs := h.nodeRuns(name)
		if len(runs) != 1 {
			return false, "no NodeRun"
		}
		st := runs[0].Status
		_, err := os.Stat(journal)
		return st.Phase == v1alpha1.NodeRunRunning && len(st.Windows) == 1 && err == nil, fmt.Sprintf("phase %s, %d windows, journal %v", st.Phase, len(st.Windows), err)
	})
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	if _, err := os.Stat(journal); err != nil {
		t.Fatalf("the killed agent's journal: %v (want it left behind)", err)
	}
	second := startChaosAgent(t, name, node, journal)
	defer func() {
		_ = second.Process.Signal(syscall.SIGTERM)
		_ = second.Wait()
	}()
	e := h.waitCondition(name, v1alpha1.ConditionFailed, metav1.ConditionTrue, v1alpha1.ReasonNodesFailed, 60*time.Second)
	h.eventually(30*time.Second, "node unlocked", func() (bool, string) { return len(h.leases()) == 0, "" })
	nr := h.nodeRuns(name)[0]
	lost, unrestored := 1-len(nr.Status.Windows), 0
	if !nr.Status.Restored || len(nr.Status.Knobs) != 1 {
		unrestored = 1
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		unrestored = 1
	}
	t.Logf("CHAOS | agent SIGKILLed mid-window | 1 node | lost windows %d | unrestored nodes %d | leases left %d | node: %s %q",
		lost, unrestored, len(h.leases()), e.Status.Nodes[0].Phase, e.Status.Nodes[0].Message)
	if lost != 0 || unrestored != 0 || nr.Status.Phase != v1alpha1.NodeRunAborted {
		t.Errorf("NodeRun %s: phase %s, %d windows, restored %v, knobs %+v", nr.Name, nr.Status.Phase, len(nr.Status.Windows), nr.Status.Restored, nr.Status.Knobs)
	}
}

// signalContext is cancelled by SIGTERM or SIGINT.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
}
