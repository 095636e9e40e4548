package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
)

// Field indexes the reconciler looks children up by.
const (
	indexNodeRunExperiment = "spec.experimentName"
	indexLeaseHolder       = "schedlab.holderExperiment"
)

// SetupIndexes registers the field indexes the reconciler needs.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.NodeRun{}, indexNodeRunExperiment, func(o client.Object) []string {
		return []string{o.(*v1alpha1.NodeRun).Spec.ExperimentName}
	}); err != nil {
		return fmt.Errorf("indexing NodeRuns by experiment: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &coordinationv1.Lease{}, indexLeaseHolder, func(o client.Object) []string {
		l := o.(*coordinationv1.Lease)
		if l.Spec.HolderIdentity == nil {
			return nil
		}
		if exp, _, ok := names.SplitLeaseHolder(*l.Spec.HolderIdentity); ok {
			return []string{exp}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing Leases by holder: %w", err)
	}
	return nil
}

// SetupWithManager registers the indexes and the controller.
func (r *SchedExperimentReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	return r.SetupWithManagerAs(ctx, mgr, opts, r.Metrics.timed(r))
}

// SetupWithManagerAs registers the indexes and the controller with rec as
// its reconciler: r, or a wrapper of r (tests count reconciles with one).
func (r *SchedExperimentReconciler) SetupWithManagerAs(ctx context.Context, mgr ctrl.Manager, opts controller.Options, rec reconcile.Reconciler) error {
	r.Config = r.Config.withDefaults()
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if err := SetupIndexes(ctx, mgr); err != nil {
		return err
	}
	if r.Simulations == nil {
		r.Simulations = NewSimulationPool(r.Analyzer, r.Config.SimulationWorkers, r.Config.SimulationTimeout)
	}
	if err := mgr.Add(r.Simulations); err != nil {
		return err
	}
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.Config.Namespace })
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.SchedExperiment{}).
		Owns(&v1alpha1.NodeRun{}).
		Owns(&appsv1.DaemonSet{}, builder.WithPredicates(inNamespace)).
		Owns(&batchv1.Job{}, builder.WithPredicates(inNamespace)).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(r.experimentsForLease), builder.WithPredicates(inNamespace, managedLease)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.experimentsForNode), builder.WithPredicates(nodeChanged)).
		WatchesRawSource(source.Channel(r.Simulations.Events(), &handler.EnqueueRequestForObject{})).
		WithOptions(opts).
		Named("schedexperiment").
		Complete(rec)
}

var managedLease = predicate.NewPredicateFuncs(func(o client.Object) bool {
	return o.GetLabels()[names.ManagedByLabel] == names.ManagedByValue
})

// experimentsForLease wakes the Lease's holder and the experiments waiting
// for nodes.
func (r *SchedExperimentReconciler) experimentsForLease(ctx context.Context, o client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	l := o.(*coordinationv1.Lease)
	holder := ""
	if l.Spec.HolderIdentity != nil {
		if exp, _, ok := names.SplitLeaseHolder(*l.Spec.HolderIdentity); ok {
			holder = exp
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: exp}})
		}
	}
	var list v1alpha1.SchedExperimentList
	if err := r.Client.List(ctx, &list); err != nil {
		return reqs
	}
	for i := range list.Items {
		e := &list.Items[i]
		if e.Name == holder {
			continue
		}
		if c := meta.FindStatusCondition(e.Status.Conditions, v1alpha1.ConditionNodesLocked); c != nil &&
			c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonWaitingForNodes {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: e.Name}})
		}
	}
	return reqs
}

// experimentsForNode wakes the unfinished experiments that chose the node or
// whose selector matches it.
func (r *SchedExperimentReconciler) experimentsForNode(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.SchedExperimentList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		e := &list.Items[i]
		if unrestoredOn(e, o.GetName()) {
			// A node gone with its journal unrestored registers again.
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: e.Name}})
			continue
		}
		if isTerminal(e) || e.Spec.NodeSelector == nil {
			continue
		}
		match := false
		if sel, err := metav1.LabelSelectorAsSelector(e.Spec.NodeSelector); err == nil && sel.Matches(labels.Set(o.GetLabels())) {
			match = true
		}
		for _, p := range e.Status.Nodes {
			if p.Name == o.GetName() {
				match = true
				break
			}
		}
		if match {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: e.Name}})
		}
	}
	return reqs
}

// unrestoredOn: the experiment's status says node did not report its
// restore.
func unrestoredOn(e *v1alpha1.SchedExperiment, node string) bool {
	for _, p := range e.Status.Nodes {
		if p.Name == node && p.Restored != nil && !*p.Restored {
			return true
		}
	}
	return false
}

func isTerminal(e *v1alpha1.SchedExperiment) bool {
	for _, t := range []string{v1alpha1.ConditionCompleted, v1alpha1.ConditionFailed} {
		if c := meta.FindStatusCondition(e.Status.Conditions, t); c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == e.Generation {
			return true
		}
	}
	return false
}

// nodeChanged passes Node events that can change a selection or a shape,
// not the heartbeats.
var nodeChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
		return !equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
			o.Spec.Unschedulable != n.Spec.Unschedulable ||
			!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
			nodeReady(o) != nodeReady(n) ||
			!o.Status.Capacity.Cpu().Equal(*n.Status.Capacity.Cpu()) ||
			o.Status.NodeInfo.KernelVersion != n.Status.NodeInfo.KernelVersion
	},
}
