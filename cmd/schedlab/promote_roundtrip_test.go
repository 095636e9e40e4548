package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/test/envtest"
)

// TestPromoteRoundTrip: schedlab promote on a completed experiment in a real
// kube-apiserver prints a manifest that kubectl apply --dry-run=server
// accepts as it is, and that comes back from the server (applied
// server-side, read with kubectl get -o yaml) with the spec unchanged:
// kubectl diff finds nothing to change.
func TestPromoteRoundTrip(t *testing.T) {
	c, kc := clusterForCLI(t)
	ctx := context.Background()
	root, err := envtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "config/samples/desktop-interactivity.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var exp v1alpha1.SchedExperiment
	if err := yaml.UnmarshalStrict(b, &exp); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &exp); err != nil {
		t.Fatal(err)
	}
	// Measured as the controller writes it: autogroup off misses fewer
	// deadlines and wakes faster, four windows each.
	m := func(miss, p99 float64) *v1alpha1.MeasuredMetrics {
		lat := func(p float64) *v1alpha1.LatencySummary {
			return &v1alpha1.LatencySummary{P50: p / 4, P90: p / 2, P99: p, P999: 2 * p, Max: 3 * p, Count: 1000}
		}
		sdMiss := 0.01
		return &v1alpha1.MeasuredMetrics{N: 4,
			Metrics: v1alpha1.Metrics{CPU: 0.1, DeadlineMissRatio: &miss, WakeupLatencyUs: lat(p99)},
			Stddev:  &v1alpha1.Metrics{CPU: 0.01, DeadlineMissRatio: &sdMiss, WakeupLatencyUs: lat(p99 / 20)}}
	}
	setStatus(t, c, exp.Name, func(e *v1alpha1.SchedExperiment) {
		e.Status.ObservedGeneration = e.Generation
		e.Status.ResultsGeneration = e.Generation
		meta.SetStatusCondition(&e.Status.Conditions, condition(v1alpha1.ConditionCompleted, metav1.ConditionTrue, "Succeeded", "", e.Generation))
		meta.SetStatusCondition(&e.Status.Conditions, condition(v1alpha1.ConditionReady, metav1.ConditionTrue, "Succeeded", "", e.Generation))
		e.Status.BestVariant = "autogroup-off"
		e.Status.BestVariantReason = "deadlineMissRatio and wakeupLatencyUs.p99 of video: lower, intervals apart"
		e.Status.Results = []v1alpha1.GroupResult{
			{Variant: "autogroup-on", Group: "video", Measured: m(0.30, 9000)},
			{Variant: "autogroup-off", Group: "video", Measured: m(0.05, 1200)},
		}
	})

	r := runCLI(t, "promote", exp.Name, "--kubeconfig", kc)
	if r.code != 0 {
		t.Fatalf("promote: %s", r)
	}
	t.Logf("schedlab promote %s:\n%s", exp.Name, r.stdout)
	manifest := filepath.Join(t.TempDir(), "profile.yaml")
	if err := os.WriteFile(manifest, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) (string, error) {
		cmd := exec.Command(cliKubectl, append([]string{"--kubeconfig", kc}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	if out, err := kubectl("apply", "--dry-run=server", "-f", manifest); err != nil || !strings.Contains(out, "(server dry run)") {
		t.Fatalf("kubectl apply --dry-run=server refused the manifest: %v\n%s", err, out)
	}
	if out, err := kubectl("apply", "--server-side", "-f", manifest); err != nil {
		t.Fatalf("kubectl apply --server-side: %v\n%s", err, out)
	}
	var sent struct {
		Kind     string
		Metadata struct{ Name string }
		Spec     map[string]any
	}
	if err := yaml.Unmarshal([]byte(r.stdout), &sent); err != nil || sent.Kind != "SchedProfile" || sent.Metadata.Name == "" {
		t.Fatalf("promote printed no SchedProfile: %v", err)
	}
	back, err := kubectl("get", "schedprofile", sent.Metadata.Name, "-o", "yaml")
	if err != nil {
		t.Fatalf("kubectl get: %v\n%s", err, back)
	}
	var got struct{ Spec map[string]any }
	if err := yaml.Unmarshal([]byte(back), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sent.Spec, got.Spec); diff != "" {
		t.Errorf("the spec came back changed (-sent +server):\n%s", diff)
	}
	if out, err := kubectl("diff", "--server-side", "-f", manifest); err != nil {
		t.Errorf("kubectl diff finds changes after the apply (exit %v):\n%s", err, out)
	}
	prov, _ := sent.Spec["provenance"].(map[string]any)
	if prov["experiment"] != exp.Name || prov["variant"] != "autogroup-off" {
		t.Errorf("provenance %v", prov)
	}
}
