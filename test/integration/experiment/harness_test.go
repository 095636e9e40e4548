package experiment_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/schedlab/schedlab/agent"
	"github.com/schedlab/schedlab/api"
	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/controllers"
	"github.com/schedlab/schedlab/controllers/analysis"
	"github.com/schedlab/schedlab/internal/experiment"
	"github.com/schedlab/schedlab/test/envtest"
)

var (
	scheme  = api.NewScheme()
	env     *envtest.Env
	restCfg *rest.Config
	k8s     client.Client // direct, uncached
)

func TestMain(m *testing.M) {
	if os.Getenv(chaosAgentEnv) != "" {
		os.Exit(chaosAgentMain()) // an agent process of the SIGKILL test
	}
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // every test skips itself
	}
	ctrl.SetLogger(logr.Discard())
	var err error
	env, err = envtest.StartEnv(envtest.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, "controllers integration tests:", err)
		os.Exit(1)
	}
	restCfg, k8s = env.Config, env.Client
	code := m.Run()
	removeBinaries()
	_ = env.Stop()
	os.Exit(code)
}

// harness runs one test's manager, reconciler and simulated kubelet.
type harness struct {
	t          testing.TB
	ctx        context.Context
	prefix     string // of every cluster-scoped name in the test, and the operator namespace
	ns         string
	clock      *clocktesting.FakeClock // nil: the real clock
	rec        *controllers.SchedExperimentReconciler
	kubelet    *kubelet
	reconciles atomic.Int64
	mgr        ctrl.Manager
	opts       harnessOptions
	// stopMgr stops the running manager and waits until it has.
	stopMgr func()
	// managers counts the managers started (restarts + 1).
	managers int
	// logMu guards logEnded: once the test's cleanups are done, the
	// managers' log lines are dropped, not written to the ended test (the
	// manager's stop procedure can still log after Start returned, past its
	// graceful shutdown timeout, and testing panics on a log after the end).
	logMu    sync.Mutex
	logEnded bool
	// proc is the running manager process (harnessOptions.Process).
	proc *managerProcess
}

type harnessOptions struct {
	// FakeClock gives the reconciler a fake clock the test steps.
	FakeClock bool
	// Runner plays a node for the real agent loop; nil: no agents run
	// (a test helper writes the NodeRuns).
	Runner func(experiment, node string) agent.Runner
	// RestoreRunner plays a node for a restore-only Pod; nil: Runner.
	RestoreRunner func(experiment, node string) agent.Runner
	// Config overrides parts of the reconciler's configuration.
	Config func(*controllers.Config)
	// Quiet drops the controller's logs (large tests).
	Quiet bool
	// Jobs plays the kubelets for the pods of a sweep's Indexed Job; nil:
	// no Job's pods run.
	Jobs *jobRunner
	// Process runs the manager as an OS process of this binary (see
	// process_test.go) instead of in the test process; Config, Quiet and
	// FakeClock do not apply to it.
	Process string
	// ProcessArgs are more flags for the manager process.
	ProcessArgs []string
}

var counter atomic.Int64

func newHarness(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control plane (bin/k8s); skipped in -short mode")
	}
	name := strings.ToLower(regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "-"))
	if len(name) > 30 {
		name = name[:30]
	}
	prefix := fmt.Sprintf("%s-%d", strings.Trim(name, "-"), counter.Add(1))
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, ctx: ctx, prefix: prefix, ns: prefix}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}

	h.opts = o
	if o.Runner != nil || o.Jobs != nil {
		h.kubelet = &kubelet{h: h, runner: o.Runner, restoreRunner: o.RestoreRunner, jobs: o.Jobs,
			agents: map[string]context.CancelFunc{}, dead: map[string]bool{}}
		if h.kubelet.restoreRunner == nil {
			h.kubelet.restoreRunner = o.Runner
		}
		if err := h.kubelet.start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	h.startManager()
	t.Cleanup(func() {
		h.stopManager()
		cancel()
		if h.kubelet != nil {
			h.kubelet.wg.Wait()
		}
		h.logMu.Lock()
		h.logEnded = true
		h.logMu.Unlock()
	})
	t.Cleanup(h.cleanup) // runs first: the manager still runs
	return h
}

// startManager starts a manager with the test's reconciler (a new one: a
// restarted manager keeps nothing in memory).
func (h *harness) startManager() {
	t, o := h.t, h.opts
	t.Helper()
	if o.Process != "" {
		h.startProcess(o.Process)
		return
	}
	h.managers++
	var logger logr.Logger = logr.Discard()
	if !o.Quiet {
		logger = funcr.New(func(prefix, args string) {
			h.logMu.Lock()
			defer h.logMu.Unlock()
			if !h.logEnded {
				t.Log(prefix, args)
			}
		}, funcr.Options{Verbosity: 1})
	}
	inNS := map[string]cache.Config{h.ns: {}}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// A manager stopped mid-test is gone at once, as a killed one is.
		GracefulShutdownTimeout: ptr.To(2 * time.Second),
		Controller:              config.Controller{SkipNameValidation: ptr.To(true)},
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&appsv1.DaemonSet{}:     {Namespaces: inNS},
			&coordinationv1.Lease{}: {Namespaces: inNS},
			&corev1.ConfigMap{}:     {Namespaces: inNS},
			&batchv1.Job{}:          {Namespaces: inNS},
		}},
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	h.mgr = mgr
	cfg := controllers.Config{Namespace: h.ns, AgentImage: "schedlab:test", RestoreTimeout: 5 * time.Minute, DeadlineMargin: time.Minute,
		SweepJobMinJobs: -1}
	if o.Config != nil {
		o.Config(&cfg)
	}
	var clk clock.PassiveClock = clock.RealClock{}
	if o.FakeClock {
		if h.clock == nil {
			h.clock = clocktesting.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
		}
		clk = h.clock
	}
	m, err := controllers.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := &controllers.SchedExperimentReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("schedlab-controller"),
		Clock:    clk,
		Analyzer: analysis.Analyzer{Options: experiment.PredictOptions{Duration: 500 * time.Millisecond}},
		Config:   cfg,
		Metrics:  m,
	}
	h.rec = rec
	counting := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if !strings.HasPrefix(req.Name, h.prefix) {
			return reconcile.Result{}, nil // another test's experiment
		}
		defer h.reconciles.Add(1) // counted once done: a test may wait for one more
		return rec.Reconcile(ctx, req)
	})
	mctx, cancel := context.WithCancel(h.ctx)
	if err := rec.SetupWithManagerAs(mctx, mgr, controller.Options{}, counting); err != nil {
		cancel()
		t.Fatalf("setting up the controller: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	h.stopMgr = func() {
		cancel()
		<-done
	}
}

// stopManager stops the manager (a manager killed: it writes nothing more).
func (h *harness) stopManager() {
	if h.stopMgr != nil {
		h.stopMgr()
		h.stopMgr = nil
	}
}

// restartManager stops the manager and starts a new one.
func (h *harness) restartManager() {
	h.t.Helper()
	h.stopManager()
	h.startManager()
}

// cleanup force-deletes the test's experiments and waits until they are gone.
func (h *harness) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var list v1alpha1.SchedExperimentList
	if err := k8s.List(ctx, &list); err != nil {
		return
	}
	for i := range list.Items {
		e := &list.Items[i]
		if !strings.HasPrefix(e.Name, h.prefix) {
			continue
		}
		_ = k8s.Patch(ctx, e, client.RawPatch("application/merge-patch+json",
			[]byte(`{"metadata":{"annotations":{"`+v1alpha1.ForceCleanupAnnotation+`":"true"}}}`)))
		_ = k8s.Delete(ctx, e)
	}
	for ctx.Err() == nil {
		left := 0
		if err := k8s.List(ctx, &list); err == nil {
			for _, e := range list.Items {
				if strings.HasPrefix(e.Name, h.prefix) {
					left++
				}
			}
		}
		if left == 0 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	h.t.Errorf("cleanup: experiments of %s still present", h.prefix)
}

// eventually polls cond until it holds or timeout passes.
func (h *harness) eventually(timeout time.Duration, what string, cond func() (bool, string)) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		ok, detail := cond()
		if ok {
			return
		}
		last = detail
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out after %s waiting for %s; last: %s", timeout, what, last)
		}
		<-tick.C
	}
}

func (h *harness) get(name string) *v1alpha1.SchedExperiment {
	h.t.Helper()
	e := &v1alpha1.SchedExperiment{}
	if err := k8s.Get(h.ctx, client.ObjectKey{Name: name}, e); err != nil {
		h.t.Fatalf("getting experiment %s: %v", name, err)
	}
	return e
}

// waitCondition waits for the experiment's condition to have status (and
// reason, when given) for its current generation.
func (h *harness) waitCondition(name, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) *v1alpha1.SchedExperiment {
	h.t.Helper()
	var e *v1alpha1.SchedExperiment
	h.eventually(timeout, fmt.Sprintf("%s %s=%s %s", name, typ, status, reason), func() (bool, string) {
		e = &v1alpha1.SchedExperiment{}
		if err := k8s.Get(h.ctx, client.ObjectKey{Name: name}, e); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(e.Status.Conditions, typ)
		if c == nil {
			return false, fmt.Sprintf("no %s condition; conditions %s", typ, conditions(e))
		}
		ok := c.Status == status && (reason == "" || c.Reason == reason) && c.ObservedGeneration == e.Generation
		return ok, conditions(e)
	})
	return e
}

func conditions(e *v1alpha1.SchedExperiment) string {
	var b strings.Builder
	fmt.Fprintf(&b, "gen %d observed %d nodes %s:", e.Generation, e.Status.ObservedGeneration, e.Status.NodeProgress)
	for _, c := range e.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s/%s(%q)", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// nodeSpec describes a Node the test creates.
type nodeSpec struct {
	name        string
	cpus        int64
	kernel      string
	notReady    bool
	cordoned    bool
	taint       *corev1.Taint
	extraLabels map[string]string
}

// createNodes creates Nodes labelled pool=<prefix>.
func (h *harness) createNodes(specs ...nodeSpec) {
	h.t.Helper()
	for _, s := range specs {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: map[string]string{"pool": h.prefix}}}
		for k, v := range s.extraLabels {
			n.Labels[k] = v
		}
		n.Spec.Unschedulable = s.cordoned
		if s.taint != nil {
			n.Spec.Taints = []corev1.Taint{*s.taint}
		}
		if err := k8s.Create(h.ctx, n); err != nil {
			h.t.Fatalf("creating node %s: %v", s.name, err)
		}
		ready := corev1.ConditionTrue
		if s.notReady {
			ready = corev1.ConditionFalse
		}
		cpus, kernel := s.cpus, s.kernel
		if cpus == 0 {
			cpus = 4
		}
		if kernel == "" {
			kernel = "6.8.0-45-generic"
		}
		n.Status = corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "Test", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
			Capacity:   corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cpus, resource.DecimalSI), corev1.ResourceMemory: resource.MustParse("8Gi")},
			NodeInfo:   corev1.NodeSystemInfo{KernelVersion: kernel, OperatingSystem: "linux", Architecture: "amd64"},
		}
		if err := k8s.Status().Update(h.ctx, n); err != nil {
			h.t.Fatalf("setting status of node %s: %v", s.name, err)
		}
		// The API server's TaintNodesByCondition admission taints a new
		// Node not-ready; without a node lifecycle controller to lift it,
		// the test does.
		n.Spec.Taints = nil
		if s.taint != nil {
			n.Spec.Taints = []corev1.Taint{*s.taint}
		}
		if err := k8s.Update(h.ctx, n); err != nil {
			h.t.Fatalf("setting taints of node %s: %v", s.name, err)
		}
		h.t.Cleanup(func() { _ = k8s.Delete(context.Background(), n) })
	}
}

// experimentSpec is a small Measure experiment on the test's pool: two
// variants (autogroup on and off), a hog group and a latency probe, two
// repetitions.
func (h *harness) experimentSpec() v1alpha1.SchedExperimentSpec {
	return v1alpha1.SchedExperimentSpec{
		Mode:         v1alpha1.ModeMeasure,
		NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": h.prefix}},
		Duration:     metav1.Duration{Duration: 2 * time.Second},
		Warmup:       &metav1.Duration{Duration: time.Second},
		Repetitions:  2,
		Variants: []v1alpha1.Variant{
			{Name: "baseline", Knobs: v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupEnabled}},
			{Name: "no-autogroup", Knobs: v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupDisabled}},
		},
		Workload: v1alpha1.Workload{Groups: []v1alpha1.Group{
			{Name: "batch", Replicas: 1, Tasks: ptr.To[int32](2), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}},
			{Name: "probe", Replicas: 1, Tasks: ptr.To[int32](1), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternLatencyProbe, Interval: &metav1.Duration{Duration: time.Millisecond}}},
		}},
		Objectives: []v1alpha1.Objective{{Metric: "wakeupLatencyUs.p99", Group: "probe", Goal: v1alpha1.Minimize}},
	}
}

func (h *harness) createExperiment(suffix string, spec v1alpha1.SchedExperimentSpec) string {
	h.t.Helper()
	name := h.prefix + "-" + suffix
	e := &v1alpha1.SchedExperiment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := k8s.Create(h.ctx, e); err != nil {
		h.t.Fatalf("creating experiment %s: %v", name, err)
	}
	return name
}

// poke makes the controller look at an experiment again without changing
// its spec (for tests that step the fake clock).
func (h *harness) poke(name string) {
	h.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.schedlab.io/poke":"%d"}}}`, time.Now().UnixNano())
	if err := k8s.Patch(h.ctx, &v1alpha1.SchedExperiment{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		h.t.Fatalf("poking %s: %v", name, err)
	}
}

func (h *harness) nodeRuns(exp string) []v1alpha1.NodeRun {
	h.t.Helper()
	var list v1alpha1.NodeRunList
	if err := k8s.List(h.ctx, &list, client.MatchingLabels{v1alpha1.ExperimentLabel: names.LabelValue(exp)}); err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

// leases are the node Leases in the test's namespace (not a manager's
// leader-election Lease).
func (h *harness) leases() []coordinationv1.Lease {
	h.t.Helper()
	var list coordinationv1.LeaseList
	if err := k8s.List(h.ctx, &list, client.InNamespace(h.ns), client.MatchingLabels{names.ManagedByLabel: names.ManagedByValue}); err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func (h *harness) daemonSet(exp string) (*appsv1.DaemonSet, bool) {
	ds := &appsv1.DaemonSet{}
	err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: names.DaemonSet(exp)}, ds)
	return ds, err == nil
}

// kubelet plays the kubelets of the test's nodes: for every node a DaemonSet
// of the test's namespace selects it runs the real agent loop in-process
// (with the test's runner for the node); when the DaemonSet goes, the
// agent's context is cancelled, as SIGTERM would.
type kubelet struct {
	h      *harness
	jobs   *jobRunner
	runner func(experiment, node string) agent.Runner
	// restoreRunner plays the node for restore-only Pods.
	restoreRunner func(experiment, node string) agent.Runner
	mu            sync.Mutex
	agents        map[string]context.CancelFunc // by DaemonSet UID/node
	dead          map[string]bool               // nodes whose kubelet is gone
	wg            sync.WaitGroup
	starts        atomic.Int64
	// restorePods counts the restore-only Pods run, by node.
	restorePods map[string]int
}

func (k *kubelet) start(ctx context.Context) error {
	inNS := map[string]cache.Config{k.h.ns: {}}
	c, err := cache.New(restCfg, cache.Options{Scheme: scheme, ByObject: map[client.Object]cache.ByObject{
		&appsv1.DaemonSet{}: {Namespaces: inNS},
		&corev1.Pod{}:       {Namespaces: inNS},
		&batchv1.Job{}:      {Namespaces: inNS},
	}})
	if err != nil {
		return err
	}
	if k.jobs != nil {
		jobs, err := c.GetInformer(ctx, &batchv1.Job{})
		if err != nil {
			return err
		}
		if _, err := jobs.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(o any) { k.jobs.run(ctx, k, o.(*batchv1.Job)) },
		}); err != nil {
			return err
		}
	}
	if k.runner == nil {
		return k.startCache(ctx, c)
	}
	pods, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	if _, err := pods.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { k.runRestorePod(ctx, o.(*corev1.Pod)) },
	}); err != nil {
		return err
	}
	inf, err := c.GetInformer(ctx, &appsv1.DaemonSet{})
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { k.sync(ctx, o.(*appsv1.DaemonSet), false) },
		UpdateFunc: func(_, o any) { k.sync(ctx, o.(*appsv1.DaemonSet), false) },
		DeleteFunc: func(o any) {
			if ds, ok := o.(*appsv1.DaemonSet); ok {
				k.sync(ctx, ds, true)
			} else if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				if ds, ok := t.Obj.(*appsv1.DaemonSet); ok {
					k.sync(ctx, ds, true)
				}
			}
		},
	})
	if err != nil {
		return err
	}
	return k.startCache(ctx, c)
}

// startCache runs the kubelet's informers until ctx ends.
func (k *kubelet) startCache(ctx context.Context, c cache.Cache) error {
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		_ = c.Start(ctx)
	}()
	if !c.WaitForCacheSync(ctx) {
		return errors.New("kubelet: cache did not sync")
	}
	return nil
}

// stopNode stops a node's agents as the pod garbage collector does when
// the Node object is deleted (SIGTERM: they restore and report) and runs
// none there again.
func (k *kubelet) stopNode(node string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dead[node] = true
	for key, cancel := range k.agents {
		if strings.HasSuffix(key, "/"+node) {
			cancel()
			delete(k.agents, key)
		}
	}
}

// kill makes a node's kubelet stop running agents (a node gone for good);
// its running agents stop without a chance to report.
func (k *kubelet) kill(node string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dead[node] = true
}

// revive makes a node's kubelet run Pods again (a node registered again
// under its name).
func (k *kubelet) revive(node string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.dead, node)
}

func (k *kubelet) sync(ctx context.Context, ds *appsv1.DaemonSet, deleted bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	exp := argAfter(ds.Spec.Template.Spec.Containers[0].Args, "--experiment")
	want := map[string]bool{}
	if !deleted && ds.DeletionTimestamp.IsZero() {
		if a := ds.Spec.Template.Spec.Affinity; a != nil && a.NodeAffinity != nil {
			for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				for _, f := range term.MatchFields {
					for _, n := range f.Values {
						want[n] = true
					}
				}
			}
		}
	}
	prefix := string(ds.UID) + "/"
	for key, cancel := range k.agents {
		if strings.HasPrefix(key, prefix) && !want[strings.TrimPrefix(key, prefix)] {
			cancel() // SIGTERM
			delete(k.agents, key)
		}
	}
	for node := range want {
		key := prefix + node
		if k.agents[key] != nil || k.dead[node] {
			continue
		}
		a, err := agent.New(restCfg, scheme, agent.Options{
			Experiment: exp, Node: node, Runner: k.runner(exp, node),
			ProgressInterval: 50 * time.Millisecond, FinalWriteTimeout: 10 * time.Second,
			Log: log.FromContext(ctx).WithName("agent").WithValues("node", node),
		})
		if err != nil {
			k.h.t.Errorf("creating agent for %s: %v", node, err)
			continue
		}
		actx, cancel := context.WithCancel(ctx)
		k.agents[key] = cancel
		k.starts.Add(1)
		k.h.t.Logf("kubelet: starting agent on %s for DaemonSet %s uid %s generation %s", node, ds.Name, ds.UID, ds.Labels[names.GenerationLabel])
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			if err := a.Run(actx); err != nil && actx.Err() == nil {
				k.h.t.Errorf("agent on %s: %v", node, err)
			}
		}()
	}
}

// runRestorePod plays a node's kubelet for a restore-only Pod the controller
// pinned to it: the real agent loop in restore-only mode, with the test's
// runner for the node, until it succeeds (a Pod restarted on failure).
func (k *kubelet) runRestorePod(ctx context.Context, pod *corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	args := pod.Spec.Containers[0].Args
	if !slices.Contains(args, "--restore-only") || k.dead[pod.Spec.NodeName] {
		return
	}
	exp, node := argAfter(args, "--experiment"), pod.Spec.NodeName
	if k.restorePods == nil {
		k.restorePods = map[string]int{}
	}
	k.restorePods[node]++
	k.h.t.Logf("kubelet: running restore-only Pod %s on %s", pod.Name, node)
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		for ctx.Err() == nil {
			a, err := agent.New(restCfg, scheme, agent.Options{
				Experiment: exp, Node: node, Runner: k.restoreRunner(exp, node), RestoreOnly: true,
				FinalWriteTimeout: 10 * time.Second,
				Log:               log.FromContext(ctx).WithName("restore").WithValues("node", node),
			})
			if err != nil {
				k.h.t.Errorf("creating restore-only agent for %s: %v", node, err)
				return
			}
			if err := a.Run(ctx); err == nil {
				return
			}
			time.Sleep(time.Second)
		}
	}()
}

func (k *kubelet) restorePodRuns(node string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.restorePods[node]
}

func argAfter(args []string, flag string) string {
	for i := range args {
		if args[i] == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func leaseFor(h *harness, node, holder string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: names.Lease(node),
			Labels:      map[string]string{names.ManagedByLabel: names.ManagedByValue},
			Annotations: map[string]string{v1alpha1.NodeLabel: node}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)},
	}
}
