package controllers

import (
	"context"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/api/v1alpha1/validation"
	"github.com/schedlab/schedlab/internal/experiment"
)

// reasonReleased is the NodesLocked reason once the run is over and the
// nodes are unlocked.
// phases of a live experiment, in order.
func (r *SchedExperimentReconciler) phases() []phase {
	return []phase{
		{"observe", r.observe},
		{"clean up sweep jobs", r.cleanupSweepJobs},
		{"abort stale generation", r.abortStaleGeneration},
		{"validate", r.validate},
		{"select nodes", r.selectNodes},
		{"simulate", r.simulate},
		{"lock nodes", r.lockNodes},
		{"ensure node runs", r.ensureNodeRuns},
		{"track progress", r.trackProgress},
		{"complete", r.complete},
		// After complete: a run whose nodes have all finished needs no
		// agents, even when the cache has not caught up with its status.
		{"ensure daemonset", r.ensureDaemonSet},
		{"finish", r.finish},
	}
}

// deletionPhases of an experiment being deleted, in order.
func (r *SchedExperimentReconciler) deletionPhases() []phase {
	return []phase{
		{"observe", r.observe},
		{"clean up sweep jobs", r.cleanupSweepJobs},
		{"delete full results", func(ctx context.Context, s *scope) error { return r.deleteFullResults(ctx, s, 0) }},
		{"drain", r.drainForDeletion},
		{"release nodes", r.releaseNodes},
		{"remove finalizer", r.removeFinalizer},
	}
}

func (s *scope) measure() bool { return s.exp.Spec.Mode != v1alpha1.ModeSimulate }

// observe reads the experiment's children: its NodeRuns (through the
// experiment-name index), its DaemonSet and the node Leases it holds
// (through the holder index).
func (r *SchedExperimentReconciler) observe(ctx context.Context, s *scope) error {
	var runs v1alpha1.NodeRunList
	if err := r.Client.List(ctx, &runs, client.MatchingFields{indexNodeRunExperiment: s.exp.Name}); err != nil {
		return fmt.Errorf("listing NodeRuns: %w", err)
	}
	for i := range runs.Items {
		nr := &runs.Items[i]
		if !metav1.IsControlledBy(nr, s.exp) {
			// Left behind by an earlier experiment of the same name.
			if err := r.deleteObject(ctx, nr); err != nil {
				return fmt.Errorf("deleting NodeRun %s of an earlier experiment: %w", nr.Name, err)
			}
			continue
		}
		s.runs = append(s.runs, *nr)
	}
	sort.Slice(s.runs, func(i, j int) bool { return s.runs[i].Spec.NodeName < s.runs[j].Spec.NodeName })

	ds := &appsv1.DaemonSet{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Config.Namespace, Name: names.DaemonSet(s.exp.Name)}, ds)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("getting DaemonSet: %w", err)
	case metav1.IsControlledBy(ds, s.exp):
		s.ds = ds
	default:
		if err := r.deleteObject(ctx, ds); err != nil {
			return fmt.Errorf("deleting DaemonSet %s of an earlier experiment: %w", ds.Name, err)
		}
	}

	var leases coordinationv1.LeaseList
	if err := r.Client.List(ctx, &leases, client.InNamespace(r.Config.Namespace), client.MatchingFields{indexLeaseHolder: s.exp.Name}); err != nil {
		return fmt.Errorf("listing Leases: %w", err)
	}
	for _, l := range leases.Items {
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == s.holder {
			s.leases = append(s.leases, l)
		}
	}
	return nil
}

// abortStaleGeneration stops a run of an earlier generation: the agents go,
// the nodes are restored and unlocked, and the experiment starts over.
func (r *SchedExperimentReconciler) abortStaleGeneration(ctx context.Context, s *scope) error {
	gen := s.exp.Generation
	var stale, current []v1alpha1.NodeRun
	for _, nr := range s.runs {
		if nr.Spec.ExperimentGeneration != gen {
			stale = append(stale, nr)
		} else {
			current = append(current, nr)
		}
	}
	staleDS := s.ds != nil && s.ds.Labels[names.GenerationLabel] != fmt.Sprint(gen)
	staleStatus := s.status.ResultsGeneration != 0 && s.status.ResultsGeneration != gen
	if len(stale) == 0 && !staleDS && !staleStatus {
		return nil
	}
	old := s.status.ResultsGeneration
	if c := meta.FindStatusCondition(s.status.Conditions, v1alpha1.ConditionRunning); c != nil && c.Status == metav1.ConditionTrue {
		s.event(corev1.EventTypeNormal, v1alpha1.ReasonSpecChanged, "Abort",
			fmt.Sprintf("Spec changed to generation %d: stopping the run of generation %d and restoring its nodes", gen, old))
	}
	s.markSpecChanged(old)
	since := meta.FindStatusCondition(s.status.Conditions, v1alpha1.ConditionRunning).LastTransitionTime
	drained, waiting, err := r.drain(ctx, s, stale, since)
	if err != nil || !drained {
		if waiting != "" {
			s.markRestarting(waiting)
		}
		s.stop = true
		return err
	}
	for i := range stale {
		if err := r.deleteObject(ctx, &stale[i]); err != nil {
			return fmt.Errorf("deleting NodeRun %s: %w", stale[i].Name, err)
		}
	}
	s.runs = current
	if err := r.releaseNodes(ctx, s); err != nil {
		return err
	}
	// The results of the old generation no longer describe the spec.
	s.status.Nodes = nil
	s.status.NodeProgress = ""
	s.status.Results = nil
	s.status.ResultsGeneration = 0
	s.status.BestVariant, s.status.BestVariantReason, s.status.PredictionError = "", "", ""
	s.status.Recommendation = nil
	s.status.StartTime, s.status.CompletionTime = nil, nil
	s.status.Sweep = nil
	s.status.Omitted = ""
	s.status.Calibration = nil
	s.forgetRunConditions()
	if len(stale) > 0 {
		s.stop = true // their deletion brings us back
	}
	return nil
}

// validate runs the shared validator (the rules of the CRD's schema and CEL,
// again, for objects admitted before a rule existed) and refuses what only
// the controller can see: an unparsable selector.
func (r *SchedExperimentReconciler) validate(_ context.Context, s *scope) error {
	if s.terminal() {
		return nil
	}
	spec := s.exp.Spec.DeepCopy()
	spec.Default()
	errs := validation.ValidateSpec(spec, field.NewPath("spec"))
	if !r.Config.AllowSessionNiceBelowZero {
		for i, g := range spec.Workload.Groups {
			if g.Session != "" && g.Nice != nil && *g.Nice < 0 {
				errs = append(errs, field.Forbidden(field.NewPath("spec", "workload", "groups").Index(i).Child("nice"),
					"a session group runs in the node's root cgroup, beside its system services; this manager does not allow nice below 0 there (--allow-session-nice-below-zero): use nice 0 or more, or drop session"))
			}
		}
	}
	if sel := s.exp.Spec.NodeSelector; sel != nil {
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "nodeSelector"), field.OmitValueType{}, err.Error()))
		}
	}
	msg := ""
	if len(errs) > 0 {
		msg = errs.ToAggregate().Error()
	}
	if msg == "" {
		return nil
	}
	s.markInvalid(msg)
	s.event(corev1.EventTypeWarning, v1alpha1.ReasonInvalidSpec, "Validate", msg)
	return nil
}

// analyze runs the analyzer in the simulation pool (off the reconcile loop;
// done is false until a worker has finished), or inline without a pool.
func (r *SchedExperimentReconciler) analyze(ctx context.Context, s *scope, kind string, in AnalyzeInput) (*Analysis, error, bool) {
	if r.Simulations == nil {
		an, err := r.Analyzer.Analyze(ctx, in)
		return an, err, true
	}
	return r.Simulations.Analyze(s.exp, kind, in)
}

// simulate answers a Simulate experiment: predictions for each distinct
// shape, no agents.
func (r *SchedExperimentReconciler) simulate(ctx context.Context, s *scope) error {
	if s.measure() || s.terminal() || s.stop {
		return nil
	}
	var shapes []v1alpha1.NodeShape
	if sim := s.exp.Spec.Simulation; sim != nil && len(sim.Nodes) > 0 {
		shapes = sim.Nodes
	} else {
		shapes = r.distinctShapes(s, s.chosen, nil)
	}
	cals, err := r.calibrations(ctx, s, shapes)
	if err != nil {
		return err
	}
	in := AnalyzeInput{Spec: &s.exp.Spec, Shapes: shapes, Calibration: cals}
	kind := "simulate"
	var sweep *v1alpha1.SweepStatus
	plan, byJob := r.sweepJobFor(s, shapes)
	if byJob {
		// The sweep runs as an Indexed Job; the pool predicts the rows.
		var failed string
		sweep, failed, err = r.sweepByJob(ctx, s, plan, shapes, cals)
		if err != nil {
			return err
		}
		if failed != "" {
			s.markFailed(reasonSimulationFailed, failed)
			s.event(corev1.EventTypeWarning, reasonSimulationFailed, "Simulate", failed)
			s.stop = true
			return nil
		}
		rows := s.exp.Spec.DeepCopy()
		rows.Sweep = nil
		in.Spec, kind = rows, "simulate-rows"
	}
	an, err, done := r.analyze(ctx, s, kind, in)
	if byJob && sweep == nil {
		s.markSimulating(fmt.Sprintf("sweeping %d variants for %d node shapes in Indexed Job %s/%s (%d shards, %d at once)",
			len(s.exp.Spec.Variants), len(shapes), r.Config.Namespace, plan.name, plan.shards, plan.parallelism))
		s.stop = true
		return nil
	}
	if !done {
		s.markSimulating(fmt.Sprintf("predicting %d variants for %d node shapes", len(s.exp.Spec.Variants), len(shapes)))
		s.stop = true
		return nil
	}
	if err != nil {
		s.markFailed(reasonSimulationFailed, "predicting: "+err.Error())
		s.event(corev1.EventTypeWarning, reasonSimulationFailed, "Simulate", "Predicting failed: "+err.Error())
		s.stop = true
		return nil
	}
	if byJob {
		an.Sweep = sweep
	}
	s.status.Calibration = cals
	s.status.Results = an.Results
	s.status.Sweep = an.Sweep
	s.status.BestVariant, s.status.BestVariantReason = an.BestVariant, an.BestVariantReason
	s.status.PredictionError = ""
	s.status.ResultsGeneration = s.exp.Generation
	s.status.NodeProgress = ""
	if s.status.StartTime == nil {
		s.status.StartTime = &s.now
	}
	s.status.CompletionTime = &s.now
	msg := fmt.Sprintf("predicted %d variants for %d node shapes", len(s.exp.Spec.Variants), len(shapes))
	s.markSimulated(msg)
	s.event(corev1.EventTypeNormal, "Completed", "Simulate", "Completed: "+msg)
	s.stop = true
	return nil
}

// distinctShapes are the simulator shapes of nodes, preferring what the
// agents detected over what the Node objects say, sorted by name, each with
// the count of those nodes of that shape (the fleet a sweep's answer is
// summed over).
func (r *SchedExperimentReconciler) distinctShapes(s *scope, nodes []string, runs map[string]*v1alpha1.NodeRun) []v1alpha1.NodeShape {
	seen := map[string]v1alpha1.NodeShape{}
	count := map[string]int32{}
	for _, n := range nodes {
		if sh, ok := r.shapeOf(s, n, runs[n]); ok {
			k := sh.Name()
			count[k]++
			c := count[k]
			sh.Count = &c
			seen[k] = sh
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]v1alpha1.NodeShape, 0, len(keys))
	for _, k := range keys {
		out = append(out, seen[k])
	}
	return out
}

func (r *SchedExperimentReconciler) shapeOf(s *scope, node string, run *v1alpha1.NodeRun) (v1alpha1.NodeShape, bool) {
	if run != nil && run.Status.ExperimentGeneration == s.exp.Generation {
		if c := run.Status.Capabilities; c != nil && c.CPUs > 0 {
			return r.Analyzer.ShapeFromCapabilities(c), true
		}
	}
	n := s.nodes[node]
	if n == nil {
		return v1alpha1.NodeShape{}, false
	}
	cpus := int32(n.Status.Capacity.Cpu().Value())
	if cpus < 1 {
		return v1alpha1.NodeShape{}, false
	}
	return r.Analyzer.ShapeForKernel(cpus, n.Status.NodeInfo.KernelVersion), true
}

func shapeName(sh v1alpha1.NodeShape) string { return sh.Name() }

// runsByNode maps the current generation's NodeRuns by node.
func (s *scope) runsByNode() map[string]*v1alpha1.NodeRun {
	m := make(map[string]*v1alpha1.NodeRun, len(s.runs))
	for i := range s.runs {
		if s.runs[i].Spec.ExperimentGeneration == s.exp.Generation {
			m[s.runs[i].Spec.NodeName] = &s.runs[i]
		}
	}
	return m
}

// ensureNodeRuns creates a NodeRun for every chosen node that lacks one.
func (r *SchedExperimentReconciler) ensureNodeRuns(ctx context.Context, s *scope) error {
	if !s.measure() || s.terminal() || s.stop {
		return nil
	}
	have := s.runsByNode()
	for _, node := range s.chosen {
		if have[node] != nil {
			continue
		}
		nr := &v1alpha1.NodeRun{
			ObjectMeta: metav1.ObjectMeta{
				Name: names.NodeRun(s.exp.Name, node),
				Labels: map[string]string{
					v1alpha1.ExperimentLabel: names.LabelValue(s.exp.Name),
					v1alpha1.NodeLabel:       names.LabelValue(node),
					names.ManagedByLabel:     names.ManagedByValue,
				},
			},
			Spec: v1alpha1.NodeRunSpec{ExperimentName: s.exp.Name, ExperimentGeneration: s.exp.Generation, NodeName: node},
		}
		if err := controllerutil.SetControllerReference(s.exp, nr, r.Client.Scheme()); err != nil {
			return err
		}
		err := r.Client.Create(ctx, nr)
		if apierrors.IsAlreadyExists(err) {
			// Ours, not yet in the cache; or another experiment's whose
			// name and node join to the same name ("a-b" on "c", "a" on
			// "b-c"): then this node cannot run and will time out, saying why.
			other := &v1alpha1.NodeRun{}
			if gerr := r.Client.Get(ctx, client.ObjectKeyFromObject(nr), other); gerr == nil && other.Spec.ExperimentName != s.exp.Name {
				if s.nameTaken == nil {
					s.nameTaken = map[string]string{}
				}
				s.nameTaken[node] = fmt.Sprintf("the NodeRun name %s is taken by experiment %s", nr.Name, other.Spec.ExperimentName)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("creating NodeRun %s: %w", nr.Name, err)
		}
		s.log.V(2).Info("Created NodeRun", "noderun", nr.Name, "node", node)
	}
	return nil
}

// budget is how long a node may take before it is TimedOut: every window
// of every variant and repetition, each run as often as an agent re-runs a
// noisy window, and the margin.
func (r *SchedExperimentReconciler) budget(spec *v1alpha1.SchedExperimentSpec) time.Duration {
	warmup := time.Second
	if spec.Warmup != nil {
		warmup = spec.Warmup.Duration
	}
	per := warmup + spec.Duration.Duration
	windows := time.Duration(len(spec.Variants)) * time.Duration(spec.RepetitionCount())
	return per*windows*v1alpha1.WindowAttempts + r.Config.DeadlineMargin
}

// trackProgress turns the NodeRuns into per-node progress and times out the
// nodes that have not reported by the deadline.
func (r *SchedExperimentReconciler) trackProgress(_ context.Context, s *scope) error {
	if !s.measure() || s.terminal() || s.stop {
		return nil
	}
	if s.status.StartTime == nil {
		s.status.StartTime = &s.now
	}
	deadline := s.status.StartTime.Add(r.budget(&s.exp.Spec))
	oldPhase := map[string]v1alpha1.NodeRunPhase{}
	for _, p := range s.status.Nodes {
		oldPhase[p.Name] = p.Phase
	}
	runs := s.runsByNode()
	progress := make([]v1alpha1.NodeProgress, 0, len(s.chosen))
	done := 0
	for _, node := range s.chosen {
		p := v1alpha1.NodeProgress{Name: node, Phase: v1alpha1.NodeRunPending}
		if sh, ok := r.shapeOf(s, node, runs[node]); ok {
			p.Shape = shapeName(sh)
		}
		if nr := runs[node]; nr != nil && nr.Status.ExperimentGeneration == s.exp.Generation {
			if nr.Status.Phase != "" {
				p.Phase = nr.Status.Phase
			}
			p.StepsDone, p.StepsTotal, p.Message = nr.Status.StepsDone, nr.Status.StepsTotal, v1alpha1.Truncate(nr.Status.Message, 1024)
		}
		if why, taken := s.nameTaken[node]; taken {
			p.Message = why
		}
		if !p.Phase.Finished() && !s.now.Time.Before(deadline) {
			p.Phase = v1alpha1.NodeRunTimedOut
			if _, taken := s.nameTaken[node]; !taken {
				p.Message = fmt.Sprintf("no result within %s of the start (%s)", r.budget(&s.exp.Spec), s.status.StartTime.UTC().Format(time.RFC3339))
			}
			s.event(corev1.EventTypeWarning, "NodeTimedOut", "Track", fmt.Sprintf("Node %s timed out: %s", node, p.Message))
		}
		if p.Phase.Finished() {
			done++
		}
		if p.Phase == v1alpha1.NodeRunCompleted && oldPhase[node] != v1alpha1.NodeRunCompleted {
			s.event(corev1.EventTypeNormal, "NodeCompleted", "Track", fmt.Sprintf("Node %s completed %d windows", node, p.StepsDone))
		}
		progress = append(progress, p)
	}
	s.status.Nodes = progress
	s.status.NodeProgress = fmt.Sprintf("%d/%d", done, len(s.chosen))
	if done < len(s.chosen) {
		msg := fmt.Sprintf("%d of %d nodes done", done, len(s.chosen))
		s.markRunning(msg)
		s.requeueIn(deadline.Sub(s.now.Time))
	}
	return nil
}

// complete aggregates the results once every node has finished.
func (r *SchedExperimentReconciler) complete(ctx context.Context, s *scope) error {
	if !s.measure() || s.terminal() || s.stop {
		return nil
	}
	ok, bad, reason, finished := splitFinished(s.status.Nodes)
	if !finished {
		return nil
	}
	s.status.CompletionTime = &s.now
	s.status.ResultsGeneration = s.exp.Generation
	if len(ok) == 0 {
		msg := "no node completed: " + describeNodes(bad)
		s.markFailed(reason, msg)
		s.event(corev1.EventTypeWarning, "Failed", "Complete", "Failed: "+msg)
		return nil
	}

	runs := s.runsByNode()
	measured := make([]v1alpha1.NodeRun, 0, len(ok))
	measuredNodes := make([]string, 0, len(ok))
	nodeShapes := make(map[string]string, len(ok))
	for _, p := range ok {
		measured = append(measured, *runs[p.Name])
		measuredNodes = append(measuredNodes, p.Name)
		nodeShapes[p.Name] = p.Shape
	}
	// Predictions only for the shapes something was measured on.
	shapes := r.distinctShapes(s, measuredNodes, runs)
	cals, err := r.calibrations(ctx, s, shapes)
	if err != nil {
		return err
	}
	an, err, done := r.analyze(ctx, s, measuredKind, AnalyzeInput{Spec: &s.exp.Spec, Shapes: shapes, Runs: measured, NodeShapes: nodeShapes, Calibration: cals})
	if !done {
		s.status.CompletionTime = nil
		s.markRunning(fmt.Sprintf("every node finished; comparing %d NodeRuns with the simulator's predictions", len(measured)))
		return nil
	}
	if err != nil {
		msg := fmt.Sprintf("analyzing %d NodeRuns: %v", len(measured), err)
		s.markFailed(reasonSimulationFailed, msg)
		s.event(corev1.EventTypeWarning, reasonSimulationFailed, "Complete", "Failed: "+msg)
		return nil
	}
	s.status.Calibration = cals
	s.status.Results = an.Results
	s.status.PredictionError = an.PredictionError
	s.status.BestVariant, s.status.BestVariantReason = an.BestVariant, an.BestVariantReason
	s.status.Recommendation = experiment.Recommend(&s.exp.Spec, an.Results, an.BestVariant, s.exp.Generation)

	msg := fmt.Sprintf("%d of %d nodes completed", len(ok), len(s.status.Nodes))
	if an.BestVariant != "" {
		msg += "; best variant: " + an.BestVariant
	}
	s.markCompleted(reason, msg)
	s.event(corev1.EventTypeNormal, "Completed", "Complete", "Completed: "+msg)
	if len(bad) > 0 {
		dmsg := fmt.Sprintf("%d of %d nodes did not complete: %s", len(bad), len(s.status.Nodes), describeNodes(bad))
		s.markDegraded(reason, dmsg)
		s.event(corev1.EventTypeWarning, "Degraded", "Complete", "Degraded: "+dmsg)
	} else {
		s.markNotDegraded(reason)
	}
	return nil
}

// finish ends a finished run: the agents go, their restore is awaited, and
// the nodes are unlocked.
func (r *SchedExperimentReconciler) finish(ctx context.Context, s *scope) error {
	if !s.terminal() {
		return nil
	}
	since := s.now
	if s.status.CompletionTime != nil {
		since = *s.status.CompletionTime
	}
	drained, waiting, err := r.drain(ctx, s, s.runs, since)
	if err != nil || !drained {
		if waiting != "" {
			s.markUnlockWaiting(waiting)
		}
		return err
	}
	if len(s.leases) > 0 {
		if err := r.releaseNodes(ctx, s); err != nil {
			return err
		}
	}
	s.markNodesReleased()
	return nil
}

// drainForDeletion deletes the agents and waits (bounded) for the nodes to
// report their restore before the locks go.
func (r *SchedExperimentReconciler) drainForDeletion(ctx context.Context, s *scope) error {
	s.markDeleting("")
	drained, waiting, err := r.drain(ctx, s, s.runs, *s.exp.DeletionTimestamp)
	if err != nil || !drained {
		if waiting != "" {
			s.markDeleting(waiting)
		}
		s.stop = true
	}
	return err
}

// removeFinalizer lets the experiment go.
func (r *SchedExperimentReconciler) removeFinalizer(ctx context.Context, s *scope) error {
	obj := s.exp.DeepCopy()
	controllerutil.RemoveFinalizer(obj, v1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(s.exp, client.MergeFromWithOptimisticLock{})); err != nil {
		return ignoreNotFound(err)
	}
	s.released = true
	s.log.V(1).Info("Released experiment: nodes restored and unlocked")
	return nil
}

// drain deletes the agent DaemonSet and reports whether every NodeRun of
// runs that started touching its node has reported its restore. It waits at
// most RestoreTimeout from since; the force-cleanup annotation skips the wait.
func (r *SchedExperimentReconciler) drain(ctx context.Context, s *scope, runs []v1alpha1.NodeRun, since metav1.Time) (drained bool, waiting string, err error) {
	if s.ds != nil {
		if err := r.deleteObject(ctx, s.ds); err != nil {
			return false, "", fmt.Errorf("deleting DaemonSet %s: %w", s.ds.Name, err)
		}
		s.log.V(1).Info("Deleted DaemonSet", "daemonset", s.ds.Name)
		s.ds = nil
	}
	var pending []string
	pendingSet := map[string]bool{}
	for _, nr := range runs {
		if needsRestore(&nr) {
			pending = append(pending, nr.Spec.NodeName)
			pendingSet[nr.Spec.NodeName] = true
		}
	}
	noteRestored(s, runs, pendingSet)
	if len(pending) == 0 {
		return true, "", r.endRestore(ctx, s, nil)
	}
	if s.exp.Annotations[v1alpha1.ForceCleanupAnnotation] == "true" {
		s.event(corev1.EventTypeWarning, "ForcedCleanup", "Drain",
			fmt.Sprintf("Not waiting for %d nodes to report their restore (%s): %s", len(pending), v1alpha1.ForceCleanupAnnotation, summarize(pending)))
		return true, "", r.endRestore(ctx, s, pending)
	}
	deadline := since.Add(r.Config.RestoreTimeout)
	if s.now.Time.Before(deadline) {
		s.requeueIn(deadline.Sub(s.now.Time))
		return false, fmt.Sprintf("waiting for %d nodes to report their restore: %s (annotate %s=true to stop waiting for nodes that are gone)",
			len(pending), summarize(pending), v1alpha1.ForceCleanupAnnotation), nil
	}
	// A node whose Node object is gone can run no Pod (the pod garbage
	// collector deletes one bound to a missing node): it is reported gone
	// with its journal unrestored, and unlocked. A Node of the same name
	// registering again wakes the experiment, and the restore-only Pod
	// runs there then.
	present, gone, err := r.splitGoneNodes(ctx, pending)
	if err != nil {
		return false, "", err
	}
	if len(gone) > 0 && !s.conditionReason(v1alpha1.ConditionNodesNotRestored, reasonNodesGone) {
		if err := r.deleteRestorePods(ctx, s, gone); err != nil {
			return false, "", err
		}
	}
	if len(present) == 0 {
		if err := r.releaseLeasesExcept(ctx, s, nil); err != nil {
			return false, "", err
		}
		s.markNodesGone(gone)
		return true, "", nil
	}
	// The agents are gone without reporting: the nodes stay locked (no other
	// experiment may land on a node in an unknown state) and a restore-only
	// Pod replays each journal. Nodes that did report are released now.
	if err := r.ensureRestorePods(ctx, s, present); err != nil {
		return false, "", err
	}
	presentSet := map[string]bool{}
	for _, n := range present {
		presentSet[n] = true
	}
	if err := r.releaseLeasesExcept(ctx, s, presentSet); err != nil {
		return false, "", err
	}
	msg := fmt.Sprintf("%d nodes did not report their restore within %s and stay locked while a restore-only Pod runs on each: %s (annotate %s=true to unlock them anyway)",
		len(present), r.Config.RestoreTimeout, summarize(present), v1alpha1.ForceCleanupAnnotation)
	if len(gone) > 0 {
		msg += fmt.Sprintf("; %d more are gone (their Node objects deleted) with their journals unrestored, and unlocked: %s", len(gone), summarize(gone))
	}
	s.markNodesNotRestored(msg)
	s.requeueIn(restoreRetryInterval)
	return false, msg, nil
}

// needsRestore: the agent started touching the node and has not reported
// that everything is back.
func needsRestore(nr *v1alpha1.NodeRun) bool {
	return nr.Status.StartTime != nil && !nr.Status.Restored
}

// deleteObject deletes obj if it is still the object that was read.
func (r *SchedExperimentReconciler) deleteObject(ctx context.Context, obj client.Object) error {
	uid := obj.GetUID()
	err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

func ignoreNotFound(err error) error { return client.IgnoreNotFound(err) }
