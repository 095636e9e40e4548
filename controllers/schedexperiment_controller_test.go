package controllers

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/schedlab/schedlab/api"
	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
)

type stubAnalyzer struct {
	mu    sync.Mutex
	err   error
	calls int
	// block, when set, holds every Analyze until it is closed or the
	// context ends; cancelled counts the contexts that ended first.
	block     chan struct{}
	cancelled int
}

func (a *stubAnalyzer) callCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

func (a *stubAnalyzer) ShapeFromCapabilities(c *v1alpha1.NodeCapabilities) v1alpha1.NodeShape {
	sh := a.ShapeForKernel(c.CPUs, c.KernelVersion)
	sh.HZ, sh.Preempt = c.HZ, c.Preempt
	return sh
}

func (a *stubAnalyzer) ShapeForKernel(cpus int32, kernel string) v1alpha1.NodeShape {
	fam := v1alpha1.SchedulerEEVDF
	if strings.HasPrefix(kernel, "5.") {
		fam = v1alpha1.SchedulerCFS
	}
	return v1alpha1.NodeShape{CPUs: cpus, Scheduler: fam}
}

func (a *stubAnalyzer) Analyze(ctx context.Context, in AnalyzeInput) (*Analysis, error) {
	spec, shapes := in.Spec, in.Shapes
	a.mu.Lock()
	a.calls++
	block, err := a.block, a.err
	a.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			a.mu.Lock()
			a.cancelled++
			a.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	out := &Analysis{BestVariant: v1alpha1.NoSignificantDifference}
	for _, sh := range shapes {
		for _, v := range spec.Variants {
			out.Results = append(out.Results, v1alpha1.GroupResult{Variant: v.Name, Group: "g", Shape: shapeName(sh), Predicted: &v1alpha1.Metrics{CPU: 1}})
		}
	}
	return out, nil
}

func readyNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "p"}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			NodeInfo:   corev1.NodeSystemInfo{KernelVersion: "6.8.0"},
		},
	}
}

func testExperiment(name string, finalizer bool) *v1alpha1.SchedExperiment {
	e := &v1alpha1.SchedExperiment{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: v1alpha1.SchedExperimentSpec{
			Mode:         v1alpha1.ModeMeasure,
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "p"}},
			Duration:     metav1.Duration{Duration: time.Second},
			Warmup:       &metav1.Duration{Duration: 200 * time.Millisecond},
			Repetitions:  1,
			Variants:     []v1alpha1.Variant{{Name: "a"}, {Name: "b"}},
			Workload:     v1alpha1.Workload{Groups: []v1alpha1.Group{{Name: "g", Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}}}},
		},
	}
	if finalizer {
		e.Finalizers = []string{v1alpha1.Finalizer}
	}
	return e
}

type fixture struct {
	r        *SchedExperimentReconciler
	c        client.Client
	an       *stubAnalyzer
	calls    map[string]int // "create Lease", "patch status", …
	recorder *events.FakeRecorder
}

func newFixture(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) *fixture {
	t.Helper()
	f := &fixture{an: &stubAnalyzer{}, calls: map[string]int{}, recorder: events.NewFakeRecorder(100)}
	s := api.NewScheme()
	base := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.SchedExperiment{}, &v1alpha1.NodeRun{}).
		WithIndex(&v1alpha1.NodeRun{}, indexNodeRunExperiment, func(o client.Object) []string {
			return []string{o.(*v1alpha1.NodeRun).Spec.ExperimentName}
		}).
		WithIndex(&coordinationv1.Lease{}, indexLeaseHolder, func(o client.Object) []string {
			l := o.(*coordinationv1.Lease)
			if l.Spec.HolderIdentity == nil {
				return nil
			}
			exp, _, _ := names.SplitLeaseHolder(*l.Spec.HolderIdentity)
			return []string{exp}
		}).Build()
	counting := interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			f.calls["create "+kind(c, obj)]++
			if funcs.Create != nil {
				return funcs.Create(ctx, c, obj, opts...)
			}
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			f.calls["patch "+kind(c, obj)]++
			return c.Patch(ctx, obj, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			f.calls["patch status"]++
			if funcs.SubResourcePatch != nil {
				return funcs.SubResourcePatch(ctx, c, sub, obj, p, opts...)
			}
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	}
	f.c = interceptor.NewClient(base, counting)
	f.r = &SchedExperimentReconciler{
		Client:   f.c,
		Recorder: f.recorder,
		Clock:    clocktesting.NewFakePassiveClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)),
		Analyzer: f.an,
		Config:   Config{Namespace: "schedlab-system"}.withDefaults(),
	}
	return f
}

func kind(c client.Client, obj client.Object) string {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return "?"
	}
	return gvk.Kind
}

func (f *fixture) reconcile(t *testing.T, name string) (reconcile.Result, error) {
	t.Helper()
	return f.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
}

func (f *fixture) get(t *testing.T, name string) *v1alpha1.SchedExperiment {
	t.Helper()
	e := &v1alpha1.SchedExperiment{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: name}, e); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestFinalizerBeforeAnythingTouchesANode(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, testExperiment("x", false), readyNode("n1"))
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	if got := f.get(t, "x").Finalizers; !cmp.Equal(got, []string{v1alpha1.Finalizer}) {
		t.Errorf("finalizers %v", got)
	}
	if f.calls["create Lease"]+f.calls["create NodeRun"]+f.calls["create DaemonSet"] != 0 {
		t.Errorf("created children before the finalizer was stored: %v", f.calls)
	}
	// The next reconcile runs the experiment.
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	if f.calls["create Lease"] != 1 || f.calls["create NodeRun"] != 1 || f.calls["create DaemonSet"] != 1 {
		t.Errorf("calls %v, want one Lease, NodeRun and DaemonSet", f.calls)
	}
	if f.calls["patch status"] != 1 {
		t.Errorf("%d status writes in one reconcile, want 1", f.calls["patch status"])
	}
}

func TestNotFoundIsNotAnError(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{})
	if res, err := f.reconcile(t, "gone"); err != nil || res != (reconcile.Result{}) {
		t.Errorf("got %v, %v", res, err)
	}
}

func TestLeaseErrorIsWrappedAndGenerationNotObserved(t *testing.T) {
	boom := errors.New("etcd on fire")
	f := newFixture(t, interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*coordinationv1.Lease); ok {
			return boom
		}
		return c.Create(ctx, obj, opts...)
	}}, testExperiment("x", true), readyNode("n1"))
	_, err := f.reconcile(t, "x")
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "lock nodes: creating Lease schedlab-node-n1") {
		t.Fatalf("error %v, want the Lease error wrapped with its phase", err)
	}
	e := f.get(t, "x")
	if e.Status.ObservedGeneration != 0 {
		t.Errorf("observedGeneration %d stamped on a failed reconcile", e.Status.ObservedGeneration)
	}
	if len(e.Status.Nodes) != 1 {
		t.Errorf("status.nodes %v: the observed selection is still written", e.Status.Nodes)
	}
	if f.calls["create NodeRun"] != 0 {
		t.Errorf("NodeRuns created without locks")
	}
}

func TestStatusConflictIsLeftToTheWatch(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
		return apierrors.NewConflict(schema.GroupResource{Group: "schedlab.io", Resource: "schedexperiments"}, "x", errors.New("changed"))
	}}, testExperiment("x", true), readyNode("n1"))
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Errorf("conflict returned as error: %v", err)
	}
}

func TestAnalyzerErrorInSimulate(t *testing.T) {
	e := testExperiment("x", true)
	e.Spec.Mode = v1alpha1.ModeSimulate
	f := newFixture(t, interceptor.Funcs{}, e, readyNode("n1"))
	f.an.err = errors.New("simulator exploded")
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatalf("error %v: a failed simulation is the experiment's failure, not the reconcile's", err)
	}
	got := f.get(t, "x")
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailed); c == nil || c.Reason != "SimulationFailed" || c.Message != "predicting: simulator exploded" {
		t.Errorf("Failed %+v, want SimulationFailed with the error", c)
	}
	if meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionCompleted) {
		t.Errorf("Completed although the prediction failed")
	}
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	if n := f.an.callCount(); n != 1 {
		t.Errorf("the analyzer ran %d times; a failed simulation must not be recomputed", n)
	}
	if f.calls["create Lease"]+f.calls["create DaemonSet"]+f.calls["create NodeRun"] != 0 {
		t.Errorf("Simulate created children: %v", f.calls)
	}
}

// startPool runs a simulation pool for the fixture's reconciler until the
// test ends.
func (f *fixture) startPool(t *testing.T) *SimulationPool {
	t.Helper()
	p := NewSimulationPool(f.an, 1, time.Minute)
	f.r.Simulations = p
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

// waitJob waits until the pool says a job of name has finished.
func waitJob(t *testing.T, p *SimulationPool, name string) {
	t.Helper()
	select {
	case ev := <-p.Events():
		if ev.Object.GetName() != name {
			t.Fatalf("job of %q finished, want %q", ev.Object.GetName(), name)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the job of %s did not finish", name)
	}
}

// A simulation runs in the pool, not in Reconcile: Reconcile returns at
// once with the experiment Simulating, and the result arrives later.
func TestSimulationRunsOffTheReconcileLoop(t *testing.T) {
	e := testExperiment("x", true)
	e.Spec.Mode = v1alpha1.ModeSimulate
	f := newFixture(t, interceptor.Funcs{}, e, readyNode("n1"))
	f.an.block = make(chan struct{})
	p := f.startPool(t)
	returned := make(chan error, 1)
	go func() { _, err := f.reconcile(t, "x"); returned <- err }()
	select {
	case err := <-returned:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Reconcile waited for the simulation")
	}
	if c := meta.FindStatusCondition(f.get(t, "x").Status.Conditions, v1alpha1.ConditionRunning); c == nil || c.Reason != "Simulating" {
		t.Errorf("Running %+v, want Simulating", c)
	}
	close(f.an.block)
	waitJob(t, p, "x")
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	got := f.get(t, "x")
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionCompleted); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Completed %+v", c)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionRunning); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Running %+v, want False once simulated", c)
	}
	if len(got.Status.Results) != 2 {
		t.Errorf("results %+v", got.Status.Results)
	}
}

// A status write the API server refuses (as it refused a 2.11 MB status)
// emits an Event, backs off through the workqueue, and does not compute the
// simulation again.
func TestFailedStatusWriteIsNotRecomputed(t *testing.T) {
	e := testExperiment("x", true)
	e.Spec.Mode = v1alpha1.ModeSimulate
	refuse := false
	f := newFixture(t, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if refuse {
				return apierrors.NewRequestEntityTooLargeError("limit is 3145728")
			}
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	}, e, readyNode("n1"))
	p := f.startPool(t)
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	waitJob(t, p, "x")
	refuse = true
	for i := 0; i < 3; i++ {
		if _, err := f.reconcile(t, "x"); err == nil {
			t.Fatal("a refused status write was not returned: the workqueue would not back off")
		}
	}
	if n := f.an.callCount(); n != 1 {
		t.Errorf("the analyzer ran %d times; a refused status write must not recompute", n)
	}
	found := false
	for len(f.recorder.Events) > 0 {
		if ev := <-f.recorder.Events; strings.Contains(ev, "StatusWriteFailed") {
			found = true
		}
	}
	if !found {
		t.Error("no StatusWriteFailed event")
	}
	refuse = false
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(f.get(t, "x").Status.Conditions, v1alpha1.ConditionCompleted); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Completed %+v once the write went through", c)
	}
	if n := f.an.callCount(); n != 1 {
		t.Errorf("the analyzer ran %d times", n)
	}
}

// A new generation cancels the simulation of the old one.
func TestSpecChangeCancelsTheSimulation(t *testing.T) {
	e := testExperiment("x", true)
	e.Spec.Mode = v1alpha1.ModeSimulate
	f := newFixture(t, interceptor.Funcs{}, e, readyNode("n1"))
	f.an.block = make(chan struct{})
	defer close(f.an.block)
	p := f.startPool(t)
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.an.callCount() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cur := f.get(t, "x")
	cur.Generation = 2
	cur.Spec.Variants = append(cur.Spec.Variants, v1alpha1.Variant{Name: "c"})
	if err := f.c.Update(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	for time.Now().Before(deadline) {
		f.an.mu.Lock()
		c := f.an.cancelled
		f.an.mu.Unlock()
		if c == 1 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("the simulation of generation 1 was not cancelled (pending %d)", p.Pending())
}

func TestWaitingNamesTheHolder(t *testing.T) {
	holder := testExperiment("holder", true)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "schedlab-system", Name: names.Lease("n1")},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(names.LeaseHolder("holder", "uid-holder"))}}
	f := newFixture(t, interceptor.Funcs{}, testExperiment("x", true), holder, lease, readyNode("n1"), readyNode("n2"))
	res, err := f.reconcile(t, "x")
	if err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(f.get(t, "x").Status.Conditions, v1alpha1.ConditionNodesLocked)
	if c == nil || c.Reason != v1alpha1.ReasonWaitingForNodes || c.Message != "waiting for 1 of 2 nodes: node n1 is held by experiment holder" {
		t.Errorf("NodesLocked %+v", c)
	}
	if res.RequeueAfter != f.r.Config.WaitRecheck {
		t.Errorf("requeueAfter %v, want the wait recheck %v", res.RequeueAfter, f.r.Config.WaitRecheck)
	}
	if f.calls["create Lease"] != 0 {
		t.Errorf("took n2 while n1 is held: all or nothing")
	}
}

func TestUsableNodes(t *testing.T) {
	r := &SchedExperimentReconciler{Config: Config{AgentTolerations: []corev1.Toleration{{Key: "ok", Operator: corev1.TolerationOpExists}}}}
	for _, tc := range []struct {
		name string
		edit func(*corev1.Node)
		want bool
	}{
		{"ready", func(*corev1.Node) {}, true},
		{"not ready", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, false},
		{"no ready condition", func(n *corev1.Node) { n.Status.Conditions = nil }, false},
		{"cordoned", func(n *corev1.Node) { n.Spec.Unschedulable = true }, false},
		{"tolerated taint", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "ok", Effect: corev1.TaintEffectNoSchedule}}
		}, true},
		{"untolerated taint", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "no", Effect: corev1.TaintEffectNoExecute}} }, false},
		{"prefer-no-schedule", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "no", Effect: corev1.TaintEffectPreferNoSchedule}}
		}, true},
	} {
		n := readyNode("n")
		tc.edit(n)
		if got, why := r.usable(n); got != tc.want {
			t.Errorf("%s: usable %v (%s), want %v", tc.name, got, why, tc.want)
		}
	}
}

func TestDeletionWaitsForRestoreThenReleases(t *testing.T) {
	e := testExperiment("x", true)
	now := metav1.NewTime(time.Date(2026, 11, 30, 11, 59, 0, 0, time.UTC))
	e.DeletionTimestamp = &now
	started := metav1.NewTime(now.Add(-time.Minute))
	nr := &v1alpha1.NodeRun{ObjectMeta: metav1.ObjectMeta{Name: names.NodeRun("x", "n1"),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "schedlab.io/v1alpha1", Kind: "SchedExperiment", Name: "x", UID: e.UID, Controller: ptr.To(true)}}},
		Spec:   v1alpha1.NodeRunSpec{ExperimentName: "x", ExperimentGeneration: 1, NodeName: "n1"},
		Status: v1alpha1.NodeRunStatus{Phase: v1alpha1.NodeRunRunning, ExperimentGeneration: 1, StartTime: &started}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "schedlab-system", Name: names.Lease("n1")},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(names.LeaseHolder("x", "uid-x"))}}
	f := newFixture(t, interceptor.Funcs{}, e, nr, lease)
	res, err := f.reconcile(t, "x")
	if err != nil {
		t.Fatal(err)
	}
	// Deadline: deletion + 5m restore timeout; now is one minute after deletion.
	if res.RequeueAfter != 4*time.Minute {
		t.Errorf("requeueAfter %v, want 4m (the rest of the restore timeout)", res.RequeueAfter)
	}
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(lease), &coordinationv1.Lease{}); err != nil {
		t.Errorf("lease released before the restore: %v", err)
	}
	// The agent reports its restore.
	nr.Status.Restored, nr.Status.Phase = true, v1alpha1.NodeRunAborted
	if err := f.c.Status().Update(context.Background(), nr); err != nil {
		t.Fatal(err)
	}
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(lease), &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Errorf("lease still there: %v", err)
	}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: "x"}, &v1alpha1.SchedExperiment{}); !apierrors.IsNotFound(err) {
		t.Errorf("experiment still there after its finalizer should have gone: %v", err)
	}
}

func TestNames(t *testing.T) {
	long := strings.Repeat("a", 300)
	for _, tc := range []struct {
		got string
		max int
	}{
		{names.NodeRun(long, "node"), 253}, {names.DaemonSet(long), 57}, {names.LabelValue(long), 63}, {names.Lease(long), 253},
	} {
		if len(tc.got) > tc.max {
			t.Errorf("%q longer than %d", tc.got, tc.max)
		}
	}
	if names.NodeRun(long, "n1") == names.NodeRun(long, "n2") {
		t.Errorf("shortened names collide")
	}
	if got := names.NodeRun("exp", "node-1"); !strings.HasPrefix(got, "exp-node-1-") {
		t.Errorf("short name %q does not start with the experiment and node", got)
	}
	exp, uid, ok := names.SplitLeaseHolder(names.LeaseHolder("exp", "1234"))
	if !ok || exp != "exp" || uid != "1234" {
		t.Errorf("split %q %q %v", exp, uid, ok)
	}
}

func TestJoinedNamesGetDistinctNodeRuns(t *testing.T) {
	// Experiment "x-n" on node "1" and experiment "x" on node "n-1" join to
	// the same "x-n-1"; each must still get its own NodeRun, so that neither
	// holds its node's lock for nothing.
	other := &v1alpha1.NodeRun{ObjectMeta: metav1.ObjectMeta{Name: names.NodeRun("x-n", "1")},
		Spec: v1alpha1.NodeRunSpec{ExperimentName: "x-n", ExperimentGeneration: 1, NodeName: "1"}}
	f := newFixture(t, interceptor.Funcs{}, testExperiment("x", true), readyNode("n-1"), other)
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	if f.calls["create NodeRun"] != 1 {
		t.Fatalf("calls %v, want one NodeRun created", f.calls)
	}
	got := f.get(t, "x").Status.Nodes
	if len(got) != 1 || strings.Contains(got[0].Message, "taken") {
		t.Errorf("nodes %+v, want node n-1 running without a name clash", got)
	}
	var nr v1alpha1.NodeRun
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: names.NodeRun("x", "n-1")}, &nr); err != nil || nr.Spec.ExperimentName != "x" {
		t.Errorf("NodeRun of x on n-1: %v %+v", err, nr.Spec)
	}
}

func TestAgentDaemonSetIsNotRolledOnUpgrade(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, testExperiment("x", true), readyNode("n1"))
	for i := 0; i < 2; i++ {
		if _, err := f.reconcile(t, "x"); err != nil {
			t.Fatal(err)
		}
	}
	var ds appsv1.DaemonSet
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: f.r.Config.Namespace, Name: names.DaemonSet("x")}, &ds); err != nil {
		t.Fatal(err)
	}
	if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType || ds.Spec.UpdateStrategy.RollingUpdate != nil {
		t.Errorf("update strategy %+v, want OnDelete: a new manager image must not restart running agents", ds.Spec.UpdateStrategy)
	}
}

func TestDeadlineCountsNoisyWindowReruns(t *testing.T) {
	r := &SchedExperimentReconciler{Config: Config{DeadlineMargin: time.Minute}}
	spec := &v1alpha1.SchedExperimentSpec{
		Duration: metav1.Duration{Duration: 50 * time.Second}, Warmup: &metav1.Duration{Duration: 10 * time.Second}, Repetitions: 2,
		Variants: []v1alpha1.Variant{{Name: "a"}, {Name: "b"}},
	}
	// 4 windows of 1m, each run up to WindowAttempts times on a busy node.
	worst := 4 * time.Minute * v1alpha1.WindowAttempts
	if got := r.budget(spec); got < worst+time.Minute {
		t.Errorf("budget %s, want at least %s: a node re-running noisy windows must not time out", got, worst+time.Minute)
	}
}

func TestNodesOutsideAllowedSelectorAreRefused(t *testing.T) {
	outside := readyNode("other")
	outside.Labels["tier"] = "prod"
	f := newFixture(t, interceptor.Funcs{}, testExperiment("x", true), readyNode("n1"), outside)
	sel, err := labels.Parse("tier!=prod")
	if err != nil {
		t.Fatal(err)
	}
	f.r.Config.AllowedNodeSelector = sel
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	if f.calls["create Lease"]+f.calls["create NodeRun"]+f.calls["create DaemonSet"] != 0 {
		t.Errorf("calls %v: nothing may touch a node", f.calls)
	}
	c := meta.FindStatusCondition(f.get(t, "x").Status.Conditions, v1alpha1.ConditionFailed)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "NodesNotAllowed" || !strings.Contains(c.Message, "outside the manager's allowedNodeSelector (tier!=prod): other") {
		t.Errorf("Failed condition %+v, want NodesNotAllowed naming node other", c)
	}
}

func TestSessionNiceBelowZeroOnlyWhereAllowed(t *testing.T) {
	exp := func() *v1alpha1.SchedExperiment {
		e := testExperiment("x", true)
		e.Spec.Workload.Groups[0].Session = "s"
		e.Spec.Workload.Groups[0].Nice = ptr.To[int32](-5)
		return e
	}
	f := newFixture(t, interceptor.Funcs{}, exp(), readyNode("n1"))
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(f.get(t, "x").Status.Conditions, v1alpha1.ConditionFailed)
	if c == nil || c.Reason != v1alpha1.ReasonInvalidSpec || !strings.Contains(c.Message, "spec.workload.groups[0].nice: Forbidden") {
		t.Errorf("Failed condition %+v, want the session's nice refused", c)
	}
	if f.calls["create Lease"] != 0 {
		t.Errorf("calls %v: a refused experiment locked a node", f.calls)
	}

	f = newFixture(t, interceptor.Funcs{}, exp(), readyNode("n1"))
	f.r.Config.AllowSessionNiceBelowZero = true
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(f.get(t, "x").Status.Conditions, v1alpha1.ConditionFailed); c != nil {
		t.Errorf("refused where the manager allows it: %+v", c)
	}
	if f.calls["create Lease"] != 1 {
		t.Errorf("calls %v, want the node locked", f.calls)
	}
}
