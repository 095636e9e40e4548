package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
)

// +kubebuilder:rbac:groups=schedlab.io,resources=schedexperiments,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=schedlab.io,resources=schedexperiments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=schedlab.io,resources=schedexperiments/finalizers,verbs=update
// +kubebuilder:rbac:groups=schedlab.io,resources=noderuns,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core,resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,namespace=schedlab-system,resources=daemonsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=schedlab-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=core,namespace=schedlab-system,resources=events,verbs=create;patch

// SchedExperimentReconciler runs SchedExperiments: it selects and locks
// nodes, deploys the agents and their NodeRuns, aggregates what the agents
// report next to the simulator's predictions, and restores and unlocks the
// nodes at the end, on failure and on deletion.
type SchedExperimentReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Clock is the source of time for deadlines and timestamps.
	Clock    clock.PassiveClock
	Analyzer Analyzer
	Config   Config
	// Metrics receives the experiment's state after every reconcile; nil
	// records nothing.
	Metrics *Metrics
	// Simulations runs the analyzer off the reconcile loop. Nil runs it
	// inline (unit tests); SetupWithManager makes one when it is nil.
	Simulations *SimulationPool
}

// phase is one step of a reconcile. It reads and extends the scope; an
// error stops the reconcile and is returned wrapped with the phase's name.
type phase struct {
	name string
	run  func(ctx context.Context, s *scope) error
}

// scope is what one reconcile observed and decided.
type scope struct {
	exp    *v1alpha1.SchedExperiment       // as read; never modified
	status *v1alpha1.SchedExperimentStatus // the status being computed
	log    logr.Logger
	now    metav1.Time
	holder string // this experiment's Lease holderIdentity

	runs   []v1alpha1.NodeRun      // NodeRuns of the experiment (owner index)
	ds     *appsv1.DaemonSet       // the agent DaemonSet, nil when absent
	leases []coordinationv1.Lease  // node Leases held by the experiment
	nodes  map[string]*corev1.Node // chosen nodes by name (absent when deleted)
	chosen []string                // chosen node names, sorted
	// nameTaken: nodes whose NodeRun name another experiment's NodeRun has.
	nameTaken map[string]string

	requeueAfter time.Duration  // 0: no time-based requeue needed
	stop         bool           // later phases are skipped
	released     bool           // the finalizer was removed: no status write
	events       []pendingEvent // emitted after the status write
}

type pendingEvent struct {
	typ, reason, action, note string
}

func (s *scope) requeueIn(d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if s.requeueAfter == 0 || d < s.requeueAfter {
		s.requeueAfter = d
	}
}

func (s *scope) event(typ, reason, action, note string) {
	s.events = append(s.events, pendingEvent{typ: typ, reason: reason, action: action, note: note})
}

// Reconcile brings one SchedExperiment a step closer to done.
func (r *SchedExperimentReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	exp := &v1alpha1.SchedExperiment{}
	if err := r.Client.Get(ctx, req.NamespacedName, exp); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forget(req.Name)
			r.forgetSimulation(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	logger := log.FromContext(ctx).WithValues("schedexperiment", klog.KObj(exp), "generation", exp.Generation)
	ctx = log.IntoContext(ctx, logger)

	// The finalizer goes on before anything touches a node, so that a
	// deleted experiment can never strand one.
	if exp.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(exp, v1alpha1.Finalizer) {
		orig := exp.DeepCopy()
		controllerutil.AddFinalizer(exp, v1alpha1.Finalizer)
		if err := r.Client.Patch(ctx, exp, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, ignoreConflict(fmt.Errorf("adding finalizer: %w", err))
		}
		logger.V(2).Info("Added finalizer")
		return reconcile.Result{}, nil // the update brings us back
	}
	if !exp.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(exp, v1alpha1.Finalizer) {
		return reconcile.Result{}, nil
	}

	s := &scope{
		exp:    exp,
		status: exp.Status.DeepCopy(),
		log:    logger,
		now:    metav1.NewTime(r.Clock.Now().Truncate(time.Second)),
		holder: names.LeaseHolder(exp.Name, string(exp.UID)),
	}
	phases := r.phases()
	if !exp.DeletionTimestamp.IsZero() {
		phases = r.deletionPhases()
	}
	var err error
	for _, p := range phases {
		if perr := p.run(ctx, s); perr != nil {
			err = fmt.Errorf("%s: %w", p.name, perr)
			break
		}
		if s.stop {
			break
		}
	}
	if isTerminal(exp) || !exp.DeletionTimestamp.IsZero() {
		// The result is in the status as read, or no longer wanted; until
		// then it waits in the pool, also when a status write fails.
		r.forgetSimulation(exp.Name)
	}
	if s.released {
		r.Metrics.forget(exp.Name)
		r.emit(s)
		return reconcile.Result{}, err
	}
	if err == nil {
		s.status.ObservedGeneration = exp.Generation
	}
	if ferr := r.storeFullResults(ctx, s, boundStatus(s)); ferr != nil {
		err = errors.Join(err, fmt.Errorf("storing the full results: %w", ferr))
	}
	if werr := r.writeStatus(ctx, s); werr != nil {
		werr = ignoreConflict(werr)
		if werr != nil && r.Recorder != nil {
			// Said where a person looks; the workqueue backs off, and a
			// simulation's result waits in the pool instead of being
			// computed again.
			r.Recorder.Eventf(exp, nil, corev1.EventTypeWarning, "StatusWriteFailed", "WriteStatus", "%s", v1alpha1.Truncate(werr.Error(), 1024))
		}
		return reconcile.Result{}, errors.Join(err, werr)
	}
	r.Metrics.observe(exp, s.status, s.runs)
	r.emit(s)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: s.requeueAfter}, nil
}

// writeStatus writes the computed status once, when it changed. A conflict
// means a newer object is on its way through the watch, which reconciles
// again.
func (r *SchedExperimentReconciler) writeStatus(ctx context.Context, s *scope) error {
	if equality.Semantic.DeepEqual(&s.exp.Status, s.status) {
		return nil
	}
	obj := s.exp.DeepCopy()
	obj.Status = *s.status
	if err := r.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(s.exp, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("writing status: %w", err)
	}
	return nil
}

func (r *SchedExperimentReconciler) emit(s *scope) {
	if r.Recorder == nil {
		return
	}
	for _, e := range s.events {
		r.Recorder.Eventf(s.exp, nil, e.typ, e.reason, e.action, "%s", e.note)
	}
}

func (r *SchedExperimentReconciler) forgetSimulation(name string) {
	if r.Simulations != nil {
		r.Simulations.Forget(name)
	}
}

func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}
