package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
)

// +kubebuilder:rbac:groups=core,namespace=schedlab-system,resources=pods,verbs=create;delete;deletecollection

// restoreAppName labels restore-only Pods. It is not the agent's app name, so
// that a later generation's agent DaemonSet never adopts one.
const restoreAppName = "schedlab-restore"

// restoreRetryInterval: how often the controller looks again at nodes whose
// restore-only Pod has not reported yet (their NodeRun's update also wakes it).
const restoreRetryInterval = 30 * time.Second

// noteRestored records in status.nodes which nodes of runs have reported
// their restore: only for runs that started changing their node.
func noteRestored(s *scope, runs []v1alpha1.NodeRun, pending map[string]bool) {
	started := map[string]bool{}
	for i := range runs {
		if runs[i].Status.StartTime != nil {
			started[runs[i].Spec.NodeName] = true
		}
	}
	for i := range s.status.Nodes {
		p := &s.status.Nodes[i]
		if started[p.Name] {
			p.Restored = ptr.To(!pending[p.Name])
		}
	}
}

// ensureRestorePods runs a restore-only Pod on every node of pending: the
// agent image with --restore-only, pinned to the node by nodeName (the
// scheduler is not asked, so a node that has since been cordoned or tainted
// still gets its restore), restarted on failure until the journal is empty
// and the NodeRun says so.
func (r *SchedExperimentReconciler) ensureRestorePods(ctx context.Context, s *scope, pending []string) error {
	for _, node := range pending {
		spec := r.agentPodSpec(s, "--restore-only")
		spec.NodeName = node
		spec.NodeSelector = nil
		spec.RestartPolicy = corev1.RestartPolicyOnFailure
		spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: names.RestorePod(s.exp.Name, node), Namespace: r.Config.Namespace,
				Labels: map[string]string{
					names.ManagedByLabel:     names.ManagedByValue,
					names.AppNameLabel:       restoreAppName,
					v1alpha1.ExperimentLabel: names.LabelValue(s.exp.Name),
					v1alpha1.NodeLabel:       names.LabelValue(node),
				},
			},
			Spec: spec,
		}
		if err := controllerutil.SetControllerReference(s.exp, pod, r.Client.Scheme()); err != nil {
			return err
		}
		err := r.Client.Create(ctx, pod)
		switch {
		case apierrors.IsAlreadyExists(err):
			continue
		case err != nil:
			return fmt.Errorf("creating restore-only Pod %s: %w", pod.Name, err)
		}
		s.log.Info("Created restore-only Pod", "pod", pod.Name, "node", node)
		s.event(corev1.EventTypeWarning, "RestorePodCreated", "Restore",
			fmt.Sprintf("Node %s did not report its restore within %s: running restore-only Pod %s there", node, r.Config.RestoreTimeout, pod.Name))
	}
	return nil
}

// splitGoneNodes splits nodes into those whose Node object exists and those
// whose Node object is gone.
func (r *SchedExperimentReconciler) splitGoneNodes(ctx context.Context, nodes []string) (present, gone []string, err error) {
	for _, n := range nodes {
		err := r.Client.Get(ctx, client.ObjectKey{Name: n}, &corev1.Node{})
		switch {
		case apierrors.IsNotFound(err):
			gone = append(gone, n)
		case err != nil:
			return nil, nil, fmt.Errorf("reading Node %s: %w", n, err)
		default:
			present = append(present, n)
		}
	}
	return present, gone, nil
}

// deleteRestorePods deletes the restore-only Pods of nodes (a Pod bound to a
// node that is gone would never run).
func (r *SchedExperimentReconciler) deleteRestorePods(ctx context.Context, s *scope, nodes []string) error {
	for _, node := range nodes {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.Config.Namespace, Name: names.RestorePod(s.exp.Name, node)}}
		if err := r.Client.Delete(ctx, pod, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting restore-only Pod %s of gone node %s: %w", pod.Name, node, err)
		}
	}
	return nil
}

// endRestore removes the restore-only Pods once no node waits for its
// restore, and says so. It acts only after NodesNotRestored was set, so a
// finished experiment costs no API call per reconcile.
func (r *SchedExperimentReconciler) endRestore(ctx context.Context, s *scope, forced []string) error {
	if !s.nodesNotRestored() {
		if len(forced) > 0 {
			s.markNodesReleasedUnrestored(forced)
		}
		return nil
	}
	err := r.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(r.Config.Namespace),
		client.MatchingLabels{names.AppNameLabel: restoreAppName, v1alpha1.ExperimentLabel: names.LabelValue(s.exp.Name)},
		client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting restore-only Pods: %w", err)
	}
	if len(forced) > 0 {
		s.markNodesReleasedUnrestored(forced)
		return nil
	}
	s.markNodesRestored()
	s.event(corev1.EventTypeNormal, "NodesRestored", "Restore", "Every node reported its restore; the restore-only Pods are removed")
	return nil
}

// releaseLeasesExcept releases the node locks of every node not in keep.
func (r *SchedExperimentReconciler) releaseLeasesExcept(ctx context.Context, s *scope, keep map[string]bool) error {
	kept := s.leases[:0:0]
	for i := range s.leases {
		l := &s.leases[i]
		if keep[nodeOfLease(l)] {
			kept = append(kept, *l)
			continue
		}
		if err := r.deleteObject(ctx, l); err != nil {
			return fmt.Errorf("releasing Lease %s: %w", l.Name, err)
		}
	}
	s.leases = kept
	return nil
}
