package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/procfs"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent/calib"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
	"github.com/schedlab/schedlab/internal/nodeagent/workload"
	"github.com/schedlab/schedlab/internal/simengine"
)

// runner is one run's state.
type runner struct {
	spec   *v1alpha1.SchedExperimentSpec
	opts   Options
	log    logr.Logger
	fsys   host.FS
	caps   *v1alpha1.NodeCapabilities
	cg     *host.Cgroups
	ch     *host.Changes
	status *v1alpha1.NodeRunStatus

	windows   int // windows started, for worker run ids
	supported int // windows measured

	// lastEdge is the last timer-path edge measured after a window's
	// attempt (nil when none, or when anything ran since: another window,
	// a failed measurement), and lastEdgeAt when its measurement ended. The
	// next attempt's before-edge reuses it (see beforeEdge).
	lastEdge       *v1alpha1.TimerPathSample
	lastEdgeOthers []v1alpha1.TimerPathSample // its other CPUs' samples
	lastEdgeAt     time.Time

	// traceRate is the workload's timer sleeps a second (timerSleepRate):
	// windows with any record the timer interrupts in a trace
	// (timerTrace); 0: no trace. traceUnsupported is why the node cannot
	// trace, once a trace found it: later windows do not try again.
	traceRate        float64
	traceUnsupported string
}

// edgeReuse is how old an after-edge may be for the next attempt to take it
// as its before-edge. Between two windows the loop only records the first
// window's result and reports progress (microseconds: the cluster's agent
// hands both to its reporter under a mutex), so the edge is well within it;
// an edge older than this, about three times the measurement's own 0.33 s,
// no longer lies "just before" the window, and the before-edge is measured
// afresh.
const edgeReuse = time.Second

// loop runs every repetition of every variant, interleaved A B A B.
func (r *runner) loop(ctx context.Context) error {
	reps := int(r.spec.RepetitionCount())
	total := int(r.status.StepsTotal)
	for rep := 0; rep < reps; rep++ {
		for vi := range r.spec.Variants {
			v := &r.spec.Variants[vi]
			if err := ctx.Err(); err != nil {
				return err
			}
			what := fmt.Sprintf("repetition %d/%d, variant %s", rep+1, reps, v.Name)
			r.progress(what)
			res := v1alpha1.WindowResult{Variant: v.Name, Repetition: int32(rep)}
			settings, err := host.Plan(r.caps, &v.Knobs)
			var ue *host.UnsupportedError
			switch {
			case errors.As(err, &ue):
				res.Unsupported = ue.Reason
				r.log.Info("Variant unsupported on this node", "variant", v.Name, "reason", ue.Reason)
			case err != nil:
				return fmt.Errorf("variant %s: %w", v.Name, err)
			default:
				if err := r.measure(ctx, v, rep, settings, &res); err != nil {
					if !errors.As(err, &ue) {
						return fmt.Errorf("%s: %w", what, err)
					}
					res.Unsupported = ue.Reason
				} else {
					r.supported++
				}
			}
			r.status.Windows = append(r.status.Windows, res)
			if r.opts.Window != nil {
				r.opts.Window(res)
			}
			r.status.StepsDone++
			t := metav1.Now()
			r.status.LastUpdateTime = &t
			if r.opts.Progress != nil {
				r.opts.Progress(int(r.status.StepsDone), total, what+" done")
			}
		}
	}
	return nil
}

func (r *runner) progress(what string) {
	if r.opts.Progress != nil {
		r.opts.Progress(int(r.status.StepsDone), int(r.status.StepsTotal), what)
	}
}

// measure runs one variant's window, re-running it while it is noisy or
// perturbed (the workers broke their invariants), up to MaxAttempts.
func (r *runner) measure(ctx context.Context, v *v1alpha1.Variant, rep int, settings []host.Setting, res *v1alpha1.WindowResult) error {
	for attempt := 1; attempt <= r.opts.MaxAttempts; attempt++ {
		before, beforeOthers := r.beforeEdge(ctx, v.Name, rep)
		r.lastEdge, r.lastEdgeOthers = nil, nil // the window runs: nothing measured before it is "just after" anything any more
		m, err := r.window(ctx, settings, rep)
		if err != nil {
			return err
		}
		after, afterOthers := r.timerPath(ctx, "after", v.Name, rep)
		if after != nil {
			r.lastEdge, r.lastEdgeOthers, r.lastEdgeAt = after, afterOthers, time.Now()
		}
		res.TimerPath = nil
		if before != nil || after != nil {
			res.TimerPath = &v1alpha1.WindowTimerPath{Before: before, After: after, BeforeOtherCPUs: beforeOthers, AfterOtherCPUs: afterOthers}
		}
		res.Attempts = int32(attempt)
		res.Groups, res.NoiseCPU, res.NoiseSources = m.groups, m.noise, m.sources
		res.ForeignCgroups = m.cgroups
		res.Noisy = m.noise > r.opts.NoiseThreshold
		res.Perturbed, res.PerturbedReason = m.perturbed != "", m.perturbed
		res.HostPauses = m.pauses
		res.TimerTrace = m.timerTrace
		if !res.Noisy && !res.Perturbed {
			return nil
		}
		if attempt < r.opts.MaxAttempts && len(res.Rejected) < 8 {
			var named float64
			for _, s := range m.sources {
				named += s.CPU
			}
			res.Rejected = append(res.Rejected, v1alpha1.RejectedAttempt{Attempt: int32(attempt), Noisy: res.Noisy,
				NoiseCPU: m.noise, NamedNoiseCPU: math.Round(named*1000) / 1000, NoiseSources: FormatNoiseSources(m.sources),
				PerturbedReason: m.perturbed})
		}
		if res.Noisy {
			r.log.Info("Noisy window", "variant", v.Name, "repetition", rep, "attempt", attempt, "noiseCPU", m.noise, "threshold", r.opts.NoiseThreshold, "sources", FormatNoiseSources(m.sources))
		}
		if res.Perturbed {
			r.log.Info("Perturbed window", "variant", v.Name, "repetition", rep, "attempt", attempt, "reason", m.perturbed)
		}
	}
	return nil
}

// beforeEdge is the timer path just before a window's attempt: the previous
// attempt's after-edge (of this window or the previous one) when that was
// the last thing the agent measured on the node and is less than edgeReuse
// old, the same sample; a new measurement otherwise: the run's first
// attempt's, and one after an after-edge that failed. (A variant this node
// does not support changes nothing and measures nothing: it does not stand
// between two windows.) An after-edge is measured once the window's
// workload has stopped and its knobs are back, so the node is in the state
// the next before-edge would measure: measuring it again, 0.33 s back to
// back, only doubled the edges' cost.
func (r *runner) beforeEdge(ctx context.Context, variant string, rep int) (*v1alpha1.TimerPathSample, []v1alpha1.TimerPathSample) {
	if r.lastEdge != nil && r.status.Calibration != nil && ctx.Err() == nil && time.Since(r.lastEdgeAt) < edgeReuse {
		r.log.V(1).Info("Timer path: the previous window's after-edge", "edge", "before", "variant", variant, "repetition", rep)
		var others []v1alpha1.TimerPathSample
		for i := range r.lastEdgeOthers {
			others = append(others, *r.lastEdgeOthers[i].DeepCopy())
		}
		return r.lastEdge.DeepCopy(), others
	}
	return r.timerPath(ctx, "before", variant, rep)
}

// timerPath measures the node's timer path (calib.TimerPath, on the last
// CPU, then calib.TimerPathOtherCPUs on the others) at one edge of a
// window's attempt, outside it: before its knobs are set, or after its
// workload has stopped and its knobs are back. Only with a calibration
// window, which its figures are read against; nil without one, or when it
// fails (the window is measured all the same; the other CPUs' figures are
// nil when they fail alone).
func (r *runner) timerPath(ctx context.Context, edge, variant string, rep int) (*v1alpha1.TimerPathSample, []v1alpha1.TimerPathSample) {
	if r.status.Calibration == nil || ctx.Err() != nil {
		return nil, nil
	}
	windowStep("timer path")
	tp, err := calib.TimerPath(ctx, 0)
	if err != nil {
		r.log.Info("Timer path not measured", "edge", edge, "variant", variant, "repetition", rep, "error", err.Error())
		return nil, nil
	}
	r.log.V(1).Info("Timer path", "edge", edge, "variant", variant, "repetition", rep, "cpu", tp.CPU,
		"idleTimerNs", tp.IdleTimerNs, "busyTimerNs", tp.BusyTimerNs, "idleCPUIdle", tp.IdleCPUIdle, "durationNs", tp.DurationNs)
	others, err := calib.TimerPathOtherCPUs(ctx, 0)
	if err != nil {
		r.log.Info("Timer path of the other CPUs not measured", "edge", edge, "variant", variant, "repetition", rep, "error", err.Error())
		return tp, nil
	}
	for _, o := range others {
		r.log.V(1).Info("Timer path", "edge", edge, "variant", variant, "repetition", rep, "cpu", o.CPU,
			"idleTimerNs", o.IdleTimerNs, "busyTimerNs", o.BusyTimerNs, "idleCPUIdle", o.IdleCPUIdle, "durationNs", o.DurationNs)
	}
	return tp, others
}

// window applies the knobs, creates the cgroups, starts the workload, waits
// for the warmup, measures one window and puts everything back, whatever
// happens.
func (r *runner) window(ctx context.Context, settings []host.Setting, rep int) (m measured, err error) {
	windowStep("knobs")
	defer func() {
		if rerr := r.ch.Restore(); rerr != nil {
			err = errors.Join(err, fmt.Errorf("restoring after the window: %w", rerr))
		}
		windowStep("restored")
	}()
	// The timer trace's instance, before the window's knobs: the restore
	// above removes it whatever happens (it is journalled).
	var tt *timerTrace
	switch {
	case r.traceRate <= 0:
	case r.traceUnsupported != "":
		tt = &timerTrace{unsupported: r.traceUnsupported}
	default:
		windowStep("trace open")
		tt = openTimerTrace(r.ch, r.log, r.opts.RunID, r.traceRate, r.spec.Duration.Duration+r.spec.Duration.Duration/5+time.Second)
		if tt.inst == nil {
			r.traceUnsupported = tt.unsupported
		}
	}
	if err := r.ch.Apply(settings); err != nil {
		return measured{}, err
	}
	var replicas []host.Replica
	if r.cg != nil {
		if replicas, err = r.cg.Create(r.ch, r.opts.RunID, r.spec.Workload.Groups); err != nil {
			return measured{}, err
		}
	}
	r.windows++
	wid := fmt.Sprintf("%s.%d", r.opts.RunID, r.windows)
	if err := r.ch.NoteWorkers(r.opts.RunID + "."); err != nil {
		return measured{}, err
	}
	wspec := workload.Spec{Tasks: tasks(r.spec, replicas, rep), WorkerBinary: r.opts.WorkerBinary, RunID: wid}
	// Package workload opens these files itself: give it their paths as
	// this process sees them (under Options.Root).
	for i := range wspec.Tasks {
		if wspec.Tasks[i].CgroupProcs != "" {
			wspec.Tasks[i].CgroupProcs = r.fsys.Abs(wspec.Tasks[i].CgroupProcs)
		}
	}
	if r.cg != nil {
		wspec.RootProcs = r.fsys.Abs(r.cg.RootProcs())
	}
	// The trace is read once the workload has stopped (deferred after
	// set.Stop below, before the restore): a reader during the window
	// would take the CPU of what it records.
	defer func() {
		if tt == nil {
			return
		}
		if t := tt.finish(); err == nil {
			m.timerTrace = t
		}
		windowStep("trace read")
	}()
	set, err := workload.Start(ctx, wspec)
	if err != nil {
		return measured{}, err
	}
	defer func() {
		if serr := set.Stop(); serr != nil {
			err = errors.Join(err, serr)
		}
	}()
	warm := time.Second
	if r.spec.Warmup != nil {
		warm = r.spec.Warmup.Duration
	}
	if err := sleep(ctx, warm); err != nil {
		return measured{}, err
	}

	// Every process's counters (to name the noise sources) are read just
	// before the workload's window and just after it, never inside: that
	// reading opens a few files of every thread on the node, milliseconds
	// of the agent's CPU at once on the workload's CPUs (runs of 5-17 ms
	// were traced 0.25 s into a window and at its end, and the probes
	// waited behind them). The noise sources' rates are over the interval
	// between the two readings.
	procsBefore, err := r.readProcs()
	if err != nil {
		return measured{}, err
	}
	// That reading's garbage is collected now, before the window: left to
	// the runtime, the collection it called for came inside the window
	// when the window's own allocations reached the heap's goal (in two of
	// four 500 ms windows of TestWindowReadsProcsOutside).
	runtime.GC()
	// The node and cgroup counters, a few small reads, are read inside the
	// workload's window (opening and closing it takes a while with many
	// workers on a busy node), and turned into rates over their own
	// interval.
	if err := set.Begin(); err != nil {
		return measured{}, err
	}
	windowStep("begin")
	tt.on()
	// The agent's own counters, a few threads, at the window's edges: its
	// entry among the noise sources is what it did inside the window, not
	// its readings of every process around it.
	self := r.selfPID()
	selfBegin, selfOKBegin := r.readOneProc(self)
	before, err := r.sample(replicas)
	if err != nil {
		return measured{}, err
	}
	if err := sleep(ctx, r.spec.Duration.Duration-time.Since(before.at)); err != nil {
		return measured{}, err
	}
	tt.off()
	after, err := r.sample(replicas)
	if err != nil {
		return measured{}, err
	}
	win, err := set.End()
	if err != nil {
		return measured{}, err
	}
	selfEnd, selfOKEnd := r.readOneProc(self)
	windowStep("end")
	procsAfter, err := r.readProcs()
	if err != nil {
		return measured{}, err
	}
	if selfOKBegin && selfOKEnd && procsBefore.procs != nil && procsAfter.procs != nil {
		procsBefore.procs[self], procsAfter.procs[self] = selfBegin, selfEnd
	}
	return r.metrics(win, replicas, before, after, procsBefore, procsAfter), nil
}

// onWindowStep, when set (by tests), is told each step of a window as it
// happens: "knobs" before its knobs are set and "restored" once they are
// back (everything of the window lies between the two), "procs start" and
// "procs" before and after a reading of every process's counters, "begin"
// and "end" when the workload's window opens and closes; "timer path" as a
// measurement of the timer path starts (runner.timerPath, outside the
// window; an edge reused by beforeEdge measures nothing and says nothing);
// in a window with a timer trace, "trace open" as its instance is made
// (after "knobs") and "trace read" once it is read (before "restored").
var onWindowStep func(step string)

func windowStep(step string) {
	if onWindowStep != nil {
		onWindowStep(step)
	}
}

// procsSample is every process's CPU time, by pid, read at one instant,
// and the cpu hierarchy's top-level cgroups other than schedlab's, by path
// (nil without a cpu hierarchy).
type procsSample struct {
	at      time.Time
	procs   map[int]procCPU
	cgroups map[string]cgroupSample
}

// readProcs reads every process's counters under the host's /proc (see
// readProcCPU).
func (r *runner) readProcs() (procsSample, error) {
	windowStep("procs start")
	s := procsSample{at: time.Now()}
	pfs, err := procfs.NewFS(r.fsys.Abs("/proc"))
	if err != nil {
		return s, err
	}
	s.procs = readProcCPU(pfs, r.fsys.Abs("/proc"))
	s.at = s.at.Add(time.Since(s.at) / 2)
	if r.caps != nil {
		// After the threads' counters: the threads it lists are among them.
		s.cgroups = readForeignCgroups(r.fsys, r.caps.CgroupVersion, r.caps.CgroupCPUPath)
	}
	windowStep("procs")
	return s, nil
}

// selfPID is the agent's own pid under the host's /proc (the pid its
// "self" link names there, in the host's pid namespace when the agent runs
// in a container's); 0 when it cannot be read.
func (r *runner) selfPID() int {
	l, err := os.Readlink(filepath.Join(r.fsys.Abs("/proc"), "self"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(l)
	if err != nil {
		return 0
	}
	return pid
}

// readOneProc reads one process's counters under the host's /proc.
func (r *runner) readOneProc(pid int) (procCPU, bool) {
	if pid <= 0 {
		return procCPU{}, false
	}
	pfs, err := procfs.NewFS(r.fsys.Abs("/proc"))
	if err != nil {
		return procCPU{}, false
	}
	p, err := pfs.Proc(pid)
	if err != nil {
		return procCPU{}, false
	}
	return procCPUOf(p, r.fsys.Abs("/proc"))
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sample is the node's busy CPU time and each replica's own cgroup CPU time
// at one instant.
type sample struct {
	busy  time.Duration
	at    time.Time
	usage map[string]time.Duration // replica dir → own CPU time (without child replicas)
	// usageAt is when each usage was read (the middle of its reading): a
	// starved agent reads one cgroup and the next far apart, so each
	// replica's rate is over its own interval.
	usageAt map[string]time.Time
}

func (r *runner) sample(replicas []host.Replica) (sample, error) {
	s := sample{usage: map[string]time.Duration{}, usageAt: map[string]time.Time{}, at: time.Now()}
	pfs, err := procfs.NewFS(r.fsys.Abs("/proc"))
	if err != nil {
		return s, err
	}
	st, err := pfs.Stat()
	if err != nil {
		return s, fmt.Errorf("reading /proc/stat: %w", err)
	}
	c := st.CPUTotal
	busy := c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
	s.busy = time.Duration(busy * float64(time.Second))
	for _, rep := range replicas {
		r0 := time.Now()
		u, _, err := r.cg.Usage(rep.Dir)
		if err != nil {
			return s, err
		}
		for _, child := range rep.Children {
			cu, _, err := r.cg.Usage(child)
			if err != nil {
				return s, err
			}
			u -= cu
		}
		s.usage[rep.Dir] = u
		s.usageAt[rep.Dir] = r0.Add(time.Since(r0) / 2)
	}
	return s, nil
}

// measured is what one window measured.
type measured struct {
	groups    []v1alpha1.GroupMeasurement
	noise     float64                  // CPUs used by everything but the workload
	sources   []v1alpha1.NoiseSource   // who used them (noiseSources)
	cgroups   []v1alpha1.ForeignCgroup // the top-level cgroups' load (foreignCgroups)
	perturbed string                   // which groups' workers broke their invariants, and how ("" if none did)
	pauses    *v1alpha1.HostPauseMeasurement
	// timerTrace is the window's timer interrupt lateness (nil: not traced).
	timerTrace *v1alpha1.TimerTrace
}

// metrics turns a window into per-group metrics: group CPU from cgroup
// accounting where the group has cgroups, from the tasks' schedstat sums for
// session groups; the rest from the workload's per-task statistics. Its
// noise is the CPUs used by everything else over the window, and its
// sources the processes that used the most of them.
func (r *runner) metrics(win *workload.Window, replicas []host.Replica, before, after sample, procsBefore, procsAfter procsSample) measured {
	secs := win.Duration.Seconds()
	wall := after.at.Sub(before.at).Seconds()
	cgroupCPU := map[string]float64{}
	hasCgroup := map[string]bool{}
	for _, rep := range replicas {
		hasCgroup[rep.Group] = true
		cgroupCPU[rep.Group] += (after.usage[rep.Dir] - before.usage[rep.Dir]).Seconds() / after.usageAt[rep.Dir].Sub(before.usageAt[rep.Dir]).Seconds()
	}
	var out []v1alpha1.GroupMeasurement
	var perturbed []string
	var total, tasksCPU float64
	workers := map[int]bool{}
	for i := range win.Tasks {
		tasksCPU += win.Tasks[i].CPU(win)
		workers[win.Tasks[i].PID] = true
	}
	for i := range r.spec.Workload.Groups {
		g := &r.spec.Workload.Groups[i]
		n := int(g.ReplicaCount()) * int(g.TaskCount())
		if n == 0 {
			continue
		}
		m := workload.GroupMetrics(win, g.Name)
		r.log.V(1).Info("Measured group", "group", g.Name, "cgroupCPU", cgroupCPU[g.Name], "tasksCPU", m.CPU)
		if hasCgroup[g.Name] {
			m.CPU = cgroupCPU[g.Name]
			m.CPUPerTask = m.CPU / float64(n)
		}
		total += m.CPU
		inv := workload.GroupInvariants(win, g.Name)
		if why := workload.Perturbed(inv, n, secs); why != "" {
			perturbed = append(perturbed, "group "+g.Name+": "+why)
		}
		out = append(out, v1alpha1.GroupMeasurement{Name: g.Name, Metrics: m, Invariants: inv, GridPhasesNs: workload.GroupGridPhases(win, g.Name)})
	}
	if total > 0 {
		for i := range out {
			out[i].Metrics.Share = out[i].Metrics.CPU / total
		}
	}
	busy := (after.busy - before.busy).Seconds() / wall
	noise := busy - tasksCPU
	r.log.V(1).Info("Measured window", "busyCPU", busy, "tasksCPU", tasksCPU, "seconds", secs, "wall", wall)
	if noise < 0 {
		noise = 0
	}
	why := v1alpha1.Truncate(strings.Join(perturbed, "; "), 1024)
	srcs := noiseSources(procsBefore.procs, procsAfter.procs, workers, procsAfter.at.Sub(procsBefore.at).Seconds())
	var cgv, mount string
	if r.caps != nil {
		cgv, mount = r.caps.CgroupVersion, r.caps.CgroupCPUPath
	}
	describeNoise(r.fsys, r.fsys.Abs("/proc"), cgv, mount, srcs)
	cgs := foreignCgroups(procsBefore.cgroups, procsAfter.cgroups, threadIndex(procsBefore.procs), threadIndex(procsAfter.procs), procsAfter.at.Sub(procsBefore.at).Seconds())
	countsOverWindow(srcs, cgs, secs/procsAfter.at.Sub(procsBefore.at).Seconds())
	return measured{groups: out, noise: noise, sources: srcs, cgroups: cgs, perturbed: why, pauses: hostPauses(win.Pauses)}
}

// countsOverWindow scales the noise threads' and the foreign cgroups'
// counts (runs, wake-ups), counted between the two readings of every
// process around the window, to the window's length (f = window / that
// interval, at most 1), as the API gives them: "in the window". Their CPU
// and wait are rates already. Without it a 3 s window read 3.3 s of a
// thread's wake-ups, and its mean burst (CPU over wake-ups) came out short.
func countsOverWindow(srcs []v1alpha1.NoiseSource, cgs []v1alpha1.ForeignCgroup, f float64) {
	if !(f > 0 && f < 1) {
		return
	}
	scale := func(n int64) int64 { return int64(math.Round(float64(n) * f)) }
	for i := range srcs {
		for j := range srcs[i].Threads {
			th := &srcs[i].Threads[j]
			th.Runs, th.Wakeups = scale(th.Runs), scale(th.Wakeups)
		}
	}
	for i := range cgs {
		cgs[i].Wakeups = scale(cgs[i].Wakeups)
	}
}

// hostPauses is the window's host pauses as the API reports them; nil when
// no Hog watched.
func hostPauses(h *workload.HostPauses) *v1alpha1.HostPauseMeasurement {
	if h == nil || h.Hogs == 0 {
		return nil
	}
	out := &v1alpha1.HostPauseMeasurement{Hogs: int32(min(h.Hogs, 512)), ObservedNs: max(h.ObservedNs, 0), HogCPUNs: max(h.HogCPUNs, 0),
		Count: int32(min(h.Count(), 10_000_000)), OffCPUGaps: h.OffGaps, ShortStalls: int64(len(h.ShortStalls)), LostStalls: h.Lost}
	var oneHog []int64 // the short stalls one hog saw: one vCPU's
	for _, p := range h.ShortStalls {
		switch {
		case p.Seen > 1:
			out.ShortStallsSeenByMore++
		case p.OthersRan > 0:
			out.ShortStallsOthersRan++
			fallthrough
		default:
			oneHog = append(oneHog, max(p.LengthNs, 1))
		}
	}
	out.ShortStallQuantilesNs = simengine.OrderQuantiles(oneHog)
	out.VCPUStalls = int32(min(len(h.VCPUStalls), 10_000_000))
	for i, p := range h.VCPUStalls {
		out.VCPUStallLongestNs = max(out.VCPUStallLongestNs, p.LengthNs)
		if i < 64 {
			out.VCPUStallLengthsNs = append(out.VCPUStallLengthsNs, max(p.LengthNs, 1))
		}
	}
	lengths := make([]int64, 0, len(h.Pauses))
	for _, p := range h.Pauses {
		lengths = append(lengths, p.LengthNs)
		if p.Seen > 1 {
			out.SeenByMore++
		}
	}
	if len(lengths) > 0 {
		out.LengthsNs = append([]int64(nil), lengths[:min(len(lengths), 64)]...)
		out.QuantilesNs = simengine.OrderQuantiles(lengths)
	}
	return out
}

// tasks lays the workload out as worker processes: every replica's tasks
// join its cgroup; session groups' tasks run in their session.
func tasks(spec *v1alpha1.SchedExperimentSpec, replicas []host.Replica, rep int) []workload.Task {
	procs := map[string]string{}
	for _, r := range replicas {
		procs[fmt.Sprintf("%s/%d", r.Group, r.Index)] = r.Procs()
	}
	var seed uint64
	if spec.Simulation != nil {
		seed = uint64(spec.Simulation.Seed)
	}
	var out []workload.Task
	for gi := range spec.Workload.Groups {
		g := &spec.Workload.Groups[gi]
		if g.Pattern == nil {
			continue
		}
		var nice *int
		if g.Nice != nil {
			n := int(*g.Nice)
			nice = &n
		}
		var slice, slack int64
		if g.Slice != nil {
			slice = g.Slice.Nanoseconds()
		}
		if g.TimerSlack != nil {
			// prctl reads 0 as "back to the default": 1 ns is the least.
			slack = max(g.TimerSlack.Nanoseconds(), 1)
		}
		// Validated with the spec, and against this node before the run.
		cpus, _ := v1alpha1.ParseCPUList(g.CPUs)
		for ri := 0; ri < int(g.ReplicaCount()); ri++ {
			base := len(out)
			for ti := 0; ti < int(g.TaskCount()); ti++ {
				t := workload.Task{
					Group: g.Name, Replica: ri, Index: ti,
					Session: g.Session, Nice: nice, Policy: string(g.Policy), SliceNs: slice,
					TimerSlackNs: slack, CPUs: cpus, Pattern: *g.Pattern, Peer: -1,
					// The same seeds in every variant of a repetition, so
					// Burst tasks do the same work under each.
					Seed: seed ^ uint64(rep)<<40 ^ uint64(len(out))*0x9e3779b97f4a7c15,
				}
				if g.Session == "" {
					t.CgroupProcs = procs[fmt.Sprintf("%s/%d", g.Name, ri)]
				}
				if g.Pattern.Type == v1alpha1.PatternPingPong {
					t.Peer = base + (ti ^ 1)
				}
				out = append(out, t)
			}
		}
	}
	return out
}
