package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeRunSpec names the experiment and node a NodeRun belongs to. The
// controller writes it; the agent only reads it.
type NodeRunSpec struct {
	// experimentName is the SchedExperiment this run is part of.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ExperimentName string `json:"experimentName"`

	// experimentGeneration is the spec generation the agent must run.
	// +required
	// +kubebuilder:validation:Minimum=1
	ExperimentGeneration int64 `json:"experimentGeneration"`

	// nodeName is the node the run is on.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName"`
}

// KnobCapability says whether a node has a knob and can change it.
type KnobCapability struct {
	// name of the knob in the catalogue (autogroup, baseSlice, …).
	Name string `json:"name"`
	// path of the file on the node.
	// +optional
	Path string `json:"path,omitempty"`
	// exists: the file is there on this node.
	// +optional
	Exists bool `json:"exists,omitempty"`
	// readable: the agent could read it.
	// +optional
	Readable bool `json:"readable,omitempty"`
	// writable: the agent could write it (false under kernel lockdown or a read-only mount).
	// +optional
	Writable bool `json:"writable,omitempty"`
	// value read, if readable.
	// +optional
	Value string `json:"value,omitempty"`
	// reason the knob cannot be used, e.g. "locked down".
	// +optional
	Reason string `json:"reason,omitempty"`
}

// NodeCapabilities describe a node as the agent found it.
type NodeCapabilities struct {
	// cpus online.
	// +optional
	CPUs int32 `json:"cpus,omitempty"`
	// allowedCPUs is the agent's CPU affinity, as a CPU list ("0-7").
	// +optional
	AllowedCPUs string `json:"allowedCPUs,omitempty"`
	// kernelVersion, as uname -r prints it.
	// +optional
	KernelVersion string `json:"kernelVersion,omitempty"`
	// cpuModel is the CPU as /proc/cpuinfo names it, with its clock where
	// given ("AMD EPYC, 2694.853 MHz"). With kernelVersion it tells one
	// host from another: a virtual machine's figures move with its host.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	CPUModel string `json:"cpuModel,omitempty"`
	// scheduler family of the kernel.
	// +optional
	Scheduler SchedulerFamily `json:"scheduler,omitempty"`
	// hz of the tick, 0 when unknown.
	// +optional
	HZ int32 `json:"hz,omitempty"`
	// preempt model, empty when unknown.
	// +optional
	Preempt PreemptModel `json:"preempt,omitempty"`
	// cgroupVersion is v1 or v2: the hierarchy the cpu controller is on.
	// +optional
	CgroupVersion string `json:"cgroupVersion,omitempty"`
	// cgroupCPUPath is the mount of the cpu controller.
	// +optional
	CgroupCPUPath string `json:"cgroupCPUPath,omitempty"`
	// knobs of the catalogue and whether this node can use them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Knobs []KnobCapability `json:"knobs,omitempty"`
	// features of the scheduler and whether each is on, where readable.
	// +optional
	Features map[string]bool `json:"features,omitempty"`
	// featuresSource says where the features were read from, or why not.
	// +optional
	FeaturesSource string `json:"featuresSource,omitempty"`
	// topology of the online CPUs as sysfs describes it (packages, LLCs,
	// SMT siblings); unset when it is unknown or not regular, and then the
	// simulator takes the node as flat.
	// +optional
	Topology *NodeTopology `json:"topology,omitempty"`
	// topologySource says where the topology was read from, what was
	// assumed, or why it is unset.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	TopologySource string `json:"topologySource,omitempty"`
	// nonMainlineSchedSysctls are the node's kernel.sched_* sysctls that
	// no mainline kernel has, as name=value: a vendor build's scheduler
	// changes. The simulator models mainline: where the node's kernel
	// has such changes, a prediction may differ from the node for them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=128
	NonMainlineSchedSysctls []string `json:"nonMainlineSchedSysctls,omitempty"`
}

// GroupMeasurement is one group's metrics in one window.
type GroupMeasurement struct {
	// name of the group.
	Name string `json:"name"`
	// metrics measured.
	Metrics Metrics `json:"metrics"`
	// invariants are what the group's workers did besides their pattern in
	// the window: the proof that the workers did not disturb the measurement.
	// +optional
	Invariants *WorkerInvariants `json:"invariants,omitempty"`
	// gridPhasesNs are, for a LatencyProbe or Periodic group, the phases of
	// its tasks' deadline grids, one per task in the group's order (replica
	// by replica, then task by task): the task's first deadline in
	// CLOCK_MONOTONIC nanoseconds modulo its interval (or period). Every
	// later deadline of the task lies on that grid, so the phases of all of
	// a window's periodic tasks place their deadlines against each other
	// exactly (for example, two probes whose deadlines fall within a timer
	// slack of each other and end their sleeps on one timer interrupt).
	// Absent for other patterns, and when a task had not reached its first
	// sleep.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=512
	// +kubebuilder:validation:items:Minimum=0
	// +kubebuilder:validation:items:Maximum=9999999999
	GridPhasesNs []int64 `json:"gridPhasesNs,omitempty"`
}

// WorkerInvariants are counted over one window for one group's workers. A
// worker's work thread does only its pattern; its other threads (the Go
// runtime's, the control path's) stay idle. A work thread that sleeps more
// often than its pattern asks, or side threads that use CPU, perturb the
// scheduler they are meant to measure.
type WorkerInvariants struct {
	// workVoluntary is the voluntary context switches (sleeps, blocks) of
	// the group's work threads, summed over its tasks.
	// +optional
	WorkVoluntary int64 `json:"workVoluntary"`
	// workInvoluntary is the involuntary context switches (preemptions) of
	// the group's work threads.
	// +optional
	WorkInvoluntary int64 `json:"workInvoluntary"`
	// patternBlocks is how many times the pattern itself slept or blocked
	// (timer sleeps, pipe reads; 0 for Hog): each can cost at most one
	// voluntary switch, so workVoluntary above patternBlocks is a
	// perturbation.
	// +optional
	PatternBlocks int64 `json:"patternBlocks"`
	// sideCPU is the CPUs (1.0 = one whole CPU) that the workers' other
	// threads used over the window, summed over the group's tasks.
	// +optional
	SideCPU float64 `json:"sideCPU"`
	// sideSwitches is the context switches of those other threads: how
	// often they woke up in the window.
	// +optional
	SideSwitches int64 `json:"sideSwitches"`
}

// NoiseSource is a process that used CPU during a window without being
// part of the workload.
type NoiseSource struct {
	// name is the process's command name (comm, at most 15 characters).
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`
	// pid of the process on the node.
	PID int32 `json:"pid"`
	// cpu is the CPUs it used over the window (1.0 = one whole CPU),
	// with exitedChildrenCPU.
	CPU float64 `json:"cpu"`
	// exitedChildrenCPU is the part of cpu used by its children that
	// ended within the window and that it waited for (the short-lived
	// commands of a shell, make or a test runner): they were not seen
	// as processes of their own, and have no threads here.
	// +optional
	ExitedChildrenCPU float64 `json:"exitedChildrenCPU,omitempty"`
	// kernelThread is set for a kernel thread (PF_KTHREAD), such as
	// kdamond.0 or a kworker.
	// +optional
	KernelThread bool `json:"kernelThread,omitempty"`
	// cgroup is the process's cgroup on the cpu controller's hierarchy
	// (v1 or v2), "/" for the root.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Cgroup string `json:"cgroup,omitempty"`
	// cgroupShares is the weight of the cgroup's top level (the group
	// entity that competes on the root run queue), as the kernel counts
	// it: v1 cpu.shares, v2 cpu.weight × 1024 / 100; 0 in the root.
	// +optional
	CgroupShares int64 `json:"cgroupShares,omitempty"`
	// cgroupIdle is set when that top level has cpu.idle set: its
	// group entity is SCHED_IDLE on the root run queue.
	// +optional
	CgroupIdle bool `json:"cgroupIdle,omitempty"`
	// autogroup is the id of the process's autogroup (its session's,
	// /proc/PID/autogroup); 0 when it has none (kernel threads). It
	// schedules as a group only in the root cgroup and while autogroup is on.
	// +optional
	Autogroup int64 `json:"autogroup,omitempty"`
	// autogroupNice is that autogroup's nice value.
	// +optional
	AutogroupNice int32 `json:"autogroupNice,omitempty"`
	// threads are its threads that used at least 0.0005 CPU in the
	// window (at most 8, the most first): each is a task the scheduler
	// saw, with its own runs and wake-ups.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Threads []NoiseThread `json:"threads,omitempty"`
}

// NoiseThread is one thread of a noise source over a window.
type NoiseThread struct {
	// tid of the thread.
	TID int32 `json:"tid"`
	// name is the thread's comm.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Name string `json:"name,omitempty"`
	// cpu is the CPUs it used over the window (from its schedstat).
	CPU float64 `json:"cpu"`
	// runs is how often it was switched in during the window (the third
	// field of /proc/PID/task/TID/schedstat): its CPU time over runs is
	// its mean run on a CPU.
	Runs int64 `json:"runs"`
	// wakeups is its voluntary context switches in the window: each is a
	// block, which a wake-up ends. CPU time over wakeups is its mean burst
	// of work per wake-up, however often others preempted it.
	Wakeups int64 `json:"wakeups"`
	// wait is the time it spent runnable on a run queue without a CPU
	// over the window, as a fraction of the window (the second field of
	// /proc/PID/task/TID/schedstat, run_delay). A thread that others keep
	// waiting (an idle-class build beside hogs) is runnable, not asleep,
	// for that time. Absent in runs of older agents.
	// +optional
	Wait float64 `json:"wait,omitempty"`
	// policy is its scheduling policy: Other, Batch, Idle, FIFO, RR or
	// Deadline.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	Policy string `json:"policy,omitempty"`
	// nice value (-20..19).
	// +optional
	Nice int32 `json:"nice,omitempty"`
	// rtPriority for FIFO and RR (1..99).
	// +optional
	RTPriority int32 `json:"rtPriority,omitempty"`
	// cpus it may run on (its affinity, a CPU list such as "0-3,6").
	// +optional
	// +kubebuilder:validation:MaxLength=256
	CPUs string `json:"cpus,omitempty"`
}

// ForeignCgroup is a cgroup at the top of the cpu controller's hierarchy (a
// direct child of its root) other than schedlab's own, over a window: its
// group entity competes with the workload's on the root run queue whenever
// it has a runnable task, however little CPU it gets there. An idle cgroup
// (cpu.idle 1, weight 3) beside hogs gets almost none, and its threads fall
// below the noise sources' floors, but its entity stays queued and moves the
// root queue's average vruntime, which the wake-ups' picks compare against.
// Nested cgroups are counted in their top level.
type ForeignCgroup struct {
	// path of the cgroup in the hierarchy ("/system.slice").
	// +required
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=256
	Path string `json:"path"`
	// shares is its weight as the kernel counts it (tg->shares): v1
	// cpu.shares, v2 cpu.weight × 1024 / 100 rounded to the closest.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=262144
	Shares int64 `json:"shares,omitempty"`
	// idle is set when its cpu.idle is 1 (v1 and v2, Linux 5.15+): its
	// group entity is SCHED_IDLE on the root run queue, with weight 3
	// whatever shares says (sched_group_set_idle()).
	// +optional
	Idle bool `json:"idle,omitempty"`
	// cpu is the CPUs it used over the window, its descendants' included
	// (1.0 = one whole CPU).
	// +required
	// +kubebuilder:validation:Minimum=0
	CPU float64 `json:"cpu"`
	// cpuSource says where cpu comes from: Cgroup (v2 cpu.stat usage_usec,
	// or v1 cpuacct.usage where cpuacct shares the cpu hierarchy) or
	// Threads (the schedstat CPU time of the threads it had at the window's
	// end: a v1 cpu hierarchy without cpuacct; threads that ended within
	// the window are missing).
	// +required
	// +kubebuilder:validation:Enum=Cgroup;Threads
	CPUSource string `json:"cpuSource"`
	// threads it had at the window's end.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Threads int32 `json:"threads,omitempty"`
	// runnable is the mean number of its threads that were runnable over
	// the window, on a CPU or waiting on a run queue: the sum, over the
	// threads it had at the window's end, of their time on a CPU and
	// run_delay in the window (/proc/PID/task/TID/schedstat), over the
	// window. Threads that ended within the window are missing; run_delay
	// grows when a thread gets the CPU, so a starved thread's wait at
	// either end lands in the window it next runs in. (Per-CPU
	// time with the group entity queued would need schedstats' wait_sum in
	// v1 cpu.stat, off by default; it is not read.)
	// +required
	// +kubebuilder:validation:Minimum=0
	Runnable float64 `json:"runnable"`
	// wait is the part of runnable spent waiting on a run queue
	// (run_delay).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Wait float64 `json:"wait,omitempty"`
	// wakeups are those threads' voluntary context switches in the window.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Wakeups int64 `json:"wakeups,omitempty"`
	// pressureSome is the fraction of the window in which at least one of
	// its tasks was runnable without a CPU, from its cpu.pressure (PSI's
	// "some" total); it counts tasks that ended within the window too, and
	// is a lower bound on the mean number waiting. Cgroup v2 with PSI only:
	// absent on v1, whose cpu hierarchy has no pressure files.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	PressureSome *float64 `json:"pressureSome,omitempty"`
}

// RejectedAttempt is an attempt at a window that was measured and then run
// again because it was noisy or perturbed.
type RejectedAttempt struct {
	// attempt number, from 1.
	Attempt int32 `json:"attempt"`
	// noisy: noiseCPU was above the threshold.
	// +optional
	Noisy bool `json:"noisy,omitempty"`
	// noiseCPU is the CPUs used by everything but the workload during the
	// attempt.
	// +optional
	NoiseCPU float64 `json:"noiseCPU,omitempty"`
	// namedNoiseCPU is the part of noiseCPU its noise sources account for;
	// the rest is interrupt time and processes that started or ended
	// within the attempt.
	// +optional
	NamedNoiseCPU float64 `json:"namedNoiseCPU,omitempty"`
	// noiseSources names the attempt's first three noise sources with
	// their CPUs, and how many more there were
	// ("kdamond.0 (pid 78) 0.080, go (pid 1234) 0.050, 2 more 0.006").
	// +optional
	// +kubebuilder:validation:MaxLength=512
	NoiseSources string `json:"noiseSources,omitempty"`
	// perturbedReason is set when the workers broke their invariants in
	// the attempt.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	PerturbedReason string `json:"perturbedReason,omitempty"`
}

// WindowResult is one variant × repetition measured on a node.
type WindowResult struct {
	// variant name.
	Variant string `json:"variant"`
	// repetition, from 0.
	Repetition int32 `json:"repetition"`
	// unsupported says which knob this node lacks, when it does: nothing
	// was changed for this variant.
	// +optional
	Unsupported string `json:"unsupported,omitempty"`
	// noisy is set when CPU time that was not the workload's exceeded the
	// threshold in every attempt.
	// +optional
	Noisy bool `json:"noisy,omitempty"`
	// attempts made for this window (noisy windows are re-run).
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// rejected are the attempts before the last, each noisy or perturbed
	// and so run again: why, in the figures the agent judged it by. (The
	// window's own fields are its last attempt's.)
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Rejected []RejectedAttempt `json:"rejected,omitempty"`
	// noiseCPU is the CPUs used by everything but the workload.
	// +optional
	NoiseCPU float64 `json:"noiseCPU,omitempty"`
	// noiseSources are the processes outside the workload that used the
	// most CPU during the window (at least 0.002 CPU each, at most 16, the
	// most first): who the noise was, with their threads' runs, wake-ups,
	// policy and scheduling group, so that a prediction can run them as
	// tasks. A process that ended within the window is not among them,
	// though its CPU is in noiseCPU, as is interrupt time.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	NoiseSources []NoiseSource `json:"noiseSources,omitempty"`
	// foreignCgroups are the cgroups at the top of the cpu hierarchy,
	// other than schedlab's, that had runnable threads or used CPU in the
	// window (at least 0.001 of either; at most 16, the most runnable
	// first): their weight, idle flag, CPU and runnable load, which a
	// prediction runs beside the workload as group entities at the root.
	// Absent in runs of older agents and where the node has no cpu
	// controller.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ForeignCgroups []ForeignCgroup `json:"foreignCgroups,omitempty"`
	// perturbed is set when, in every attempt, some group's workers broke
	// their invariants (see WorkerInvariants): work threads that slept more
	// than their pattern asks (beyond one switch per task per 10 s), or
	// side threads that used more than 0.2% of a CPU or woke more than once
	// per task per 10 s. Such a window says as
	// much about the worker as about the scheduler; like a noisy one it is
	// re-run first.
	// +optional
	Perturbed bool `json:"perturbed,omitempty"`
	// perturbedReason names the group and the invariant it broke.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	PerturbedReason string `json:"perturbedReason,omitempty"`
	// groups measured.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Groups []GroupMeasurement `json:"groups,omitempty"`
	// hostPauses is what the window's Hog workers saw of the node's host
	// pauses: the whole virtual machine stopped while a hog was current,
	// charged to it as CPU time. Absent when no Hog ran in the window:
	// nothing was observed (which is not the same as no pause seen).
	// +optional
	HostPauses *HostPauseMeasurement `json:"hostPauses,omitempty"`
	// timerPath is the node's timer path measured just before the window's
	// attempt (before its knobs are set and its workload starts) and just
	// after it (once the workload has stopped and the knobs are back), in
	// the calibration window's terms: the prediction of this window takes
	// the calibration's constants moved by what this measured more or less
	// than the calibration window, since a host's timer path can change
	// from one minute to the next. Absent in runs of older agents and
	// without a calibration window.
	// +optional
	TimerPath *WindowTimerPath `json:"timerPath,omitempty"`
	// timerTrace is the node's timer interrupt lateness inside the window,
	// per CPU, from the kernel's own hrtimer tracepoints recorded in a
	// tracefs instance of the agent's (read after the window, never
	// during it). Where it is there and usable, the prediction of this
	// window takes each CPU's timer expiry from it instead of from
	// timerPath's edges: a host's per-vCPU phase can flip inside a window,
	// which the edges do not see. Absent in runs of agents before the
	// seventeenth session, without a calibration window, and in windows
	// whose workload sleeps on no timer.
	// +optional
	TimerTrace *TimerTrace `json:"timerTrace,omitempty"`
}

// TimerTrace is the timer interrupt lateness the kernel's hrtimer
// tracepoints recorded over one stretch (a measured window, or the
// calibration window): per interrupt that ran a timer at or after its
// hard expiry, the interrupt's `now` less the earliest hard expiry of the
// timers it ran (timer:hrtimer_expire_entry against each timer's
// timer:hrtimer_start). Timers an interrupt ran before their hard expiry,
// inside their slack, are counted apart (earlyInSlack) and not in the
// lateness: the simulator runs such shared interrupts itself.
// +kubebuilder:validation:XValidation:rule="!has(self.unsupported) || !has(self.cpus)",message="an unsupported timer trace has no per-CPU figures"
type TimerTrace struct {
	// unsupported says why nothing was recorded (tracefs absent or not
	// writable, kernel lockdown, ...); the prediction then uses the
	// window's edges.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Unsupported string `json:"unsupported,omitempty"`
	// durationNs is how long the trace recorded.
	// +optional
	// +kubebuilder:validation:Minimum=0
	DurationNs int64 `json:"durationNs,omitempty"`
	// events is how many trace events were recorded over all CPUs (what
	// the trace cost the node: each is a few hundred nanoseconds of the
	// CPU it happened on).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Events int64 `json:"events,omitempty"`
	// bufferKB is the instance's ring buffer per CPU, sized before the
	// window for the events expected in it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	BufferKB int64 `json:"bufferKB,omitempty"`
	// cpus are the per-CPU figures, in CPU order, one per CPU that ran a
	// timer interrupt in the stretch.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	CPUs []TimerTraceCPU `json:"cpus,omitempty"`
}

// TimerTraceCPU is one CPU's timer interrupt lateness in a TimerTrace.
type TimerTraceCPU struct {
	// cpu the interrupts ran on.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1023
	CPU int32 `json:"cpu"`
	// interrupts is how many interrupts that found the CPU busy ran a
	// sleep's timer at or after its hard expiry (the lateness's samples).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Interrupts int64 `json:"interrupts,omitempty"`
	// idleInterrupts is how many such interrupts found the CPU idle; on a
	// virtual machine their lateness holds the vCPU's wake-up (the
	// simulator's idle exit), so they are not in latenessQuantilesNs.
	// Absent in traces of agents before they were told apart.
	// +optional
	// +kubebuilder:validation:Minimum=0
	IdleInterrupts int64 `json:"idleInterrupts,omitempty"`
	// idleLatenessQuantilesNs is the idle interrupts' lateness at the
	// levels of latenessQuantilesNs.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=7
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:items:Minimum=0
	IdleLatenessQuantilesNs []int64 `json:"idleLatenessQuantilesNs,omitempty"`
	// earlyInSlack is how many timers an interrupt ran before their hard
	// expiry (past their soft expiry: another timer's interrupt ended
	// them inside their slack). Not in the lateness.
	// +optional
	// +kubebuilder:validation:Minimum=0
	EarlyInSlack int64 `json:"earlyInSlack,omitempty"`
	// lostEvents is how many of this CPU's events the ring buffer lost
	// (its stats' overrun and dropped events): when above 0 the figures
	// are of what remained and the prediction does not use them.
	// +optional
	// +kubebuilder:validation:Minimum=0
	LostEvents int64 `json:"lostEvents,omitempty"`
	// latenessQuantilesNs is the lateness at the levels of
	// constants.timerExpiryQuantilesNs (5, 25, 50, 75, 90, 95 and 99 %,
	// nondecreasing). Absent with no interrupt.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=7
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:items:Minimum=0
	LatenessQuantilesNs []int64 `json:"latenessQuantilesNs,omitempty"`
	// secondMediansNs is the lateness's median (busy CPU) in each whole second of
	// the stretch from its start (0 for a second without an interrupt),
	// so that a phase that changes inside the window shows.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=3600
	// +kubebuilder:validation:items:Minimum=0
	SecondMediansNs []int64 `json:"secondMediansNs,omitempty"`
}

// WindowTimerPath is the node's timer path at a window's two edges. The
// measurements are outside the window: the workload neither runs during
// them nor waits for them.
type WindowTimerPath struct {
	// before is measured just before the window's knobs are set. When the
	// previous window's attempt (of this window or the one before it)
	// measured its after-edge, nothing ran since and that ended less than a
	// second ago, before is that same sample, not a second measurement: the
	// node's state is the same (its knobs back, no workload), and
	// consecutive windows' after and before are then equal. The run's
	// first window, and one after an after-edge that failed, measure their
	// own.
	// +optional
	Before *TimerPathSample `json:"before,omitempty"`
	// after is measured once the window's workload has stopped and its
	// knobs are put back.
	// +optional
	After *TimerPathSample `json:"after,omitempty"`
	// beforeOtherCPUs is before's measurement on each other CPU the agent
	// may use (before is the last one's), in CPU order, measured together
	// right after it (or, when before is the previous attempt's after, that
	// one's afterOtherCPUs). A host may run its vCPUs' timer paths in
	// different phases, which one CPU's figures do not show; the
	// prediction moves each other CPU's timer expiry by them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	BeforeOtherCPUs []TimerPathSample `json:"beforeOtherCPUs,omitempty"`
	// afterOtherCPUs is after's measurement on each other CPU the agent
	// may use, as beforeOtherCPUs.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	AfterOtherCPUs []TimerPathSample `json:"afterOtherCPUs,omitempty"`
}

// TimerPathSample is one short measurement of the node's timer path, made
// as the calibration window makes its first two: 1 ms timer sleeps with
// 1 ns of timer slack on one CPU, first on the otherwise idle CPU, then as
// many beside a SCHED_IDLE spinner thread of the agent (every wake-up
// preempts it at once, with no idle exit).
type TimerPathSample struct {
	// idleTimerNs is the median lateness of the quiet sleeps on the idle
	// CPU (timer expiry, idle exit and context switch; quiet: woken, the
	// sleeper waited at most 20 µs on the runqueue), of all of them when
	// fewer than a tenth were quiet; the calibration window's counterpart
	// is the median of constants.timerExpiryQuantilesNs,
	// ctxSwitchQuantilesNs and idleExitQuantilesNs together (its quantiles
	// are of the quiet sleeps).
	// +required
	// +kubebuilder:validation:Minimum=0
	IdleTimerNs int64 `json:"idleTimerNs"`
	// busyTimerNs is the median lateness of the quiet sleeps beside the
	// spinner (timer expiry and context switch; quiet: the CPU's time went
	// to the sleeper and the spinner but for 50 µs of the sleep, so no
	// other process's work is in it), of all when fewer than a tenth were
	// quiet; the calibration window's counterpart is the median of its
	// constants.timerExpiryQuantilesNs and ctxSwitchQuantilesNs together.
	// +required
	// +kubebuilder:validation:Minimum=0
	BusyTimerNs int64 `json:"busyTimerNs"`
	// busyTimerQuantilesNs spreads busyTimerNs: the lateness of the same
	// sleeps at the levels of constants.timerExpiryQuantilesNs (5, 25,
	// 50, 75, 90, 95 and 99 %, nondecreasing; the 50 % level is
	// busyTimerNs). The calibration window's counterpart at each level is
	// its timerExpiryQuantilesNs and ctxSwitchQuantilesNs at that level
	// together. Absent in runs of agents before the sixteenth session.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=7
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:items:Minimum=0
	BusyTimerQuantilesNs []int64 `json:"busyTimerQuantilesNs,omitempty"`
	// idleQuiet is the fraction of the idle sleeps that were quiet.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	IdleQuiet *float64 `json:"idleQuiet,omitempty"`
	// busyQuiet is the fraction of the busy sleeps that were quiet; below
	// a tenth busyTimerNs is of all of them, other processes' work on the
	// CPU included, and the prediction does not use it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	BusyQuiet *float64 `json:"busyQuiet,omitempty"`
	// samples is the number of sleeps of each kind.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	Samples int32 `json:"samples"`
	// idleCPUIdle is the fraction of the idle sleeps' wall time their CPU
	// spent idle: near 1 on a quiet node. Well below 1 other work ran on
	// it (SCHED_IDLE work too, which the sleeper preempts with no idle
	// exit), and idleTimerNs is not an idle CPU's path.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	IdleCPUIdle *float64 `json:"idleCPUIdle,omitempty"`
	// durationNs is the measurement's wall time.
	// +optional
	// +kubebuilder:validation:Minimum=0
	DurationNs int64 `json:"durationNs,omitempty"`
	// cpu is the CPU the sleeps ran on. Absent in runs of agents before
	// the sixteenth session, which measured the last CPU they could use.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1023
	CPU *int32 `json:"cpu,omitempty"`
}

// HostPauseMeasurement is what a window's Hog workers saw of host pauses.
// Each hog reads CLOCK_MONOTONIC as it spins and its own CPU clock about
// once a millisecond: a gap of 5 ms or more in its loop over which its CPU
// time advanced by about the gap is a pause (a gap without CPU time is a
// preemption). Pauses that several hogs saw at overlapping times count once;
// a stall that one hog saw while another hog ran is one vCPU's (vcpuStalls),
// not a pause.
// +kubebuilder:validation:XValidation:rule="!has(self.lengthsNs) || size(self.lengthsNs) <= self.count",message="lengthsNs cannot list more pauses than count"
// +kubebuilder:validation:XValidation:rule="!has(self.vcpuStallLengthsNs) || (has(self.vcpuStalls) && size(self.vcpuStallLengthsNs) <= self.vcpuStalls)",message="vcpuStallLengthsNs cannot list more stalls than vcpuStalls"
// +kubebuilder:validation:XValidation:rule="!has(self.shortStallsOthersRan) || (has(self.shortStalls) && self.shortStallsOthersRan <= self.shortStalls)",message="shortStallsOthersRan cannot be more than shortStalls"
type HostPauseMeasurement struct {
	// hogs is how many Hog tasks watched.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=512
	Hogs int32 `json:"hogs"`
	// observedNs is the wall time during which at least one hog was current
	// on a CPU (counted once across hogs): the time in which a pause could
	// be seen.
	// +required
	// +kubebuilder:validation:Minimum=0
	ObservedNs int64 `json:"observedNs"`
	// hogCPUNs is the watching hogs' CPU time over the window, summed (the
	// stalls charged to them included): the CPU time in which a stall of
	// one vCPU could be seen, since a hog sees only the stalls of the vCPU
	// it is current on. Rates of one vCPU's stalls are per CPU over this
	// time. Absent in windows recorded before it was.
	// +optional
	// +kubebuilder:validation:Minimum=0
	HogCPUNs int64 `json:"hogCPUNs,omitempty"`
	// count of pauses seen in the observed time.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000000
	Count int32 `json:"count,omitempty"`
	// lengthsNs are the pauses' lengths (CPU time charged over the gap), in
	// the order seen; the first 64 when there were more.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Minimum=1
	LengthsNs []int64 `json:"lengthsNs,omitempty"`
	// quantilesNs are the lengths of all the window's pauses at the
	// simulator's quantile levels (5, 25, 50, 75, 90, 95, 99 %); absent
	// without pauses.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=7
	// +kubebuilder:validation:MaxItems=7
	QuantilesNs []int64 `json:"quantilesNs,omitempty"`
	// seenByMore counts the pauses that more than one hog saw (the whole
	// machine stopped, not one vCPU).
	// +optional
	// +kubebuilder:validation:Minimum=0
	SeenByMore int32 `json:"seenByMore,omitempty"`
	// offCPUGaps counts gaps of 5 ms or more in a hog's loop in which it was
	// not charged: preemptions, not pauses (summed over hogs).
	// +optional
	// +kubebuilder:validation:Minimum=0
	OffCPUGaps int64 `json:"offCPUGaps,omitempty"`
	// shortStalls counts charged stalls of 1 to 5 ms (merged across hogs
	// like pauses): a hog alone cannot tell them from interrupt work, so
	// they are not counted as pauses.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ShortStalls int64 `json:"shortStalls,omitempty"`
	// shortStallsSeenByMore counts the short stalls that more than one hog
	// saw at once: the machine's, not one CPU's interrupts.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ShortStallsSeenByMore int64 `json:"shortStallsSeenByMore,omitempty"`
	// shortStallsOthersRan counts the short stalls that one hog saw while
	// another hog showed that it ran (a read of its clocks within the
	// stall): one vCPU's for certain. The others that one hog saw are one
	// vCPU's or the machine's with no other hog current to tell.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ShortStallsOthersRan int64 `json:"shortStallsOthersRan,omitempty"`
	// shortStallQuantilesNs are the lengths (CPU time charged over the gap)
	// of the short stalls that one hog alone saw (shortStalls less
	// shortStallsSeenByMore: taken as one vCPU's) at the simulator's
	// quantile levels (5, 25, 50, 75, 90, 95, 99 %); absent without such
	// stalls.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=7
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:items:Minimum=1
	ShortStallQuantilesNs []int64 `json:"shortStallQuantilesNs,omitempty"`
	// vcpuStalls counts the stalls of 5 ms or more that one hog saw while
	// another hog ran: its vCPU stopped, not the machine; not in count.
	// +optional
	// +kubebuilder:validation:Minimum=0
	VCPUStalls int32 `json:"vcpuStalls,omitempty"`
	// vcpuStallLongestNs is the longest of them.
	// +optional
	// +kubebuilder:validation:Minimum=0
	VCPUStallLongestNs int64 `json:"vcpuStallLongestNs,omitempty"`
	// vcpuStallLengthsNs are the vcpuStalls' lengths (CPU time charged over
	// the gap), in the order seen; the first 64 when there were more.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Minimum=1
	VCPUStallLengthsNs []int64 `json:"vcpuStallLengthsNs,omitempty"`
	// lostStalls counts stalls a hog logged but the window's end could not
	// read any more (its log is a ring): in neither count.
	// +optional
	// +kubebuilder:validation:Minimum=0
	LostStalls int64 `json:"lostStalls,omitempty"`
}

// KnobRecord is the restore record of one knob.
type KnobRecord struct {
	// name of the knob, e.g. "autogroup", "features.PLACE_LAG" or "cgroup schedlab/x/oink-0".
	Name string `json:"name"`
	// original value before the run.
	// +optional
	Original string `json:"original,omitempty"`
	// set is the last value the agent wrote.
	// +optional
	Set string `json:"set,omitempty"`
	// restored is the value read back after the restore.
	// +optional
	Restored string `json:"restored,omitempty"`
	// ok is true when restored equals original (aggregated: for every
	// knob it stands for).
	// +optional
	OK bool `json:"ok,omitempty"`
	// count of knobs this record stands for when the agent aggregated
	// records of one kind to fit the list (the name then ends in "*", and
	// original, set and restored are those of one of them); absent for one knob.
	// +optional
	Count int32 `json:"count,omitempty"`
}

// NodeCalibration is what the agent's calibration window measured on its node.
type NodeCalibration struct {
	// constants derived from the window, as the simulator takes them.
	// +optional
	Constants NodeConstants `json:"constants,omitempty"`
	// timerLatenessNs is the median lateness of a 1ns-slack timer sleep on
	// an idle CPU: expiry, idle exit and context switch together.
	// +optional
	TimerLatenessNs int64 `json:"timerLatenessNs,omitempty"`
	// idleCPUIdle is the fraction of the timerLatenessNs measurement its
	// CPU spent idle: near 1 on a quiet node. Well below 1, other work ran
	// there (SCHED_IDLE work too, which the sleeper preempts with no idle
	// exit): timerLatenessNs and constants.idleExitNs are then not an idle
	// CPU's, and the node's idle-class load is part of its floor.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	IdleCPUIdle *float64 `json:"idleCPUIdle,omitempty"`
	// samples behind the medians.
	// +optional
	Samples int32 `json:"samples,omitempty"`
	// noiseCPU is the CPUs other processes used during the window.
	// +optional
	NoiseCPU float64 `json:"noiseCPU,omitempty"`
	// timerTrace is the timer interrupt lateness the kernel's hrtimer
	// tracepoints recorded during the calibration window (see
	// WindowResult.timerTrace): what the windows' in-window traces are
	// read against. Absent in runs of older agents and where the node
	// cannot trace.
	// +optional
	TimerTrace *TimerTrace `json:"timerTrace,omitempty"`
	// backgroundLoad is the fraction of the CPUs' time spent in
	// interrupts, soft interrupts and steal during the window (which the
	// task clock does not count), 0..1; the prediction for this node takes
	// it as the simulator's background load.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	BackgroundLoad float64 `json:"backgroundLoad,omitempty"`
	// coldWake is how constants.coldWakeNs was measured, or why it was not
	// (then the simulator's default stays). Absent when not measured.
	// +optional
	ColdWake *ColdWakeCalibration `json:"coldWake,omitempty"`
	// processSwitch is how constants.processSwitchNs was measured, or why
	// it was not (then the simulator's default stays). Absent when not
	// measured (runs of older agents).
	// +optional
	ProcessSwitch *ProcessSwitchCalibration `json:"processSwitch,omitempty"`
}

// ProcessSwitchCalibration is the calibration window's measurement of what
// a wake-up pays more when it preempts another process than when it
// preempts a thread of its own process: 1 ms timer sleeps on one CPU beside
// a SCHED_IDLE spinner thread of the agent (half of them before, half
// after) and as many beside a spinner process (a Hog worker); every
// wake-up preempts the spinner at once, with no idle exit. The difference
// of the two layouts' median lateness is constants.processSwitchNs.
type ProcessSwitchCalibration struct {
	// threadP50Ns is the median lateness of the quiet sleeps beside the
	// spinner thread.
	// +optional
	ThreadP50Ns int64 `json:"threadP50Ns,omitempty"`
	// processP50Ns is the median lateness of the quiet sleeps beside the
	// spinner process.
	// +optional
	ProcessP50Ns int64 `json:"processP50Ns,omitempty"`
	// threadSamples counts the quiet sleeps beside the thread: those
	// during which the CPU's time went to the sleeper and its spinner but
	// for 50 µs.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ThreadSamples int32 `json:"threadSamples,omitempty"`
	// processSamples counts the quiet sleeps beside the process, by the
	// same rule.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ProcessSamples int32 `json:"processSamples,omitempty"`
	// perSwitchNs is the figure measured, processP50Ns - threadP50Ns; it
	// may be negative.
	// +optional
	PerSwitchNs int64 `json:"perSwitchNs,omitempty"`
	// lowNs is the lower end of an interval that holds perSwitchNs at
	// 95 % at least (from the two medians' distribution-free intervals).
	// +optional
	LowNs int64 `json:"lowNs,omitempty"`
	// highNs is the upper end of that interval.
	// +optional
	HighNs int64 `json:"highNs,omitempty"`
	// rejected says why constants.processSwitchNs was not set from this
	// measurement (too few quiet sleeps, an interval too wide); empty when
	// it was.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Rejected string `json:"rejected,omitempty"`
}

// ColdWakeNeighbour is what the cold wake-up measurement's sleeper slept
// beside.
// +kubebuilder:validation:Enum=Process;Thread
type ColdWakeNeighbour string

const (
	// ColdWakeNeighbourProcess: a Hog worker process at SCHED_IDLE, as a
	// workload's tasks are processes beside each other (since the twelfth
	// session).
	ColdWakeNeighbourProcess ColdWakeNeighbour = "Process"
	// ColdWakeNeighbourThread: a SCHED_IDLE thread of the agent itself.
	// A long sleep pays less beside it: 0.5-0.7 of the Process figure on
	// the development node.
	ColdWakeNeighbourThread ColdWakeNeighbour = "Thread"
)

// ColdWakeCalibration is the calibration window's measurement of what a
// woken task pays more after a long sleep: a thread sleeps to absolute
// deadlines on one CPU beside a SCHED_IDLE spinner (every wake-up preempts
// it at once, with no idle exit), one 40 ms sleep then two of 2 ms, over
// and over. The difference of the two lengths' median lateness over the
// doublings between them (log2 20) is coldWakeNs.
type ColdWakeCalibration struct {
	// neighbour is what spun beside the sleeper. Absent in runs recorded
	// before the field, whose spinner was a Thread.
	// +optional
	Neighbour ColdWakeNeighbour `json:"neighbour,omitempty"`
	// shortP50Ns is the median lateness of the quiet 2 ms sleeps.
	// +optional
	ShortP50Ns int64 `json:"shortP50Ns,omitempty"`
	// longP50Ns is the median lateness of the quiet 40 ms sleeps.
	// +optional
	LongP50Ns int64 `json:"longP50Ns,omitempty"`
	// shortSamples counts the quiet 2 ms sleeps: those after which the
	// sleeper waited at most 20 µs on the runqueue.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ShortSamples int32 `json:"shortSamples,omitempty"`
	// longSamples counts the quiet 40 ms sleeps, by the same rule.
	// +optional
	// +kubebuilder:validation:Minimum=0
	LongSamples int32 `json:"longSamples,omitempty"`
	// perDoublingNs is the figure measured, (longP50Ns - shortP50Ns) / log2(20);
	// it may be negative.
	// +optional
	PerDoublingNs int64 `json:"perDoublingNs,omitempty"`
	// lowNs is the lower end of an interval that holds perDoublingNs at
	// 95 % at least (from the two medians' distribution-free intervals).
	// +optional
	LowNs int64 `json:"lowNs,omitempty"`
	// highNs is the upper end of that interval.
	// +optional
	HighNs int64 `json:"highNs,omitempty"`
	// otherCPU is the share of the measurement's CPU time that went to
	// neither the sleeper nor its spinner (other processes).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	OtherCPU float64 `json:"otherCPU,omitempty"`
	// rejected says why constants.coldWakeNs was not set from this
	// measurement (too few quiet sleeps, other processes on the CPU, an
	// interval too wide); empty when it was.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Rejected string `json:"rejected,omitempty"`
}

// NodeRunStatus is written by the node's agent.
type NodeRunStatus struct {
	// phase of the run.
	// +optional
	Phase NodeRunPhase `json:"phase,omitempty"`
	// experimentGeneration the status belongs to.
	// +optional
	ExperimentGeneration int64 `json:"experimentGeneration,omitempty"`
	// message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// capabilities of the node.
	// +optional
	Capabilities *NodeCapabilities `json:"capabilities,omitempty"`
	// calibration is the node's own wake-up constants, measured by the agent
	// in a short window before the plan; the prediction shown next to this
	// node's measurements uses them.
	// +optional
	Calibration *NodeCalibration `json:"calibration,omitempty"`
	// stepsDone of stepsTotal windows.
	// +optional
	StepsDone int32 `json:"stepsDone,omitempty"`
	// stepsTotal is the number of windows to run: variants × repetitions.
	// +optional
	StepsTotal int32 `json:"stepsTotal,omitempty"`
	// windows measured, each written as soon as it is done (a run cut off
	// keeps the windows it finished). At most MaxWindows.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=160
	Windows []WindowResult `json:"windows,omitempty"`
	// knobs touched and how they were restored. Beyond MaxKnobRecords
	// (hundreds of replicas each with a cgroup) the records of one kind are
	// aggregated into one with a count; every knob that was not restored
	// keeps a record of its own as far as the list allows.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Knobs []KnobRecord `json:"knobs,omitempty"`
	// restored is true once every knob and cgroup is back as it was.
	// +optional
	Restored bool `json:"restored,omitempty"`
	// startTime of the run.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// lastUpdateTime is the agent's last write: its heartbeat.
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
	// completionTime of the run.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nr,categories=schedlab
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`,description="the node's phase: Pending, Running, Completed, Failed, Unsupported, TimedOut, Aborted"
// +kubebuilder:printcolumn:name="Experiment",type=string,JSONPath=`.spec.experimentName`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="Done",type=integer,JSONPath=`.status.stepsDone`
// +kubebuilder:printcolumn:name="Total",type=integer,JSONPath=`.status.stepsTotal`
// +kubebuilder:printcolumn:name="Restored",type=boolean,JSONPath=`.status.restored`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// NodeRun is one node's part of a SchedExperiment, written by its agent.
type NodeRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NodeRunSpec `json:"spec"`
	// +optional
	Status NodeRunStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NodeRunList is a list of NodeRuns.
type NodeRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeRun `json:"items"`
}
