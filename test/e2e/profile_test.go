package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/hack/demo/lab"
)

const autogroupFile = "/proc/sys/kernel/sched_autogroup_enabled"

// TestProfileLocalCluster runs SchedProfiles end to end on this machine, with the profile agent
// as a real process writing the real sysctl: a profile with autogroup Disabled is applied (the
// sysctl reads 0, the node is Applied, kstatus says Current); a hand-written 1 is repaired within
// 30 s, counted and reported as an Event; an experiment on the profiled node restores the
// profile's value, not the boot value; deleting the profile brings the original back and the
// node leaves the status; a canary whose verification cannot hold is rolled back and the profile
// is Stalled.
func TestProfileLocalCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the end-to-end test starts a local cluster")
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping: the profile flow writes kernel.sched_autogroup_enabled on this machine, which needs root")
	}
	requireBinaries(t, "bin/schedlab", "bin/k8s/etcd", "bin/k8s/kube-apiserver", "bin/k8s/kube-controller-manager",
		"bin/k8s/kube-scheduler", "bin/k8s/kubectl")
	boot := readAutogroup(t)
	if boot != "1" {
		t.Fatalf("kernel.sched_autogroup_enabled is %s here; the test needs the default 1 to see a profile change it", boot)
	}
	l := startProfileLab(t)
	t.Cleanup(func() {
		if t.Failed() {
			out, err := tryCommand(nil, kubectl(), "--kubeconfig", l.Cluster.Kubeconfig, "get", "schedprofiles", "-o", "yaml")
			t.Logf("kubectl get schedprofiles -o yaml:\n%s%v", tail(string(out), 120), errOrNil(err))
		}
		// Whatever happened, the machine keeps its boot value.
		if got := readAutogroup(t); got != boot {
			t.Errorf("kernel.sched_autogroup_enabled is %s at the end, was %s", got, boot)
		}
	})

	t.Run("ApplyRepairExperimentDelete", func(t *testing.T) { testProfileLifecycle(t, l, boot) })
	t.Run("FailingCanaryRollsBack", func(t *testing.T) { testFailingCanary(t, l, boot) })
}

// startProfileLab starts the lab with config/crd and config/rbac (kustomize; no helm needed).
func startProfileLab(t *testing.T) *lab.Lab {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	manifests, err := lab.KustomizeManifests(ctx, repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.Start(ctx, lab.Options{Dir: t.TempDir(), RepoRoot: repoRoot, Manifests: manifests,
		ManagerArgs: []string{"--deadline-margin=3m", "--restore-timeout=1m"}, Logf: t.Logf})
	if err != nil {
		t.Fatalf("starting the lab: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Stop(); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			dumpState(t, l)
		}
	})
	return l
}

func readAutogroup(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(autogroupFile)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func newProfile(name string) *v1alpha1.SchedProfile {
	return &v1alpha1.SchedProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SchedProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{lab.PoolLabel: "lab"}},
			Knobs:        v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupDisabled},
		},
	}
}

// kstatusOf computes the profile's status as kstatus (Argo CD, Flux) sees it.
func kstatusOf(t *testing.T, p *v1alpha1.SchedProfile) status.Status {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind("SchedProfile")
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

func nodeEntry(p *v1alpha1.SchedProfile, node string) *v1alpha1.ProfileNodeStatus {
	for i := range p.Status.Nodes {
		if p.Status.Nodes[i].Node == node {
			return &p.Status.Nodes[i]
		}
	}
	return nil
}

// waitProfile polls the profile until cond holds, logging each new state.
func waitProfile(t *testing.T, l *lab.Lab, name string, timeout time.Duration, what string, cond func(*v1alpha1.SchedProfile) bool) *v1alpha1.SchedProfile {
	t.Helper()
	var p v1alpha1.SchedProfile
	last := ""
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := l.Client.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
			return false, nil
		}
		line := profileLine(&p, l.Cluster.NodeName)
		if line != last {
			t.Logf("%s: %s", name, line)
			last = line
		}
		return cond(&p), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last: %s", what, err, last)
	}
	return &p
}

func profileLine(p *v1alpha1.SchedProfile, node string) string {
	var parts []string
	for _, c := range p.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Reason))
	}
	if ro := p.Status.Rollout; ro != nil {
		parts = append(parts, fmt.Sprintf("rollout=%s %v %q", ro.Phase, ro.Nodes, ro.Message))
	}
	if e := nodeEntry(p, node); e != nil {
		parts = append(parts, fmt.Sprintf("node=%s g%d applied=%v original=%v repairs=%d %q", e.Phase, e.Generation, e.Applied, e.Original, e.DriftRepairs, e.Reason))
	}
	return fmt.Sprintf("gen %d observed %d selected=%d applied=%d drifted=%d %s", p.Generation, p.Status.ObservedGeneration,
		p.Status.Selected, p.Status.Applied, p.Status.Drifted, strings.Join(parts, " "))
}

func testProfileLifecycle(t *testing.T, l *lab.Lab, boot string) {
	ctx := context.Background()
	node := l.Cluster.NodeName
	p := newProfile("e2e-autogroup-off")
	p.Spec.Rollout = &v1alpha1.ProfileRollout{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	if err := l.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Client.Delete(context.Background(), p) })

	// 1. Applied: the sysctl is 0, the node Applied, kstatus Current.
	start := time.Now()
	got := waitProfile(t, l, p.Name, 3*time.Minute, "the profile applied and Current", func(p *v1alpha1.SchedProfile) bool {
		e := nodeEntry(p, node)
		return e != nil && e.Phase == v1alpha1.ProfileNodeApplied && e.Generation == p.Generation && kstatusOf(t, p) == status.CurrentStatus
	})
	if v := readAutogroup(t); v != "0" {
		t.Fatalf("profile Applied but kernel.sched_autogroup_enabled is %s, want 0", v)
	}
	e := nodeEntry(got, node)
	if e.Applied["autogroup"] != "0" || e.Original["autogroup"] != boot {
		t.Errorf("node entry: applied %v, original %v; want autogroup 0 applied over %s", e.Applied, e.Original, boot)
	}
	if got.Status.Selected != 1 || got.Status.Applied != 1 || !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) {
		t.Errorf("status: selected %d applied %d conditions %+v", got.Status.Selected, got.Status.Applied, got.Status.Conditions)
	}
	t.Logf("applied and Current %s after create", time.Since(start).Round(time.Second))
	out := command(t, nil, kubectl(), "--kubeconfig", l.Cluster.Kubeconfig, "get", "schedprofiles")
	t.Logf("kubectl get schedprofiles:\n%s", out)

	// 2. Drift: write 1 by hand; repaired within 30 s, counted, an Event. Another schedlab run
	// on this shared machine holding the node lock pauses the profile agent (as it must); then
	// the attempt does not count and is made again, a few times.
	var repairedIn time.Duration
	for attempt := 1; ; attempt++ {
		if err := os.WriteFile(autogroupFile, []byte("1"), 0o644); err != nil {
			t.Fatal(err)
		}
		wrote := time.Now()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			if readAutogroup(t) == "0" {
				repairedIn = time.Since(wrote)
				return true, nil
			}
			return false, nil
		})
		if err == nil {
			break
		}
		var cur v1alpha1.SchedProfile
		_ = l.Client.Get(ctx, client.ObjectKey{Name: p.Name}, &cur)
		e := nodeEntry(&cur, node)
		if e == nil || e.Phase != v1alpha1.ProfileNodePaused || attempt == 4 {
			t.Fatalf("a hand-written 1 was not set back to 0 within 30 s (attempt %d); node entry: %+v", attempt, e)
		}
		t.Logf("attempt %d: the profile agent was paused (%s); trying again", attempt, e.Reason)
	}
	err := error(nil)
	t.Logf("drift repaired %s after the write", repairedIn.Round(10*time.Millisecond))
	got = waitProfile(t, l, p.Name, 30*time.Second, "the drift counted in status", func(p *v1alpha1.SchedProfile) bool {
		e := nodeEntry(p, node)
		return e != nil && e.DriftRepairs >= 1 && e.LastDrift != nil && p.Status.Drifted == 1 && p.Status.DriftRepairs >= 1
	})
	var evs corev1.EventList
	found := ""
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := l.Client.List(ctx, &evs); err != nil {
			return false, nil
		}
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Kind == "SchedProfile" && ev.InvolvedObject.Name == p.Name && ev.Reason == "DriftRepaired" {
				found = ev.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no DriftRepaired Event for %s", p.Name)
	}
	t.Logf("Event DriftRepaired: %s", found)
	if !strings.Contains(found, "autogroup was 1, set back to 0") {
		t.Errorf("the Event does not say what was repaired: %q", found)
	}

	// 3. An experiment on the profiled node: it journals the profile's 0 as
	// the original and restores to it, not to the boot value.
	exp := loadExperiment(t, "e2e-on-profiled-node")
	exp.Spec.Duration = metav1.Duration{Duration: 2 * time.Second}
	exp.Spec.Variants[1].Knobs.Autogroup = v1alpha1.AutogroupEnabled // flips the profile's value
	if err := l.Client.Create(ctx, exp); err != nil {
		t.Fatal(err)
	}
	sawPaused := false
	var done *v1alpha1.SchedExperiment
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		var cur v1alpha1.SchedProfile
		if err := l.Client.Get(ctx, client.ObjectKey{Name: p.Name}, &cur); err == nil {
			if e := nodeEntry(&cur, node); e != nil && e.Phase == v1alpha1.ProfileNodePaused {
				sawPaused = true
			}
		}
		var x v1alpha1.SchedExperiment
		if err := l.Client.Get(ctx, client.ObjectKey{Name: exp.Name}, &x); err != nil {
			return false, nil
		}
		if c := meta.FindStatusCondition(x.Status.Conditions, v1alpha1.ConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
			return false, fmt.Errorf("experiment failed: %s", c.Message)
		}
		if meta.IsStatusConditionTrue(x.Status.Conditions, v1alpha1.ConditionCompleted) && x.Status.ObservedGeneration == x.Generation {
			done = &x
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the experiment on the profiled node: %v", err)
	}
	runs := nodeRuns(t, l, exp.Name)
	if len(runs) != 1 || !runs[0].Status.Restored {
		t.Fatalf("NodeRuns: %+v", runs)
	}
	for _, k := range runs[0].Status.Knobs {
		if k.Name == "autogroup" {
			t.Logf("experiment's restore record: autogroup original %q set %q restored %q", k.Original, k.Set, k.Restored)
			if k.Original != "0" || k.Restored != "0" {
				t.Errorf("the experiment journalled %q and restored %q; want the profile's 0 for both", k.Original, k.Restored)
			}
		}
	}
	if v := readAutogroup(t); v != "0" {
		t.Fatalf("after the experiment kernel.sched_autogroup_enabled is %s, want the profile's 0 (boot value %s)", v, boot)
	}
	t.Logf("experiment %s completed (best %q); the profile agent paused during it: %v", done.Name, done.Status.BestVariant, sawPaused)
	if !sawPaused {
		t.Errorf("the profile's node entry never showed Paused while the experiment held the node")
	}
	got = waitProfile(t, l, p.Name, time.Minute, "the profile re-verified after the experiment", func(p *v1alpha1.SchedProfile) bool {
		e := nodeEntry(p, node)
		return e != nil && e.Phase == v1alpha1.ProfileNodeApplied && kstatusOf(t, p) == status.CurrentStatus
	})
	if err := l.Client.Delete(ctx, done); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var x v1alpha1.SchedExperiment
		return apierrors.IsNotFound(l.Client.Get(ctx, client.ObjectKey{Name: exp.Name}, &x)) && len(nodeRuns(t, l, exp.Name)) == 0, nil
	})
	if err != nil {
		t.Fatalf("the experiment on the profiled node was not released: %v", err)
	}
	if v := readAutogroup(t); v != "0" {
		t.Fatalf("after deleting the experiment kernel.sched_autogroup_enabled is %s, want the profile's 0", v)
	}

	// 4. Delete: the original is back, the node leaves the status, the
	// profile goes, and so does the DaemonSet.
	if err := l.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var cur v1alpha1.SchedProfile
		err := l.Client.Get(ctx, client.ObjectKey{Name: p.Name}, &cur)
		if err == nil {
			if e := nodeEntry(&cur, node); e == nil {
				t.Logf("the node left the status of the profile being deleted")
			}
		}
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the profile was not released: %v", err)
	}
	if v := readAutogroup(t); v != boot {
		t.Fatalf("after deleting the profile kernel.sched_autogroup_enabled is %s, want the original %s", v, boot)
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var ds appsv1.DaemonSet
		return apierrors.IsNotFound(l.Client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "schedlab-profile-agent"}, &ds)), nil
	})
	if err != nil {
		t.Errorf("the profile agent DaemonSet is still there with no profile left")
	}
	if _, err := os.Stat(filepath.Join(l.StateDir, "profile", "journal.json")); !os.IsNotExist(err) {
		t.Errorf("the profile journal is left behind: %v", err)
	}
}

// testFailingCanary applies a profile whose canary verification cannot hold: its objective is
// the deadline-miss ratio of a Hog group, which has no deadlines, so no variant can be shown
// better. The canary node must be rolled back to its original and the profile Stalled.
func testFailingCanary(t *testing.T, l *lab.Lab, boot string) {
	ctx := context.Background()
	node := l.Cluster.NodeName
	p := newProfile("e2e-canary")
	p.Spec.Rollout = &v1alpha1.ProfileRollout{Canary: &v1alpha1.Canary{Nodes: 1, Verify: v1alpha1.CanaryVerify{
		Duration:    metav1.Duration{Duration: time.Second},
		Repetitions: 2,
		Workload:    v1alpha1.Workload{Groups: []v1alpha1.Group{{Name: "hog", Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}}}},
		Objectives:  []v1alpha1.Objective{{Metric: "deadlineMissRatio", Group: "hog", Goal: v1alpha1.Minimize}},
	}}}
	if err := l.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Client.Delete(context.Background(), p) })
	sawCanaryApplied := false
	got := waitProfile(t, l, p.Name, 5*time.Minute, "the canary rolled back and the profile Stalled", func(p *v1alpha1.SchedProfile) bool {
		if e := nodeEntry(p, node); e != nil && e.Phase == v1alpha1.ProfileNodeApplied && e.Generation == p.Generation {
			sawCanaryApplied = true
		}
		e := nodeEntry(p, node)
		return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionStalled) && p.Status.ObservedGeneration == p.Generation &&
			e != nil && e.Phase == v1alpha1.ProfileNodeRolledBack
	})
	t.Logf("canary entry seen Applied by the poll: %v", sawCanaryApplied)
	if ks := kstatusOf(t, got); ks != status.FailedStatus {
		t.Errorf("kstatus %s, want Failed for a stalled profile", ks)
	}
	c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionStalled)
	t.Logf("Stalled: %s: %s", c.Reason, c.Message)
	if c.Reason != v1alpha1.ReasonVerificationFailed || !strings.Contains(c.Message, v1alpha1.NoSignificantDifference) {
		t.Errorf("Stalled does not give the measured reason: %s: %s", c.Reason, c.Message)
	}
	if v := readAutogroup(t); v != boot {
		t.Errorf("the rolled-back canary has kernel.sched_autogroup_enabled %s, want its original %s", v, boot)
	}
	var exp v1alpha1.SchedExperiment
	if err := l.Client.Get(ctx, client.ObjectKey{Name: got.Status.Rollout.Verification}, &exp); err != nil {
		t.Fatalf("the verification experiment: %v", err)
	}
	if !metav1.IsControlledBy(&exp, got) {
		t.Errorf("the verification experiment is not owned by the profile")
	}
	// The canary had the profile applied when the verification started: the
	// verification's agent journalled the profile's 0 as the node's value.
	vruns := nodeRuns(t, l, exp.Name)
	if len(vruns) != 1 {
		t.Fatalf("verification NodeRuns: %d, want 1", len(vruns))
	}
	for _, k := range vruns[0].Status.Knobs {
		if k.Name == "autogroup" {
			t.Logf("verification's restore record: autogroup original %q restored %q", k.Original, k.Restored)
			if k.Original != "0" {
				t.Errorf("the verification found autogroup %q on the canary, want the profile's 0 (applied before verifying)", k.Original)
			}
		}
	}
	b, _ := yaml.Marshal(exp.Spec.Variants)
	t.Logf("verification %s variants:\n%s", exp.Name, b)
	out := command(t, nil, kubectl(), "--kubeconfig", l.Cluster.Kubeconfig, "get", "schedprofiles", "-o", "wide")
	t.Logf("kubectl get schedprofiles -o wide:\n%s", out)

	if err := l.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var cur v1alpha1.SchedProfile
		return apierrors.IsNotFound(l.Client.Get(ctx, client.ObjectKey{Name: p.Name}, &cur)), nil
	})
	if err != nil {
		t.Fatalf("the stalled profile was not released on deletion")
	}
}
