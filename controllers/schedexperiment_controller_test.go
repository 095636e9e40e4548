package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/controllers/names"
)

type stubAnalyzer struct {
	err   error
	calls int
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

func (a *stubAnalyzer) Analyze(_ context.Context, in AnalyzeInput) (*Analysis, error) {
	spec, shapes := in.Spec, in.Shapes
	a.calls++
	if a.err != nil {
		return nil, a.err
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
	s := NewScheme()
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
	_, err := f.reconcile(t, "x")
	if err == nil || err.Error() != "simulate: predicting: simulator exploded" {
		t.Fatalf("error %v", err)
	}
	if meta.FindStatusCondition(f.get(t, "x").Status.Conditions, v1alpha1.ConditionCompleted) != nil {
		t.Errorf("Completed set although the prediction failed")
	}
	f.an.err = nil
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	got := f.get(t, "x")
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionCompleted); c == nil || c.Reason != v1alpha1.ReasonSimulated {
		t.Errorf("Completed %+v", c)
	}
	if len(got.Status.Results) != 2 || got.Status.Results[0].Shape != "4cpu-EEVDF" || got.Status.ObservedGeneration != 1 {
		t.Errorf("results %+v observed %d", got.Status.Results, got.Status.ObservedGeneration)
	}
	if f.calls["create Lease"]+f.calls["create DaemonSet"]+f.calls["create NodeRun"] != 0 {
		t.Errorf("Simulate created children: %v", f.calls)
	}
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
	if got := names.NodeRun("exp", "node-1"); got != "exp-node-1" {
		t.Errorf("short name changed: %q", got)
	}
	exp, uid, ok := names.SplitLeaseHolder(names.LeaseHolder("exp", "1234"))
	if !ok || exp != "exp" || uid != "1234" {
		t.Errorf("split %q %q %v", exp, uid, ok)
	}
}

func TestNodeRunNameTakenByAnotherExperiment(t *testing.T) {
	// Experiment "x-n" on node "1" and experiment "x" on node "n-1" both
	// name their NodeRun "x-n-1".
	other := &v1alpha1.NodeRun{ObjectMeta: metav1.ObjectMeta{Name: "x-n-1"},
		Spec: v1alpha1.NodeRunSpec{ExperimentName: "x-n", ExperimentGeneration: 1, NodeName: "1"}}
	f := newFixture(t, interceptor.Funcs{}, testExperiment("x", true), readyNode("n-1"), other)
	if _, err := f.reconcile(t, "x"); err != nil {
		t.Fatal(err)
	}
	got := f.get(t, "x").Status.Nodes
	if len(got) != 1 || got[0].Message != "the NodeRun name x-n-1 is taken by experiment x-n" {
		t.Errorf("nodes %+v, want the taken name explained", got)
	}
}
