package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/agent/profile"
	"github.com/schedlab/schedlab/api/v1alpha1"
)

// pruneGoneNodes removes the status entries of Nodes that no longer exist.
// Each entry belongs to its node's agent (server-side apply, field manager
// profile.FieldManager(node)); a deleted Node has no agent left to remove
// it, and a profile being deleted waits for its entries to go. The
// controller applies, as that agent's field manager, a status without the
// entry, so the entry the agent alone owned goes, as when the agent leaves.
// The Node's absence is checked on the API server, not only in the cache,
// so a Node the cache has not seen yet keeps its entry.
func (r *SchedProfileReconciler) pruneGoneNodes(ctx context.Context, s *profileScope) error {
	if len(s.p.Status.Nodes) == 0 {
		return nil
	}
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes); err != nil {
		return err
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	var gone []string
	for _, e := range s.p.Status.Nodes {
		if slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return n.Name == e.Node }) {
			continue
		}
		err := reader.Get(ctx, client.ObjectKey{Name: e.Node}, &corev1.Node{})
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("node %s: %w", e.Node, err)
		}
		if err := r.removeNodeEntry(ctx, s.p.Name, e.Node); err != nil {
			return fmt.Errorf("removing node %s's entry: %w", e.Node, err)
		}
		gone = append(gone, e.Node)
	}
	if len(gone) == 0 {
		return nil
	}
	s.p.Status.Nodes = slices.DeleteFunc(s.p.Status.Nodes, func(e v1alpha1.ProfileNodeStatus) bool { return slices.Contains(gone, e.Node) })
	for _, n := range gone {
		delete(s.entries, n)
		s.log.Info("Removed the status entry of a deleted Node", "node", n)
		s.event(corev1.EventTypeNormal, "NodeGone", "Prune", fmt.Sprintf("node %s no longer exists: its entry is removed", n))
	}
	// entries points into Status.Nodes, which DeleteFunc moved.
	for i := range s.p.Status.Nodes {
		s.entries[s.p.Status.Nodes[i].Node] = &s.p.Status.Nodes[i]
	}
	return nil
}

// removeNodeEntry applies, as node's agent, a status without node's entry.
func (r *SchedProfileReconciler) removeNodeEntry(ctx context.Context, name, node string) error {
	body, err := json.Marshal(map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "SchedProfile",
		"metadata":   map[string]any{"name": name},
		"status":     map[string]any{},
	})
	if err != nil {
		return err
	}
	obj := &v1alpha1.SchedProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}
	err = r.Client.Status().Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, body),
		client.FieldOwner(profile.FieldManager(node)), client.ForceOwnership)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
