package controllers

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/agent/profile"
	"github.com/schedlab/schedlab/api"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/test/envtest"
)

// TestPruneGoneNodes: against a real API server, the entry of a Node that
// was deleted leaves the profile's status (its agent will never remove
// it), the entry of a Node that exists stays, and the controller's own
// fields are untouched.
func TestPruneGoneNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the local control plane (bin/k8s); not in -short")
	}
	_, c, _ := envtest.Start(t, envtest.Options{Scheme: api.NewScheme()})
	ctx := context.Background()
	for _, n := range []string{"live", "doomed"} {
		if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"pool": "lab"}}}); err != nil {
			t.Fatal(err)
		}
	}
	p := &v1alpha1.SchedProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "autogroup-off"},
		Spec: v1alpha1.SchedProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "lab"}},
			Knobs:        v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupDisabled},
		},
	}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	// Each node's agent applies its entry; the controller its counts.
	for _, n := range []string{"live", "doomed", "never-existed"} {
		body, _ := json.Marshal(map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": "SchedProfile",
			"metadata": map[string]any{"name": p.Name},
			"status":   map[string]any{"nodes": []any{map[string]any{"node": n, "phase": "Applied"}}},
		})
		if err := c.Status().Patch(ctx, p.DeepCopy(), client.RawPatch(types.ApplyPatchType, body),
			client.FieldOwner(profile.FieldManager(n)), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
	}
	r := &SchedProfileReconciler{Client: c}
	if err := r.applyStatus(ctx, p.Name, &v1alpha1.SchedProfileStatus{Selected: 2, Applied: 2}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}); err != nil {
		t.Fatal(err)
	}

	prune := func() []string {
		t.Helper()
		var got v1alpha1.SchedProfile
		if err := c.Get(ctx, client.ObjectKey{Name: p.Name}, &got); err != nil {
			t.Fatal(err)
		}
		s := &profileScope{p: &got, log: logr.Discard(), entries: map[string]*v1alpha1.ProfileNodeStatus{}}
		for i := range got.Status.Nodes {
			s.entries[got.Status.Nodes[i].Node] = &got.Status.Nodes[i]
		}
		if err := r.pruneGoneNodes(ctx, s); err != nil {
			t.Fatal(err)
		}
		if len(s.entries) != len(s.p.Status.Nodes) {
			t.Errorf("scope: %d entries for %d nodes", len(s.entries), len(s.p.Status.Nodes))
		}
		for _, e := range s.p.Status.Nodes {
			if s.entries[e.Node] == nil || s.entries[e.Node].Node != e.Node {
				t.Errorf("scope entry of %s points at %+v", e.Node, s.entries[e.Node])
			}
		}
		if err := c.Get(ctx, client.ObjectKey{Name: p.Name}, &got); err != nil {
			t.Fatal(err)
		}
		var nodes []string
		for _, e := range got.Status.Nodes {
			nodes = append(nodes, e.Node)
		}
		if got.Status.Selected != 2 || got.Status.Applied != 2 {
			t.Errorf("the controller's fields changed: selected %d applied %d", got.Status.Selected, got.Status.Applied)
		}
		return nodes
	}
	if got := prune(); len(got) != 1 || got[0] != "live" {
		t.Fatalf("entries after pruning %v, want [live]", got)
	}
	if got := prune(); len(got) != 1 || got[0] != "live" {
		t.Fatalf("entries after pruning again %v, want [live]", got)
	}
}
