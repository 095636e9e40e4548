package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// selectNodes picks the nodes: those matching nodeSelector that are Ready,
// schedulable and carry no taint the agent does not tolerate, sorted by
// name, at most maxNodes. Once the nodes are locked for this generation the
// choice is fixed and only the Node objects are refreshed.
func (r *SchedExperimentReconciler) selectNodes(ctx context.Context, s *scope) error {
	if s.terminal() || s.stop {
		return nil
	}
	if !s.measure() && s.exp.Spec.Simulation != nil && len(s.exp.Spec.Simulation.Nodes) > 0 {
		return nil // the shapes are given
	}
	sel, err := metav1.LabelSelectorAsSelector(s.exp.Spec.NodeSelector)
	if err != nil {
		return err // validate has refused it already
	}
	var list corev1.NodeList
	if err := r.Client.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	s.nodes = make(map[string]*corev1.Node, len(list.Items))
	var outside []string
	for i := range list.Items {
		s.nodes[list.Items[i].Name] = &list.Items[i]
		if allowed := r.Config.AllowedNodeSelector; allowed != nil && !allowed.Matches(labels.Set(list.Items[i].Labels)) {
			outside = append(outside, list.Items[i].Name)
		}
	}
	if s.measure() && len(outside) > 0 {
		sort.Strings(outside)
		s.markNotAllowed(fmt.Sprintf("the nodeSelector matches %d nodes outside the manager's allowedNodeSelector (%s): %s; narrow the nodeSelector",
			len(outside), r.Config.AllowedNodeSelector, strings.Join(limit(outside, 10), ", ")))
		s.stop = true
		return nil
	}

	if s.measure() && s.conditionTrue(v1alpha1.ConditionNodesLocked) {
		for _, p := range s.status.Nodes {
			s.chosen = append(s.chosen, p.Name)
		}
		return nil
	}

	var skipped, small []string
	maxPin, pinGroup := highestPinnedCPU(&s.exp.Spec)
	for i := range list.Items {
		n := &list.Items[i]
		usable, why := r.usable(n)
		if usable && s.measure() && maxPin >= 0 {
			if c := n.Status.Capacity.Cpu().Value(); c > 0 && int64(maxPin) >= c {
				usable, why = false, fmt.Sprintf("has %d CPUs, and group %q is pinned to CPU %d", c, pinGroup, maxPin)
				small = append(small, n.Name)
			}
		}
		if usable {
			s.chosen = append(s.chosen, n.Name)
		} else {
			skipped = append(skipped, n.Name+" "+why)
		}
	}
	if len(small) > 0 && len(s.chosen) > 0 {
		sort.Strings(small)
		s.event(corev1.EventTypeNormal, "NodesSkipped", "Select", fmt.Sprintf("Skipped %d nodes with too few CPUs for group %q, pinned to CPU %d: %s",
			len(small), pinGroup, maxPin, strings.Join(limit(small, 10), ", ")))
	}
	sort.Strings(skipped)
	sort.Strings(s.chosen)
	if m := s.exp.Spec.MaxNodes; m != nil && int(*m) < len(s.chosen) {
		s.chosen = s.chosen[:*m]
	}
	if len(s.chosen) == 0 {
		msg := "no node matches the nodeSelector"
		if len(skipped) > 0 {
			msg = fmt.Sprintf("no node matching the nodeSelector is Ready, schedulable, untainted and large enough: %s", strings.Join(limit(skipped, 10), ", "))
		}
		s.markNoNodes(msg)
		s.status.Nodes, s.status.NodeProgress = nil, ""
		s.stop = true
		if len(s.leases) > 0 {
			return r.releaseNodes(ctx, s)
		}
		return nil // a Node event brings us back
	}
	progress := make([]v1alpha1.NodeProgress, 0, len(s.chosen))
	for _, n := range s.chosen {
		p := v1alpha1.NodeProgress{Name: n, Phase: v1alpha1.NodeRunPending}
		if !s.measure() {
			// Nothing runs on the node: it only lends its shape.
			p.Phase, p.Message = "", "Simulate mode: predicted for this node's shape, nothing runs on it"
		}
		if sh, ok := r.shapeOf(s, n, nil); ok {
			p.Shape = shapeName(sh)
		}
		progress = append(progress, p)
	}
	s.status.Nodes = progress
	s.status.NodeProgress = fmt.Sprintf("0/%d", len(s.chosen))
	return nil
}

// usable says whether the agent can run on the node, and why not.
func (r *SchedExperimentReconciler) usable(n *corev1.Node) (bool, string) {
	if !nodeReady(n) {
		return false, "NotReady"
	}
	if n.Spec.Unschedulable {
		return false, "cordoned"
	}
	for _, k := range slices.Sorted(maps.Keys(r.Config.AgentNodeSelector)) {
		if v := r.Config.AgentNodeSelector[k]; n.Labels[k] != v {
			return false, fmt.Sprintf("not matching the agents' nodeSelector (%s=%s)", k, v)
		}
	}
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !tolerates(r.Config.AgentTolerations, t) {
			return false, "tainted " + t.ToString()
		}
	}
	return true, ""
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func tolerates(tolerations []corev1.Toleration, t *corev1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(klog.Background(), t, false) {
			return true
		}
	}
	return false
}

// highestPinnedCPU is the highest CPU any group's cpus names, and that
// group, or -1: a node needs at least that many CPUs plus one (the agent
// checks its own cpuset there).
func highestPinnedCPU(spec *v1alpha1.SchedExperimentSpec) (int32, string) {
	top, group := int32(-1), ""
	for i := range spec.Workload.Groups {
		g := &spec.Workload.Groups[i]
		cpus, err := v1alpha1.ParseCPUList(g.CPUs)
		if err != nil || len(cpus) == 0 {
			continue // validate has refused a bad list
		}
		if c := cpus[len(cpus)-1]; c > top {
			top, group = c, g.Name
		}
	}
	return top, group
}
