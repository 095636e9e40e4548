package experiment_test

import (
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/schedlab/schedlab/agent"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/controllers"
)

func runners(gate <-chan struct{}) func(exp, node string) agent.Runner {
	return func(_, node string) agent.Runner { return &scriptedRunner{node: node, cpus: 4, gate: gate} }
}

// TestLifecycle runs a Measure experiment end to end: node selection skips
// NotReady, cordoned and untolerated-tainted nodes and caps at maxNodes;
// the finalizer, Leases, NodeRuns and DaemonSet appear; the agents (the
// real agent loop over a scripted node) report; the results hold measured
// next to predicted for every variant × group; the nodes are unlocked and
// the DaemonSet removed.
func TestLifecycle(t *testing.T) {
	h := newHarness(t, harnessOptions{Runner: runners(nil), Config: func(c *controllers.Config) {
		c.AgentTolerations = []corev1.Toleration{{Key: "schedlab.io/bench", Operator: corev1.TolerationOpExists}}
	}})
	p := h.prefix
	h.createNodes(
		nodeSpec{name: p + "-a"},
		nodeSpec{name: p + "-b", taint: &corev1.Taint{Key: "schedlab.io/bench", Value: "x", Effect: corev1.TaintEffectNoSchedule}}, // tolerated
		nodeSpec{name: p + "-c", notReady: true},
		nodeSpec{name: p + "-d", cordoned: true},
		nodeSpec{name: p + "-e", taint: &corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}},
		nodeSpec{name: p + "-f"},
		nodeSpec{name: p + "-g"}, // beyond maxNodes
	)
	spec := h.experimentSpec()
	spec.MaxNodes = ptr.To[int32](3)
	name := h.createExperiment("exp", spec)

	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 60*time.Second)
	if !controllerutil.ContainsFinalizer(e, v1alpha1.Finalizer) {
		t.Errorf("finalizer missing on a live experiment")
	}
	var chosen []string
	for _, n := range e.Status.Nodes {
		chosen = append(chosen, n.Name)
		if n.Phase != v1alpha1.NodeRunCompleted || n.StepsDone != 4 || n.StepsTotal != 4 || n.Shape != "4cpu-EEVDF-k6.8.0" {
			t.Errorf("node progress %+v, want Completed 4/4 on 4cpu-EEVDF-k6.8.0", n)
		}
	}
	if want := []string{p + "-a", p + "-b", p + "-f"}; strings.Join(chosen, ",") != strings.Join(want, ",") {
		t.Errorf("chosen nodes %v, want %v", chosen, want)
	}
	if e.Status.NodeProgress != "3/3" || e.Status.ObservedGeneration != e.Generation || e.Status.ResultsGeneration != e.Generation {
		t.Errorf("nodeProgress %q observedGeneration %d resultsGeneration %d, want 3/3 and %d", e.Status.NodeProgress, e.Status.ObservedGeneration, e.Status.ResultsGeneration, e.Generation)
	}
	if e.Status.BestVariant != "no-autogroup" {
		t.Errorf("bestVariant %q (%s), want no-autogroup", e.Status.BestVariant, e.Status.BestVariantReason)
	}
	if e.Status.PredictionError == "" || !strings.HasSuffix(e.Status.PredictionError, "%") {
		t.Errorf("predictionError %q, want a percentage", e.Status.PredictionError)
	}
	if len(e.Status.Results) != 4 {
		t.Fatalf("%d result rows, want 4 (2 variants × 2 groups): %+v", len(e.Status.Results), e.Status.Results)
	}
	for _, r := range e.Status.Results {
		if r.Measured == nil || r.Predicted == nil || r.RelativeError == nil {
			t.Errorf("row %s/%s: measured %v predicted %v relativeError %v, want all three", r.Variant, r.Group, r.Measured != nil, r.Predicted != nil, r.RelativeError != nil)
			continue
		}
		if r.Measured.N != 6 {
			t.Errorf("row %s/%s: n = %d, want 6 (3 nodes × 2 repetitions)", r.Variant, r.Group, r.Measured.N)
		}
		if r.Group == "batch" {
			vi := 0
			if r.Variant == "no-autogroup" {
				vi = 1
			}
			var xs []float64
			for _, n := range chosen {
				for rep := 0; rep < 2; rep++ {
					xs = append(xs, scriptedMetrics(n, vi, rep, "batch").CPU)
				}
			}
			if m := mean(xs); math.Abs(r.Measured.CPU-m) > 1e-9 {
				t.Errorf("row %s/batch: measured cpu %v, want %v", r.Variant, r.Measured.CPU, m)
			}
		}
	}
	for _, c := range []struct{ typ, status string }{
		{v1alpha1.ConditionReady, "True"}, {v1alpha1.ConditionDegraded, "False"}, {v1alpha1.ConditionRunning, "False"}, {v1alpha1.ConditionNodesLocked, "False"},
	} {
		h.waitCondition(name, c.typ, metav1.ConditionStatus(c.status), "", 10*time.Second)
	}

	// The NodeRuns stay (they hold the raw windows), owned by the experiment.
	runs := h.nodeRuns(name)
	if len(runs) != 3 {
		t.Fatalf("%d NodeRuns, want 3", len(runs))
	}
	for _, nr := range runs {
		if !metav1.IsControlledBy(&nr, e) || nr.Spec.ExperimentGeneration != e.Generation || nr.Status.ExperimentGeneration != e.Generation || !nr.Status.Restored || len(nr.Status.Windows) != 4 {
			t.Errorf("NodeRun %s: controlled %v spec gen %d status gen %d restored %v windows %d", nr.Name, metav1.IsControlledBy(&nr, e),
				nr.Spec.ExperimentGeneration, nr.Status.ExperimentGeneration, nr.Status.Restored, len(nr.Status.Windows))
		}
	}
	// Locks released, DaemonSet gone.
	h.eventually(10*time.Second, "locks released and DaemonSet deleted", func() (bool, string) {
		_, dsThere := h.daemonSet(name)
		return len(h.leases()) == 0 && !dsThere, "leases or DaemonSet remain"
	})
	// Events: Created DaemonSet, NodeCompleted, Completed.
	h.eventually(10*time.Second, "events", func() (bool, string) {
		got := eventReasons(h, name)
		for _, want := range []string{"CreatedDaemonSet", "NodeCompleted", "Completed"} {
			if !got[want] {
				return false, "events so far: " + strings.Join(keys(got), ",")
			}
		}
		return true, ""
	})
}

// TestDaemonSetShape checks the agent DaemonSet the controller creates.
func TestDaemonSetShape(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	h := newHarness(t, harnessOptions{Runner: runners(gate), Config: func(c *controllers.Config) {
		c.AgentPriorityClass = "system-node-critical"
		c.AgentTolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		c.AgentImage = "example.com/schedlab:v1"
	}})
	h.createNodes(nodeSpec{name: h.prefix + "-a"}, nodeSpec{name: h.prefix + "-b"})
	name := h.createExperiment("exp", h.experimentSpec())
	var ok bool
	h.eventually(30*time.Second, "DaemonSet", func() (bool, string) { _, ok = h.daemonSet(name); return ok, "" })
	ds, _ := h.daemonSet(name)
	e := h.get(name)
	if !metav1.IsControlledBy(ds, e) {
		t.Errorf("DaemonSet not controlled by the experiment: %v", ds.OwnerReferences)
	}
	if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		t.Errorf("update strategy %q, want OnDelete: a manager upgrade must not restart running agents", ds.Spec.UpdateStrategy.Type)
	}
	ps := ds.Spec.Template.Spec
	if len(ps.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(ps.Containers))
	}
	c := ps.Containers[0]
	if c.Image != "example.com/schedlab:v1" || ps.PriorityClassName != "system-node-critical" || len(ps.Tolerations) != 1 || ps.ServiceAccountName != "schedlab-agent" {
		t.Errorf("image %q priority %q tolerations %v sa %q", c.Image, ps.PriorityClassName, ps.Tolerations, ps.ServiceAccountName)
	}
	if c.SecurityContext == nil || !ptr.Deref(c.SecurityContext.Privileged, false) || !ps.HostPID {
		t.Errorf("agent container must be privileged with the host PID namespace")
	}
	if got := strings.Join(c.Args, " "); got != "agent --experiment "+name+" --state-dir /var/lib/schedlab" {
		t.Errorf("args %q", got)
	}
	if c.Env[0].Name != "NODE_NAME" || c.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("env %v, want NODE_NAME from spec.nodeName", c.Env)
	}
	var vals []string
	for _, term := range ps.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		vals = append(vals, term.MatchFields[0].Values...)
	}
	sort.Strings(vals)
	if strings.Join(vals, ",") != h.prefix+"-a,"+h.prefix+"-b" {
		t.Errorf("node affinity %v", vals)
	}
	var hostPaths []string
	for _, v := range ps.Volumes {
		if v.HostPath != nil {
			hostPaths = append(hostPaths, v.HostPath.Path)
		}
	}
	if strings.Join(hostPaths, ",") != "/sys/fs/cgroup,/sys/kernel/debug,/var/lib/schedlab" {
		t.Errorf("hostPath volumes %v", hostPaths)
	}
	h.waitCondition(name, v1alpha1.ConditionRunning, metav1.ConditionTrue, v1alpha1.ReasonRunning, 30*time.Second)
}

func eventReasons(h *harness, name string) map[string]bool {
	var list eventsv1.EventList
	got := map[string]bool{}
	if err := k8s.List(h.ctx, &list); err != nil {
		return got
	}
	for _, ev := range list.Items {
		if ev.Regarding.Name == name {
			got[ev.Reason] = true
		}
	}
	return got
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
