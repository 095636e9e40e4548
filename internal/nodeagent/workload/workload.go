package workload

import (
	"time"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// WorkerArg is argv[1] of every worker process; WorkerEnv names the
// environment variable that carries the run id (visible in
// /proc/<pid>/environ), so that leftovers of a run can be found.
const (
	WorkerArg = "__worker"
	WorkerEnv = "SCHEDLAB_WORKER"
)

// Task is one worker process.
type Task struct {
	// Group, Replica and Index identify the task: Index is its position
	// within its replica (0 .. tasks-1).
	Group   string
	Replica int
	Index   int

	// CgroupProcs is the cgroup.procs file (v2, or v1) the worker joins before
	// its work starts. A v1 "tasks" file is accepted too; every thread is
	// then written. "" leaves the worker where it started (the caller's
	// cgroup), or, for a session task, where RootProcs puts it.
	CgroupProcs string

	// Session, when not empty, runs the task outside any cgroup in the setsid
	// session of that name: every task of the Spec with the same Session
	// shares one session, and so one autogroup. The session's processes are
	// moved to Spec.RootProcs before they fork. CgroupProcs must be "".
	Session string

	// Nice (-20..19), Policy ("Other", "Batch", "Idle" or "" for Other) and
	// SliceNs (the EEVDF custom slice: sched_attr.sched_runtime of a fair
	// task, kernels 6.12+; 0 = the default slice) are applied with
	// sched_setattr to every thread of the worker before its work starts. A
	// kernel that refuses them fails Start.
	Nice    *int
	Policy  string
	SliceNs int64

	// TimerSlackNs (1..100ms; 0 keeps the default 50us) is set with
	// prctl(PR_SET_TIMERSLACK) on the work thread before its work starts.
	TimerSlackNs int64

	// CPUs, when not empty, is set with sched_setaffinity on every thread
	// of the worker before its work starts, as a cpuset confines a
	// container's threads.
	CPUs []int32

	// Pattern is what the task does (Hog, Periodic, LatencyProbe, PingPong,
	// Burst, Server), with durations as in the API. Every task of a Server
	// replica (same Group and Replica) has the same pattern and serves the
	// replica's one queue.
	Pattern v1alpha1.Pattern

	// Peer is, for PingPong, the index in Spec.Tasks of the partner (pairs
	// 0-1, 2-3, … within a replica); -1 otherwise. The task with the lower
	// index starts the round trips.
	Peer int

	// Seed seeds a Burst task's random generator.
	Seed uint64

	// Perturb runs the task's work as an ordinary goroutine, which the Go
	// runtime preempts every 10 ms, waking its other threads to pass its P
	// around (~80 wake-ups a second per worker were seen): the worker as
	// it was before its work thread left the Go scheduler. Only for tests
	// that prove the invariants catch such a worker; never set in a real
	// run.
	Perturb bool

	// NoPauseWatch runs a Hog without its host-pause detector
	// (pause_linux.go): for measuring what the detector costs.
	NoPauseWatch bool

	// PhaseNs, when above 0, puts a LatencyProbe's deadlines on a grid:
	// CLOCK_MONOTONIC multiples of its interval plus PhaseNs (below the
	// interval), instead of every interval from its start. Two sleepers
	// with the same period whose deadlines fall within one timer slack of
	// each other on one CPU share a timer interrupt (the hrtimer code runs
	// every timer whose soft expiry has passed), so one wakes early and the
	// other waits behind it; the tick, aligned to the same grid, does the
	// same. Runs that compare tools side by side give each its own phase.
	PhaseNs int64
}

// Spec is the whole workload of one measurement.
type Spec struct {
	Tasks []Task
	// WorkerBinary is the schedlab binary (os.Executable()); workers run as
	// `<WorkerBinary> __worker <json>`.
	WorkerBinary string
	// RootProcs is the root cgroup's procs file that session tasks join
	// (so that autogroup applies to them); "" leaves them in the caller's
	// cgroup.
	RootProcs string
	// RunID marks the workers (SCHEDLAB_WORKER=<RunID> in their
	// environment); "" picks a random one (Set.RunID tells it).
	RunID string
}

// TaskStats is what one task did over the measured window.
type TaskStats struct {
	Group   string
	Replica int
	Index   int
	PID     int
	Pattern v1alpha1.PatternType

	// Window is this task's own window: from the middle of the reading of
	// its counters at Begin to the middle of the reading at End. Its rates
	// (CPU, switches, ops per second) are over this, not over the Set's
	// Duration: a reader starved halfway through the workers reads them at
	// times a good part of a second apart.
	Window time.Duration

	// CPUNs is CPU time over the window, summed over all threads of the
	// worker (as the cgroup's accounting counts it). RunDelayNs (time
	// runnable but waiting on a run queue), Voluntary and Involuntary
	// (context switches) are those of the worker's work thread only.
	CPUNs       int64
	RunDelayNs  int64
	Voluntary   int64
	Involuntary int64

	// Blocks is how many times the pattern slept or blocked (timer sleeps,
	// pipe reads): the most voluntary switches the pattern itself can
	// cause. SideCPUNs and SideSwitches are the CPU time and the times
	// scheduled in of every other thread of the worker (the Go runtime's,
	// the control path's), and for the first task of a session also of its
	// session leader. A worker that does only its pattern has Voluntary ≤
	// Blocks and ~0 side CPU.
	Blocks       int64
	SideCPUNs    int64
	SideSwitches int64

	// Latency holds the wakeup latencies (ns) recorded in the window:
	// lateness of a timer (LatencyProbe, Periodic, Burst) or time from the
	// partner's write to the return from read (PingPong, both sides).
	Latency *Histogram

	// Ops: PingPong round trips (counted by the initiating side only), Burst
	// bursts completed, Periodic runs completed, LatencyProbe wake-ups.
	// Periods and Misses (Periodic): periods that ended in the window and,
	// of those, the ones whose run did not finish within the period
	// (skipped periods count as missed).
	Ops     int64
	Periods int64
	Misses  int64

	// Server: Ops are requests completed (counted by the task that finished
	// a request's last sub-request) and Latency their request latencies,
	// from scheduled arrival to completion. Arrivals and Dropped are the
	// replica's arrivals this task admitted or dropped (whichever worker
	// held the queue's lock when their time had come), and of those the
	// ones dropped on a full queue.
	Arrivals int64
	Dropped  int64

	// GridNs is a LatencyProbe's interval or a Periodic's period, and
	// FirstDeadlineNs its first deadline (CLOCK_MONOTONIC ns): every later
	// deadline is FirstDeadlineNs plus a multiple of GridNs. Both are 0 for
	// other patterns, and FirstDeadlineNs is 0 too for a task that had not
	// reached its first sleep.
	GridNs          int64
	FirstDeadlineNs int64
}

// GridPhaseNs is the phase of t's deadline grid: its first deadline modulo
// its interval (see TaskStats.GridNs); ok is false for a task without one.
// Two tasks' phases place their deadlines against each other exactly, also
// with different intervals: the grids are fixed in CLOCK_MONOTONIC time.
func (t *TaskStats) GridPhaseNs() (phase int64, ok bool) {
	if t.GridNs <= 0 || t.FirstDeadlineNs <= 0 {
		return 0, false
	}
	return t.FirstDeadlineNs % t.GridNs, true
}

// DefaultServerQueue is a Server replica's queue bound when the pattern sets
// none, as in the API.
const DefaultServerQueue = 1000

// Window is one measured window.
type Window struct {
	Duration time.Duration
	Tasks    []TaskStats
	// Pauses is what the Hog tasks saw of host pauses; nil when no Hog
	// watched (nothing was observed).
	Pauses *HostPauses
}

// Sched is a thread's fair-class scheduling attributes as sched_getattr
// reports them.
type Sched struct {
	Policy  string `json:"policy"`  // "Other", "Batch", "Idle", or "policy N" for another class
	Nice    int    `json:"nice"`    // the nice value
	SliceNs int64  `json:"sliceNs"` // se.slice: the custom slice, or the base slice when none is set (6.12+); 0 before 6.12
}

// Placement is where a worker found itself just after "go" and before its
// first instruction of work: the record that placement preceded the work.
type Placement struct {
	PID int `json:"pid"`
	// Cgroup is the worker's /proc/self/cgroup.
	Cgroup string `json:"cgroup"`
	// Session is its session id (getsid); Autogroup its /proc/self/autogroup
	// ("/autogroup-N nice M"), "" where the kernel has no autogroup.
	Session   int    `json:"session"`
	Autogroup string `json:"autogroup"`
	// Sched is its work thread's policy, nice and slice.
	Sched Sched `json:"sched"`
}
