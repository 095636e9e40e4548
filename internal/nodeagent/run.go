package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent/calib"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
)

// DefaultStateDir is where the journal and lock live when Options leaves it
// empty (a hostPath in the cluster).
const DefaultStateDir = "/var/lib/schedlab"

// Options configure one run on this node.
type Options struct {
	// Root is the host's root directory ("/" when empty).
	Root string
	// StateDir holds the journal and the lock (DefaultStateDir when empty).
	StateDir string
	// RunID names the run: its cgroups are schedlab/<RunID>/…, its lock
	// says who holds the node. Letters, digits, '-', '_', '.'.
	RunID string
	// WorkerBinary is the schedlab binary re-executed as workers
	// (os.Executable() when empty).
	WorkerBinary string
	// NoiseThreshold is the CPU time per second (in CPUs) used by anything
	// but the workload during a window above which the window is noisy and
	// re-run. 0 means the default: 5% of the node's CPUs, at least 0.1 CPU.
	NoiseThreshold float64
	// MaxAttempts is how many times a noisy window is run in all (default 3).
	MaxAttempts int
	// Progress, when set, is told before and after every window.
	Progress func(done, total int, what string)
	// Window, when set, is handed each window's result as soon as it is
	// done (the agent writes it into the NodeRun before the run ends).
	Window func(v1alpha1.WindowResult)
	// LockWait is how long to wait for another run on this node to finish
	// (0: fail at once, naming the holder).
	LockWait time.Duration
	// Log receives structured logs.
	Log logr.Logger
	// NoCalibration skips the calibration window (calib.Measure, about two
	// seconds before the first window) that records the node's wake-up
	// constants in status.calibration, and with it the timer path's
	// measurements at each window's edges (calib.TimerPath, about 0.3 s
	// each), which are read against it.
	NoCalibration bool
	// NoTimerTrace leaves out the timer trace: without it, windows whose
	// workload sleeps on timers (and the calibration window before them)
	// record the node's timer interrupts in a tracefs instance of the
	// agent's (WindowResult.timerTrace), read after each window.
	NoTimerTrace bool
}

// DefaultNoiseThreshold is the noise threshold for a node with cpus CPUs.
func DefaultNoiseThreshold(cpus int32) float64 {
	return max(0.1, 0.05*float64(cpus))
}

func (o *Options) defaults() error {
	if o.Root == "" {
		o.Root = "/"
	}
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir
	}
	if o.RunID == "" {
		o.RunID = fmt.Sprintf("run-%d", time.Now().Unix())
	}
	if o.WorkerBinary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("worker binary: %w", err)
		}
		o.WorkerBinary = exe
	}
	if o.MaxAttempts < 1 {
		o.MaxAttempts = v1alpha1.WindowAttempts
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	return nil
}

// RestoreOnly takes the node's lock, restores whatever journal an earlier
// run left in the state directory, and returns how each change was
// restored (nil when there was no journal).
func RestoreOnly(opts Options) ([]v1alpha1.KnobRecord, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	lock, err := host.AcquireLock(host.NewFS(opts.Root), opts.StateDir, opts.RunID, opts.LockWait)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	return host.RecoverJournal(host.NewFS(opts.Root), opts.StateDir, opts.Log)
}

// Run runs spec's whole plan on this node and returns what it measured and
// how the node was restored. The status is filled as far as the run got even
// when an error is returned.
func Run(ctx context.Context, spec *v1alpha1.SchedExperimentSpec, opts Options) (status *v1alpha1.NodeRunStatus, err error) {
	now := metav1.Now()
	status = &v1alpha1.NodeRunStatus{Phase: v1alpha1.NodeRunRunning, StartTime: &now}
	// Before the first change an ending leaves the node as it was, so
	// Restored is true (the one exception, an earlier run's journal that
	// could not be restored, says otherwise).
	finish := func(phase v1alpha1.NodeRunPhase, msg string) {
		status.Phase, status.Message, status.Restored = phase, msg, true
		t := metav1.Now()
		status.LastUpdateTime, status.CompletionTime = &t, &t
	}
	if err := opts.defaults(); err != nil {
		finish(v1alpha1.NodeRunFailed, err.Error())
		return status, err
	}
	log := opts.Log.WithValues("run", opts.RunID)
	fsys := host.NewFS(opts.Root)

	lock, err := host.AcquireLock(host.NewFS(opts.Root), opts.StateDir, opts.RunID, opts.LockWait)
	if err != nil {
		finish(v1alpha1.NodeRunFailed, err.Error())
		return status, err
	}
	defer lock.Release()

	recovered, err := host.RecoverJournal(fsys, opts.StateDir, log)
	if err != nil {
		err = fmt.Errorf("restoring an earlier run: %w", err)
		finish(v1alpha1.NodeRunFailed, err.Error())
		status.Knobs, status.Restored = recovered, false
		return status, err
	}
	if len(recovered) > 0 {
		log.Info("Restored what an earlier run left", "changes", len(recovered))
	}

	caps, err := host.Detect(fsys)
	if err != nil {
		err = fmt.Errorf("detecting capabilities: %w", err)
		finish(v1alpha1.NodeRunFailed, err.Error())
		return status, err
	}
	status.Capabilities = caps
	if err := host.Validate(spec); err != nil {
		finish(v1alpha1.NodeRunFailed, err.Error())
		return status, err
	}
	if err := host.FitsNode(spec, caps); err != nil {
		finish(v1alpha1.NodeRunUnsupported, err.Error())
		return status, err
	}
	ch := host.NewChanges(fsys, host.NewJournal(opts.StateDir, opts.RunID), log)
	var traceRate float64
	var traceUnsupported string
	if !opts.NoCalibration && !opts.NoTimerTrace {
		traceRate = timerSleepRate(spec)
	}
	if !opts.NoCalibration {
		// The node's own wake-up path, measured before any knob changes;
		// the prediction next to this node's measurements uses it. A
		// failure leaves the simulator's defaults, not the run. With
		// timer sleeps in the workload the calibration's timer interrupts
		// are traced too: the windows' traces are read against it.
		var tt *timerTrace
		if traceRate > 0 {
			tt = openTimerTrace(ch, log, opts.RunID, calibTraceRate, calibTraceFor)
			if tt.inst == nil {
				traceUnsupported = tt.unsupported
			}
		}
		tt.on()
		cal, cerr := calib.Measure(ctx, calib.Options{WorkerBinary: opts.WorkerBinary})
		tt.off()
		trace := tt.finish()
		if rerr := ch.Restore(); rerr != nil {
			err = fmt.Errorf("removing the calibration's trace: %w", rerr)
			finish(v1alpha1.NodeRunFailed, err.Error())
			return status, err
		}
		if cerr != nil {
			log.Info("Calibration window failed; predictions use the default constants", "error", cerr.Error())
		} else {
			cal.TimerTrace = trace
			status.Calibration = cal
			log.Info("Calibration window", "constants", cal.Constants, "timerLatenessNs", cal.TimerLatenessNs,
				"backgroundLoad", cal.BackgroundLoad, "noiseCPU", cal.NoiseCPU, "coldWake", cal.ColdWake)
		}
	}
	reps := int(spec.RepetitionCount())
	status.StepsTotal = int32(reps * len(spec.Variants))

	r := &runner{
		spec: spec, opts: opts, log: log, fsys: fsys, caps: caps, status: status,
		ch: ch, traceRate: traceRate, traceUnsupported: traceUnsupported,
	}
	if opts.NoiseThreshold <= 0 {
		r.opts.NoiseThreshold = DefaultNoiseThreshold(caps.CPUs)
	}
	if needsCgroups(spec) {
		if r.cg, err = host.NewCgroups(fsys, caps); err != nil {
			finish(v1alpha1.NodeRunUnsupported, err.Error())
			return status, err
		}
	}

	// Restore on every ending. A panic becomes an error after the restore.
	defer func() {
		if p := recover(); p != nil {
			err = errors.Join(err, fmt.Errorf("panic: %v", p))
			status.Phase = v1alpha1.NodeRunFailed
			status.Message = err.Error()
		}
		rerr := r.ch.Restore()
		status.Knobs = r.ch.Records()
		status.Restored = rerr == nil && r.ch.AllRestored()
		if rerr == nil {
			rerr = r.ch.Journal.Remove()
		}
		if rerr != nil {
			err = errors.Join(err, fmt.Errorf("restoring the node: %w", rerr))
			status.Phase, status.Message = v1alpha1.NodeRunFailed, err.Error()
		}
		t := metav1.Now()
		status.LastUpdateTime, status.CompletionTime = &t, &t
		log.Info("Run ended", "phase", status.Phase, "restored", status.Restored)
	}()

	err = r.loop(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		status.Phase, status.Message = v1alpha1.NodeRunAborted, "aborted: "+context.Cause(ctx).Error()
		err = fmt.Errorf("run aborted: %w", context.Cause(ctx))
	case err != nil:
		status.Phase, status.Message = v1alpha1.NodeRunFailed, err.Error()
	case r.supported == 0:
		status.Phase, status.Message = v1alpha1.NodeRunUnsupported, "every variant needs a knob this node lacks"
	default:
		status.Phase = v1alpha1.NodeRunCompleted
		status.Message = fmt.Sprintf("%d windows measured", r.supported)
	}
	return status, err
}

// calibTraceRate and calibTraceFor size the calibration window's trace
// (timerTraceBufferKB): its timer sleeps (about 1 ms each, a few CPUs at a
// time) and a bound on its length (about 2 s here).
const (
	calibTraceRate = 5000
	calibTraceFor  = 8 * time.Second
)

func needsCgroups(spec *v1alpha1.SchedExperimentSpec) bool {
	for i := range spec.Workload.Groups {
		if spec.Workload.Groups[i].Session == "" {
			return true
		}
	}
	return false
}
