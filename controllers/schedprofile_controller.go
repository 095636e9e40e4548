package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/schedlab/schedlab/agent/profile"
	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
)

// +kubebuilder:rbac:groups=schedlab.io,resources=schedprofiles,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=schedlab.io,resources=schedprofiles/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=schedlab.io,resources=schedprofiles/finalizers,verbs=update
// +kubebuilder:rbac:groups=schedlab.io,resources=schedexperiments,verbs=create;delete

// ProfileManager is the controller's field manager of a profile's status
// (everything but nodes, which each node's agent applies).
const ProfileManager = "schedlab-manager"

// SchedProfileReconciler rolls SchedProfiles out: it decides which nodes may
// apply a profile's current generation (at most maxUnavailable changing at
// once, canaries first and verified by an owned SchedExperiment), keeps one
// profile-agent DaemonSet over every node a profile selects or still holds,
// and computes the kstatus conditions from what the agents report.
type SchedProfileReconciler struct {
	Client client.Client
	// APIReader reads around the cache: a status entry is removed for a
	// missing Node only when the API server says so too. Default: the
	// manager's API reader (Client in tests).
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	Config    Config
}

// profileScope is what one reconcile of a profile observed and decided.
type profileScope struct {
	p        *v1alpha1.SchedProfile // as read
	log      logr.Logger
	now      metav1.Time
	selected []string                               // nodes the profile selects and wins on, sorted
	entries  map[string]*v1alpha1.ProfileNodeStatus // agents' entries by node
	ro       v1alpha1.RolloutStatus                 // the rollout being computed
	lastGen  int64
	lastKnob *v1alpha1.Knobs
	tie      []string // nodes where the profile tied on priority
	verify   *v1alpha1.SchedExperiment
	events   []pendingEvent
}

func (s *profileScope) event(typ, reason, action, note string) {
	s.events = append(s.events, pendingEvent{typ: typ, reason: reason, action: action, note: note})
}

// Reconcile moves one profile's rollout a step and writes its status.
func (r *SchedProfileReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &v1alpha1.SchedProfile{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, r.ensureProfileDaemonSet(ctx, log.FromContext(ctx))
		}
		return reconcile.Result{}, err
	}
	s := &profileScope{p: p, log: log.FromContext(ctx).WithValues("schedprofile", klog.KObj(p)), now: metav1.NewTime(r.Clock.Now())}
	s.entries = map[string]*v1alpha1.ProfileNodeStatus{}
	for i := range p.Status.Nodes {
		s.entries[p.Status.Nodes[i].Node] = &p.Status.Nodes[i]
	}
	if err := r.pruneGoneNodes(ctx, s); err != nil {
		return reconcile.Result{}, fmt.Errorf("pruneGoneNodes: %w", err)
	}
	if !p.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, r.reconcileDelete(ctx, s)
	}
	if !controllerutil.ContainsFinalizer(p, v1alpha1.ProfileFinalizer) {
		obj := p.DeepCopy()
		controllerutil.AddFinalizer(obj, v1alpha1.ProfileFinalizer)
		if err := r.Client.Patch(ctx, obj, client.MergeFrom(p)); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
		return reconcile.Result{}, nil // the update brings us back
	}
	for _, ph := range []struct {
		name string
		run  func(context.Context, *profileScope) error
	}{
		{"selectNodes", r.selectNodes},
		{"rollout", r.rollout},
	} {
		if err := ph.run(ctx, s); err != nil {
			return reconcile.Result{}, fmt.Errorf("%s: %w", ph.name, err)
		}
	}
	if err := r.ensureProfileDaemonSet(ctx, s.log); err != nil {
		return reconcile.Result{}, fmt.Errorf("daemonset: %w", err)
	}
	st := profileStatus(s)
	if err := r.applyStatus(ctx, p.Name, st); err != nil {
		return reconcile.Result{}, err
	}
	for _, e := range s.events {
		if r.Recorder != nil {
			r.Recorder.Eventf(p, nil, e.typ, e.reason, e.action, "%s", e.note)
		}
	}
	return reconcile.Result{}, nil
}

// reconcileDelete waits for every node's agent to restore and leave the
// status, then lets the profile go.
func (r *SchedProfileReconciler) reconcileDelete(ctx context.Context, s *profileScope) error {
	if err := r.ensureProfileDaemonSet(ctx, s.log); err != nil {
		return err
	}
	if len(s.p.Status.Nodes) > 0 {
		st := s.p.Status.DeepCopy()
		st.Nodes = nil
		msg := fmt.Sprintf("restoring %d nodes: %s", len(s.p.Status.Nodes), strings.Join(limit(nodeNames(s.p.Status.Nodes), 10), ", "))
		setProfileCondition(st, s, v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonDeleting, msg)
		setProfileCondition(st, s, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonDeleting, msg)
		return r.applyStatus(ctx, s.p.Name, st)
	}
	if !controllerutil.ContainsFinalizer(s.p, v1alpha1.ProfileFinalizer) {
		return nil
	}
	obj := s.p.DeepCopy()
	controllerutil.RemoveFinalizer(obj, v1alpha1.ProfileFinalizer)
	if err := r.Client.Patch(ctx, obj, client.MergeFrom(s.p)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer: %w", err)
	}
	s.log.Info("Every node restored; released the profile")
	return r.ensureProfileDaemonSet(ctx, s.log)
}

func nodeNames(ns []v1alpha1.ProfileNodeStatus) []string {
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, n.Node)
	}
	return out
}

// selectNodes finds the nodes the profile selects and wins on.
func (r *SchedProfileReconciler) selectNodes(ctx context.Context, s *profileScope) error {
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes); err != nil {
		return err
	}
	var all v1alpha1.SchedProfileList
	if err := r.Client.List(ctx, &all); err != nil {
		return err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		w, tie := profile.Winner(all.Items, n.Labels)
		if w == nil {
			continue
		}
		if w.Name == s.p.Name {
			s.selected = append(s.selected, n.Name)
		}
		if len(tie) > 0 && (w.Name == s.p.Name || slices.Contains(tie, s.p.Name)) {
			s.tie = append(s.tie, n.Name)
		}
	}
	sort.Strings(s.selected)
	return nil
}

// maxUnavailable resolves the rollout's maxUnavailable over n nodes (at
// least 1).
func maxUnavailable(p *v1alpha1.SchedProfile, n int) int {
	v := intstr.FromInt32(1)
	if p.Spec.Rollout != nil && p.Spec.Rollout.MaxUnavailable != nil {
		v = *p.Spec.Rollout.MaxUnavailable
	}
	m, err := intstr.GetScaledValueFromIntOrPercent(&v, n, true)
	if err != nil || m < 1 {
		return 1
	}
	return m
}

// done reports whether node has finished with generation gen: applied, or
// unable to (Unsupported, Failed).
func (s *profileScope) done(node string, gen int64) bool {
	e := s.entries[node]
	if e == nil {
		return false
	}
	switch e.Phase {
	case v1alpha1.ProfileNodeApplied, v1alpha1.ProfileNodeDrifted:
		return e.Generation == gen
	case v1alpha1.ProfileNodeUnsupported, v1alpha1.ProfileNodeFailed:
		return true
	}
	return false
}

// rollout moves the current generation's rollout one step: canaries, their
// verification, then maxUnavailable nodes at a time until every selected
// node has the generation; a failed verification rolls the canaries back.
func (r *SchedProfileReconciler) rollout(ctx context.Context, s *profileScope) error {
	p, gen := s.p, s.p.Generation
	s.lastGen, s.lastKnob = p.Status.LastGoodGeneration, p.Status.LastGoodKnobs
	if p.Status.Rollout != nil && p.Status.Rollout.Generation == gen {
		s.ro = *p.Status.Rollout.DeepCopy()
	} else {
		s.ro = v1alpha1.RolloutStatus{Generation: gen, Phase: v1alpha1.RolloutRollingOut}
		if c := canary(p); c != nil && len(s.selected) > 0 {
			s.ro.Phase = v1alpha1.RolloutCanary
			s.ro.Canaries = slices.Clone(s.selected[:min(int(c.Nodes), len(s.selected))])
			s.ro.Nodes = slices.Clone(s.ro.Canaries)
			s.event(corev1.EventTypeNormal, "CanaryStarted", "Rollout", fmt.Sprintf("Generation %d: applying to canary nodes %s first", gen, strings.Join(s.ro.Canaries, ", ")))
		} else {
			s.event(corev1.EventTypeNormal, "RolloutStarted", "Rollout", fmt.Sprintf("Generation %d: rolling out to %d nodes, at most %d at a time", gen, len(s.selected), maxUnavailable(p, len(s.selected))))
		}
	}
	// Nodes that left the selection leave the rollout.
	s.ro.Nodes = slices.DeleteFunc(s.ro.Nodes, func(n string) bool { return !slices.Contains(s.selected, n) })

	switch s.ro.Phase {
	case v1alpha1.RolloutCanary:
		waiting := 0
		for _, n := range s.ro.Canaries {
			if !s.done(n, gen) {
				waiting++
			}
		}
		if waiting > 0 {
			s.ro.Message = fmt.Sprintf("waiting for %d of %d canary nodes to apply generation %d", waiting, len(s.ro.Canaries), gen)
			return nil
		}
		exp, err := r.verificationFor(s)
		if err != nil {
			return err
		}
		if err := r.Client.Create(ctx, exp); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating verification SchedExperiment %s: %w", exp.Name, err)
		}
		s.ro.Phase, s.ro.Verification = v1alpha1.RolloutVerifying, exp.Name
		s.ro.Message = fmt.Sprintf("verifying on %s with SchedExperiment %s", strings.Join(s.ro.Canaries, ", "), exp.Name)
		s.event(corev1.EventTypeNormal, "Verifying", "Verify", fmt.Sprintf("Created SchedExperiment %s comparing previous and profile on %s", exp.Name, strings.Join(s.ro.Canaries, ", ")))
	case v1alpha1.RolloutVerifying:
		exp := &v1alpha1.SchedExperiment{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: s.ro.Verification}, exp); err != nil {
			if apierrors.IsNotFound(err) {
				s.ro.Phase, s.ro.Message = v1alpha1.RolloutCanary, "the verification SchedExperiment is gone; verifying again"
				return nil
			}
			return err
		}
		s.verify = exp
		completed := meta.FindStatusCondition(exp.Status.Conditions, v1alpha1.ConditionCompleted)
		failed := meta.FindStatusCondition(exp.Status.Conditions, v1alpha1.ConditionFailed)
		switch {
		case completed != nil && completed.Status == metav1.ConditionTrue && completed.ObservedGeneration == exp.Generation:
			if exp.Status.BestVariant == verifyProfile {
				s.ro.Phase = v1alpha1.RolloutRollingOut
				s.ro.Message = "verified on the canaries: " + exp.Status.BestVariantReason
				s.event(corev1.EventTypeNormal, "VerificationPassed", "Verify", s.ro.Message)
			} else {
				s.rollBack(fmt.Sprintf("the canary verification did not show the profile better (best: %q): %s", exp.Status.BestVariant, exp.Status.BestVariantReason))
			}
		case failed != nil && failed.Status == metav1.ConditionTrue:
			s.rollBack("the canary verification failed: " + failed.Message)
		default:
			s.ro.Message = fmt.Sprintf("verifying on %s with SchedExperiment %s", strings.Join(s.ro.Canaries, ", "), exp.Name)
		}
	}
	if s.ro.Phase == v1alpha1.RolloutRollingOut {
		m := maxUnavailable(p, len(s.selected))
		busy := 0
		for _, n := range s.ro.Nodes {
			if !s.done(n, gen) {
				busy++
			}
		}
		for _, n := range s.selected {
			if busy >= m {
				break
			}
			if !slices.Contains(s.ro.Nodes, n) {
				s.ro.Nodes = append(s.ro.Nodes, n)
				if !s.done(n, gen) {
					busy++
				}
			}
		}
		left := 0
		for _, n := range s.selected {
			if !s.done(n, gen) {
				left++
			}
		}
		if left == 0 {
			s.ro.Phase, s.ro.Message = v1alpha1.RolloutComplete, fmt.Sprintf("generation %d is on all %d nodes", gen, len(s.selected))
			s.lastGen, s.lastKnob = gen, p.Spec.Knobs.DeepCopy()
			s.event(corev1.EventTypeNormal, "RolledOut", "Rollout", s.ro.Message)
		} else {
			s.ro.Message = fmt.Sprintf("%d of %d nodes still to apply generation %d (at most %d at a time)", left, len(s.selected), gen, m)
		}
	}
	if s.ro.Phase == v1alpha1.RolloutComplete {
		s.ro.Nodes = slices.Clone(s.selected)
	}
	sort.Strings(s.ro.Nodes)
	return nil
}

func (s *profileScope) rollBack(why string) {
	s.ro.Phase, s.ro.Nodes, s.ro.Message = v1alpha1.RolloutRolledBack, nil, why
	s.event(corev1.EventTypeWarning, "RolledBack", "Verify", fmt.Sprintf("Rolled back canary nodes %s: %s", strings.Join(s.ro.Canaries, ", "), why))
}

func canary(p *v1alpha1.SchedProfile) *v1alpha1.Canary {
	if p.Spec.Rollout == nil {
		return nil
	}
	return p.Spec.Rollout.Canary
}

// Variant names of a verification experiment.
const (
	verifyPrevious = "previous"
	verifyProfile  = "profile"
)

// VerificationName is the name of the SchedExperiment verifying generation
// gen of a profile.
func VerificationName(profileName string, gen int64) string {
	return names.Shorten(fmt.Sprintf("%s-verify-g%d", profileName, gen), 253)
}

// verificationFor builds the canary verification: "previous" (the values
// the canaries had before this generation: the last good generation's
// knobs, else their originals) against "profile", on the canaries, owned
// by the profile.
func (r *SchedProfileReconciler) verificationFor(s *profileScope) (*v1alpha1.SchedExperiment, error) {
	p, c := s.p, canary(s.p)
	prev := map[string]string{}
	for _, n := range s.ro.Canaries {
		if e := s.entries[n]; e != nil {
			for k, v := range e.Original {
				if _, ok := prev[k]; !ok {
					prev[k] = v
				}
			}
		}
	}
	prevKnobs, err := host.KnobsFromValues(prev)
	if err != nil {
		return nil, fmt.Errorf("the canaries' original values: %w", err)
	}
	if s.lastKnob != nil {
		overlay(&prevKnobs, s.lastKnob)
	}
	reps := c.Verify.Repetitions
	if reps < 2 {
		reps = 3
	}
	exp := &v1alpha1.SchedExperiment{
		ObjectMeta: metav1.ObjectMeta{
			Name:   VerificationName(p.Name, p.Generation),
			Labels: map[string]string{v1alpha1.ProfileLabel: names.LabelValue(p.Name), names.ManagedByLabel: names.ManagedByValue},
		},
		Spec: v1alpha1.SchedExperimentSpec{
			Mode: v1alpha1.ModeMeasure,
			NodeSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: corev1.LabelHostname, Operator: metav1.LabelSelectorOpIn, Values: slices.Clone(s.ro.Canaries),
			}}},
			MaxNodes:    ptrInt32(int32(len(s.ro.Canaries))),
			Duration:    c.Verify.Duration,
			Warmup:      &metav1.Duration{Duration: min(time.Second, c.Verify.Duration.Duration/2)},
			Repetitions: reps,
			Variants: []v1alpha1.Variant{
				{Name: verifyPrevious, Knobs: prevKnobs},
				{Name: verifyProfile, Knobs: *p.Spec.Knobs.DeepCopy()},
			},
			Workload:   *c.Verify.Workload.DeepCopy(),
			Objectives: slices.Clone(c.Verify.Objectives),
		},
	}
	if err := controllerutil.SetControllerReference(p, exp, r.Client.Scheme()); err != nil {
		return nil, err
	}
	return exp, nil
}

func ptrInt32(v int32) *int32 { return &v }

// overlay copies every knob o sets into k.
func overlay(k *v1alpha1.Knobs, o *v1alpha1.Knobs) {
	b, _ := json.Marshal(o)
	_ = json.Unmarshal(b, k)
}

// profileStatus computes the controller's part of the status and the
// kstatus conditions, from the rollout and the agents' entries. It is the
// one place the profile's conditions are decided.
func profileStatus(s *profileScope) *v1alpha1.SchedProfileStatus {
	p, gen := s.p, s.p.Generation
	st := &v1alpha1.SchedProfileStatus{
		ObservedGeneration: gen,
		Conditions:         slices.Clone(p.Status.Conditions),
		Rollout:            s.ro.DeepCopy(),
		LastGoodGeneration: s.lastGen,
		LastGoodKnobs:      s.lastKnob,
		Selected:           int32(len(s.selected)),
	}
	var notApplied []string
	for _, n := range s.selected {
		e := s.entries[n]
		if s.done(n, gen) && e.Phase != v1alpha1.ProfileNodeUnsupported && e.Phase != v1alpha1.ProfileNodeFailed {
			st.Applied++
		}
		if e != nil && (e.Phase == v1alpha1.ProfileNodeUnsupported || e.Phase == v1alpha1.ProfileNodeFailed) {
			notApplied = append(notApplied, fmt.Sprintf("%s %s: %s", n, e.Phase, e.Reason))
		}
	}
	for _, e := range p.Status.Nodes {
		if e.DriftRepairs > 0 {
			st.Drifted++
		}
		st.DriftRepairs += e.DriftRepairs
	}
	tie := ""
	if len(s.tie) > 0 {
		tie = fmt.Sprintf(" (a priority tie with another profile on %s is decided by name)", strings.Join(limit(s.tie, 5), ", "))
	}
	set := func(t string, status metav1.ConditionStatus, reason, msg string) {
		setProfileCondition(st, s, t, status, reason, msg)
	}
	switch {
	case s.ro.Phase == v1alpha1.RolloutRolledBack:
		set(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonVerificationFailed, s.ro.Message)
		set(v1alpha1.ConditionReconciling, metav1.ConditionFalse, v1alpha1.ReasonVerificationFailed, "the rollout stopped; change the spec to try again")
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonVerificationFailed, s.ro.Message)
	case s.ro.Phase == v1alpha1.RolloutComplete && len(notApplied) > 0:
		msg := "some selected nodes cannot apply the profile: " + strings.Join(limit(notApplied, 10), "; ")
		set(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonNodesNotApplied, msg)
		set(v1alpha1.ConditionReconciling, metav1.ConditionFalse, v1alpha1.ReasonNodesNotApplied, msg)
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNodesNotApplied, msg)
	case s.ro.Phase == v1alpha1.RolloutComplete:
		reason, msg := v1alpha1.ReasonRolledOut, fmt.Sprintf("generation %d applied on %d nodes%s", gen, len(s.selected), tie)
		if len(s.selected) == 0 {
			reason, msg = v1alpha1.ReasonNoSelectedNodes, "no node is selected (or another profile wins on every selected node)"
		}
		set(v1alpha1.ConditionStalled, metav1.ConditionFalse, reason, "")
		set(v1alpha1.ConditionReconciling, metav1.ConditionFalse, reason, "")
		set(v1alpha1.ConditionReady, metav1.ConditionTrue, reason, msg)
	default:
		reason := v1alpha1.ReasonRollingOut
		if s.ro.Phase == v1alpha1.RolloutVerifying {
			reason = v1alpha1.ReasonVerifying
		}
		set(v1alpha1.ConditionStalled, metav1.ConditionFalse, reason, "")
		set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, s.ro.Message+tie)
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, reason, s.ro.Message)
	}
	return st
}

func setProfileCondition(st *v1alpha1.SchedProfileStatus, s *profileScope, typ string, status metav1.ConditionStatus, reason, msg string) {
	c := metav1.Condition{Type: typ, Status: status, Reason: reason, Message: v1alpha1.Truncate(msg, 32768),
		ObservedGeneration: s.p.Generation, LastTransitionTime: s.now}
	if old := meta.FindStatusCondition(s.p.Status.Conditions, typ); old != nil && old.Status == status {
		c.LastTransitionTime = old.LastTransitionTime
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// applyStatus applies the controller's fields of the status (server-side
// apply as ProfileManager; the nodes list is the agents').
func (r *SchedProfileReconciler) applyStatus(ctx context.Context, name string, st *v1alpha1.SchedProfileStatus) error {
	st = st.DeepCopy()
	st.Nodes = nil
	body, err := json.Marshal(map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "SchedProfile",
		"metadata":   map[string]any{"name": name},
		"status":     st,
	})
	if err != nil {
		return err
	}
	obj := &v1alpha1.SchedProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := r.Client.Status().Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, body),
		client.FieldOwner(ProfileManager), client.ForceOwnership); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing status: %w", err)
	}
	return nil
}

// SetupWithManager registers the profile controller.
func (r *SchedProfileReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.Config = r.Config.withDefaults()
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list v1alpha1.SchedProfileList
		if err := r.Client.List(ctx, &list); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
		return reqs
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.SchedProfile{}).
		Owns(&v1alpha1.SchedExperiment{}).
		// A profile's selection depends on the others' (priority) and on
		// node labels: any change of either wakes every profile.
		Watches(&v1alpha1.SchedProfile{}, all).
		Watches(&corev1.Node{}, all, builder.WithPredicates(nodeChanged)).
		WithOptions(opts).
		Named("schedprofile").
		Complete(r)
}
