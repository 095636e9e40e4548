package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
)

// The agent's RBAC: it reads its experiment and NodeRun and writes the
// NodeRun's status, nothing else.
// +kubebuilder:rbac:groups=schedlab.io,resources=schedexperiments,verbs=get;list;watch
// +kubebuilder:rbac:groups=schedlab.io,resources=noderuns,verbs=get;list;watch
// +kubebuilder:rbac:groups=schedlab.io,resources=noderuns/status,verbs=update;patch

// Runner touches the node.
type Runner interface {
	// Recover restores what an earlier agent journaled and did not restore
	// (it was killed), and returns the records of what it restored.
	Recover(ctx context.Context) ([]v1alpha1.KnobRecord, error)
	// Run runs the spec's plan on the node and returns the run's status
	// (capabilities, windows, knob records, restored). When ctx is
	// cancelled it stops, restores the node and returns what it has with
	// ctx's error. It tells report what it does as it goes.
	Run(ctx context.Context, spec *v1alpha1.SchedExperimentSpec, runID string, report Report) (*v1alpha1.NodeRunStatus, error)
}

// Report is what a runner tells the agent while it runs; the agent writes it
// into the NodeRun's status at most every ProgressInterval. Both functions
// are safe to call from any goroutine.
type Report struct {
	// Progress: done of total steps (windows), and what runs now.
	Progress func(done, total int, what string)
	// Window hands over one window's measurement as soon as it is done, so
	// that the NodeRun holds every finished window while the run goes on
	// (a run cut off later keeps them).
	Window func(v1alpha1.WindowResult)
}

// Options configure an agent.
type Options struct {
	// Experiment and Node name the NodeRun the agent serves.
	Experiment, Node string
	// Runner touches the node.
	Runner Runner
	// Clock stamps the status; default the real clock.
	Clock clock.WithTicker
	// ProgressInterval is the least time between two progress writes
	// (default 5s). The final status is always written.
	ProgressInterval time.Duration
	// FinalWriteTimeout bounds the status writes after the agent was told
	// to stop (default 30s).
	FinalWriteTimeout time.Duration
	// Log of the agent.
	Log logr.Logger
	// RestoreOnly: replay the journal, report the restore into the NodeRun
	// and return, running nothing. The controller runs it in a restore-only
	// Pod on a node whose agent went away without reporting its restore;
	// Run fails while anything could not be restored, so the Pod is
	// restarted until the journal is empty.
	RestoreOnly bool
}

// Agent serves one node's NodeRun of one experiment.
type Agent struct {
	opts   Options
	cache  cache.Cache
	client client.Client
	wake   chan struct{}
	name   string // of the NodeRun
	// ended is the generation this process last ended (ran, or found cut
	// off): the cache may not show that status yet, and it must not run
	// again.
	ended int64
}

// New creates an agent whose cache holds only its NodeRun (by label) and its
// experiment (by name).
func New(cfg *rest.Config, scheme *runtime.Scheme, opts Options) (*Agent, error) {
	if opts.Experiment == "" || opts.Node == "" || opts.Runner == nil {
		return nil, errors.New("agent: experiment, node and runner are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = 5 * time.Second
	}
	if opts.FinalWriteTimeout <= 0 {
		opts.FinalWriteTimeout = 30 * time.Second
	}
	c, err := cache.New(cfg, cache.Options{
		Scheme: scheme,
		ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.NodeRun{}: {Label: labels.SelectorFromSet(labels.Set{
				v1alpha1.ExperimentLabel: names.LabelValue(opts.Experiment),
				v1alpha1.NodeLabel:       names.LabelValue(opts.Node),
			})},
			&v1alpha1.SchedExperiment{}: {Field: fields.OneTermEqualSelector("metadata.name", opts.Experiment)},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("agent cache: %w", err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		return nil, fmt.Errorf("agent client: %w", err)
	}
	return &Agent{opts: opts, cache: c, client: cl, wake: make(chan struct{}, 1), name: names.NodeRun(opts.Experiment, opts.Node)}, nil
}

func (a *Agent) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Run serves the NodeRun until ctx is done. A run in progress when ctx ends
// is cancelled (the runner restores the node) and its final status, with the
// restore record, is written before Run returns.
func (a *Agent) Run(ctx context.Context) error {
	log := a.opts.Log.WithValues("experiment", a.opts.Experiment, "node", a.opts.Node)
	// Restore before anything else: a killed predecessor may have left knobs set.
	recovered, err := a.opts.Runner.Recover(ctx)
	if err != nil {
		return fmt.Errorf("recovering the journal: %w", err)
	}
	if len(recovered) > 0 {
		log.Info("Restored knobs an earlier agent left set", "knobs", len(recovered))
	}

	cacheCtx, stopCache := context.WithCancel(context.WithoutCancel(ctx))
	defer stopCache()
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { a.poke() },
		UpdateFunc: func(any, any) { a.poke() },
		DeleteFunc: func(any) { a.poke() },
	}
	for _, obj := range []client.Object{&v1alpha1.NodeRun{}, &v1alpha1.SchedExperiment{}} {
		inf, err := a.cache.GetInformer(cacheCtx, obj)
		if err != nil {
			return fmt.Errorf("agent informer: %w", err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("agent informer: %w", err)
		}
	}
	go func() { _ = a.cache.Start(cacheCtx) }()
	if !a.cache.WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	if a.opts.RestoreOnly {
		if err := a.reportRecovery(ctx, recovered, "aborted: the agent went away mid-run; a restore-only pod restored the journal"); err != nil {
			return fmt.Errorf("writing the restore record: %w", err)
		}
		if !allOK(recovered) {
			return fmt.Errorf("%d of %d knobs could not be restored", countFailed(recovered), len(recovered))
		}
		log.Info("Restore-only run: the journal is empty", "restored", len(recovered))
		return nil
	}
	if err := a.reportRecovery(ctx, recovered, "aborted: the agent was restarted mid-run; the journal was restored"); err != nil {
		log.Error(err, "Writing the recovered restore record")
	}

	for {
		if ctx.Err() != nil {
			return nil
		}
		gen, spec, ok, err := a.pending(ctx)
		if err != nil {
			log.Error(err, "Reading the NodeRun")
		}
		if ok {
			err := a.runGeneration(ctx, log, gen, spec)
			if err == nil {
				continue // reread at once: the spec may have moved on meanwhile
			}
			log.Error(err, "Writing NodeRun status")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.wake:
		case <-a.opts.Clock.After(time.Minute): // a backstop after a failed write
		}
	}
}

// pending returns the generation to run, if any: the NodeRun asks for a
// generation it has not finished, and the experiment is at that generation
// and not being deleted.
func (a *Agent) pending(ctx context.Context) (int64, *v1alpha1.SchedExperimentSpec, bool, error) {
	nr, exp, err := a.read(ctx)
	if err != nil || nr == nil || exp == nil {
		return 0, nil, false, err
	}
	gen := nr.Spec.ExperimentGeneration
	if gen == a.ended || (nr.Status.ExperimentGeneration == gen && nr.Status.Phase.Finished()) {
		return 0, nil, false, nil
	}
	if exp.Generation != gen || !exp.DeletionTimestamp.IsZero() || !nr.DeletionTimestamp.IsZero() {
		return 0, nil, false, nil
	}
	return gen, exp.Spec.DeepCopy(), true, nil
}

// read returns the NodeRun and experiment from the cache (nil when absent).
func (a *Agent) read(ctx context.Context) (*v1alpha1.NodeRun, *v1alpha1.SchedExperiment, error) {
	nr := &v1alpha1.NodeRun{}
	if err := a.client.Get(ctx, types.NamespacedName{Name: a.name}, nr); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	if nr.Spec.NodeName != a.opts.Node || nr.Spec.ExperimentName != a.opts.Experiment {
		return nil, nil, nil
	}
	exp := &v1alpha1.SchedExperiment{}
	if err := a.client.Get(ctx, types.NamespacedName{Name: a.opts.Experiment}, exp); err != nil {
		return nr, nil, client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(nr, exp) {
		return nil, nil, nil
	}
	return nr, exp, nil
}

// stillWanted says whether the run of gen should go on.
func (a *Agent) stillWanted(ctx context.Context, gen int64) (bool, string) {
	nr, exp, err := a.read(ctx)
	switch {
	case err != nil:
		return true, ""
	case nr == nil || !nr.DeletionTimestamp.IsZero():
		return false, "the NodeRun was deleted"
	case nr.Spec.ExperimentGeneration != gen:
		return false, fmt.Sprintf("the NodeRun moved to generation %d", nr.Spec.ExperimentGeneration)
	case exp == nil || !exp.DeletionTimestamp.IsZero():
		return false, "the experiment is being deleted"
	case exp.Generation != gen:
		return false, fmt.Sprintf("the experiment's spec changed to generation %d", exp.Generation)
	}
	return true, ""
}

type progress struct {
	mu          sync.Mutex
	done, total int
	what        string
	windows     []v1alpha1.WindowResult
	dirty       bool
}

// runGeneration runs one generation to its end and writes its status.
func (a *Agent) runGeneration(ctx context.Context, log logr.Logger, gen int64, spec *v1alpha1.SchedExperimentSpec) error {
	log = log.WithValues("generation", gen)
	start := metav1.NewTime(a.opts.Clock.Now())
	st := v1alpha1.NodeRunStatus{
		Phase: v1alpha1.NodeRunRunning, ExperimentGeneration: gen, Message: "starting",
		StartTime: &start, LastUpdateTime: &start,
	}
	if err := a.writeStatus(ctx, &st); err != nil {
		return err
	}
	log.Info("Starting run")

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var p progress
	type result struct {
		st  *v1alpha1.NodeRunStatus
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := a.opts.Runner.Run(runCtx, spec, names.RunID(a.name, gen), Report{
			Progress: func(d, t int, what string) {
				p.mu.Lock()
				p.done, p.total, p.what, p.dirty = d, t, what, true
				p.mu.Unlock()
			},
			Window: func(w v1alpha1.WindowResult) {
				p.mu.Lock()
				p.windows, p.dirty = append(p.windows, *w.DeepCopy()), true
				p.mu.Unlock()
			},
		})
		done <- result{s, err}
	}()

	ticker := a.opts.Clock.NewTicker(a.opts.ProgressInterval)
	defer ticker.Stop()
	stopReason := ""
	ctxDone := ctx.Done()
	for {
		select {
		case res := <-done:
			// The run's context is a child of ctx: on SIGTERM the runner may
			// return before this loop has seen ctx.Done (select picks among
			// ready cases at random), and that is still a stop, not a failure.
			if stopReason == "" && ctx.Err() != nil {
				stopReason = "the agent was told to stop (SIGTERM)"
			}
			return a.finish(ctx, log, &st, res.st, res.err, stopReason)
		case <-ctxDone:
			ctxDone = nil
			if stopReason == "" {
				stopReason = "the agent was told to stop (SIGTERM)"
				cancel(errors.New(stopReason))
			}
		case <-a.wake:
			if ok, why := a.stillWanted(ctx, gen); !ok && stopReason == "" {
				stopReason = why
				log.Info("Aborting run", "reason", why)
				cancel(errors.New(why))
			}
		case <-ticker.C():
			p.mu.Lock()
			dirty := p.dirty
			st.StepsDone, st.StepsTotal, st.Message = int32(p.done), int32(p.total), p.what
			if len(p.windows) > len(st.Windows) && len(p.windows) <= v1alpha1.MaxWindows {
				st.Windows = append(st.Windows, p.windows[len(st.Windows):]...)
			}
			p.dirty = false
			p.mu.Unlock()
			if dirty && stopReason == "" {
				now := metav1.NewTime(a.opts.Clock.Now())
				st.LastUpdateTime = &now
				if err := a.writeStatus(ctx, &st); err != nil {
					log.V(1).Info("Progress write failed", "err", err.Error())
				}
			}
		}
	}
}

// finish writes the run's final status, even when ctx is done.
func (a *Agent) finish(ctx context.Context, log logr.Logger, st, res *v1alpha1.NodeRunStatus, runErr error, stopReason string) error {
	final := v1alpha1.NodeRunStatus{}
	if res != nil {
		final = *res.DeepCopy()
	}
	final.ExperimentGeneration = st.ExperimentGeneration
	final.StartTime = st.StartTime
	now := metav1.NewTime(a.opts.Clock.Now())
	final.LastUpdateTime, final.CompletionTime = &now, &now
	if final.StepsTotal == 0 {
		final.StepsDone, final.StepsTotal = st.StepsDone, st.StepsTotal
	}
	switch {
	case stopReason != "":
		final.Phase = v1alpha1.NodeRunAborted
		final.Message = "aborted: " + stopReason
	case runErr != nil:
		final.Phase = v1alpha1.NodeRunFailed
		final.Message = runErr.Error()
	case res == nil:
		final.Phase = v1alpha1.NodeRunFailed
		final.Message = "the runner returned no status"
	case final.Phase == "" || !final.Phase.Finished():
		final.Phase = v1alpha1.NodeRunCompleted
	}
	if res == nil && runErr == nil {
		final.Restored = true
	}
	a.ended = final.ExperimentGeneration
	if err := a.writeFinal(ctx, log, &final); err != nil {
		return err
	}
	log.Info("Finished run", "phase", final.Phase, "restored", final.Restored, "windows", len(final.Windows))
	return nil
}

// reportRecovery ends a run an earlier agent was cut off in (killed, its
// node rebooted): the NodeRun says Running, or finished without its
// restore. The journal has been restored by now; the run is Aborted (not
// run again: a crashing agent must not loop), with the restore record.
func (a *Agent) reportRecovery(ctx context.Context, recs []v1alpha1.KnobRecord, abortMessage string) error {
	nr := &v1alpha1.NodeRun{}
	if err := a.client.Get(ctx, types.NamespacedName{Name: a.name}, nr); err != nil {
		return client.IgnoreNotFound(err)
	}
	if nr.Status.StartTime == nil || (nr.Status.Phase.Finished() && nr.Status.Restored) {
		return nil
	}
	st := nr.Status.DeepCopy()
	if len(recs) > 0 {
		st.Knobs = recs
	}
	st.Restored = allOK(recs)
	if !st.Phase.Finished() {
		st.Phase, st.Message = v1alpha1.NodeRunAborted, abortMessage
	}
	now := metav1.NewTime(a.opts.Clock.Now())
	st.LastUpdateTime = &now
	a.ended = st.ExperimentGeneration
	return a.writeStatus(ctx, st)
}

func countFailed(recs []v1alpha1.KnobRecord) int {
	n := 0
	for _, r := range recs {
		if !r.OK {
			n++
		}
	}
	return n
}

func allOK(recs []v1alpha1.KnobRecord) bool {
	for _, r := range recs {
		if !r.OK {
			return false
		}
	}
	return true
}

// writeFinal writes a run's final status, retrying with backoff (1s doubling
// to 1m) while the API server refuses it, so that a passing outage does not
// lose the measurements. Once ctx is done (the agent is told to stop) it
// keeps trying for FinalWriteTimeout more and gives up.
func (a *Agent) writeFinal(ctx context.Context, log logr.Logger, st *v1alpha1.NodeRunStatus) error {
	backoff := time.Second
	var stopAt time.Time
	for {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.opts.FinalWriteTimeout)
		err := a.writeStatus(wctx, st)
		cancel()
		if err == nil {
			return nil
		}
		now := a.opts.Clock.Now()
		if ctx.Err() != nil {
			if stopAt.IsZero() {
				stopAt = now.Add(a.opts.FinalWriteTimeout)
			}
			if !now.Before(stopAt) {
				return err
			}
		}
		log.Error(err, "Writing the final status; trying again", "in", backoff)
		select {
		case <-a.opts.Clock.After(backoff):
		case <-ctx.Done():
			if stopAt.IsZero() {
				stopAt = a.opts.Clock.Now().Add(a.opts.FinalWriteTimeout)
			}
			<-a.opts.Clock.After(min(backoff, time.Second))
		}
		backoff = min(2*backoff, time.Minute)
	}
}

// writeStatus replaces the NodeRun's status through the status subresource.
// The agent is the status's only writer, so the whole status is replaced
// with a JSON patch and there is nothing to conflict with.
func (a *Agent) writeStatus(ctx context.Context, st *v1alpha1.NodeRunStatus) error {
	if len(st.Knobs) > v1alpha1.MaxKnobRecords {
		st = st.DeepCopy()
		st.Knobs = v1alpha1.AggregateKnobRecords(st.Knobs, v1alpha1.MaxKnobRecords)
	}
	patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/status", "value": st}})
	if err != nil {
		return err
	}
	nr := &v1alpha1.NodeRun{ObjectMeta: metav1.ObjectMeta{Name: a.name}}
	if err := a.client.Status().Patch(ctx, nr, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("writing NodeRun %s status: %w", a.name, err)
	}
	return nil
}
