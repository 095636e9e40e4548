package nodeagent

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
	"github.com/schedlab/schedlab/internal/simengine"
)

// timerTraceEvents are the tracepoints a timer trace records: each timer's
// hard and soft expiry as it is started, and each run of a timer with the
// interrupt's now (v6.18 include/trace/events/timer.h; hrtimer_start's
// expires is hrtimer_get_expires(), the hard expiry, softexpires the soft
// one).
var timerTraceEvents = []string{"timer/hrtimer_start", "timer/hrtimer_expire_entry"}

// timerTraceEventBytes is what one event takes in the ring buffer, with
// room to spare: hrtimer_start's record is 48 bytes and
// hrtimer_expire_entry's 32 (their format files on 6.18), each behind a
// 4-8 byte event header, in pages with their own headers.
const timerTraceEventBytes = 80

// timerTraceBufferKB is the ring buffer per CPU for a stretch of d in which
// the workload starts rate timer sleeps a second: each sleep is two events
// (start, expiry), and the node's other timers (the tick's restarts, other
// processes' sleeps, the agent's and its workers' runtime timers) are
// counted as 1000 more sleeps a second (two 1 kHz probes and two hogs on 2
// CPUs recorded 3100-3300 events a second in all, 2026-12-08). Any one CPU may take all of them.
// Twice that, between 2 MiB and 64 MiB (a node of many CPUs pays it per CPU).
func timerTraceBufferKB(rate float64, d time.Duration) int64 {
	events := 2 * (rate + 1000) * d.Seconds()
	kb := int64(math.Ceil(2 * events * timerTraceEventBytes / 1024))
	return min(max(kb, 2048), 64<<10)
}

// timerSleepRate is how many timer sleeps a second the workload's tasks
// start (LatencyProbe, Periodic, Burst: one a period, interval or mean
// cycle; Server: one a request at most); 0 when none sleeps on a timer.
func timerSleepRate(spec *v1alpha1.SchedExperimentSpec) float64 {
	var rate float64
	per := func(d time.Duration) float64 {
		if d <= 0 {
			return 0
		}
		return float64(time.Second) / float64(d)
	}
	for i := range spec.Workload.Groups {
		g := &spec.Workload.Groups[i]
		p := g.Pattern
		if p == nil {
			continue
		}
		n := float64(g.ReplicaCount()) * float64(g.TaskCount())
		switch p.Type {
		case v1alpha1.PatternLatencyProbe:
			if p.Interval != nil {
				rate += n * per(p.Interval.Duration)
			}
		case v1alpha1.PatternPeriodic:
			if p.Period != nil {
				rate += n * per(p.Period.Duration)
			}
		case v1alpha1.PatternBurst:
			var c time.Duration
			if p.MeanRun != nil {
				c += p.MeanRun.Duration
			}
			if p.MeanSleep != nil {
				c += p.MeanSleep.Duration
			}
			rate += n * per(c)
		case v1alpha1.PatternServer:
			if p.Rate != nil {
				rate += float64(g.ReplicaCount()) * float64(*p.Rate)
			}
		}
	}
	return rate
}

// timerLateness turns a timer trace's text lines (the instance's trace
// file, trace clock mono) into each CPU's timer interrupt lateness.
//
// What is counted, and why (v6.18 kernel/time/hrtimer.c): a CPU's clock
// event is programmed for the earliest hard expiry in its timer queues
// (__hrtimer_next_event_base() takes hrtimer_get_expires(), the hard
// expiry). hrtimer_interrupt() reads now once and __hrtimer_run_queues()
// walks each clock base's queue in order of hard expiry, running with
// __run_hrtimer() (which fires hrtimer_expire_entry with that base's now)
// every timer whose soft expiry is not after now, and stops at the first
// that is. So one interrupt runs (a) the timer it was programmed for, late
// by now − its hard expiry: the host's timer path; (b) other timers already
// past their hard expiry, less late since their expiry came later; and (c)
// timers past their soft expiry but not their hard one, ended early inside
// their slack because another timer's interrupt came. Only (a) is the
// timer path: an interrupt counts once, with now less the earliest hard
// expiry of the timers it ran (those of one interrupt and base share the
// same now on one CPU). (c) is counted apart (earlyInSlack): the simulator
// runs shared interrupts itself (simengine's hrtimerInterrupt). Counted are
// the interrupts that ran a sleep's timer (function hrtimer_wakeup, which
// ends nanosleep, futex and poll timeouts): the timer expiry the simulator
// draws is a sleep's. Timers started in a soft mode run from the timer
// softirq (hrtimer_run_softirq()), later by the softirq's delay, and are
// left out; so are timers whose start the trace did not see (restarted from
// their own callback, as the tick is, or started before the trace).
//
// An interrupt that came to an idle CPU (the task it interrupted, the
// line's pid, is the idle task, pid 0) is counted apart (idle): on a
// virtual machine its lateness holds the halted vCPU's wake-up, the part
// the simulator draws as the idle exit, and the calibration's timer expiry
// is of sleeps beside a spinner (calib.Measure's busy sleeps), whose
// interrupts find the CPU busy. In the calibration windows of 2026-12-08
// 01:07-01:24 the last CPU's interrupts, idle and busy together, had a
// second mode at 28-32 µs over a first at 15 µs.
//
// start is the trace's start on CLOCK_MONOTONIC (ns): secondMediansNs
// bins the interrupts by whole seconds from it, up to d.
type timerLateness struct {
	start, d int64
	timers   map[string]traceTimer
	cpus     map[int]*cpuLateness
}

type traceTimer struct {
	hard int64
	soft bool // started in a soft mode
}

type cpuLateness struct {
	late      []int64 // interrupts that found the CPU busy
	idle      []int64 // interrupts that found it idle
	bins      [][]int64
	early     int64
	groupIdle bool  // the interrupt being gathered found the CPU idle
	groupNow  int64 // now of the interrupt being gathered (0: none)
	groupLate int64 // its lateness so far (-1: no timer at or after its hard expiry yet)
	groupWake bool  // it ran a sleep's timer at or after its hard expiry
}

func newTimerLateness(start int64, d time.Duration) *timerLateness {
	return &timerLateness{start: start, d: int64(d), timers: map[string]traceTimer{}, cpus: map[int]*cpuLateness{}}
}

// line takes one line of the trace:
//
//	<idle>-0 [001] d.h1. 123.456789: hrtimer_expire_entry: hrtimer=00000000a1b2c3d4 function=hrtimer_wakeup now=123456781234
func (t *timerLateness) line(l []byte) {
	if len(l) == 0 || l[0] == '#' {
		return
	}
	o := bytes.Index(l, []byte("] "))
	b := bytes.LastIndexByte(l[:max(o, 0)], '[')
	if o < 0 || b < 0 {
		return
	}
	cpu, err := strconv.Atoi(string(l[b+1 : o]))
	if err != nil {
		return
	}
	// The interrupted task: "comm-pid" before the CPU field.
	task := bytes.TrimSpace(l[:b])
	idle := bytes.HasSuffix(task, []byte("-0"))
	rest := l[o:]
	switch {
	case bytes.Contains(rest, []byte(": hrtimer_start: ")):
		h, ok1 := field(rest, "hrtimer=")
		e, ok2 := field(rest, "expires=")
		mode, _ := field(rest, "mode=")
		hard, err := strconv.ParseInt(string(e), 10, 64)
		if !ok1 || !ok2 || err != nil {
			return
		}
		t.timers[string(h)] = traceTimer{hard: hard, soft: bytes.Contains(mode, []byte("SOFT"))}
	case bytes.Contains(rest, []byte(": hrtimer_expire_entry: ")):
		h, ok1 := field(rest, "hrtimer=")
		n, ok2 := field(rest, "now=")
		fn, _ := field(rest, "function=")
		now, err := strconv.ParseInt(string(n), 10, 64)
		if !ok1 || !ok2 || err != nil {
			return
		}
		tm, seen := t.timers[string(h)]
		delete(t.timers, string(h))
		c := t.cpus[cpu]
		if c == nil {
			c = &cpuLateness{groupLate: -1}
			t.cpus[cpu] = c
		}
		if c.groupNow != now {
			t.flush(c)
			c.groupNow, c.groupIdle = now, idle
		}
		if !seen || tm.soft {
			return
		}
		if now < tm.hard {
			c.early++
			return
		}
		c.groupLate = max(c.groupLate, now-tm.hard)
		c.groupWake = c.groupWake || bytes.Equal(fn, []byte("hrtimer_wakeup"))
	}
}

// flush counts the interrupt c was gathering.
func (t *timerLateness) flush(c *cpuLateness) {
	if c.groupLate >= 0 && c.groupWake && c.groupIdle {
		c.idle = append(c.idle, c.groupLate)
	} else if c.groupLate >= 0 && c.groupWake {
		c.late = append(c.late, c.groupLate)
		if s := (c.groupNow - t.start) / int64(time.Second); c.groupNow >= t.start && s < (t.d+int64(time.Second)-1)/int64(time.Second) {
			for int64(len(c.bins)) <= s {
				c.bins = append(c.bins, nil)
			}
			c.bins[s] = append(c.bins[s], c.groupLate)
		}
	}
	c.groupNow, c.groupLate, c.groupWake = 0, -1, false
}

// field is the value of key (up to the next space) in l.
func field(l []byte, key string) ([]byte, bool) {
	i := bytes.Index(l, []byte(" "+key))
	if i < 0 {
		return nil, false
	}
	v := l[i+1+len(key):]
	if j := bytes.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	return v, true
}

// result is the trace's per-CPU figures, CPU order, with lost events from
// each CPU's buffer stats (lost: overrun and dropped).
func (t *timerLateness) result(lost map[int]int64) []v1alpha1.TimerTraceCPU {
	var cpus []int
	for c, cl := range t.cpus {
		t.flush(cl)
		cpus = append(cpus, c)
	}
	for c, n := range lost {
		if n > 0 && t.cpus[c] == nil {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	var out []v1alpha1.TimerTraceCPU
	for _, c := range cpus {
		if c < 0 || c > 1023 {
			continue
		}
		r := v1alpha1.TimerTraceCPU{CPU: int32(c), LostEvents: lost[c]}
		if cl := t.cpus[c]; cl != nil {
			r.Interrupts, r.EarlyInSlack = int64(len(cl.late)), cl.early
			r.LatenessQuantilesNs = simengine.OrderQuantiles(cl.late)
			r.IdleInterrupts, r.IdleLatenessQuantilesNs = int64(len(cl.idle)), simengine.OrderQuantiles(cl.idle)
			if len(cl.late) > 0 {
				for _, b := range cl.bins[:min(len(cl.bins), 3600)] {
					var m int64
					if len(b) > 0 {
						slices.Sort(b)
						m = b[len(b)/2]
					}
					r.SecondMediansNs = append(r.SecondMediansNs, m)
				}
			}
		}
		if r.Interrupts == 0 && r.IdleInterrupts == 0 && r.EarlyInSlack == 0 && r.LostEvents == 0 {
			continue
		}
		out = append(out, r)
	}
	return out
}

// timerTrace records the node's timer interrupts over one stretch (a
// window, the calibration window) in a tracefs instance of the agent's,
// created before the stretch and removed after it. Nothing reads the
// buffer while it records: a reader is woken to read it, on the CPUs it
// measures. unsupported says why there is no instance.
type timerTrace struct {
	inst        *host.TraceInstance
	bufKB       int64
	start, end  int64 // CLOCK_MONOTONIC, ns
	unsupported string
}

// timerTraceName is the run's tracefs instance (one at a time, removed
// after each stretch; a leftover is the journal's to remove).
func timerTraceName(runID string) string { return "schedlab-" + runID }

// openTimerTrace creates the instance, sized for a stretch of d with rate
// timer sleeps a second of the workload's (timerTraceBufferKB). Any failure
// is the trace's unsupported reason, never the run's, and is logged: the
// prediction then uses the window's edges.
func openTimerTrace(ch *host.Changes, log logr.Logger, runID string, rate float64, d time.Duration) *timerTrace {
	kb := timerTraceBufferKB(rate, d)
	inst, err := ch.OpenTraceInstance(timerTraceName(runID), timerTraceEvents, kb)
	if err != nil {
		t := &timerTrace{unsupported: v1alpha1.Truncate(err.Error(), 512)}
		var ue *host.UnsupportedError
		if errors.As(err, &ue) {
			t.unsupported = ue.Reason
		}
		log.Info("Timer trace unsupported; windows use their edges' timer paths", "reason", t.unsupported)
		return t
	}
	return &timerTrace{inst: inst, bufKB: kb}
}

// on starts recording.
func (t *timerTrace) on() {
	if t == nil || t.inst == nil {
		return
	}
	t.start = monoNow()
	if err := t.inst.On(); err != nil {
		t.unsupported = v1alpha1.Truncate("starting the trace: "+err.Error(), 512)
	}
}

// off stops recording.
func (t *timerTrace) off() {
	if t == nil || t.inst == nil || t.start == 0 {
		return
	}
	if err := t.inst.Off(); err != nil && t.unsupported == "" {
		t.unsupported = v1alpha1.Truncate("stopping the trace: "+err.Error(), 512)
	}
	t.end = monoNow()
}

// finish reads the stopped trace, its buffers' stats, and removes the
// instance; nil when there was nothing to trace.
func (t *timerTrace) finish() *v1alpha1.TimerTrace {
	if t == nil {
		return nil
	}
	if t.inst != nil {
		defer t.inst.Remove()
	}
	if t.unsupported == "" && (t.inst == nil || t.end == 0) {
		t.unsupported = "the trace did not record"
	}
	if t.unsupported != "" {
		return &v1alpha1.TimerTrace{Unsupported: t.unsupported}
	}
	if err := t.inst.Off(); err != nil {
		return &v1alpha1.TimerTrace{Unsupported: v1alpha1.Truncate("stopping the trace: "+err.Error(), 512)}
	}
	stats, err := t.inst.Stats()
	if err != nil {
		return &v1alpha1.TimerTrace{Unsupported: v1alpha1.Truncate("reading the trace's stats: "+err.Error(), 512)}
	}
	d := time.Duration(t.end - t.start)
	tl := newTimerLateness(t.start, d)
	if err := t.inst.ReadTrace(tl.line); err != nil {
		return &v1alpha1.TimerTrace{Unsupported: v1alpha1.Truncate("reading the trace: "+err.Error(), 512)}
	}
	lost := map[int]int64{}
	var events int64
	for c, s := range stats {
		lost[c] = s.Overrun + s.Dropped
		events += s.Entries + s.Overrun
	}
	return &v1alpha1.TimerTrace{DurationNs: int64(d), Events: events, BufferKB: t.bufKB, CPUs: tl.result(lost)}
}

func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return time.Now().UnixNano()
	}
	return ts.Nano()
}
