package controllers

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// This file is where every condition of a SchedExperiment is decided: the
// phases observe and act, and then name what they found with one of the
// mark functions below. Nothing here reads or writes through a client.

const (
	reasonReleased        = "Released"
	reasonNodesNotAllowed = "NodesNotAllowed"
	// reasonSimulating: the simulator works on the experiment off the
	// reconcile loop.
	reasonSimulating       = "Simulating"
	reasonSimulationFailed = "SimulationFailed"
	// NodesNotRestored reasons: restore-only Pods run; every node reported
	// its restore; the force-cleanup annotation released nodes anyway.
	reasonRestorePods   = "RestorePodsRunning"
	reasonRestored      = "Restored"
	reasonForcedCleanup = "ForcedCleanup"
	// reasonNodesGone: the only nodes not restored are gone (their Node
	// objects deleted); unlocked, restored if they register again.
	reasonNodesGone = "NodesGone"
)

// setCondition sets a condition, keeping its transition time when the
// status does not change, and taking time from the injected clock.
func (s *scope) setCondition(typ string, status metav1.ConditionStatus, reason, message string) {
	c := metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: v1alpha1.Truncate(message, 32768),
		ObservedGeneration: s.exp.Generation, LastTransitionTime: s.now,
	}
	if old := meta.FindStatusCondition(s.status.Conditions, typ); old != nil && old.Status == status {
		c.LastTransitionTime = old.LastTransitionTime
	}
	meta.SetStatusCondition(&s.status.Conditions, c)
}

func (s *scope) conditionTrue(typ string) bool {
	c := meta.FindStatusCondition(s.status.Conditions, typ)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == s.exp.Generation
}

// terminal reports whether the current generation has finished: completed,
// failed, or refused as invalid.
func (s *scope) terminal() bool {
	return s.conditionTrue(v1alpha1.ConditionCompleted) || s.conditionTrue(v1alpha1.ConditionFailed)
}

// markInvalid: the spec breaks a rule the controller checks.
func (s *scope) markInvalid(msg string) {
	s.setCondition(v1alpha1.ConditionFailed, metav1.ConditionTrue, v1alpha1.ReasonInvalidSpec, msg)
	s.setCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonInvalidSpec, msg)
}

// markNotAllowed: the experiment asks for nodes the manager does not allow.
func (s *scope) markNotAllowed(msg string) {
	s.setCondition(v1alpha1.ConditionFailed, metav1.ConditionTrue, reasonNodesNotAllowed, msg)
	s.setCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, reasonNodesNotAllowed, msg)
	s.event(corev1.EventTypeWarning, reasonNodesNotAllowed, "SelectNodes", msg)
}

// markNoNodes: no node can run the experiment.
func (s *scope) markNoNodes(msg string) {
	s.setCondition(v1alpha1.ConditionNodesLocked, metav1.ConditionFalse, v1alpha1.ReasonNoNodes, msg)
	s.setCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNoNodes, msg)
}

// markWaitingForNodes: another experiment holds some of the chosen nodes.
func (s *scope) markWaitingForNodes(msg string) {
	s.setCondition(v1alpha1.ConditionNodesLocked, metav1.ConditionFalse, v1alpha1.ReasonWaitingForNodes, msg)
	s.setCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonWaitingForNodes, msg)
}

// markNodesLocked: the experiment holds every chosen node's lock.
func (s *scope) markNodesLocked(msg string) {
	s.setCondition(v1alpha1.ConditionNodesLocked, metav1.ConditionTrue, v1alpha1.ReasonNodesLocked, msg)
}

// markRunning: agents are at work and not every node is done.
func (s *scope) markRunning(msg string) {
	s.setCondition(v1alpha1.ConditionRunning, metav1.ConditionTrue, v1alpha1.ReasonRunning, msg)
	s.setCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonRunning, msg)
}

// markSimulating: a Simulate experiment waits for the simulation pool.
func (s *scope) markSimulating(msg string) {
	s.setCondition(v1alpha1.ConditionRunning, metav1.ConditionTrue, reasonSimulating, msg)
	s.setCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, reasonSimulating, msg)
}

// markSimulated: a Simulate experiment has its predictions.
func (s *scope) markSimulated(msg string) {
	s.setCondition(v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSimulated, msg)
	s.setCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSimulated, msg)
	if c := meta.FindStatusCondition(s.status.Conditions, v1alpha1.ConditionRunning); c != nil && c.Status == metav1.ConditionTrue {
		s.setCondition(v1alpha1.ConditionRunning, metav1.ConditionFalse, v1alpha1.ReasonSimulated, msg)
	}
}

// markCompleted: every node finished and at least one was measured.
func (s *scope) markCompleted(reason, msg string) {
	s.setCondition(v1alpha1.ConditionCompleted, metav1.ConditionTrue, reason, msg)
	s.setCondition(v1alpha1.ConditionRunning, metav1.ConditionFalse, reason, msg)
	s.setCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, reason, msg)
}

// markFailed: every node finished and none was measured.
func (s *scope) markFailed(reason, msg string) {
	s.setCondition(v1alpha1.ConditionFailed, metav1.ConditionTrue, reason, msg)
	s.setCondition(v1alpha1.ConditionCompleted, metav1.ConditionFalse, reason, msg)
	s.setCondition(v1alpha1.ConditionRunning, metav1.ConditionFalse, reason, msg)
	s.setCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
}

// markDegraded: some nodes did not complete.
func (s *scope) markDegraded(reason, msg string) {
	s.setCondition(v1alpha1.ConditionDegraded, metav1.ConditionTrue, reason, msg)
}

// markNotDegraded: every node completed.
func (s *scope) markNotDegraded(reason string) {
	s.setCondition(v1alpha1.ConditionDegraded, metav1.ConditionFalse, reason, "every node completed")
}

// markUnlockWaiting: the run is over; the nodes stay locked until their
// agents report the restore.
func (s *scope) markUnlockWaiting(waiting string) {
	s.setCondition(v1alpha1.ConditionNodesLocked, metav1.ConditionTrue, v1alpha1.ReasonNodesLocked, waiting+" before unlocking them")
}

// markNodesReleased: the run is over and the locks are gone.
func (s *scope) markNodesReleased() {
	if c := meta.FindStatusCondition(s.status.Conditions, v1alpha1.ConditionNodesLocked); c != nil && c.Status == metav1.ConditionTrue {
		s.setCondition(v1alpha1.ConditionNodesLocked, metav1.ConditionFalse, reasonReleased, "the run is over and the nodes are unlocked")
	}
}

// markNodesNotRestored: the restore timeout passed with nodes that did not
// report their restore; they stay locked while restore-only Pods run.
func (s *scope) markNodesNotRestored(msg string) {
	s.setCondition(v1alpha1.ConditionNodesNotRestored, metav1.ConditionTrue, reasonRestorePods, msg)
}

// nodesNotRestored: restore-only Pods were started and have not all reported.
func (s *scope) nodesNotRestored() bool {
	c := meta.FindStatusCondition(s.status.Conditions, v1alpha1.ConditionNodesNotRestored)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reasonRestorePods
}

// markNodesRestored: every node reported its restore after restore-only Pods ran.
func (s *scope) markNodesRestored() {
	s.setCondition(v1alpha1.ConditionNodesNotRestored, metav1.ConditionFalse, reasonRestored, "every node reported its restore")
}

// conditionReason: the condition is True with reason.
func (s *scope) conditionReason(typ, reason string) bool {
	c := meta.FindStatusCondition(s.status.Conditions, typ)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason
}

// markNodesGone: the nodes that did not report their restore are gone
// (their Node objects deleted); they are unlocked with their journals
// unrestored.
func (s *scope) markNodesGone(nodes []string) {
	s.setCondition(v1alpha1.ConditionNodesNotRestored, metav1.ConditionTrue, reasonNodesGone,
		fmt.Sprintf("%d nodes are gone (their Node objects deleted) without reporting their restore; their journals are not restored and they are unlocked: %s. "+
			"If a Node of the same name registers again, a restore-only Pod restores it (and any schedlab agent that starts there restores its journal first)", len(nodes), summarize(nodes)))
}

// markNodesReleasedUnrestored: the force-cleanup annotation released nodes
// that never reported their restore; they may still carry the experiment's
// knobs.
func (s *scope) markNodesReleasedUnrestored(nodes []string) {
	s.setCondition(v1alpha1.ConditionNodesNotRestored, metav1.ConditionTrue, reasonForcedCleanup,
		fmt.Sprintf("%d nodes were unlocked by %s without reporting their restore and may still carry this experiment's knobs: %s", len(nodes), v1alpha1.ForceCleanupAnnotation, summarize(nodes)))
}

// markSpecChanged: the run of generation old is being stopped for the
// current generation.
func (s *scope) markSpecChanged(old int64) {
	s.setCondition(v1alpha1.ConditionRunning, metav1.ConditionFalse, v1alpha1.ReasonSpecChanged,
		fmt.Sprintf("spec changed to generation %d: the run of generation %d is stopped and its nodes restored before the new run starts", s.exp.Generation, old))
	s.setCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSpecChanged, "restarting for the new generation")
}

// markRestarting: the old generation's nodes have not reported their restore.
func (s *scope) markRestarting(waiting string) {
	s.setCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSpecChanged, waiting)
}

// forgetRunConditions drops the conditions of a run that no longer
// describes the spec.
func (s *scope) forgetRunConditions() {
	for _, t := range []string{v1alpha1.ConditionCompleted, v1alpha1.ConditionDegraded, v1alpha1.ConditionFailed, v1alpha1.ConditionNodesLocked} {
		meta.RemoveStatusCondition(&s.status.Conditions, t)
	}
}

// markDeleting: the experiment is being deleted; waiting says what it still
// waits for ("" at the start).
func (s *scope) markDeleting(waiting string) {
	if waiting != "" {
		s.setCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonDeleting, waiting)
		return
	}
	s.setCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonDeleting, "deleting: stopping the agents and restoring the nodes")
	if c := meta.FindStatusCondition(s.status.Conditions, v1alpha1.ConditionRunning); c != nil && c.Status == metav1.ConditionTrue {
		s.setCondition(v1alpha1.ConditionRunning, metav1.ConditionFalse, v1alpha1.ReasonDeleting, "deleting")
	}
}

// splitFinished splits the nodes' progress into completed and not completed
// and names the run's reason: Succeeded, NodesFailed, or TimedOut when every
// failed node timed out. finished is false while a node still runs.
func splitFinished(nodes []v1alpha1.NodeProgress) (ok, bad []v1alpha1.NodeProgress, reason string, finished bool) {
	timedOut := 0
	for _, p := range nodes {
		if !p.Phase.Finished() {
			return nil, nil, "", false
		}
		switch p.Phase {
		case v1alpha1.NodeRunCompleted:
			ok = append(ok, p)
		default:
			bad = append(bad, p)
			if p.Phase == v1alpha1.NodeRunTimedOut {
				timedOut++
			}
		}
	}
	reason = v1alpha1.ReasonSucceeded
	if len(bad) > 0 {
		reason = v1alpha1.ReasonNodesFailed
		if timedOut == len(bad) {
			reason = v1alpha1.ReasonTimedOut
		}
	}
	return ok, bad, reason, true
}

// describeNodes names nodes and why they did not complete, the first ten.
func describeNodes(ps []v1alpha1.NodeProgress) string {
	var b strings.Builder
	for i, p := range ps {
		if i == 10 {
			fmt.Fprintf(&b, "; and %d more", len(ps)-10)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", p.Name, p.Phase)
		if p.Message != "" {
			fmt.Fprintf(&b, " (%s)", v1alpha1.Truncate(p.Message, 200))
		}
	}
	return b.String()
}

func summarize(nodes []string) string {
	if len(nodes) > 10 {
		return strings.Join(nodes[:10], ", ") + fmt.Sprintf(" and %d more", len(nodes)-10)
	}
	return strings.Join(nodes, ", ")
}
