package experiment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/controllers"
)

// largestStatusSpec is the Simulate experiment whose status the API lets
// grow largest: 8 node shapes, 8 variants × 250 sweep points (the 2000
// grid points × variants allowed) per shape, and 16 columns per point (8
// constraints and 8 objectives), so 16000 curve points of 16 values, low
// and high each. The size of the status depends on those counts, not on
// the work simulated; its workload is the cheapest to simulate (one hog,
// one periodic task; the sweep over baseSlice adds no task), so that the
// 16000 simulator jobs run to their end in the test's time.
// largestSimulateSpec (the chaos suite) is the one the simulator takes
// longest over.
func (h *harness) largestStatusSpec() v1alpha1.SchedExperimentSpec {
	spec := v1alpha1.SchedExperimentSpec{
		Mode:     v1alpha1.ModeSimulate,
		Duration: metav1.Duration{Duration: time.Hour},
		Warmup:   &metav1.Duration{Duration: 10 * time.Millisecond},
		Workload: v1alpha1.Workload{Groups: []v1alpha1.Group{
			{Name: "batch", Replicas: 1, Tasks: ptr.To[int32](1), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}},
			{Name: "web", Replicas: 1, Tasks: ptr.To[int32](1), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternPeriodic,
				Run: &metav1.Duration{Duration: 500 * time.Microsecond}, Period: &metav1.Duration{Duration: 5 * time.Millisecond}}},
		}},
		Sweep: &v1alpha1.Sweep{
			Parameters: []v1alpha1.SweepParameter{{Target: v1alpha1.SweepBaseSlice, Range: &v1alpha1.SweepRange{From: 100, To: 100 + 249*400, Step: 400}}},
			Answer:     v1alpha1.SweepLargest,
		},
		Simulation: &v1alpha1.Simulation{Seed: 1},
	}
	metrics := []v1alpha1.MetricName{"wakeupLatencyUs.p50", "wakeupLatencyUs.p90", "wakeupLatencyUs.p99", "wakeupLatencyUs.max",
		"cpu", "share", "ctxSwitchesPerSec.voluntary", "ctxSwitchesPerSec.involuntary"}
	for _, m := range metrics {
		spec.Constraints = append(spec.Constraints, v1alpha1.Constraint{Metric: m, Group: "web", Max: ptr.To(1e12)})
		spec.Objectives = append(spec.Objectives, v1alpha1.Objective{Metric: m, Group: "batch", Goal: v1alpha1.Minimize})
	}
	for i := 0; i < 8; i++ {
		spec.Variants = append(spec.Variants, v1alpha1.Variant{Name: fmt.Sprintf("v%d", i),
			Knobs: v1alpha1.Knobs{MigrationCost: &metav1.Duration{Duration: time.Duration(i+1) * 100 * time.Microsecond}}})
		// EEVDF shapes: baseSlice is an EEVDF knob (a CFS shape's points
		// would be "unsupported", with no values).
		spec.Simulation.Nodes = append(spec.Simulation.Nodes, v1alpha1.NodeShape{CPUs: int32(1 + i), Scheduler: v1alpha1.SchedulerEEVDF})
	}
	return spec
}

// TestLargestStatusWithinBound runs the experiment with the largest status
// the API admits to its end against the API server: its sweep as an Indexed
// Job of shard pods (played here), merged by the controller. The stored
// status is within v1alpha1.MaxStatusBytes, says what it leaves out, and
// names the ConfigMaps (owned by the experiment) that hold the whole of
// its results and sweep: every curve point is there. A new generation
// whose status fits deletes them.
func TestLargestStatusWithinBound(t *testing.T) {
	jr := &jobRunner{}
	h := newHarness(t, harnessOptions{Jobs: jr, Quiet: true, Config: func(c *controllers.Config) {
		c.SweepJobMinJobs = 0 // the manager's default threshold
		c.SweepJobArgs = []string{"--duration", "50ms"}
	}})
	spec := h.largestStatusSpec()
	name := h.createExperiment("exp", spec)
	start := time.Now()
	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSimulated, 20*time.Minute)
	took := time.Since(start)

	// The stored object, as the API server returns it.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("SchedExperiment"))
	if err := k8s.Get(h.ctx, client.ObjectKey{Name: name}, u); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(u.Object["status"])
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := json.Marshal(u.Object)
	if len(raw) > v1alpha1.MaxStatusBytes {
		t.Errorf("the stored status is %d bytes, above %d", len(raw), v1alpha1.MaxStatusBytes)
	}
	if e.Status.Omitted == "" {
		t.Errorf("status.omitted is empty: the status was not cut, so the case is not the largest")
	}
	ref := e.Status.FullResults
	if ref == nil {
		t.Fatalf("no status.fullResults; omitted: %q", e.Status.Omitted)
	}
	results, sweep, err := controllers.ReadFullResults(h.ctx, k8s, ref)
	if err != nil {
		t.Fatal(err)
	}
	points, kept := 0, 0
	for i, sh := range sweep.Shapes {
		points += len(sh.Points)
		kept += len(e.Status.Sweep.Shapes[i].Points)
		if len(sh.Points) != 250 {
			t.Errorf("full results: shape %s variant %s has %d points, want 250", sh.Shape, sh.Variant, len(sh.Points))
		}
		if len(sh.Points) > 0 && len(sh.Points[0].Values) != 16 {
			t.Errorf("full results: %d values per point, want 16", len(sh.Points[0].Values))
		}
	}
	if len(sweep.Shapes) != 64 || points != 16000 {
		t.Errorf("full results: %d shape × variant curves, %d points; want 64 and 16000", len(sweep.Shapes), points)
	}
	if len(results) < len(e.Status.Results) {
		t.Errorf("full results: %d rows, the status has %d", len(results), len(e.Status.Results))
	}
	for _, cmName := range ref.ConfigMaps {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(h.ctx, client.ObjectKey{Namespace: ref.Namespace, Name: cmName}, cm); err != nil {
			t.Fatal(err)
		}
		if !metav1.IsControlledBy(cm, e) {
			t.Errorf("ConfigMap %s is not owned by the experiment: %+v", cmName, cm.OwnerReferences)
		}
	}
	t.Logf("largest status: %d simulator jobs, completed in %s | stored status %d bytes (object %d), %d of %d curve points and %d of %d rows kept | full results %d bytes gzipped in %d ConfigMaps | omitted: %s",
		points, took.Round(time.Second), len(raw), len(whole), kept, points, len(e.Status.Results), len(results), ref.Bytes, len(ref.ConfigMaps), e.Status.Omitted)

	// A new generation that fits: the ConfigMaps go, the reference too.
	small := h.sweepJobSpec()
	small.Variants = small.Variants[:1]
	cur := h.get(name)
	cur.Spec = small
	if err := k8s.Update(h.ctx, cur); err != nil {
		t.Fatal(err)
	}
	e = h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSimulated, 2*time.Minute)
	if e.Status.FullResults != nil || e.Status.Omitted != "" {
		t.Errorf("a status that fits still has fullResults %+v, omitted %q", e.Status.FullResults, e.Status.Omitted)
	}
	h.eventually(30*time.Second, "the full-results ConfigMaps deleted", func() (bool, string) {
		var cms corev1.ConfigMapList
		if err := k8s.List(context.Background(), &cms, client.InNamespace(h.ns), client.MatchingLabels{names.ResultsOfLabel: name}); err != nil {
			return false, err.Error()
		}
		for _, n := range ref.ConfigMaps {
			err := k8s.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: n}, &corev1.ConfigMap{})
			if !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("%s: %v", n, err)
			}
		}
		return len(cms.Items) == 0, fmt.Sprintf("%d left", len(cms.Items))
	})
}
