package calib

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
	"k8s.io/utils/ptr"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent/workload"
	"github.com/schedlab/schedlab/internal/simengine"
)

// Measure runs the calibration window on this node (about 3 s) and
// returns what the node's status records. It needs no privileges beyond
// setting its own threads' affinity and SCHED_IDLE policy.
func Measure(ctx context.Context, opts Options) (*v1alpha1.NodeCalibration, error) {
	raw, noise, err := MeasureRaw(ctx, opts)
	if err != nil {
		return nil, err
	}
	return raw.Calibration(noise), nil
}

// MeasureRaw runs the window and returns the raw figures and the CPUs other
// processes used meanwhile (from /proc/stat, less this process's CPU time).
func MeasureRaw(ctx context.Context, opts Options) (Raw, float64, error) {
	o := opts.withDefaults()
	var r Raw
	cpus, err := allowedCPUs()
	if err != nil {
		return r, 0, err
	}
	busy0, self0, bg0, t0, err := usage()
	if err != nil {
		return r, 0, err
	}
	last := cpus[len(cpus)-1]
	steps := []func() error{
		func() error {
			s, idleFrac, err := idleTimerSleeps(last, o.Sleeps)
			if err != nil {
				return err
			}
			r.IdleTimerLate, r.IdleTimerQ, r.IdleQuiet = s.summary()
			r.TimerCPU, r.IdleCPUIdle = s.cpuPer, idleFrac
			return nil
		},
		func() error {
			b, err := busyTimerLateness(ctx, last, o.Sleeps, o.WorkerBinary)
			if err != nil {
				return err
			}
			r.BusyTimerLate, r.BusyTimerQ, r.BusyQuiet = b.thread.summary()
			if o.WorkerBinary != "" {
				r.Switch = processSwitchFigure(slices.Clone(b.rawThread.quiet), slices.Clone(b.process.quiet))
			}
			return nil
		},
		func() (err error) {
			r.BusyTimerCPU, err = timerSleepCPU(last, o.Sleeps/2)
			return err
		},
		func() (err error) {
			r.LocalWakeLate, r.LocalWakeQ, r.LocalMessage, err = pipePingPong(last, last, o.Messages)
			return err
		},
	}
	if len(cpus) > 1 {
		steps = append(steps, func() (err error) {
			r.RemoteWakeLate, r.RemoteWakeQ, _, err = pipePingPong(cpus[len(cpus)-2], last, o.Messages/4)
			return err
		})
	}
	if o.ColdCycles > 0 {
		steps = append(steps, func() error {
			s, err := coldWakeLateness(ctx, last, o.ColdCycles, o.WorkerBinary)
			if err != nil {
				return err
			}
			r.Cold = coldWakeFigure(s.short, s.long, coldShortNs, coldLongNs, s.longAll, s.otherCPU)
			r.Cold.Neighbour = s.neighbour
			return nil
		})
	}
	for _, step := range steps {
		if err := ctx.Err(); err != nil {
			return r, 0, err
		}
		if err := step(); err != nil {
			return r, 0, fmt.Errorf("calibration window: %w", err)
		}
	}
	r.Samples = 2*o.Sleeps + o.Messages
	if o.WorkerBinary != "" {
		r.Samples += o.Sleeps // the process switch step (busyTimerLateness)
	}
	busy1, self1, bg1, t1, err := usage()
	if err != nil {
		return r, 0, err
	}
	wall := t1.Sub(t0).Seconds()
	noise := ((busy1 - busy0) - (self1 - self0)).Seconds() / wall
	r.BackgroundLoad = min(max((bg1-bg0).Seconds()/wall/float64(len(cpus)), 0), 0.95)
	return r, max(noise, 0), nil
}

// TimerPath measures the node's timer path alone, in n 1 ms sleeps on an
// idle CPU and n beside a SCHED_IDLE spinner thread (n ≤ 0 means 150; about
// 2n ms in all), on the CPU and with the sleeps of the calibration window's
// first two steps (MeasureRaw), so that its figures read against the
// window's: the agent measures it at each measured window's edges, where a
// host's timer path that moved since the calibration window shows.
//
// Its figures are the medians of the quiet sleeps (timerSleeps), as the
// window's quantiles are taken, when at least a tenth of them were quiet
// (of all otherwise, and the quiet fraction says so). Between windows on a
// shared node other processes' work, held off the CPUs while the workload
// ran, often takes the measuring CPU: on the development VM
// (2026-12-07 19:27-19:30, load 4-9) the edges' idle sleeps found their
// CPU idle 0-31 % of the time in 14 of 16 edges, and where fewer than a
// fifth of the busy sleeps were quiet their median was 29-31 µs against
// 22-24 µs where nearly all were: beside another process a wake-up pays
// the switch of address space and waits for its kernel paths.
func TimerPath(ctx context.Context, n int) (*v1alpha1.TimerPathSample, error) {
	if n <= 0 {
		n = 150
	}
	cpus, err := allowedCPUs()
	if err != nil {
		return nil, err
	}
	return timerPathOn(ctx, cpus[len(cpus)-1], n)
}

// timerPathOn is TimerPath on cpu: n idle sleeps, then n busy ones beside a
// spinner on the same CPU, the sample naming its CPU.
func timerPathOn(ctx context.Context, cpu, n int) (*v1alpha1.TimerPathSample, error) {
	t0 := now()
	idle, idleFrac, err := idleTimerSleeps(cpu, n)
	if err != nil {
		return nil, fmt.Errorf("timer path on CPU %d: %w", cpu, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := busyTimerLateness(ctx, cpu, n, "")
	if err != nil {
		return nil, fmt.Errorf("timer path on CPU %d: %w", cpu, err)
	}
	idleLate, idleQuiet := idle.quietMedian()
	busyLate, busyQuiet := b.thread.quietMedian()
	tp := timerPathSample(idleLate, busyLate, idleQuiet, busyQuiet, n, idleFrac, now()-t0)
	tp.BusyTimerQuantilesNs = b.thread.quietQuantiles()
	tp.CPU = ptr.To(int32(cpu))
	return tp, nil
}

// TimerPathOtherCPUs is TimerPath on every other CPU this process may run
// on (all but the last, which TimerPath measures), one sample per CPU in
// CPU order; nil on a single CPU. The CPUs are measured at once, each by
// its own pinned threads (the idle sleeps, then the busy ones beside a
// spinner on the same CPU), so the step takes about as long as TimerPath
// however many CPUs there are; while one CPU's busy sleeps run, another's
// spinner holds that CPU, as a window's workload does.
//
// A host may run its vCPUs' timer paths in different phases: on the
// development VM (2026-12-07 22:00-22:05, ftrace of the timer interrupts)
// the interrupt came 15-16 µs after a sleep's hard expiry on one vCPU and
// 20-28 µs on the other for tens of seconds, which TimerPath, on the last
// CPU alone, does not see.
func TimerPathOtherCPUs(ctx context.Context, n int) ([]v1alpha1.TimerPathSample, error) {
	if n <= 0 {
		n = 150
	}
	cpus, err := allowedCPUs()
	if err != nil {
		return nil, err
	}
	others := cpus[:len(cpus)-1]
	if len(others) == 0 {
		return nil, nil
	}
	out := make([]v1alpha1.TimerPathSample, len(others))
	errs := make([]error, len(others))
	var wg sync.WaitGroup
	for i, c := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tp, err := timerPathOn(ctx, c, n)
			if err != nil {
				errs[i] = err
				return
			}
			out[i] = *tp
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// quietMedian is the median lateness of the quiet sleeps when at least a
// tenth of the sleeps were quiet, of all of them otherwise, and the quiet
// fraction.
func (t timerSamples) quietMedian() (late int64, quiet float64) {
	if len(t.all) == 0 {
		return 0, 0
	}
	quiet = float64(len(t.quiet)) / float64(len(t.all))
	if len(t.quiet) > 0 && 10*len(t.quiet) >= len(t.all) {
		return median(slices.Clone(t.quiet)), quiet
	}
	return median(slices.Clone(t.all)), quiet
}

// quietQuantiles are the lateness quantiles (simengine.QuantileLevels) of
// the sleeps quietMedian takes its median from, so that their 50 % level
// is that median; nil without sleeps.
func (t timerSamples) quietQuantiles() []int64 {
	if len(t.quiet) > 0 && 10*len(t.quiet) >= len(t.all) {
		return simengine.OrderQuantiles(t.quiet)
	}
	return simengine.OrderQuantiles(t.all)
}

// idleTimerSleeps is timerSleeps on an otherwise idle cpu (no spinner)
// with the fraction of its wall time cpu spent idle (/proc/stat)
// meanwhile.
func idleTimerSleeps(cpu, n int) (timerSamples, float64, error) {
	idle0, at0, err := cpuIdle(cpu)
	if err != nil {
		return timerSamples{}, 0, err
	}
	s, err := timerSleeps(cpu, n, nil, false)
	if err != nil {
		return timerSamples{}, 0, err
	}
	idle1, at1, err := cpuIdle(cpu)
	if err != nil {
		return timerSamples{}, 0, err
	}
	return s, min(max((idle1-idle0).Seconds()/at1.Sub(at0).Seconds(), 0), 1), nil
}

// allowedCPUs lists the CPUs this process may run on.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []int
	for c := 0; c < 1024; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("no CPU in this process's affinity mask")
	}
	return cpus, nil
}

// usage is the node's busy CPU time (/proc/stat, steal included), the part
// of it the task clock does not see (interrupts, soft interrupts, steal:
// rq_clock_task() excludes IRQ and steal time where the kernel accounts
// them), and this process's own CPU time, now.
func usage() (busy, self, bg time.Duration, at time.Time, err error) {
	st, at, err := procStat()
	if err != nil {
		return 0, 0, 0, at, err
	}
	c := st.CPUTotal
	busy = time.Duration((c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal) * float64(time.Second))
	bg = time.Duration((c.IRQ + c.SoftIRQ + c.Steal) * float64(time.Second))
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, 0, at, err
	}
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return busy, self, bg, at, nil
}

// procStat reads /proc/stat, and says when.
func procStat() (procfs.Stat, time.Time, error) {
	at := time.Now()
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		return procfs.Stat{}, at, err
	}
	st, err := fs.Stat()
	if err != nil {
		return procfs.Stat{}, at, fmt.Errorf("reading /proc/stat: %w", err)
	}
	return st, at, nil
}

// cpuIdle is the time cpu has spent idle (idle and iowait of /proc/stat,
// in USER_HZ ticks: 10 ms), and when it was read.
func cpuIdle(cpu int) (time.Duration, time.Time, error) {
	st, at, err := procStat()
	if err != nil {
		return 0, at, err
	}
	c, ok := st.CPU[int64(cpu)]
	if !ok {
		return 0, at, fmt.Errorf("/proc/stat has no line for CPU %d", cpu)
	}
	return time.Duration((c.Idle + c.Iowait) * float64(time.Second)), at, nil
}

// pin locks the calling goroutine to its thread and the thread to cpu, with
// 1 ns of timer slack (0 would mean the default), and returns unpin, which
// the caller defers: it puts back the thread's affinity, timer slack and
// scheduling policy as they were before pin, then unlocks it.
//
// The thread goes back to the runtime instead of ending with its goroutine:
// Linux sends a child's parent-death signal (PR_SET_PDEATHSIG) when the
// *thread* that forked it exits, and the runtime may have run other
// goroutines on this thread before it was locked, which forked children with
// that signal (a reference harness's load, a local control plane). Ending
// the thread would kill them. Only if something cannot be put back does
// unpin leave the thread locked, so that the runtime ends it and nothing
// else ever runs with its state.
func pin(cpu int) (unpin func(), err error) {
	runtime.LockOSThread()
	retire := func() {} // the goroutine returns locked: the runtime ends the thread
	var was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		return retire, fmt.Errorf("sched_getaffinity: %w", err)
	}
	slack, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return retire, fmt.Errorf("prctl(PR_GET_TIMERSLACK): %w", err)
	}
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return retire, fmt.Errorf("sched_getattr: %w", err)
	}
	unpin = func() {
		if unix.SchedSetAttr(0, attr, 0) != nil ||
			unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack), 0, 0, 0) != nil ||
			unix.SchedSetaffinity(0, &was) != nil {
			return
		}
		runtime.UnlockOSThread()
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return unpin, fmt.Errorf("sched_setaffinity(cpu %d): %w", cpu, err)
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		return unpin, fmt.Errorf("prctl(PR_SET_TIMERSLACK): %w", err)
	}
	return unpin, nil
}

// onPinnedThread runs f on a new goroutine pinned (pin) to cpu and returns
// what it returns once the thread is unpinned: the result is sent after
// unpin ran, so a caller never goes on beside a thread still pinned with a
// 1 ns timer slack (it did: the result went out before the deferred unpin,
// and TestPinnedThreadsGoBack caught the thread pinned in a CI dry run).
func onPinnedThread[T any](cpu int, f func() T) (T, error) {
	type out struct {
		v   T
		err error
	}
	res := make(chan out, 1)
	go func() {
		var o out
		func() {
			unpin, err := pin(cpu)
			defer unpin()
			if err != nil {
				o.err = err
				return
			}
			o.v = f()
		}()
		res <- o
	}()
	o := <-res
	return o.v, o.err
}

func now() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func threadCPU() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}

// spinner runs a SCHED_IDLE thread spinning on cpu until stop is closed;
// it sends its thread id, or an error, on ready.
func spinner(cpu int, stop <-chan struct{}, ready chan<- spinReady) {
	unpin, err := pin(cpu)
	defer unpin() // puts the policy back too
	if err != nil {
		ready <- spinReady{err: err}
		return
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		ready <- spinReady{err: fmt.Errorf("sched_setattr(SCHED_IDLE): %w", err)}
		return
	}
	ready <- spinReady{tid: unix.Gettid()}
	var x uint64
	for {
		select {
		case <-stop:
			return
		default:
		}
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		atomic.AddUint64(&sinkSpin, x&1)
	}
}

var sinkSpin uint64

type spinReady struct {
	tid int
	err error
}

// threadCPUOf is the CPU time of thread tid of this process, through its
// CPU clock (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) in
// include/linux/posix-timers.h); -1 if it cannot be read.
func threadCPUOf(tid int) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(int32((^tid)<<3|6), &ts); err != nil {
		return -1
	}
	return ts.Nano()
}

// quietGapNs is how much of a busy-CPU sleep may go to neither the sleeper
// nor its spinner (interrupts, the switches) for the sample to count as
// one the CPU's two threads had to themselves.
const quietGapNs = 50_000

// timerSamples are what timerSleeps saw: every sleep's lateness, the
// quiet ones' (see timerSleeps), and the sleeper's mean CPU time per sleep.
type timerSamples struct {
	all, quiet []int64
	cpuPer     int64
}

// summary is the samples' median lateness (of all sleeps), their
// quantiles (of the quiet sleeps, or of all when fewer than a fifth of
// them were quiet) and the quiet fraction.
func (t timerSamples) summary() (late int64, q []int64, quiet float64) {
	n := len(t.all)
	if n == 0 {
		return 0, nil, 0
	}
	quiet = float64(len(t.quiet)) / float64(n)
	if len(t.quiet) >= n/5 {
		q = simengine.OrderQuantiles(t.quiet)
	}
	if q == nil {
		q = simengine.OrderQuantiles(t.all)
	}
	return median(slices.Clone(t.all)), q, quiet
}

// timerSleeps sleeps n times for 1 ms to an absolute deadline on cpu and
// returns how late each sleep ended, which of them were quiet, and the
// mean thread CPU time per sleep. With spin (a spinner's CPU time so far,
// -1 when it cannot be read), a SCHED_IDLE spinner runs on the same CPU
// meanwhile, and a sleep is quiet when the CPU's time went to the spinner
// and the sleeper but for quietGapNs. The window's CPU is not reserved,
// and other processes run on it more while no workload does than beside
// one: a woken thread then waits for their kernel paths to end (with
// preemption None, until they reach a preemption point), which is their
// load, not the node's wake-up path. Without spin, a sleep is quiet when
// the sleeper waited at most quietRunDelayNs on the runqueue after its
// wake-up (its sched_info run_delay, /proc/thread-self/schedstat): on an
// idle CPU it runs at once unless another process holds the CPU.
//
// With raw, each sleep is a raw system call and its end is read from the
// vDSO clock, as a workload's work loop sleeps (nodeagent/workload
// sleepUntil, nanotime): between the return to user space and the reading
// the sleeper touches only a few pages of its own. Otherwise they are
// ordinary Go system calls, whose return runs the runtime's exitsyscall()
// over its own data first.
func timerSleeps(cpu, n int, spin func() int64, raw bool) (timerSamples, error) {
	sleep, clock := sleepUntil, now
	if raw {
		sleep, clock = rawSleepUntil, nanotime
	}
	return onPinnedThread(cpu, func() timerSamples {
		out := timerSamples{all: make([]int64, 0, n), quiet: make([]int64, 0, n)}
		rd := newRunDelay()
		defer rd.close()
		// One sleep first, so the measured ones start from a sleep.
		deadline := clock() + 1_000_000
		sleep(deadline)
		c0 := threadCPU()
		for i := 0; i < n; i++ {
			var s0, own0, r0 int64
			if spin != nil {
				s0, own0 = spin(), threadCPU()
			} else {
				r0 = rd.read()
			}
			w0 := clock()
			deadline = w0 + 1_000_000
			sleep(deadline)
			w1 := clock()
			l := w1 - deadline
			out.all = append(out.all, l)
			if spin != nil {
				s1, own1 := spin(), threadCPU()
				if s0 >= 0 && s1 >= 0 && (w1-w0)-(s1-s0)-(own1-own0) <= quietGapNs {
					out.quiet = append(out.quiet, l)
				}
			} else if r1 := rd.read(); r0 >= 0 && r1 >= 0 && r1-r0 <= quietRunDelayNs {
				out.quiet = append(out.quiet, l)
			}
		}
		if n > 0 {
			out.cpuPer = (threadCPU() - c0) / int64(n)
		}
		return out
	})
}

// busySamples are what busyTimerLateness saw: the busy timer path beside
// a spinner thread (ordinary sleeps), and the process switch step's raw
// sleeps beside a spinner thread and beside a spinner process (their
// cpuPer is not kept).
type busySamples struct {
	thread, rawThread, process timerSamples
	// processPID is the spinner process's pid (0 when not measured);
	// processShare its CPU time over its block's wall time.
	processPID   int
	processShare float64
}

// busyTimerLateness measures the timer path on a busy cpu: n sleeps of
// 1 ms (timerSleeps) beside a SCHED_IDLE spinner thread of this process,
// ordinary Go system calls as the window always made them (the timer
// constants come from these). With worker set it then measures the
// process switch: n/2 raw sleeps (as a workload's loop makes them) beside
// a spinner thread, in two halves, and between them n/2 beside a spinner
// process (a Hog worker of worker at SCHED_IDLE, as in coldWakeLateness).
// Every wake-up preempts its spinner at once, so the two layouts differ in
// one thing: the spinner thread shares the sleeper's address space, the
// process does not, and the wake-up's context_switch() then loads the
// sleeper's page tables (switch_mm_irqs_off(), v6.18), which a workload
// pays whenever its task preempts another process. The thread's halves
// around the process's block let a drift of the node's state over the
// second hit both alike.
//
// The sleeps of the switch step are raw because what a switch of
// address space costs depends on how much of its own memory the woken
// task touches before it reads the clock: on the development node (a
// paravirtual guest whose page-table loads are hypercalls, without PCID),
// 2026-12-07 13:38-13:42, a C sleeper beside a C spinner process paid
// 2.6 µs more at the median than beside a spinner thread of its own (8 of
// 10 interleaved rounds 2.3-3.2 µs; its CPU per sleep 2-2.5 µs more), while
// this package's ordinary-syscall sleeper paid 16-18 µs more beside any
// other process (a Hog worker or a shell loop; its CPU per sleep 13-16 µs
// more), the runtime's exitsyscall() touching its own data first. A
// workload's loop sleeps with raw system calls and reads the vDSO clock,
// as the C sleeper does.
func busyTimerLateness(ctx context.Context, cpu, n int, worker string) (busySamples, error) {
	var out busySamples
	// block sleeps k times beside the spinner of worker (startSideSpinner),
	// and says which process it was and the share of the wall time it ran.
	block := func(w string, k int, raw bool) (timerSamples, int, float64, error) {
		sp, stop, err := startSideSpinner(ctx, cpu, w)
		if err != nil {
			return timerSamples{}, 0, 0, err
		}
		defer stop()
		c0, w0 := sp.cpu(), now()
		s, err := timerSleeps(cpu, k, sp.cpu, raw)
		share := 0.0
		if c1, w1 := sp.cpu(), now(); c0 >= 0 && c1 >= 0 && w1 > w0 {
			share = float64(c1-c0) / float64(w1-w0)
		}
		return s, sp.pid, share, err
	}
	var err error
	if out.thread, _, _, err = block("", n, false); err != nil || worker == "" {
		return out, err
	}
	m := n / 2
	for i, k := range []int{m / 2, m - m/2} {
		if i == 1 {
			s, pid, share, err := block(worker, m, true)
			if err != nil {
				return out, err
			}
			out.process, out.processPID, out.processShare = s, pid, share
		}
		s, _, _, err := block("", k, true)
		if err != nil {
			return out, err
		}
		out.rawThread.all = append(out.rawThread.all, s.all...)
		out.rawThread.quiet = append(out.rawThread.quiet, s.quiet...)
	}
	return out, nil
}

// timerSleepCPU is the thread CPU time one 1 ms timer sleep costs the
// sleeper on a busy CPU (a SCHED_IDLE thread spins beside it, so every
// wake-up switches from a running task, as a LatencyProbe's does beside
// hogs): the system call, arming the hrtimer (hrtimer_start_range_ns(),
// which reprograms the clock event device: a VM exit on a guest),
// schedule() out and the context switch back in. The mean over n sleeps
// of the CPU clock read around each, less the median cost of a read, the
// costliest 1 % of the sleeps left out. A mean, not a median: with IRQ
// time accounting off (this kernel's build), the interrupts and soft
// interrupts that run while the task is current are charged to it and
// advance its vruntime, and the simulator charges a mean cost per wake-up;
// the heaviest 1 % (a device interrupt landing on the sleeper) would make
// the estimate the window's luck.
// The sleeps and reads are raw system calls, as the workload's work loop
// makes them (nodeagent/workload sleepUntil): an ordinary Go system call
// also charges the runtime's P hand-over to the thread, which measured
// 45-57 µs per sleep here against 15-20 µs raw. A raw call keeps the
// goroutine's P for the millisecond it blocks; nothing else in the window
// needs it.
func timerSleepCPU(cpu, n int) (int64, error) {
	stop := make(chan struct{})
	defer close(stop)
	ready := make(chan spinReady, 1)
	go spinner(cpu, stop, ready)
	if r := <-ready; r.err != nil {
		return 0, r.err
	}
	return onPinnedThread(cpu, func() int64 {
		reads := make([]int64, 0, n)
		for i := 0; i < n; i++ {
			c0 := rawThreadCPU()
			reads = append(reads, rawThreadCPU()-c0)
		}
		sleeps := make([]int64, 0, n)
		rawSleepUntil(now() + 1_000_000) // start from a sleep
		for i := 0; i < n; i++ {
			d := now() + 1_000_000
			c0 := rawThreadCPU()
			rawSleepUntil(d)
			sleeps = append(sleeps, rawThreadCPU()-c0)
		}
		slices.Sort(sleeps)
		kept := sleeps[:len(sleeps)-len(sleeps)/100]
		var sum int64
		for _, v := range kept {
			sum += v
		}
		return max(sum/int64(len(kept))-median(reads), 1)
	})
}

// rawThreadCPU is the calling thread's CPU clock through a raw system call.
func rawThreadCPU() int64 {
	var ts unix.Timespec
	unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// rawSleepUntil is clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) through
// a raw system call (no runtime entry and exit around it).
func rawSleepUntil(deadline int64) {
	ts := unix.NsecToTimespec(deadline)
	for {
		_, _, e := unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if e != unix.EINTR {
			return
		}
	}
}

// quietRunDelayNs is how long a thread woken on an idle CPU may wait on
// the runqueue for the sample to count as quiet.
const quietRunDelayNs = 20_000

// runDelay reads the calling thread's sched_info run_delay.
type runDelay struct {
	fd  int
	buf [128]byte
}

func newRunDelay() *runDelay {
	fd, err := unix.Open("/proc/thread-self/schedstat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		fd = -1
	}
	return &runDelay{fd: fd}
}

// read is the run delay in ns so far ("<exec> <run_delay> <pcount>"), -1
// when it cannot be read.
func (r *runDelay) read() int64 {
	if r.fd < 0 {
		return -1
	}
	n, err := unix.Pread(r.fd, r.buf[:], 0)
	if err != nil || n <= 0 {
		return -1
	}
	f := strings.Fields(string(r.buf[:n]))
	if len(f) < 2 {
		return -1
	}
	v, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return -1
	}
	return v
}

func (r *runDelay) close() {
	if r.fd >= 0 {
		unix.Close(r.fd)
	}
}

func sleepUntil(deadline int64) {
	ts := unix.NsecToTimespec(deadline)
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
	}
}

// pipePingPong passes a timestamp back and forth n times between two
// threads pinned to cpuA and cpuB through two pipes and returns the median
// delay from a write to the reader running, its quantiles, and the wall
// time per message.
func pipePingPong(cpuA, cpuB, n int) (late int64, q []int64, perMsg int64, err error) {
	var ab, ba [2]int
	if err := unix.Pipe2(ab[:], unix.O_CLOEXEC); err != nil {
		return 0, nil, 0, err
	}
	defer unix.Close(ab[0])
	defer unix.Close(ab[1])
	if err := unix.Pipe2(ba[:], unix.O_CLOEXEC); err != nil {
		return 0, nil, 0, err
	}
	defer unix.Close(ba[0])
	defer unix.Close(ba[1])
	var wg sync.WaitGroup
	errs := make([]error, 2)
	lates := make([][]int64, 2)
	var start, end int64
	side := func(i, cpu, rfd, wfd int, first bool) {
		defer wg.Done()
		unpin, err := pin(cpu)
		defer unpin()
		if err != nil {
			errs[i] = err
			// Unblock the partner.
			unix.Close(wfd)
			return
		}
		buf := make([]byte, 8)
		ls := make([]int64, 0, n)
		if first {
			start = now()
			binary.LittleEndian.PutUint64(buf, uint64(now()))
			if _, err := unix.Write(wfd, buf); err != nil {
				errs[i] = err
				return
			}
		}
		for k := 0; k < n; k++ {
			if _, err := unix.Read(rfd, buf); err != nil {
				errs[i] = err
				return
			}
			t := now()
			ls = append(ls, t-int64(binary.LittleEndian.Uint64(buf)))
			if first && k == n-1 {
				end = t
				break
			}
			binary.LittleEndian.PutUint64(buf, uint64(now()))
			if _, err := unix.Write(wfd, buf); err != nil {
				errs[i] = err
				return
			}
		}
		lates[i] = ls
	}
	wg.Add(2)
	go side(0, cpuA, ba[0], ab[1], true)
	go side(1, cpuB, ab[0], ba[1], false)
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return 0, nil, 0, fmt.Errorf("pipe ping-pong: %w", e)
		}
	}
	all := append(lates[0], lates[1]...)
	return median(all), simengine.OrderQuantiles(all), (end - start) / int64(2*n), nil
}

// nanotime is CLOCK_MONOTONIC through the vDSO, as the runtime reads it
// (no system call, so nothing of the kernel's entry path between the
// wake-up and the reading). go:nosplit in the runtime.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// The cold wake-up measurement's sleeps (coldWakeLateness).
const (
	coldShortNs        = 2_000_000
	coldLongNs         = 40_000_000
	coldShortsPerCycle = 2
)

// coldSamples are what coldWakeLateness saw.
type coldSamples struct {
	// short and long: the lateness of the quiet sleeps of each length
	// (see coldWakeLateness).
	short, long []int64
	// shortAll, longAll: the sleeps made of each length.
	shortAll, longAll int
	// sleptShort, sleptLong: the median time from the sleeper's previous
	// wake-up to its wake-up, of each length's sleeps.
	sleptShort, sleptLong int64
	// otherCPU: the share of the step's wall time its CPU gave to neither
	// the sleeper nor its spinner (other processes, and interrupts the
	// kernel accounts apart).
	otherCPU float64
	wallNs   int64
	// neighbour is what spun beside the sleeper, spinnerPID the process
	// it spun in (this one for a thread).
	neighbour  v1alpha1.ColdWakeNeighbour
	spinnerPID int
	// spinShare: the spinner's CPU time over the step's wall time.
	spinShare float64
}

// coldWakeLateness measures what a timer sleep's wake-up costs more after a
// long sleep than after a short one, on a busy CPU: a SCHED_IDLE spinner
// runs on cpu, and a sleeper pinned there sleeps in cycles of one
// coldLongNs sleep and coldShortsPerCycle coldShortNs sleeps, each to an
// absolute deadline on one grid, with 1 ns of timer slack, and records how
// late each ended (the vDSO clock read right after the system call
// returns).
//
// Beside a SCHED_IDLE spinner every wake-up preempts at once and leaves no
// idle state, so both lengths pay the same timer interrupt, enqueue and
// context switch, and neither waits for the scheduler's pick: what the
// long sleeps pay more is the way back to user space of a task whose cache
// and TLB state went cold while it slept, the cost the simulator's
// ColdWakeNs models, and nothing of the idle exit (an idle CPU sleeps
// deeper the longer it idles, which is the idle exit's spread) or of the
// EEVDF lag a long sleeper keeps (which the simulator's scheduler rules
// model themselves).
//
// The sleeps are raw system calls on a thread with its signals blocked:
// an ordinary Go system call hands the goroutine's P over when it blocks
// long (the runtime's monitor retakes it after 10 ms), and its return
// then waits for a P, which only the long sleeps would pay; a raw call
// keeps the P, and the runtime then asks the thread to yield (SIGURG every
// 10 ms), which would wake a long sleep early unless blocked. The signals
// stay pending and are taken when the mask is put back. The price: a
// stop-the-world of the agent's garbage collector waits for the sleeper's
// next wake-up, at most 40 ms, during the step.
//
// The spinner is a Hog worker of worker (a process of its own, at
// SCHED_IDLE, without its pause detector), or with worker "" a thread of
// this process. What a long sleep pays more depends on it: on the
// development node (2-CPU EEVDF 6.18 VM, 2026-12-07) a C sleeper beside a
// spinner process paid 1.94 µs per doubling more than beside a spinner
// thread of its own process (95 % interval 1.29-2.59; 24 of 25
// interleaved rounds; 1.76 times), while the sleeper's cgroup depth (0 to
// 3), the spinner's class (SCHED_IDLE or normal) and the number of spinner
// processes (1 to 8) changed nothing beyond the noise. A workload's tasks
// are processes, so the worker is their neighbour; the thread was the
// window's spinner in the eleventh session.
//
// A sleep counts (is quiet) when the sleeper waited at most
// quietRunDelayNs on the runqueue after its wake-up (its sched_info
// run_delay): otherwise another process held the CPU.
func coldWakeLateness(ctx context.Context, cpu, cycles int, worker string) (coldSamples, error) {
	var out coldSamples
	spun, stop, err := startSideSpinner(ctx, cpu, worker)
	if err != nil {
		return out, err
	}
	defer stop()
	out.neighbour, out.spinnerPID = spun.neighbour, spun.pid
	type res struct {
		s   coldSamples
		err error
	}
	r, err := onPinnedThread(cpu, func() res {
		var all, old unix.Sigset_t
		for i := range all.Val {
			all.Val[i] = ^uint64(0)
		}
		if err := unix.PthreadSigmask(unix.SIG_BLOCK, &all, &old); err != nil {
			return res{err: fmt.Errorf("pthread_sigmask: %w", err)}
		}
		defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
		rd := newRunDelay()
		defer rd.close()
		s := coldSamples{
			short: make([]int64, 0, cycles*coldShortsPerCycle),
			long:  make([]int64, 0, cycles),
		}
		var slept [2][]int64
		s0, c0, w0 := spun.cpu(), rawThreadCPU(), nanotime()
		d := w0 + coldShortNs
		rawSleepUntil(d) // start from a short sleep
		woke := nanotime()
		for c := 0; c < cycles; c++ {
			for k := 0; k <= coldShortsPerCycle; k++ {
				long := k == 0
				if long {
					d += coldLongNs
				} else {
					d += coldShortNs
				}
				r0 := rd.read()
				rawSleepUntil(d)
				t := nanotime()
				l := t - d
				r1 := rd.read()
				if long {
					slept[1] = append(slept[1], t-woke)
				} else {
					slept[0] = append(slept[0], t-woke)
				}
				woke = t
				quiet := r0 >= 0 && r1 >= 0 && r1-r0 <= quietRunDelayNs
				switch {
				case long:
					s.longAll++
					if quiet {
						s.long = append(s.long, l)
					}
				default:
					s.shortAll++
					if quiet {
						s.short = append(s.short, l)
					}
				}
				if now := nanotime(); d < now {
					d = now // a sleep that ended late: the next one starts from now
				}
			}
		}
		s1, c1, w1 := spun.cpu(), rawThreadCPU(), nanotime()
		s.wallNs = w1 - w0
		s.sleptShort, s.sleptLong = median(slept[0]), median(slept[1])
		if s0 >= 0 && s1 >= 0 {
			s.spinShare = float64(s1-s0) / float64(w1-w0)
			s.otherCPU = min(max(1-float64((s1-s0)+(c1-c0))/float64(w1-w0), 0), 1)
		}
		return res{s: s}
	})
	if err != nil {
		return out, err
	}
	r.s.neighbour, r.s.spinnerPID = out.neighbour, out.spinnerPID
	return r.s, r.err
}

// sideSpinner is a running spinner beside a measurement's sleeper (the
// busy timer path's and the cold wake-up's).
type sideSpinner struct {
	neighbour v1alpha1.ColdWakeNeighbour
	pid       int
	// cpu is the spinner's CPU time so far (all its threads), -1 if it
	// cannot be read.
	cpu func() int64
}

// startSideSpinner starts a spinner on cpu: a Hog worker of the schedlab
// binary worker at SCHED_IDLE, or with worker "" a SCHED_IDLE thread of
// this process (see coldWakeLateness and busyTimerLateness). stop ends it.
func startSideSpinner(ctx context.Context, cpu int, worker string) (sideSpinner, func(), error) {
	if worker == "" {
		stop := make(chan struct{})
		ready := make(chan spinReady, 1)
		go spinner(cpu, stop, ready)
		sr := <-ready
		if sr.err != nil {
			close(stop)
			return sideSpinner{}, nil, sr.err
		}
		return sideSpinner{
			neighbour: v1alpha1.ColdWakeNeighbourThread,
			pid:       unix.Getpid(),
			cpu:       func() int64 { return threadCPUOf(sr.tid) },
		}, func() { close(stop) }, nil
	}
	set, err := workload.Start(ctx, workload.Spec{
		WorkerBinary: worker,
		RunID:        fmt.Sprintf("calib-spin-%d", unix.Getpid()),
		Tasks: []workload.Task{{
			Group:        "calib-spinner",
			Policy:       "Idle",
			CPUs:         []int32{int32(cpu)},
			Pattern:      v1alpha1.Pattern{Type: v1alpha1.PatternHog},
			Peer:         -1,
			NoPauseWatch: true,
		}},
	})
	if err != nil {
		return sideSpinner{}, nil, fmt.Errorf("spinner process: %w", err)
	}
	pid := set.PIDs()[0]
	return sideSpinner{
		neighbour: v1alpha1.ColdWakeNeighbourProcess,
		pid:       pid,
		cpu:       func() int64 { return processCPUOf(pid) },
	}, func() { _ = set.Stop() }, nil
}

// processCPUOf is the CPU time of process pid, all its threads, through
// its CPU clock (MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) in
// include/linux/posix-timers.h); -1 if it cannot be read.
func processCPUOf(pid int) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(int32((^pid)<<3|2), &ts); err != nil {
		return -1
	}
	return ts.Nano()
}
