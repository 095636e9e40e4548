package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/test/envtest"
)

// clusterForCLI starts a kube-apiserver and etcd with schedlab's CRDs and
// returns a client and a kubeconfig file for the command line.
func clusterForCLI(t *testing.T) (client.Client, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the local control plane (bin/k8s); not in -short")
	}
	env, err := envtest.StartEnv(envtest.Options{Scheme: api.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	user, err := env.Environment.AddUser(crenvtest.User{Name: "cli-user", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(file, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	// cli-runtime caches discovery under $HOME/.kube/cache.
	t.Setenv("HOME", t.TempDir())
	cliKubectl = filepath.Join(env.Environment.BinaryAssetsDirectory, "kubectl")
	return env.Client, file
}

// cliKubectl is the kubectl of the control plane clusterForCLI started.
var cliKubectl string

// sampleExperiment is config/samples/weights-100-200-400.yaml named name.
func sampleExperiment(t *testing.T, name string) *v1alpha1.SchedExperiment {
	t.Helper()
	root, err := envtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "config/samples/weights-100-200-400.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var exp v1alpha1.SchedExperiment
	if err := yaml.UnmarshalStrict(b, &exp); err != nil {
		t.Fatal(err)
	}
	exp.Name = name
	return &exp
}

// setStatus writes the status as the controller would.
func setStatus(t *testing.T, c client.Client, name string, edit func(*v1alpha1.SchedExperiment)) {
	t.Helper()
	ctx := context.Background()
	var exp v1alpha1.SchedExperiment
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &exp); err != nil {
		t.Fatal(err)
	}
	edit(&exp)
	if err := c.Status().Update(ctx, &exp); err != nil {
		t.Fatal(err)
	}
}

func condition(typ string, status metav1.ConditionStatus, reason, msg string, gen int64) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: metav1.Now()}
}

// running is the status of a Measure run on node vm at step done of 8.
func running(done int32) func(*v1alpha1.SchedExperiment) {
	return func(e *v1alpha1.SchedExperiment) {
		e.Status.ObservedGeneration = e.Generation
		meta.SetStatusCondition(&e.Status.Conditions, condition(v1alpha1.ConditionReady, metav1.ConditionFalse, "Running", "1 node running", e.Generation))
		meta.SetStatusCondition(&e.Status.Conditions, condition("Running", metav1.ConditionTrue, "Running", "", e.Generation))
		e.Status.Nodes = []v1alpha1.NodeProgress{{Name: "vm", Phase: v1alpha1.NodeRunRunning, Shape: "2cpu-EEVDF", StepsDone: done, StepsTotal: 8}}
		e.Status.NodeProgress = "0/1"
	}
}

func completed(e *v1alpha1.SchedExperiment) {
	e.Status.ObservedGeneration = e.Generation
	meta.SetStatusCondition(&e.Status.Conditions, condition(v1alpha1.ConditionReady, metav1.ConditionTrue, "Succeeded", "every node completed", e.Generation))
	meta.SetStatusCondition(&e.Status.Conditions, condition("Running", metav1.ConditionFalse, "Completed", "", e.Generation))
	meta.SetStatusCondition(&e.Status.Conditions, condition(v1alpha1.ConditionCompleted, metav1.ConditionTrue, "Succeeded", "", e.Generation))
	e.Status.Nodes = []v1alpha1.NodeProgress{{Name: "vm", Phase: v1alpha1.NodeRunCompleted, Shape: "2cpu-EEVDF", StepsDone: 8, StepsTotal: 8}}
	e.Status.NodeProgress = "1/1"
	e.Status.BestVariant = "stock"
}

// syncBuffer is a bytes.Buffer a command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startCLI runs the command line in the background; wait returns its result.
func startCLI(args ...string) (out *syncBuffer, wait func() cliResult) {
	var o, e syncBuffer
	done := make(chan int, 1)
	go func() { done <- execute(args, &o, &e) }()
	return &o, func() cliResult {
		select {
		case code := <-done:
			return cliResult{code, o.String(), e.String()}
		case <-time.After(time.Minute):
			return cliResult{-1, o.String(), e.String() + "\n(still running after a minute)"}
		}
	}
}

// waitFor waits until out contains want.
func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output lacks %q after 30 s:\n%s", want, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterCommands runs schedlab get, describe and watch against a real
// kube-apiserver, with statuses written as the controller writes them.
func TestClusterCommands(t *testing.T) {
	c, kc := clusterForCLI(t)
	ctx := context.Background()
	alpha := sampleExperiment(t, "alpha")
	alpha.Labels = map[string]string{"team": "perf"}
	alpha.Spec.Variants = append(alpha.Spec.Variants, v1alpha1.Variant{Name: "autogroup-off", Knobs: v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupDisabled}})
	for _, e := range []*v1alpha1.SchedExperiment{alpha, sampleExperiment(t, "beta")} {
		if err := c.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	setStatus(t, c, "alpha", running(3))
	setStatus(t, c, "beta", completed)

	t.Run("get", func(t *testing.T) {
		r := runCLI(t, "get", "--kubeconfig", kc)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.code != 0 || len(lines) != 3 {
			t.Fatalf("want a header and two rows: %s", r)
		}
		head := strings.Fields(lines[0])
		if strings.Join(head, " ") != "NAME STATUS MODE NODES BEST PRED-ERROR AGE" {
			t.Errorf("columns %v, want kubectl get sx's (STATUS second)", head)
		}
		for i, want := range [][]string{{"alpha", "Running", "0/1"}, {"beta", "Succeeded", "1/1", "stock"}} {
			f := strings.Fields(lines[i+1])
			if f[0] != want[0] || f[1] != want[1] || !strings.Contains(lines[i+1], want[2]) || len(want) > 3 && !strings.Contains(lines[i+1], want[3]) {
				t.Errorf("row %q, want %v", lines[i+1], want)
			}
		}
		if strings.Contains(r.stdout, "NODE ") {
			t.Errorf("node progress printed for a list:\n%s", r.stdout)
		}

		r = runCLI(t, "get", "alpha", "--kubeconfig", kc)
		if r.code != 0 || !strings.Contains(r.stdout, "alpha") || strings.Contains(r.stdout, "beta") {
			t.Fatalf("get alpha: %s", r)
		}
		t.Logf("schedlab get alpha:\n%s", r.stdout)
		var node string
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, "vm ") {
				node = strings.Join(strings.Fields(l), " ")
			}
		}
		if !strings.Contains(r.stdout, "NODE") || node != "vm Running 2cpu-EEVDF 3/8" {
			t.Errorf("get alpha: want the node's phase and steps, got node row %q:\n%s", node, r.stdout)
		}

		r = runCLI(t, "get", "--kubeconfig", kc, "--wide")
		if !strings.Contains(strings.SplitN(r.stdout, "\n", 2)[0], "FLEET-ANSWER") {
			t.Errorf("--wide: want the priority columns: %s", r)
		}

		r = runCLI(t, "get", "-l", "team=perf", "--kubeconfig", kc)
		if r.code != 0 || !strings.Contains(r.stdout, "alpha") || strings.Contains(r.stdout, "beta") {
			t.Errorf("-l team=perf: %s", r)
		}
		r = runCLI(t, "get", "-l", "team=none", "--kubeconfig", kc)
		if r.code != 0 || !strings.Contains(r.stdout, "No SchedExperiments found.") {
			t.Errorf("-l team=none: %s", r)
		}

		r = runCLI(t, "get", "alpha", "-o", "yaml", "--kubeconfig", kc)
		var got v1alpha1.SchedExperiment
		if err := yaml.UnmarshalStrict([]byte(r.stdout), &got); err != nil || r.code != 0 {
			t.Fatalf("-o yaml: %v: %s", err, r)
		}
		if got.Kind != "SchedExperiment" || got.Name != "alpha" || len(got.ManagedFields) != 0 || got.Status.Nodes[0].StepsDone != 3 {
			t.Errorf("-o yaml: kind %q name %q, %d managedFields, status %+v", got.Kind, got.Name, len(got.ManagedFields), got.Status.Nodes)
		}
		r = runCLI(t, "get", "-o", "json", "--kubeconfig", kc)
		var list struct {
			Kind  string
			Items []v1alpha1.SchedExperiment
		}
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || list.Kind != "List" || len(list.Items) != 2 {
			t.Errorf("-o json: want a List of 2: %v: %s", err, r)
		}

		r = runCLI(t, "get", "nosuch", "--kubeconfig", kc)
		if r.code != 2 || !strings.Contains(r.stderr, `"nosuch" not found`) {
			t.Errorf("get nosuch: want not found, exit 2: %s", r)
		}
		r = runCLI(t, "get", "alpha", "nosuch", "--kubeconfig", kc)
		if r.code != 2 || !strings.Contains(r.stdout, "alpha") || !strings.Contains(r.stderr, "nosuch") {
			t.Errorf("get alpha nosuch: want alpha printed, nosuch not found, exit 2: %s", r)
		}
		r = runCLI(t, "get", "alpha", "-l", "team=perf", "--kubeconfig", kc)
		if r.code != 2 {
			t.Errorf("NAME and -l: want a usage error: %s", r)
		}
	})

	t.Run("describe", func(t *testing.T) {
		ev := &eventsv1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: "alpha.1", Namespace: "default"},
			EventTime:           metav1.NewMicroTime(time.Now()),
			ReportingController: "schedlab.io/manager",
			ReportingInstance:   "manager-1",
			Action:              "Lock",
			Reason:              "NodesLocked",
			Note:                "locked node vm",
			Type:                "Normal",
			Regarding:           corev1.ObjectReference{APIVersion: "schedlab.io/v1alpha1", Kind: "SchedExperiment", Name: alpha.Name, UID: alpha.UID},
		}
		if err := c.Create(ctx, ev); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, "describe", "alpha", "--kubeconfig", kc)
		if r.code != 0 {
			t.Fatalf("describe: %s", r)
		}
		t.Logf("schedlab describe alpha:\n%s", r.stdout)
		norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
		out := norm(r.stdout)
		for _, want := range []string{
			"Name: alpha", "Labels: team=perf", "Status: Running: 1 node running",
			"Progress: Running; node vm: Running 3/8", "Mode: Measure", "Node selector: schedlab.io/pool=lab",
			"Windows: 8s per window after 1s of warm-up, 2 repetition(s)",
			"stock: (no knobs: the node as it is)", `autogroup-off: {"autogroup":"Disabled"}`,
			"w400: 1 × 1 task(s) Hog, cpuWeight 400",
			"Nodes: NODE PHASE SHAPE STEPS MESSAGE vm Running 2cpu-EEVDF 3/8",
			"Events: TYPE REASON AGE FROM MESSAGE Normal NodesLocked", "schedlab.io/manager locked node vm",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("describe lacks %q:\n%s", want, r.stdout)
			}
		}
		r = runCLI(t, "describe", "beta", "--kubeconfig", kc)
		if out := norm(r.stdout); r.code != 0 || !strings.Contains(out, "Best variant: stock") || !strings.Contains(out, "Events: <none>") {
			t.Errorf("describe beta: %s", r)
		}
		r = runCLI(t, "describe", "nosuch", "--kubeconfig", kc)
		if r.code != 2 || !strings.Contains(r.stderr, "not found") {
			t.Errorf("describe nosuch: %s", r)
		}
	})

	t.Run("watch", func(t *testing.T) {
		out, wait := startCLI("watch", "alpha", "--kubeconfig", kc)
		waitFor(t, out, "node vm: Running 3/8")
		setStatus(t, c, "alpha", running(4))
		waitFor(t, out, "node vm: Running 4/8")
		setStatus(t, c, "alpha", completed)
		r := wait()
		if r.code != 0 || !strings.Contains(r.stdout, "Completed,Ready; node vm: Completed 8/8") ||
			!strings.Contains(r.stdout, "alpha completed: best variant stock") {
			t.Errorf("watch to completion: %s", r)
		}
		t.Logf("schedlab watch alpha:\n%s", r.stdout)
		if n := strings.Count(r.stdout, "Running 3/8"); n != 1 {
			t.Errorf("the first line printed %d times:\n%s", n, r.stdout)
		}

		// Already complete: one line and exit 0 at once.
		r = runCLI(t, "watch", "beta", "--kubeconfig", kc)
		if r.code != 0 || strings.Count(r.stdout, "\n") != 2 {
			t.Errorf("watch a completed experiment: %s", r)
		}

		// A new generation: the old Completed does not end the watch.
		gamma := sampleExperiment(t, "gamma")
		if err := c.Create(ctx, gamma); err != nil {
			t.Fatal(err)
		}
		setStatus(t, c, "gamma", completed)
		if err := c.Get(ctx, client.ObjectKey{Name: "gamma"}, gamma); err != nil {
			t.Fatal(err)
		}
		gamma.Spec.Repetitions = 3
		if err := c.Update(ctx, gamma); err != nil {
			t.Fatal(err)
		}
		out, wait = startCLI("watch", "gamma", "--kubeconfig", kc)
		waitFor(t, out, "Completed 8/8")
		setStatus(t, c, "gamma", func(e *v1alpha1.SchedExperiment) {
			e.Status.ObservedGeneration = e.Generation
			meta.SetStatusCondition(&e.Status.Conditions, condition(v1alpha1.ConditionCompleted, metav1.ConditionFalse, "Running", "", e.Generation))
			meta.SetStatusCondition(&e.Status.Conditions, condition(v1alpha1.ConditionFailed, metav1.ConditionTrue, "NodesFailed", "node vm: agent crashed", e.Generation))
			e.Status.Nodes[0].Phase = v1alpha1.NodeRunFailed
			e.Status.Nodes[0].Message = "agent crashed"
		})
		r = wait()
		if r.code != 1 || !strings.Contains(r.stdout, "node vm: Failed 8/8 (agent crashed)") ||
			!strings.Contains(r.stderr, "experiment gamma failed: NodesFailed: node vm: agent crashed") {
			t.Errorf("watch to failure: want exit 1 with the reason: %s", r)
		}

		// Deleted while watched.
		delta := sampleExperiment(t, "delta")
		if err := c.Create(ctx, delta); err != nil {
			t.Fatal(err)
		}
		out, wait = startCLI("watch", "delta", "--kubeconfig", kc)
		waitFor(t, out, "waiting for the controller")
		if err := c.Delete(ctx, delta); err != nil {
			t.Fatal(err)
		}
		if r = wait(); r.code != 1 || !strings.Contains(r.stderr, "delta was deleted before it finished") {
			t.Errorf("watch a deleted experiment: %s", r)
		}

		// --timeout.
		r = runCLI(t, "watch", "gamma", "--kubeconfig", kc, "--timeout", "1s")
		if r.code != 1 {
			t.Errorf("watch a failed experiment: want exit 1 at once: %s", r)
		}
		setStatus(t, c, "gamma", func(e *v1alpha1.SchedExperiment) {
			meta.RemoveStatusCondition(&e.Status.Conditions, v1alpha1.ConditionFailed)
			running(1)(e)
		})
		start := time.Now()
		r = runCLI(t, "watch", "gamma", "--kubeconfig", kc, "--timeout", "2s")
		if r.code != 1 || !strings.Contains(r.stderr, "gamma has not finished after") || time.Since(start) > 20*time.Second {
			t.Errorf("--timeout 2s: %s (%s)", r, time.Since(start))
		}
		r = runCLI(t, "watch", "nosuch", "--kubeconfig", kc)
		if r.code != 2 || !strings.Contains(r.stderr, "not found") {
			t.Errorf("watch nosuch: %s", r)
		}
	})
}
