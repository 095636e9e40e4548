package workload

import (
	"sync/atomic"
	"unsafe"
)

// Host pauses, seen passively by the Hog workers.
//
// A virtual machine's host may stop the whole machine (every vCPU) for
// milliseconds. The guest cannot tell it happened except by its clocks: when
// it runs again, CLOCK_MONOTONIC (kvm-clock here) has moved on by the
// pause. A Hog spins anyway, so it watches for that at no cost to what it
// does: in its loop it reads CLOCK_MONOTONIC (the vDSO: no system call) and
// keeps the time of the last read; at once after any gap of gapCheckNs
// between two reads it reads its own CPU clock (CLOCK_THREAD_CPUTIME_ID:
// one system call, no sleep, no switch).
//
// It reads its CPU clock only after a gap, never on a timer while it runs:
// the read brings the thread's runtime up to date through update_curr()
// (task_sched_runtime(), below), and update_curr() ends a slice that has run
// out (update_deadline() and the resched in fair.c, v6.18) at the read
// instead of at the next tick. A first version read it once a millisecond:
// its hogs' slices then ended within a millisecond of running out instead
// of at the 4 ms tick (HZ 250), and the hogs were switched out about twice
// as often as plain ones (eight hogs in two sessions: 1037 involuntary
// switches a second against 528 in the ninth session's campaign; two nice-0
// and two nice-5 hogs: 363 and 277 against 206 and 129). The reads after a
// gap come when the thread has just gone back on its CPU (its slice begins)
// or after a stall; a thread that is interrupted a lot reads once more
// when the short gaps since its last read add up to smallBudgetNs, which
// bounds the error below.
//
// A gap between two reads of the clock means the loop did not run for that
// long. Either the thread was off its CPU (preempted or migrated; nothing is
// charged to it while it waits), or it was on its CPU and the CPU did not
// run it: the machine stopped, or the kernel ran something else in the
// thread's context (interrupts). Which one is told by the CPU clock:
//
//   - The thread's CPU clock is its sum_exec_runtime, brought up to date by
//     task_sched_runtime() (kernel/sched/core.c, v6.18), which calls the
//     class's update_curr() for a running task. update_curr() (fair.c,
//     through update_se()) adds rq_clock_task() − exec_start: the run
//     queue's task clock since the thread last went on its CPU, and nothing
//     while it waits (a waiting entity has no exec_start advancing).
//   - rq_clock_task() advances in update_rq_clock_task() (core.c) by the
//     sched_clock() delta (kvm-clock here) minus interrupt time (only with
//     CONFIG_IRQ_TIME_ACCOUNTING) minus steal time (paravirt_steal_clock(),
//     with CONFIG_PARAVIRT_TIME_ACCOUNTING and a host that reports steal).
//     On the development machine (Linux 6.18, a Firecracker KVM guest)
//     IRQ_TIME_ACCOUNTING is off, PARAVIRT_TIME_ACCOUNTING is on but the
//     host reports no steal (the steal column of /proc/stat stays 0, and
//     steal_account_process_time() in cputime.c accounts nothing), so the
//     whole time the machine stood still is charged to the task that was
//     current on each vCPU, as CPU time.
//
// So for a gap of g: CPU time ≈ 0 over the gap means the thread waited
// (preemption: not a pause); CPU time ≈ g means it was current while the
// CPU did not run it. Only the latter is a pause, and its length is the CPU
// time charged over the gap (a pause after which the thread is preempted
// at once shows a longer gap; the part charged is the pause).
//
// What else is charged the same way, and why PauseMinNs is 5 ms: without
// IRQ_TIME_ACCOUNTING hard interrupts and the soft interrupts run at their
// exit (handle_softirqs() in kernel/softirq.c) are charged to the current
// task. handle_softirqs() restarts only while jiffies has not moved past
// MAX_SOFTIRQ_TIME (msecs_to_jiffies(2): one jiffy, 4 ms at HZ 250) and
// then leaves the rest to ksoftirqd, which is a context switch (the hog
// then sees a preemption). A single charged stretch of 5 ms or more is
// therefore more than one irq exit's soft interrupts on this kernel; an
// interrupt storm that keeps the thread from running any instruction for
// 5 ms (each exit's handlers back to back) would be counted as a pause —
// it would show in /proc/interrupts and /proc/softirqs, and a kernel with
// IRQ_TIME_ACCOUNTING subtracts it and shows a preemption instead. A
// storm that lets the loop run now and then shows no gap at all. Charged
// stalls of 1 ms up to PauseMinNs are logged too and reported apart (short
// stalls), with how many of them two hogs saw at once: on two CPUs at once
// they are the machine's, not one CPU's interrupts, but with one hog they
// cannot be told apart.
//
// The error of the test: the CPU clock was last read after the previous
// gap of gapCheckNs or more (or when the short gaps since reached
// smallBudgetNs); between that read and the gap the thread ran except for
// gaps shorter than gapCheckNs (interrupts, charged; or waits, not
// charged), so the CPU time attributed to the gap is low by at most the
// waits shorter than gapCheckNs since that read, less than smallBudgetNs.
// A pause is
// also counted when a vCPU alone is stopped by its host while the hog is on
// it, unless another hog shows that it ran meanwhile: every hog writes the
// time of its last two beats (CPU-clock reads, and a mark every markEveryNs
// while it runs) into the shared page, and a
// hog that finds a stall from s to e counts the other hogs with a read in
// (s, e), which they could not have made had the whole machine stopped.
// Such a stall is one vCPU's (reported apart, not a pause). Two hogs that
// both see a stall at overlapping times make one pause of the machine
// (mergePauses).
//
// Time observed: a pause can be seen only while some hog is current on some
// CPU. Each hog marks the stretches of wall time it was current (or stopped
// with the machine) in a ring of coverage buckets shared by every worker
// of the Set (nodePage); a bucket is counted once, by whichever hog marks
// it first, so two hogs on two CPUs do not count the same time twice.
const (
	// gapCheckNs: a gap this long between two clock reads makes the hog
	// read its CPU clock at once (a loop's reads are well under a
	// microsecond apart; a tick's interrupt takes a few).
	gapCheckNs = 50_000
	// markEveryNs: while the loop runs without a gap, the time it ran is
	// marked as covered and its beat written this often (no CPU-clock read).
	markEveryNs = 1_000_000
	// smallGapNs: a gap this long (but under gapCheckNs) counts towards the
	// error budget: an interrupt, or a short wait off the CPU.
	smallGapNs = 2_000
	// smallBudgetNs: when the small gaps since the last CPU-clock read add
	// up to this, the clock is read at the next loop step.
	smallBudgetNs = 250_000
	// shortStallNs: charged stalls from here to pauseMinNs are counted as
	// short stalls.
	shortStallNs = 1_000_000

	// Coverage buckets: 2^covShift ns each (262 µs), in a ring of
	// covRingLen in the node page (1.07 s of wall time).
	covShift   = 18
	covRingLen = 4096
	// BucketNs is one coverage bucket's length.
	BucketNs = 1 << covShift
)

// PauseMinNs (pause.go) is why: see "why PauseMinNs is 5 ms" above.

// Words of a Hog's slot used by the detector. A Hog records no latency, so
// its log of stalls takes the histogram's words (the parent reads no
// histogram from a Hog's slot).
const (
	slotPauses   = 3592     // stalls logged so far (records below)
	slotOffGaps  = 3593     // gaps ≥ PauseMinNs with no CPU charged: preemptions
	slotPauseLog = slotHist // pauseLogLen records of 4 words: start (CLOCK_MONOTONIC), wall gap, CPU charged, other hogs that ran meanwhile
	pauseLogLen  = shmHistLen / 4
	// beatMarginNs: another hog's read counts as made during a stall when
	// it lies this far inside it.
	beatMarginNs = 100_000
)

// nodePage is the page every worker of a Set shares (the slot after the
// tasks'): word 0 counts the coverage buckets marked; the ring holds, per
// bucket index mod covRingLen, the bucket last marked there (0 = none).
type nodePage struct {
	covered int64
	_       [7]int64
	// beats[i] are the times of task i's last two beats (a Hog's CPU-clock
	// reads and the marks of markEveryNs while it runs; 0 for other tasks).
	beats [MaxTasks][2]int64
	ring  [covRingLen]uint32
}

var _ [slotBytes - int(unsafe.Sizeof(nodePage{}))]byte // fits a slot

// pauseDet is a hog's detector state: plain data, updated by the work loop.
type pauseDet struct {
	s    *slot
	node *nodePage
	// idx is this task's index, tasks the Set's number of tasks (beats
	// 0..tasks-1).
	idx, tasks int
	// last is the previous CLOCK_MONOTONIC read; atWall and atCPU the wall
	// and CPU clocks at the last CPU-clock read; from the start of the
	// stretch of wall time not yet marked as covered; small the gaps of
	// smallGapNs up to gapCheckNs since the last CPU-clock read.
	last, atWall, atCPU, from, small int64
}

// start sets the detector up at wall time now, CPU time cpu.
//
//go:nosplit
func (d *pauseDet) start(now, cpu int64) {
	d.last, d.atWall, d.atCPU, d.from = now, now, cpu, now
}

// due says whether the CPU clock should be read after the clock read now:
// after a gap, or when the short gaps since the last read reached the
// budget.
//
//go:nosplit
func (d *pauseDet) due(now int64) bool {
	return now-d.last >= gapCheckNs || d.small >= smallBudgetNs
}

// ran records a loop step at now with no CPU-clock read: a short gap counts
// towards the budget, and every markEveryNs the time run is marked covered
// and the beat written.
//
//go:nosplit
func (d *pauseDet) ran(now int64) {
	if now-d.last >= smallGapNs {
		d.small += now - d.last
	}
	d.last = now
	if now-d.from >= markEveryNs {
		d.mark(d.from, now)
		d.from = now
		d.beat(now)
	}
}

// beat writes now as this hog's latest beat (it ran then).
//
//go:nosplit
func (d *pauseDet) beat(now int64) {
	if d.node != nil && d.idx < MaxTasks {
		b := &d.node.beats[d.idx]
		atomic.StoreInt64(&b[1], atomic.LoadInt64(&b[0]))
		atomic.StoreInt64(&b[0], now)
	}
}

// check classifies the time since the last CPU-clock read, given the
// wall clock now and the CPU clock cpu read just after it, and marks what
// was covered.
//
//go:nosplit
func (d *pauseDet) check(now, cpu int64) {
	gap := now - d.last
	if gap >= gapCheckNs {
		charged := chargedOverGap(d.atWall, d.atCPU, d.last, cpu)
		switch {
		case charged >= shortStallNs:
			d.logPause(d.last, gap, min(charged, gap), d.othersRan(d.last, now))
			// Current through the stall; a wait after it is not covered.
			d.mark(d.from, d.last+min(charged, gap))
		default:
			if gap >= PauseMinNs {
				atomic.AddInt64(&d.s[slotOffGaps], 1)
			}
			d.mark(d.from, d.last)
		}
		d.from = now
	}
	d.mark(d.from, now)
	d.from = now
	d.last, d.atWall, d.atCPU, d.small = now, now, cpu, 0
	d.beat(now)
}

// othersRan counts the other hogs with a beat within the stall from s to e
// (beatMarginNs inside it): they ran while this vCPU did not.
//
//go:nosplit
func (d *pauseDet) othersRan(s, e int64) int64 {
	if d.node == nil {
		return 0
	}
	var n int64
	for j := 0; j < d.tasks && j < MaxTasks; j++ {
		if j == d.idx {
			continue
		}
		b0, b1 := atomic.LoadInt64(&d.node.beats[j][0]), atomic.LoadInt64(&d.node.beats[j][1])
		if (b0 > s+beatMarginNs && b0 < e-beatMarginNs) || (b1 > s+beatMarginNs && b1 < e-beatMarginNs) {
			n++
		}
	}
	return n
}

// chargedOverGap is the CPU time charged to the thread over a gap that
// began at lastRead, given the clocks (atWall, atCPU) at the last CPU-clock
// read before it and the CPU clock cpu just after it: the CPU time since
// that read less the wall time the loop ran before the gap. Never below 0.
//
//go:nosplit
func chargedOverGap(atWall, atCPU, lastRead, cpu int64) int64 {
	c := (cpu - atCPU) - (lastRead - atWall)
	if c < 0 {
		return 0
	}
	return c
}

// logPause appends one pause to the slot's log (a ring; the count goes up
// after the record is written, so a reader that sees the count sees it).
//
//go:nosplit
func (d *pauseDet) logPause(start, gap, charged, others int64) {
	n := atomic.LoadInt64(&d.s[slotPauses])
	w := slotPauseLog + int(n%pauseLogLen)*4
	atomic.StoreInt64(&d.s[w], start)
	atomic.StoreInt64(&d.s[w+1], gap)
	atomic.StoreInt64(&d.s[w+2], charged)
	atomic.StoreInt64(&d.s[w+3], others)
	atomic.AddInt64(&d.s[slotPauses], 1)
}

// mark marks the coverage buckets of wall time [a, b] as seen; each bucket
// is counted once by whichever worker marks it first. A bucket older than
// the ring (a report more than a second late) is left alone.
//
//go:nosplit
func (d *pauseDet) mark(a, b int64) {
	if d.node == nil || b < a {
		return
	}
	for k := a >> covShift; k <= b>>covShift; k++ {
		p := &d.node.ring[k&(covRingLen-1)]
		want := uint32(k)
		for {
			old := atomic.LoadUint32(p)
			if old == want || (old != 0 && int32(want-old) < 0) {
				break
			}
			if atomic.CompareAndSwapUint32(p, old, want) {
				atomic.AddInt64(&d.node.covered, 1)
				break
			}
		}
	}
}

// hogWatching spins forever like hog, watching for host pauses (see above).
//
//go:nosplit
func hogWatching(s *slot, node *nodePage, idx, tasks int) {
	var d pauseDet
	d.s, d.node, d.idx, d.tasks = s, node, idx, tasks
	d.start(nanotime(), threadCPU())
	x := sink
	for {
		for i := 0; i < 64; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		now := nanotime()
		if d.due(now) {
			d.check(now, threadCPU())
		} else {
			d.ran(now)
		}
		sink = x
	}
}

// pauseRecord is one logged pause.
type pauseRecord struct{ start, gap, charged, others int64 }

// pauseSnap is one reading of a hog's detector counters.
type pauseSnap struct {
	pauses, offGaps int64
}

func readPauseSnap(s *slot) pauseSnap {
	return pauseSnap{pauses: atomic.LoadInt64(&s[slotPauses]), offGaps: atomic.LoadInt64(&s[slotOffGaps])}
}

// pausesSince returns the stalls logged after o up to r (those still in the
// ring) and how many were overwritten before they could be read.
func pausesSince(s *slot, o, r pauseSnap) (recs []pauseRecord, lost int64) {
	from := o.pauses
	if r.pauses-from > pauseLogLen {
		lost = r.pauses - from - pauseLogLen
		from = r.pauses - pauseLogLen
	}
	for n := from; n < r.pauses; n++ {
		w := slotPauseLog + int(n%pauseLogLen)*4
		recs = append(recs, pauseRecord{atomic.LoadInt64(&s[w]), atomic.LoadInt64(&s[w+1]), atomic.LoadInt64(&s[w+2]), atomic.LoadInt64(&s[w+3])})
	}
	return recs, lost
}

func (m *shm) node(tasks int) *nodePage { return (*nodePage)(unsafe.Pointer(&m.mem[tasks*slotBytes])) }

func readCovered(n *nodePage) int64 { return atomic.LoadInt64(&n.covered) }
