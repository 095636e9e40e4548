// Package calib measures a node's wake-up path in a short calibration
// window before an experiment's plan: how late a timer sleep ends on an idle
// and on a busy CPU (beside a spinner thread, and beside a spinner process:
// the switch of address space), what a wake-up by a pipe costs on the same
// CPU and on another, idle one, the CPU time each of those costs the woken thread, the
// share of the CPUs' time spent in interrupts and steal, and what a timer
// wake-up on a busy CPU costs more after a 40 ms sleep than after a 2 ms
// one beside a spinner process, a workload worker (the cold wake-up,
// recorded only when the measurement had its CPU to itself and its
// interval is narrow). From these it derives the simulator's
// node constants (simengine.Constants) and background load, so that the
// prediction shown next to this node's measurement uses the node's own
// wake-up path.
//
// Each measurement runs on locked OS threads pinned to one CPU (the last
// one, or the last two), with 1 ns of timer slack, and takes medians, so a
// few disturbed samples do not move it.
//
// TimerPath measures the timer path alone (the window's idle and busy
// timer sleeps), which the agent repeats at each measured window's edges.
//
// Imports: the API types, the simulator's constants and package workload
// (the spinner processes are Hog workers). Start at MeasureRaw.
package calib

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"k8s.io/utils/ptr"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/simengine"
)

// Options size the window.
type Options struct {
	// Sleeps per timer measurement (1 ms each); 0 means 500 (the 99 %
	// quantile of the timer path is then the fifth latest of them).
	Sleeps int
	// Messages per pipe measurement; 0 means 2000.
	Messages int
	// ColdCycles of the cold wake-up measurement (one 40 ms and two 2 ms
	// sleeps each, 44 ms); 0 means 20 (0.88 s), negative: not measured.
	ColdCycles int
	// WorkerBinary is the schedlab binary (workload.Spec.WorkerBinary)
	// that the cold wake-up and process switch measurements start as
	// their spinner: one Hog worker at SCHED_IDLE on the measurement's
	// CPU, a process of its own as a workload's tasks are to each other.
	// "" spins on a thread of this process instead, which the development
	// node showed paying 0.5-0.7 of what a process neighbour makes a long
	// sleep pay (see coldWakeLateness), and leaves the process switch
	// unmeasured (busyTimerLateness).
	WorkerBinary string
}

func (o Options) withDefaults() Options {
	if o.Sleeps <= 0 {
		o.Sleeps = 500
	}
	if o.Messages <= 0 {
		o.Messages = 2000
	}
	if o.ColdCycles == 0 {
		o.ColdCycles = 20
	}
	return o
}

// Raw are the window's measurements, in nanoseconds per event (medians for
// latencies, means for CPU time).
type Raw struct {
	// IdleTimerLate: lateness of a 1 ns-slack timer sleep on an otherwise
	// idle CPU (timer interrupt, idle exit, context switch).
	IdleTimerLate int64
	// IdleCPUIdle: the fraction of that measurement's wall time its CPU
	// spent idle (/proc/stat). The sleeper sleeps nearly all of it, so a
	// quiet node gives nearly 1; other work on the CPU, SCHED_IDLE work
	// included (the sleeper preempts it at once, with no idle exit), makes
	// it less, and then IdleTimerLate is not an idle CPU's path.
	IdleCPUIdle float64
	// BusyTimerLate: the same with a SCHED_IDLE thread spinning on the
	// sleeper's CPU (no idle exit; the wake-up preempts the spinner).
	BusyTimerLate int64
	// TimerCPU: the sleeper's CPU time per sleep on the idle CPU (its
	// sleeps are ordinary Go system calls: for the record only).
	TimerCPU int64
	// BusyTimerCPU: the sleeper's CPU time per 1 ms sleep on a busy CPU
	// (a mean, see timerSleepCPU), the sleeps made with raw system calls as the workload's
	// loop makes them (timerSleepCPU). 0 when not measured.
	BusyTimerCPU int64
	// LocalWakeLate: from a pipe write to the reader running, both threads
	// on one CPU (the waker blocks in its read right after).
	LocalWakeLate int64
	// LocalMessage: wall time per message of that ping-pong (the CPU is
	// busy throughout: two wake-ups' worth of work per round trip).
	LocalMessage int64
	// RemoteWakeLate: from a pipe write to the reader running on another,
	// idle CPU (the wake list's IPI, idle exit, context switch). 0 on one CPU.
	RemoteWakeLate int64
	// BackgroundLoad: the fraction of the CPUs' time spent in interrupts,
	// soft interrupts and steal over the window (/proc/stat), which the
	// task clock does not count.
	BackgroundLoad float64
	// Samples behind the medians (timer sleeps and messages).
	Samples int

	// The same four paths' quantiles at simengine.QuantileLevels (nil
	// when not measured).
	// IdleTimerQ and BusyTimerQ are of the quiet sleeps (see
	// timerSleeps), IdleQuiet and BusyQuiet their fractions.
	IdleTimerQ, BusyTimerQ, LocalWakeQ, RemoteWakeQ []int64
	IdleQuiet, BusyQuiet                            float64

	// Cold: what a wake-up costs more after a 40 ms sleep than after a
	// 2 ms one (coldWakeFigure); nil when not measured.
	Cold *ColdWake
	// Switch: what a busy-CPU timer wake-up costs more beside a spinner
	// process than beside a spinner thread of this process
	// (processSwitchFigure); nil when not measured.
	Switch *ProcessSwitch
}

// The cold wake-up measurement's judgement (coldWakeFigure).
const (
	// coldMinLong: fewer quiet long sleeps than this and the medians'
	// intervals are too wide to say anything (with 10, the median's 95 %
	// interval runs from the 2nd to the 9th of them).
	coldMinLong = 10
	// coldMaxOtherCPU: other processes took more of the CPU than this, and
	// what they did there (their caches, their kernel paths) is in the
	// figure.
	coldMaxOtherCPU = 0.10
	// coldMaxWidthNs: an interval wider than this per doubling (26 µs
	// between the two lengths' medians) says the sleeps' lateness was
	// spread by something else than their length.
	coldMaxWidthNs = 6_000
)

// ColdWake is the cold wake-up measurement (see coldWakeLateness for the
// layout): the quiet sleeps' median lateness at both lengths and what it
// makes per doubling of the sleep, with a 95 % interval.
type ColdWake struct {
	// Neighbour is what the sleeper slept beside (ColdWakeNeighbour).
	Neighbour           v1alpha1.ColdWakeNeighbour
	ShortLate, LongLate int64
	Short, Long         int // quiet sleeps
	LongMade            int // long sleeps made
	OtherCPU            float64
	// PerDoubling = (LongLate - ShortLate) / log2(long/short), and its
	// interval Low..High.
	PerDoubling, Low, High int64
	// Rejected says why PerDoubling is not the node's ColdWakeNs; "" when
	// it is.
	Rejected string
}

// medianInterval is the median of xs (sorted in place) and its
// distribution-free 95 % interval: the order statistics at ranks
// n/2 ∓ 0.98√n (the binomial's normal approximation). xs is not empty.
func medianInterval(xs []int64) (lo, med, hi int64) {
	slices.Sort(xs)
	n := float64(len(xs))
	h := 0.98 * math.Sqrt(n)
	j := max(int(math.Floor(n/2-h)), 1)
	k := min(int(math.Ceil(n/2+h)), len(xs))
	return xs[j-1], xs[len(xs)/2], xs[k-1]
}

// coldWakeFigure is the cold wake-up cost per doubling of the sleep from
// the lateness of quiet sleeps of shortNs and longNs (sorted in place),
// longMade long sleeps made, and the CPU share other processes took.
//
// The interval: each median's distribution-free 95 % interval (the order
// statistics at ranks n/2 ∓ 0.98√n, the binomial's normal approximation),
// and the difference's interval from their ends, so at least 95 %.
func coldWakeFigure(short, long []int64, shortNs, longNs int64, longMade int, otherCPU float64) *ColdWake {
	c := &ColdWake{Short: len(short), Long: len(long), LongMade: longMade, OtherCPU: otherCPU}
	if len(short) == 0 || len(long) == 0 {
		c.Rejected = "no quiet sleep"
		return c
	}
	sLo, sMed, sHi := medianInterval(short)
	lLo, lMed, lHi := medianInterval(long)
	d := math.Log2(float64(longNs) / float64(shortNs))
	per := func(v int64) int64 { return int64(math.Round(float64(v) / d)) }
	c.ShortLate, c.LongLate = sMed, lMed
	c.PerDoubling, c.Low, c.High = per(lMed-sMed), per(lLo-sHi), per(lHi-sLo)
	switch {
	case len(long) < coldMinLong:
		c.Rejected = fmt.Sprintf("%d of %d long sleeps quiet (the others waited for another process), fewer than %d", len(long), longMade, coldMinLong)
	case otherCPU > coldMaxOtherCPU:
		c.Rejected = fmt.Sprintf("other processes took %.2f of the CPU, more than %.2f", otherCPU, coldMaxOtherCPU)
	case c.High-c.Low > coldMaxWidthNs:
		c.Rejected = fmt.Sprintf("95 %% interval %.1f to %.1f µs per doubling, wider than %.0f µs", float64(c.Low)/1e3, float64(c.High)/1e3, coldMaxWidthNs/1e3)
	case c.High < 0:
		// A longer sleep can wake no later than a short one (1 ns below),
		// never surely earlier: the two blocks saw different timer paths.
		c.Rejected = fmt.Sprintf("the long sleeps woke earlier than the short ones (95 %% interval %.1f to %.1f µs per doubling): something else changed between the two blocks", float64(c.Low)/1e3, float64(c.High)/1e3)
	}
	return c
}

// The process switch measurement's judgement (processSwitchFigure).
const (
	// switchMinQuiet: fewer quiet sleeps than this in either layout and
	// the medians are not worth a constant (with 50 a median's 95 %
	// interval spans the 18th to the 32nd of them).
	switchMinQuiet = 50
	// switchMaxWidthNs: an interval wider than this says the two blocks'
	// sleeps were spread by something else than their neighbour.
	switchMaxWidthNs = 4_000
)

// ProcessSwitch is the process switch measurement (see
// busyTimerLateness): the median lateness of the quiet 1 ms timer sleeps
// on a busy CPU beside a spinner thread of this process and beside a
// spinner process, their difference and its 95 % interval.
type ProcessSwitch struct {
	ThreadLate, ProcessLate int64
	Thread, Process         int // quiet sleeps
	// PerSwitch = ProcessLate - ThreadLate, and its interval Low..High.
	PerSwitch, Low, High int64
	// Rejected says why PerSwitch is not the node's ProcessSwitchNs; ""
	// when it is.
	Rejected string
}

// processSwitchFigure is what a wake-up that preempts another process
// pays more than one that preempts a thread of its own process, from the
// quiet sleeps' lateness beside each (sorted in place). The interval
// comes from the two medians' distribution-free intervals (as in
// coldWakeFigure), so it holds the difference at 95 % at least.
func processSwitchFigure(thread, process []int64) *ProcessSwitch {
	p := &ProcessSwitch{Thread: len(thread), Process: len(process)}
	if len(thread) == 0 || len(process) == 0 {
		p.Rejected = "no quiet sleep"
		return p
	}
	tLo, tMed, tHi := medianInterval(thread)
	pLo, pMed, pHi := medianInterval(process)
	p.ThreadLate, p.ProcessLate = tMed, pMed
	p.PerSwitch, p.Low, p.High = pMed-tMed, pLo-tHi, pHi-tLo
	switch {
	case min(len(thread), len(process)) < switchMinQuiet:
		p.Rejected = fmt.Sprintf("%d quiet sleeps beside the thread and %d beside the process, fewer than %d", len(thread), len(process), switchMinQuiet)
	case p.High-p.Low > switchMaxWidthNs:
		p.Rejected = fmt.Sprintf("95 %% interval %.1f to %.1f µs, wider than %.0f µs", float64(p.Low)/1e3, float64(p.High)/1e3, switchMaxWidthNs/1e3)
	case p.High < 0:
		// A neighbour process can cost a wake-up nothing more than a
		// neighbour thread (recorded as 1 ns below), never less: sleeps
		// that woke surely earlier beside the process say that something
		// else moved between the two blocks (a host's timer path changes
		// by 10-20 µs from one minute to the next on the development VM).
		p.Rejected = fmt.Sprintf("the sleeps beside the process woke earlier than beside the thread (95 %% interval %.1f to %.1f µs): something else changed between the two blocks", float64(p.Low)/1e3, float64(p.High)/1e3)
	}
	return p
}

// Constants derives the simulator's node constants from the raw
// measurements, in the simulator's terms (see simengine.Constants): a
// local wake-up costs CtxSwitchNs of latency; a timer wake-up on a busy CPU
// TimerExpiryNs + CtxSwitchNs, on an idle one IdleExitNs more; a wake-up
// onto another, idle CPU WakeupNs + IdleExitNs + CtxSwitchNs. A part that
// comes out at or below zero is recorded as 1 ns (the API reads 0 as "the
// simulator's default").
//
// The CPU a timer sleep costs its task: the simulator charges a woken
// task CtxSwitchNs + WakeupCPUNs, and TimerArmCPUNs more when a timer
// woke it (simengine switchIn). BusyTimerCPU is that whole cycle on a busy
// CPU, so TimerArmCPUNs is what it leaves beyond the context switch and
// the simulator's default WakeupCPUNs (which stays: the pipe paths are
// timed through ordinary Go system calls, whose runtime work around each
// call is charged to the thread). How much CPU a LatencyProbe uses per
// wake-up sets how far its vruntime moves beside hogs, and so how often a
// hog still holds its slice protection when the probe wakes: in the
// simulator, 2, 6 and 10 µs of probe work per wake-up on this node's
// probe-hogs layout gave 0.010, 0.014 and 0.017 of the wake-ups beyond
// 1 ms with autogroup off. This node measured 11-14 µs per sleep (a
// timer arm of 2.6-5.2 µs against the 3 µs default) at a load of 9.
// TimerCPU and LocalMessage are kept in Raw for the record.
//
// The timer, switch and pipe paths are measured beside and between threads
// of this process, so they hold no switch of address space; a wake-up
// that preempts another process pays ProcessSwitchNs more, the difference
// of the busy timer path beside a spinner process and beside a thread
// (processSwitchFigure), kept when the measurement is judged sound.
func (r Raw) Constants() v1alpha1.NodeConstants {
	pos := func(v int64) int64 { return max(v, 1) }
	ctx := pos(r.LocalWakeLate)
	idleExit := pos(r.IdleTimerLate - r.BusyTimerLate)
	c := v1alpha1.NodeConstants{
		TimerExpiryNs: pos(r.BusyTimerLate - ctx),
		IdleExitNs:    idleExit,
		CtxSwitchNs:   ctx,
	}
	if r.RemoteWakeLate > 0 {
		c.WakeupNs = pos(r.RemoteWakeLate - idleExit - ctx)
	}
	if r.BusyTimerCPU > 0 {
		c.TimerArmCPUNs = pos(r.BusyTimerCPU - ctx - simengine.DefaultConstants().WakeupCPUNs)
	}
	if r.Cold != nil && r.Cold.Rejected == "" {
		c.ColdWakeNs = pos(r.Cold.PerDoubling)
	}
	if r.Switch != nil && r.Switch.Rejected == "" {
		c.ProcessSwitchNs = pos(r.Switch.PerSwitch)
	}
	// The spreads: the simulator pays every term of a wake-up's path at
	// one level u, so each term's quantile function is the difference of
	// the paths' at the same level (a path slow at u is slow in each of its
	// parts), made a quantile function again (at least 1 ns, sorted).
	n := len(simengine.QuantileLevels)
	if len(r.IdleTimerQ) == n && len(r.BusyTimerQ) == n && len(r.LocalWakeQ) == n {
		diff := func(f func(i int) int64) []int64 {
			q := make([]int64, n)
			for i := range q {
				q[i] = pos(f(i))
			}
			slices.Sort(q)
			return q
		}
		c.CtxSwitchQuantilesNs = diff(func(i int) int64 { return r.LocalWakeQ[i] })
		c.TimerExpiryQuantilesNs = diff(func(i int) int64 { return r.BusyTimerQ[i] - r.LocalWakeQ[i] })
		c.IdleExitQuantilesNs = diff(func(i int) int64 { return r.IdleTimerQ[i] - r.BusyTimerQ[i] })
		if len(r.RemoteWakeQ) == n {
			c.WakeupQuantilesNs = diff(func(i int) int64 {
				return r.RemoteWakeQ[i] - c.IdleExitQuantilesNs[i] - c.CtxSwitchQuantilesNs[i]
			})
		}
	}
	return c
}

// Calibration is what the node's status records.
func (r Raw) Calibration(noiseCPU float64) *v1alpha1.NodeCalibration {
	cal := &v1alpha1.NodeCalibration{
		Constants:       r.Constants(),
		TimerLatenessNs: r.IdleTimerLate,
		Samples:         int32(r.Samples),
		NoiseCPU:        noiseCPU,
		BackgroundLoad:  r.BackgroundLoad,
		IdleCPUIdle:     ptr.To(math.Round(r.IdleCPUIdle*1000) / 1000),
	}
	if c := r.Cold; c != nil {
		cal.ColdWake = &v1alpha1.ColdWakeCalibration{
			Neighbour:  c.Neighbour,
			ShortP50Ns: c.ShortLate, LongP50Ns: c.LongLate,
			ShortSamples: int32(c.Short), LongSamples: int32(c.Long),
			PerDoublingNs: c.PerDoubling, LowNs: c.Low, HighNs: c.High,
			OtherCPU: math.Round(c.OtherCPU*1000) / 1000,
			Rejected: v1alpha1.Truncate(c.Rejected, 256),
		}
	}
	if p := r.Switch; p != nil {
		cal.ProcessSwitch = &v1alpha1.ProcessSwitchCalibration{
			ThreadP50Ns: p.ThreadLate, ProcessP50Ns: p.ProcessLate,
			ThreadSamples: int32(p.Thread), ProcessSamples: int32(p.Process),
			PerSwitchNs: p.PerSwitch, LowNs: p.Low, HighNs: p.High,
			Rejected: v1alpha1.Truncate(p.Rejected, 256),
		}
	}
	return cal
}

// timerPathSample is what a window's edge records of TimerPath's figures.
func timerPathSample(idle, busy int64, idleQuiet, busyQuiet float64, n int, idleFrac float64, wallNs int64) *v1alpha1.TimerPathSample {
	frac := func(f float64) *float64 { return ptr.To(math.Round(min(max(f, 0), 1)*1000) / 1000) }
	return &v1alpha1.TimerPathSample{
		IdleTimerNs: max(idle, 0), BusyTimerNs: max(busy, 0), Samples: int32(min(n, 100_000)),
		IdleQuiet: frac(idleQuiet), BusyQuiet: frac(busyQuiet),
		IdleCPUIdle: frac(idleFrac), DurationNs: max(wallNs, 0),
	}
}

// median of xs (sorted in place); 0 for none.
func median(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	return xs[len(xs)/2]
}
