package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
)

// lockNodes takes a Lease per chosen node, all or nothing: when another
// experiment holds one of them the experiment waits, naming the holder, and
// holds none (so that two experiments never wait on each other). A Lease
// whose holder no longer exists is reclaimed.
func (r *SchedExperimentReconciler) lockNodes(ctx context.Context, s *scope) error {
	if !s.measure() || s.terminal() || s.stop {
		return nil
	}
	if s.conditionTrue(v1alpha1.ConditionNodesLocked) {
		return nil // locked for this generation; the choice is fixed
	}
	want := make(map[string]bool, len(s.chosen))
	for _, n := range s.chosen {
		want[n] = true
	}
	held := make(map[string]*coordinationv1.Lease, len(s.leases))
	for i := range s.leases {
		held[s.leases[i].Name] = &s.leases[i]
	}

	var create []string
	var take []*coordinationv1.Lease
	var blockers []string
	for _, node := range s.chosen {
		name := names.Lease(node)
		if held[name] != nil {
			continue
		}
		l := &coordinationv1.Lease{}
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Config.Namespace, Name: name}, l)
		switch {
		case apierrors.IsNotFound(err):
			create = append(create, node)
			continue
		case err != nil:
			return fmt.Errorf("getting Lease %s: %w", name, err)
		}
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		alive, err := r.holderAlive(ctx, holder)
		if err != nil {
			return err
		}
		if alive {
			exp, _, _ := names.SplitLeaseHolder(holder)
			blockers = append(blockers, fmt.Sprintf("node %s is held by experiment %s", node, exp))
			continue
		}
		if holder != "" {
			s.log.Info("Reclaiming node lock of an experiment that no longer exists", "node", node, "holder", holder)
		}
		take = append(take, l)
	}

	if len(blockers) > 0 {
		msg := fmt.Sprintf("waiting for %d of %d nodes: %s", len(blockers), len(s.chosen), strings.Join(limit(blockers, 10), "; "))
		s.markWaitingForNodes(msg)
		s.requeueIn(r.Config.WaitRecheck)
		s.stop = true
		if len(s.leases) > 0 {
			return r.releaseNodes(ctx, s)
		}
		return nil
	}

	// Leases held for nodes no longer chosen go first.
	for i := range s.leases {
		if l := &s.leases[i]; !want[nodeOfLease(l)] {
			if err := r.deleteObject(ctx, l); err != nil {
				return fmt.Errorf("releasing Lease %s: %w", l.Name, err)
			}
		}
	}
	for _, node := range create {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: r.Config.Namespace, Name: names.Lease(node)}}
		if err := r.fillLease(s, l, node); err != nil {
			return err
		}
		if err := r.Client.Create(ctx, l); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// Taken since the cache was read (by us or another
				// experiment): look again once the cache has it.
				s.log.V(1).Info("Node lock appeared meanwhile; rechecking", "node", node)
				s.requeueIn(time.Second)
				s.stop = true
				return nil
			}
			return fmt.Errorf("creating Lease %s: %w", l.Name, err)
		}
	}
	for _, l := range take {
		if err := r.fillLease(s, l, nodeOfLease(l)); err != nil {
			return err
		}
		// The update carries the resourceVersion read: of two experiments
		// reclaiming one Lease, one gets a conflict.
		if err := r.Client.Update(ctx, l); err != nil {
			return fmt.Errorf("taking Lease %s: %w", l.Name, err)
		}
	}
	msg := fmt.Sprintf("holding the locks of %d nodes", len(s.chosen))
	s.markNodesLocked(msg)
	s.status.StartTime = &s.now
	s.status.ResultsGeneration = s.exp.Generation
	s.log.V(1).Info("Locked nodes", "count", len(s.chosen))
	return nil
}

// holderAlive says whether the experiment named in a Lease's holderIdentity
// still exists (same name, same UID).
func (r *SchedExperimentReconciler) holderAlive(ctx context.Context, holder string) (bool, error) {
	name, uid, ok := names.SplitLeaseHolder(holder)
	if !ok {
		return false, nil
	}
	other := &v1alpha1.SchedExperiment{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, other); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("getting the holder of a node lock, %s: %w", name, err)
	}
	return string(other.UID) == uid, nil
}

func (r *SchedExperimentReconciler) fillLease(s *scope, l *coordinationv1.Lease, node string) error {
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[names.ManagedByLabel] = names.ManagedByValue
	l.Labels[v1alpha1.ExperimentLabel] = names.LabelValue(s.exp.Name)
	l.Labels[v1alpha1.NodeLabel] = names.LabelValue(node)
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[names.HolderAnnotation] = s.exp.Name
	l.Annotations[v1alpha1.NodeLabel] = node
	holder := s.holder
	now := metav1.NewMicroTime(s.now.Time)
	l.Spec.HolderIdentity = &holder
	l.Spec.AcquireTime = &now
	l.Spec.RenewTime = &now
	l.OwnerReferences = nil
	return controllerutil.SetControllerReference(s.exp, l, r.Client.Scheme())
}

func nodeOfLease(l *coordinationv1.Lease) string {
	if n := l.Annotations[v1alpha1.NodeLabel]; n != "" {
		return n
	}
	return strings.TrimPrefix(l.Name, "schedlab-node-")
}

// releaseNodes deletes the Leases the experiment holds.
func (r *SchedExperimentReconciler) releaseNodes(ctx context.Context, s *scope) error {
	for i := range s.leases {
		if err := r.deleteObject(ctx, &s.leases[i]); err != nil {
			return fmt.Errorf("releasing Lease %s: %w", s.leases[i].Name, err)
		}
	}
	if len(s.leases) > 0 {
		s.log.V(1).Info("Released node locks", "count", len(s.leases))
	}
	s.leases = nil
	return nil
}

func limit(xs []string, n int) []string {
	if len(xs) > n {
		return append(xs[:n:n], fmt.Sprintf("and %d more", len(xs)-n))
	}
	return xs
}
