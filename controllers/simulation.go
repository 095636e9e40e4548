package controllers

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// SimulationPool runs the simulator's work (predictions, sweeps, the
// analysis of a finished run) off the reconcile loop, in a bounded number of
// workers: one slow experiment never holds up another's timeouts, drains or
// lock releases. It is a controller-runtime Runnable.
//
// A reconcile asks for the analysis of one experiment's generation; the
// first ask queues it and later asks return it once done. A result stays
// until Forget (after its status write succeeded), so a failed status write
// is retried with the same result instead of recomputing it. Asking for a
// newer generation, or Forget (deletion), cancels the older job's context.
type SimulationPool struct {
	analyzer Analyzer
	workers  int
	timeout  time.Duration
	// done receives the experiment of each finished job, so that its
	// controller reconciles it again.
	done chan event.GenericEvent

	mu    sync.Mutex
	cond  *sync.Cond
	jobs  map[string]*simJob // by experiment name
	queue []*simJob
	ctx   context.Context // set by Start
}

type simJob struct {
	name       string
	uid        string
	generation int64
	kind       string
	in         AnalyzeInput

	ctx    context.Context
	cancel context.CancelFunc
	done   bool
	an     *Analysis
	err    error
}

// NewSimulationPool makes a pool of workers (at least 1) whose jobs each get
// at most timeout (0: no limit).
func NewSimulationPool(an Analyzer, workers int, timeout time.Duration) *SimulationPool {
	if workers < 1 {
		workers = 1
	}
	p := &SimulationPool{analyzer: an, workers: workers, timeout: timeout,
		done: make(chan event.GenericEvent, 1024), jobs: map[string]*simJob{}}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// Events says which experiment's job has finished (a source for its
// controller).
func (p *SimulationPool) Events() <-chan event.GenericEvent { return p.done }

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the
// leader simulates.
func (p *SimulationPool) NeedLeaderElection() bool { return true }

// Start runs the workers until ctx ends, then cancels every job.
func (p *SimulationPool) Start(ctx context.Context) error {
	p.mu.Lock()
	p.ctx = ctx
	for _, j := range p.jobs {
		if j.ctx == nil {
			j.ctx, j.cancel = p.jobContext(ctx)
		}
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for i := 0; i <= p.workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.work(i == p.workers)
		}()
	}
	<-ctx.Done()
	p.mu.Lock()
	for _, j := range p.jobs {
		j.cancel()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	wg.Wait()
	return nil
}

func (p *SimulationPool) jobContext(parent context.Context) (context.Context, context.CancelFunc) {
	if p.timeout > 0 {
		return context.WithTimeout(parent, p.timeout)
	}
	return context.WithCancel(parent)
}

// measuredKind is the kind of a finished Measure run's analysis.
const measuredKind = "complete"

// next takes the job a worker runs next: the first measured run's analysis,
// else (unless measuredOnly) the first job; -1 when there is none.
func (p *SimulationPool) next(measuredOnly bool) int {
	for i, j := range p.queue {
		if j.kind == measuredKind {
			return i
		}
	}
	if measuredOnly || len(p.queue) == 0 {
		return -1
	}
	return 0
}

func (p *SimulationPool) work(measuredOnly bool) {
	for {
		p.mu.Lock()
		i := p.next(measuredOnly)
		for i < 0 && p.ctx.Err() == nil {
			p.cond.Wait()
			i = p.next(measuredOnly)
		}
		if p.ctx.Err() != nil {
			p.mu.Unlock()
			return
		}
		j := p.queue[i]
		p.queue = slices.Delete(p.queue, i, i+1)
		p.mu.Unlock()

		var an *Analysis
		err := j.ctx.Err()
		if err == nil {
			an, err = p.analyzer.Analyze(j.ctx, j.in)
			if err == nil && j.ctx.Err() != nil {
				err = j.ctx.Err()
			}
		}
		if err != nil && j.ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("the simulation took longer than its budget of %s: %w", p.timeout, err)
		}

		p.mu.Lock()
		j.done, j.an, j.err = true, an, err
		current := p.jobs[j.name] == j
		p.mu.Unlock()
		if current {
			p.done <- event.GenericEvent{Object: &v1alpha1.SchedExperiment{ObjectMeta: metav1.ObjectMeta{Name: j.name}}}
		}
	}
}

// Analyze returns the analysis of kind ("simulate", "complete") for the
// experiment's current generation: queued on the first call, done once a
// worker has finished it. A job of another generation or kind is cancelled
// and replaced.
func (p *SimulationPool) Analyze(exp *v1alpha1.SchedExperiment, kind string, in AnalyzeInput) (an *Analysis, err error, done bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if j := p.jobs[exp.Name]; j != nil {
		if j.uid == string(exp.UID) && j.generation == exp.Generation && j.kind == kind {
			return j.an, j.err, j.done
		}
		j.cancel()
	}
	j := &simJob{name: exp.Name, uid: string(exp.UID), generation: exp.Generation, kind: kind, in: in}
	j.in.Spec = in.Spec.DeepCopy()
	if p.ctx != nil {
		j.ctx, j.cancel = p.jobContext(p.ctx)
	} else {
		j.ctx, j.cancel = p.jobContext(context.Background())
	}
	p.jobs[exp.Name] = j
	p.queue = append(p.queue, j)
	p.cond.Broadcast() // the measured-only worker may be the one to take it
	return nil, nil, false
}

// Forget drops an experiment's job, cancelling it if it still runs: its
// result is in the status, or the experiment is gone.
func (p *SimulationPool) Forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if j := p.jobs[name]; j != nil {
		j.cancel()
		delete(p.jobs, name)
	}
}

// Pending is the number of jobs queued or running.
func (p *SimulationPool) Pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, j := range p.jobs {
		if !j.done {
			n++
		}
	}
	return n
}
