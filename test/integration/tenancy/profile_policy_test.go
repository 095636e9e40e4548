package tenancy_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/api"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/test/envtest"
)

// TestProfilePriorityTieRefused: config/admission's policy refuses a
// SchedProfile (created or changed) with the priority and nodeSelector of
// another, naming it; a different priority or selector is admitted.
func TestProfilePriorityTieRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a kube-apiserver and etcd (bin/k8s)")
	}
	_, c, _ := envtest.Start(t, envtest.Options{Scheme: api.NewScheme()})
	ctx := context.Background()
	root, err := envtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range readObjects(t, filepath.Join(root, "config/admission/profile_priority_policy.yaml")) {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	profile := func(name, pool string, priority int32) *v1alpha1.SchedProfile {
		return &v1alpha1.SchedProfile{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.SchedProfileSpec{
				NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"schedlab.io/pool": pool}},
				Priority:     priority,
				Knobs:        v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupDisabled},
			},
		}
	}
	if err := c.Create(ctx, profile("first", "lab", 10)); err != nil {
		t.Fatalf("the first profile: %v", err)
	}
	const refused = "spec.priority: 10 is also the priority of SchedProfile first, which has the same nodeSelector"
	// Enforced once the API server has loaded the policy: wait with dry runs.
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := c.Create(ctx, profile("tie", "lab", 10), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), refused) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a tie is admitted (last error %v): the policy is not enforced", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := c.Create(ctx, profile("tie", "lab", 10)); err == nil || !strings.Contains(err.Error(), refused) {
		t.Errorf("creating a tie: %v, want refused with %q", err, refused)
	}
	for _, p := range []*v1alpha1.SchedProfile{profile("higher", "lab", 11), profile("elsewhere", "bench", 10)} {
		if err := c.Create(ctx, p); err != nil {
			t.Errorf("%s (another priority or selector) refused: %v", p.Name, err)
		}
	}
	// Changing a profile into a tie is refused too; the profile itself is
	// not its own tie.
	p := &v1alpha1.SchedProfile{}
	if err := c.Get(ctx, client.ObjectKey{Name: "higher"}, p); err != nil {
		t.Fatal(err)
	}
	p.Spec.Priority = 10
	if err := c.Update(ctx, p); err == nil || !strings.Contains(err.Error(), refused) {
		t.Errorf("changing a profile into a tie: %v, want refused", err)
	}
	first := &v1alpha1.SchedProfile{}
	if err := c.Get(ctx, client.ObjectKey{Name: "first"}, first); err != nil {
		t.Fatal(err)
	}
	first.Spec.Knobs.Autogroup = v1alpha1.AutogroupEnabled
	if err := c.Update(ctx, first); err != nil {
		t.Errorf("changing the first profile's knobs: %v", err)
	}
}
