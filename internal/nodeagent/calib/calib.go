// Package calib measures a node's wake-up path in a short calibration
// window before an experiment's plan: how late a timer sleep ends on an idle
// and on a busy CPU, what a wake-up by a pipe costs on the same CPU and on
// another, idle one, the CPU time each of those costs the woken thread, and
// the share of the CPUs' time spent in interrupts and steal. From these it
// derives the simulator's node constants (simengine.Constants) and
// background load, so that the prediction shown next to this node's
// measurement uses the node's own wake-up path.
//
// Each measurement runs on locked OS threads pinned to one CPU (the last
// one, or the last two), with 1 ns of timer slack, and takes medians, so a
// few disturbed samples do not move it.
package calib

import (
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
}

func (o Options) withDefaults() Options {
	if o.Sleeps <= 0 {
		o.Sleeps = 500
	}
	if o.Messages <= 0 {
		o.Messages = 2000
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
	// timerLateness), IdleQuiet and BusyQuiet their fractions.
	IdleTimerQ, BusyTimerQ, LocalWakeQ, RemoteWakeQ []int64
	IdleQuiet, BusyQuiet                            float64
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
	return &v1alpha1.NodeCalibration{
		Constants:       r.Constants(),
		TimerLatenessNs: r.IdleTimerLate,
		Samples:         int32(r.Samples),
		NoiseCPU:        noiseCPU,
		BackgroundLoad:  r.BackgroundLoad,
		IdleCPUIdle:     ptr.To(math.Round(r.IdleCPUIdle*1000) / 1000),
	}
}

// quantiles of xs at simengine.QuantileLevels (sorts xs in place); nil for none.
func quantiles(xs []int64) []int64 {
	if len(xs) == 0 {
		return nil
	}
	slices.Sort(xs)
	q := make([]int64, len(simengine.QuantileLevels))
	for i, l := range simengine.QuantileLevels {
		q[i] = xs[min(int(l*float64(len(xs))), len(xs)-1)]
	}
	return q
}

// median of xs (sorted in place); 0 for none.
func median(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	return xs[len(xs)/2]
}
