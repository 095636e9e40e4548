package simengine

import (
	"io"
	"slices"
)

// Scheduler selects the fair-class algorithm of the simulated kernel.
type Scheduler string

const (
	// EEVDF is the fair scheduler of Linux 6.6 and later.
	EEVDF Scheduler = "EEVDF"
	// CFS is the Completely Fair Scheduler of Linux up to 6.5 (modelled on 6.1).
	CFS Scheduler = "CFS"
)

// Node describes the simulated machine and kernel build.
type Node struct {
	// CPUs is the number of CPUs (1..1024).
	CPUs int `json:"cpus"`
	// Scheduler is "EEVDF" or "CFS"; "" means the kernel's (EEVDF from 6.6).
	Scheduler Scheduler `json:"scheduler,omitempty"`
	// Kernel is the node's kernel release ("6.12", "6.18.44", or uname -r
	// such as "6.18.44-fc-v1045"); "" means the reference kernel, v6.12.
	// It selects the code paths that changed between releases (see
	// kernelRules) and the defaults: the scheduler, the base slice, and
	// DELAY_DEQUEUE/PREEMPT_SHORT (on from 6.12).
	Kernel string `json:"kernel,omitempty"`
	// HZ is the tick rate: 100, 250, 300 or 1000; 0 means 250 (the stock default).
	HZ int `json:"hz,omitempty"`
	// Preempt is the preemption model: "None", "Voluntary", "Full" or "Lazy"; "" means Voluntary.
	Preempt string `json:"preempt,omitempty"`
	// TunableScaling is "None", "Log" or "Linear"; "" means Log (the kernel default).
	TunableScaling string `json:"tunableScaling,omitempty"`
	// LegacySlice selects the EEVDF base slice of kernels before 6.15 and
	// the stable backports (0.75 ms instead of 0.70 ms; see DefaultBaseSlice).
	LegacySlice bool `json:"legacySlice,omitempty"`
	// Constants are the node's wake-up path constants (the latency floor);
	// zero fields take the defaults of DefaultConstants, so a prediction
	// never shows a free wake-up. The agent measures them on each node in a
	// short calibration window.
	Constants Constants `json:"constants,omitempty"`
	// Calibration holds overheads fitted from measurements across a fleet,
	// added to the constants; zero by default.
	Calibration Calibration `json:"calibration,omitempty"`
	// Topology is how the CPUs share cores, LLCs and sockets; the zero
	// value is the flat machine (one LLC, no SMT) with the simulator's
	// original single-domain placement and balancing. Any other value
	// builds the kernel's sched domains (see topology.go).
	Topology Topology `json:"topology,omitempty"`
	// TimerExpiryShiftNs are, by CPU number, how much later than
	// Constants' timer expiry a timer interrupt comes on that CPU
	// (negative: earlier; the interrupt's cost never drops below 1 ns); a
	// CPU past the list's end has none. A virtual machine's host runs each
	// vCPU's timer path in phases of its own: on the development VM the
	// interrupt came 15-16 µs after a sleep's hard expiry on one vCPU while
	// 20-28 µs on the other for tens of seconds (VALIDATION.md); the agent
	// measures every CPU's path at a window's edges.
	TimerExpiryShiftNs []int64 `json:"timerExpiryShiftNs,omitempty"`
}

// Topology is a symmetric CPU topology: Sockets packages (one NUMA node
// each), LLCsPerSocket last-level caches per package, ThreadsPerCore SMT
// siblings per core; CPUs must be a multiple of their product. CPUs are
// numbered socket by socket, LLC by LLC, core by core, thread by thread.
// 0 means 1 for each.
type Topology struct {
	Sockets        int `json:"sockets,omitempty"`
	LLCsPerSocket  int `json:"llcsPerSocket,omitempty"`
	ThreadsPerCore int `json:"threadsPerCore,omitempty"`
}

// IsZero reports the unset topology: the flat machine.
func (t Topology) IsZero() bool { return t == Topology{} }

// Constants are what a wake-up costs on the node, beyond the scheduler's
// decisions. Each is physics of the wake-up path, not a fit: a timer sleep
// ends at the hrtimer's hard expiry (the deadline plus the task's timer
// slack), or earlier at the first tick after the deadline on a busy CPU or
// at another sleep's timer interrupt on its CPU (see armTimer), then pays
// TimerExpiryNs; a wake-up by another task pays WakeupNs; a CPU
// that was idle pays IdleExitNs; the switch to the woken task pays
// CtxSwitchNs; and every wake-up costs the task WakeupCPUNs of CPU (plus
// TimerArmCPUNs for a timer sleep). Zero means the default
// (DefaultConstants); NoCost means a real zero.
type Constants struct {
	// TimerExpiryNs: from the timer's expiry to the task's enqueue (the
	// timer interrupt, hrtimer_interrupt(), hrtimer_wakeup(), ttwu).
	TimerExpiryNs int64 `json:"timerExpiryNs,omitempty"`
	// WakeupNs: from a wake-up call (a pipe write, or a timer expiry that
	// places the task on another CPU) to the wakee's enqueue on an idle
	// CPU through its wake list (try_to_wake_up(), the IPI,
	// sched_ttwu_pending()). A wake-up onto the waker's CPU or onto a busy
	// CPU is enqueued by the waker at once (ttwu_queue_cond(), v6.12).
	WakeupNs int64 `json:"wakeupNs,omitempty"`
	// IdleExitNs: leaving the idle loop (cpuidle exit, the tick restart)
	// when the woken task's CPU was idle.
	IdleExitNs int64 `json:"idleExitNs,omitempty"`
	// CtxSwitchNs: __schedule() and context_switch() to the incoming task,
	// charged to it; a woken task runs this long after it is picked.
	CtxSwitchNs int64 `json:"ctxSwitchNs,omitempty"`
	// WakeupCPUNs: CPU time a task spends per wake-up outside its
	// pattern's work: the return from the blocking call, the call that
	// blocks again, schedule() on the way out.
	WakeupCPUNs int64 `json:"wakeupCPUNs,omitempty"`
	// TimerArmCPUNs: CPU time of arming a timer for a sleep
	// (hrtimer_start_range_ns(), reprogramming the clock event device).
	TimerArmCPUNs int64 `json:"timerArmCPUNs,omitempty"`
	// NewidleBalanceNs: what one new-idle balance of a sched domain costs
	// (sched_clock() around sched_balance_rq() in sched_balance_newidle()),
	// the input of sd->max_newidle_lb_cost, which gates new-idle balancing
	// from v5.16 (see newidle.go). Not measured by the agent; the default
	// (3 µs) is an order of magnitude for a domain of a few CPUs.
	NewidleBalanceNs int64 `json:"newidleBalanceNs,omitempty"`
	// ColdWakeNs: what a woken task pays, beyond the context switch, per
	// doubling of its sleep past 2 ms, up to a sleep of 100 ms: the caches
	// and TLB entries the other tasks took from it while it slept,
	// refilled on its way back to user space. It is paid at the wake-up's
	// level of the context switch's spread (the median costs ColdWakeNs
	// per doubling) and counts in its wake-up latency only: its CPU time
	// was not measured, and charged to the task it lengthens the first
	// message of a PingPong partner woken after a long wait, which breaks
	// the lock step the node kept without a spread of the messages' work
	// (TestMessageJitterSetsCapture). The agent's calibration window
	// measures it (timer sleeps of 2 and 40 ms beside a SCHED_IDLE
	// spinner, internal/nodeagent/calib); the default (4 µs), for a node
	// not measured, is the median of what a 2-CPU EEVDF VM showed for
	// LatencyProbes of 5 to 100 ms beside four hogs against one of 1 ms
	// (docs/latency-tail.md, tenth session).
	ColdWakeNs int64 `json:"coldWakeNs,omitempty"`
	// ProcessSwitchNs: what a switch-in costs more when the incoming task
	// is of another process than the one whose address space the CPU
	// holds: context_switch() calls switch_mm_irqs_off(prev->active_mm,
	// next->mm, next) (kernel/sched/core.c, v6.18), which returns early
	// when both are the same mm (x86: arch/x86/mm/tlb.c) and otherwise
	// loads the new page tables (CR3) and flushes what the TLB held of the
	// old ones; a kernel thread, and the idle task, keep the mm that ran
	// before (lazy TLB: enter_lazy_tlb()), so switching to one and back
	// costs nothing. Which tasks share an address space is
	// Group.AddressSpace and Group.KernelThread (the agent's workers are
	// each a process of their own). A woken task pays it at the wake-up's
	// level of the context switch's spread (the median costs
	// ProcessSwitchNs), in its wake-up latency only, as ColdWakeNs: the
	// node charges the switch to the task's CPU time as well (its clock
	// started at set_next_entity(), before context_switch()), but charged
	// so in the simulator it lengthens PingPong messages unevenly (a task
	// switched in after its partner or a hog pays it, one after the idle
	// task does not) and breaks the lock step the node kept without a
	// spread of the messages' work: with 4 µs as CPU time the pinned 1:4
	// pairs of TestMessageJitterSetsCapture took both CPUs without
	// jitter (2.000 / 0.000 against 0.43-0.74 measured) and mixed's hogs
	// fell to 0.852 CPU against 0.909 measured (TestSyncWakeupPreemptsWaker,
	// 48 seeds). The
	// calibration window's timer, context-switch and pipe steps run beside
	// and between threads of one process, so their figures hold none of
	// it; the window measures it apart, from timer sleeps beside a
	// spinner process against the same beside a spinner thread. The
	// default (3.5 µs), for a node not measured, is the median of what a
	// 2-CPU EEVDF VM (6.18, paravirtual: its page-table loads are
	// hypercalls, and it has no PCID, so each one flushes the TLB) showed
	// for a sleeper that touches little of its memory before it reads
	// the clock, as a workload's loop does: timer sleeps of 1 ms beside a
	// spinner process against beside a spinner thread of the sleeper's
	// own process, 1.5, 2.4, 3.2, 3.5, 3.6 and 5.6 µs in six calibration
	// steps (median 3.35) and 2.6 µs in ten interleaved rounds of a C probe
	// (its pipe ping-pong 3.2 µs per message), 2026-12-07; 3.8 µs for 2 ms
	// sleeps in the twelfth session (docs/latency-tail.md). A sleeper
	// that returns through the Go runtime's exitsyscall() first paid
	// 16-18 µs there.
	ProcessSwitchNs int64 `json:"processSwitchNs,omitempty"`

	// The spread of the four latency terms. Each list, when set, holds
	// its term's values at QuantileLevels (nondecreasing). Every wake-up
	// draws one level u, the same for its four terms (a wake-up that meets
	// a cold cache or a section with interrupts off is slow all along its
	// path), and pays each term's value at u, interpolated linearly
	// between the listed levels and flat beyond the first and last. A
	// term set by its scalar alone costs exactly that scalar; a term left
	// at its default takes DefaultConstants' spread. With a list the
	// scalar is unused (the calibration window sets it to the median).
	TimerExpiryQuantilesNs []int64 `json:"timerExpiryQuantilesNs,omitempty"`
	WakeupQuantilesNs      []int64 `json:"wakeupQuantilesNs,omitempty"`
	IdleExitQuantilesNs    []int64 `json:"idleExitQuantilesNs,omitempty"`
	CtxSwitchQuantilesNs   []int64 `json:"ctxSwitchQuantilesNs,omitempty"`

	// Host pauses: a virtual machine's host stops all its CPUs now and
	// then (the hypervisor runs something else, or the VM is migrated).
	// During a pause nothing runs and no timer fires; every event due
	// within it happens at its end, in its order, and the tasks running
	// when it began are charged it as CPU time (a guest without steal
	// accounting: update_curr() sees the clock move) while their work
	// stands still. HostPausesPerHour is the rate of pauses: the time from
	// one pause's end to the next one's start is exponential with that
	// rate; HostPauseQuantilesNs are the pause lengths at
	// QuantileLevels (interpolated as the latency spreads are). Zero: no
	// pauses (the default; a bare-metal node). Pauses draw from their own
	// random stream, so a run without them is unchanged.
	HostPausesPerHour    int64   `json:"hostPausesPerHour,omitempty"`
	HostPauseQuantilesNs []int64 `json:"hostPauseQuantilesNs,omitempty"`

	// Stalls of one vCPU: the host does not run one of the machine's
	// vCPUs for a while and runs the others (vcpustall.go says what the
	// stalled CPU and the others do meanwhile). Two classes, each a
	// Poisson process on every CPU apart: VCPUStallsPerHour is the rate
	// per CPU of the stalls of 5 ms or more, VCPUShortStallsPerHour that
	// of the short ones (1 to 5 ms on the node that measured them); their
	// QuantilesNs are the lengths at QuantileLevels (interpolated as the
	// latency spreads are). Two classes because the long ones are rare
	// beside the short ones and seven levels of one list would lose them.
	// Zero: none (the default). They draw from their own random stream, so
	// a run without them is unchanged.
	VCPUStallsPerHour         int64   `json:"vcpuStallsPerHour,omitempty"`
	VCPUStallQuantilesNs      []int64 `json:"vcpuStallQuantilesNs,omitempty"`
	VCPUShortStallsPerHour    int64   `json:"vcpuShortStallsPerHour,omitempty"`
	VCPUShortStallQuantilesNs []int64 `json:"vcpuShortStallQuantilesNs,omitempty"`
}

// QuantileLevels are the levels of the Constants' quantile lists.
var QuantileLevels = [...]float64{0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99}

// OrderQuantiles are xs at QuantileLevels by order statistics (the value
// at rank level × n of the sorted values), as the agent measures the
// Constants' quantile lists; nil for none. xs is not changed.
func OrderQuantiles(xs []int64) []int64 {
	if len(xs) == 0 {
		return nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	q := make([]int64, len(QuantileLevels))
	for i, l := range QuantileLevels {
		q[i] = s[min(int(l*float64(len(s))), len(s)-1)]
	}
	return q
}

// QuantileMedian is the index of the median in QuantileLevels.
const QuantileMedian = 2

// NoCost is the Constants value that means a real zero, since 0 means the default.
const NoCost int64 = -1

// DefaultTimerSlackNs is the timer slack of a normal task (init_task's
// timer_slack_ns, 50 µs); real-time tasks have none.
const DefaultTimerSlackNs int64 = 50_000

// DefaultConstants are the wake-up constants of a node whose own were not
// measured: orders of magnitude of a virtualised x86 server (an hrtimer
// interrupt and a wake-up of a few µs each, leaving a shallow idle state in
// a few µs, a context switch of about 3 µs, about 2 µs of system call and
// scheduler work per wake-up, and a timer arm that reprograms the clock
// event device, a VM exit on a guest), each latency term with a spread:
//
//   - the timer interrupt (hrtimer_interrupt() → hrtimer_wakeup() →
//     try_to_wake_up()) and the wake list's IPI are delayed when they arrive
//     while the CPU runs with interrupts off (the rq lock is taken with
//     interrupts off in __schedule() and the load balancer) and by cache
//     misses on the woken task's state: p90 about twice, p99 about five
//     times the median;
//   - the idle exit depends on the idle state the CPU reached, deeper (and
//     slower to leave) the longer it was idle (cpuidle's target residency):
//     from 2 µs for a polling or shallow state to tens of µs at the tail;
//   - the context switch varies less (the incoming task's cache and TLB
//     state): p99 about three times the median.
//
// These are assumptions of the same kind as the medians; a node's
// calibration window replaces them with what it measured.
func DefaultConstants() Constants {
	return Constants{TimerExpiryNs: 5_000, WakeupNs: 3_000, IdleExitNs: 5_000, CtxSwitchNs: 3_000, WakeupCPUNs: 2_000, TimerArmCPUNs: 3_000,
		NewidleBalanceNs:       3_000,
		ColdWakeNs:             4_000,
		ProcessSwitchNs:        3_500,
		TimerExpiryQuantilesNs: []int64{3_000, 4_000, 5_000, 6_500, 10_000, 14_000, 25_000},
		WakeupQuantilesNs:      []int64{2_000, 2_500, 3_000, 4_000, 6_000, 8_000, 15_000},
		IdleExitQuantilesNs:    []int64{2_000, 3_000, 5_000, 8_000, 15_000, 25_000, 50_000},
		CtxSwitchQuantilesNs:   []int64{2_000, 2_500, 3_000, 3_500, 4_500, 5_500, 9_000}}
}

// resolve fills c's zero fields from DefaultConstants and turns NoCost into
// 0; a latency term keeps its quantile list, takes the default's with the
// default scalar, and has none (a fixed cost) with a scalar of its own.
func (c Constants) resolve() Constants {
	d := DefaultConstants()
	f := func(v, def int64) int64 {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	q := func(v int64, l []int64, def int64, defL []int64) (int64, []int64) {
		switch {
		case len(l) > QuantileMedian:
			return l[QuantileMedian], l
		case v == 0:
			return def, defL
		case v < 0:
			return 0, nil
		}
		return v, nil
	}
	out := Constants{WakeupCPUNs: f(c.WakeupCPUNs, d.WakeupCPUNs), TimerArmCPUNs: f(c.TimerArmCPUNs, d.TimerArmCPUNs),
		NewidleBalanceNs: f(c.NewidleBalanceNs, d.NewidleBalanceNs), ColdWakeNs: f(c.ColdWakeNs, d.ColdWakeNs),
		ProcessSwitchNs: f(c.ProcessSwitchNs, d.ProcessSwitchNs)}
	out.TimerExpiryNs, out.TimerExpiryQuantilesNs = q(c.TimerExpiryNs, c.TimerExpiryQuantilesNs, d.TimerExpiryNs, d.TimerExpiryQuantilesNs)
	out.WakeupNs, out.WakeupQuantilesNs = q(c.WakeupNs, c.WakeupQuantilesNs, d.WakeupNs, d.WakeupQuantilesNs)
	out.IdleExitNs, out.IdleExitQuantilesNs = q(c.IdleExitNs, c.IdleExitQuantilesNs, d.IdleExitNs, d.IdleExitQuantilesNs)
	out.CtxSwitchNs, out.CtxSwitchQuantilesNs = q(c.CtxSwitchNs, c.CtxSwitchQuantilesNs, d.CtxSwitchNs, d.CtxSwitchQuantilesNs)
	if c.HostPausesPerHour > 0 {
		out.HostPausesPerHour, out.HostPauseQuantilesNs = c.HostPausesPerHour, c.HostPauseQuantilesNs
	}
	if c.VCPUStallsPerHour > 0 {
		out.VCPUStallsPerHour, out.VCPUStallQuantilesNs = c.VCPUStallsPerHour, c.VCPUStallQuantilesNs
	}
	if c.VCPUShortStallsPerHour > 0 {
		out.VCPUShortStallsPerHour, out.VCPUShortStallQuantilesNs = c.VCPUShortStallsPerHour, c.VCPUShortStallQuantilesNs
	}
	return out
}

// Resolved returns c with its defaults filled in and NoCost turned into 0:
// the constants a run uses.
func (c Constants) Resolved() Constants { return c.resolve() }

// Calibration holds per-node overheads fitted across a fleet, added to the
// node's Constants; all zero by default.
type Calibration struct {
	// TimerOverheadNs delays every timer wakeup (hrtimer expiry to task enqueue).
	TimerOverheadNs int64 `json:"timerOverheadNs,omitempty"`
	// WakeupOverheadNs delays every wakeup (try_to_wake_up cost, IPI).
	WakeupOverheadNs int64 `json:"wakeupOverheadNs,omitempty"`
	// CtxSwitchNs is the CPU time a context switch costs the incoming task.
	CtxSwitchNs int64 `json:"ctxSwitchNs,omitempty"`
	// BackgroundLoad is the fraction of each CPU taken by background noise
	// (interrupts, kernel threads), 0..0.95. Tasks progress and are charged
	// at rate 1-BackgroundLoad, as rq_clock_task excludes IRQ time.
	BackgroundLoad float64 `json:"backgroundLoad,omitempty"`
}

// Knobs are the scheduler tunables; a nil or zero field means the kernel
// default for the node.
type Knobs struct {
	// Autogroup is kernel.sched_autogroup_enabled; nil means true.
	Autogroup *bool `json:"autogroup,omitempty"`
	// BaseSliceNs is EEVDF's base_slice_ns (before tunable scaling is applied by the kernel
	// at boot; a value set here is used as is, as writing debugfs does).
	BaseSliceNs int64 `json:"baseSliceNs,omitempty"`
	// LatencyNs is CFS's sched_latency_ns.
	LatencyNs int64 `json:"latencyNs,omitempty"`
	// MinGranularityNs is CFS's sched_min_granularity_ns.
	MinGranularityNs int64 `json:"minGranularityNs,omitempty"`
	// WakeupGranularityNs is CFS's sched_wakeup_granularity_ns.
	WakeupGranularityNs int64 `json:"wakeupGranularityNs,omitempty"`
	// MigrationCostNs is sched_migration_cost_ns (0 means the default 0.5 ms;
	// -1 means "always cache hot"). Use MigrationCostZero for a real zero.
	MigrationCostNs int64 `json:"migrationCostNs,omitempty"`
	// NrMigrate is sched_nr_migrate; 0 means 32.
	NrMigrate int `json:"nrMigrate,omitempty"`
	// Features sets scheduler features by their kernel names (see FeatureNames)
	// plus the simulator-only SMP_FAIR_GROUPS. Unset names keep their defaults.
	Features map[string]bool `json:"features,omitempty"`
}

// MigrationCostZero is the Knobs.MigrationCostNs value that means a migration
// cost of exactly 0 (tasks are never cache hot), since 0 means "default".
const MigrationCostZero int64 = -2

// PatternType names a workload pattern.
type PatternType string

// Workload patterns.
const (
	Hog          PatternType = "Hog"
	Periodic     PatternType = "Periodic"
	LatencyProbe PatternType = "LatencyProbe"
	PingPong     PatternType = "PingPong"
	Burst        PatternType = "Burst"
	Server       PatternType = "Server"
	// Foreign is a task outside the experiment: one of the node's other
	// processes or kernel threads, measured in the agent's windows (see
	// Pattern.MeanRunNs). Groups of this pattern load the CPUs like any
	// other but are left out of the Result: its Groups, every Share and
	// CPUUtilization.
	Foreign PatternType = "Foreign"
)

// Pattern describes what each task of a group does.
type Pattern struct {
	// Type is the pattern; "" means Hog.
	Type PatternType `json:"type,omitempty"`
	// RunNs is the CPU time per period (Periodic) or per message (PingPong, default 2 µs)
	// or per probe (LatencyProbe, default 2 µs).
	RunNs int64 `json:"runNs,omitempty"`
	// RunJitterNs spreads a PingPong message's work: each message's work
	// is drawn uniformly from RunNs-RunJitterNs to RunNs+RunJitterNs
	// (0: every message costs RunNs). At most RunNs; PingPong only.
	RunJitterNs int64 `json:"runJitterNs,omitempty"`
	// PeriodNs is the Periodic period.
	PeriodNs int64 `json:"periodNs,omitempty"`
	// IntervalNs is the LatencyProbe interval.
	IntervalNs int64 `json:"intervalNs,omitempty"`
	// PhaseNs, when above 0, puts a LatencyProbe's deadlines on a grid:
	// multiples of IntervalNs plus PhaseNs (below IntervalNs), the agent's
	// Task.PhaseNs (its first deadline is the first grid point at least an
	// interval after the start). 0: the phase is drawn at random.
	PhaseNs int64 `json:"phaseNs,omitempty"`
	// MeanRunNs and MeanSleepNs are the Burst means (exponential
	// distributions). A Foreign task runs bursts of MeanRunNs on average,
	// Erlang-distributed of shape 4 (a coefficient of variation of 0.5),
	// and sleeps between them exponentially with mean MeanSleepNs, its
	// first sleep included (see foreignRun).
	MeanRunNs   int64 `json:"meanRunNs,omitempty"`
	MeanSleepNs int64 `json:"meanSleepNs,omitempty"`
	// Server is the request process of a Server pattern (see server.go).
	Server *ServerPattern `json:"server,omitempty"`
}

// Group is a set of identical cgroups (Replicas) with Tasks tasks each, or a
// set of tasks in one session outside any cgroup (Session).
type Group struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas,omitempty"` // 0 means 1
	Tasks    int    `json:"tasks"`
	// CPUWeight is the cgroup v2 cpu.weight 1..10000 (0 means 100);
	// shares = round(weight*1024/100).
	CPUWeight int `json:"cpuWeight,omitempty"`
	// CPUShares, when set, is the cgroup v1 cpu.shares (2..262144) and
	// takes the place of CPUWeight: a v1 weight below 10 (Kubernetes
	// BestEffort pods' 2) has no v2 weight.
	CPUShares      int64  `json:"cpuShares,omitempty"`
	CPUMaxQuotaNs  int64  `json:"cpuMaxQuotaNs,omitempty"`  // 0 means unlimited
	CPUMaxPeriodNs int64  `json:"cpuMaxPeriodNs,omitempty"` // 0 means 100 ms
	CPUIdle        bool   `json:"cpuIdle,omitempty"`
	Nice           int    `json:"nice,omitempty"`
	Policy         string `json:"policy,omitempty"` // "Other" | "Batch" | "Idle"; "" means Other
	// SliceNs is the EEVDF custom slice (sched_attr.sched_runtime); 0 means the base slice.
	SliceNs int64 `json:"sliceNs,omitempty"`
	// TimerSlackNs is the tasks' timer slack (PR_SET_TIMERSLACK): a timer
	// sleep may end anywhere up to this long after its deadline. 0 means
	// DefaultTimerSlackNs (50 µs); the smallest slack a task can have is 1 ns.
	TimerSlackNs int64 `json:"timerSlackNs,omitempty"`
	// CPUs, when set, pins every task of the group to these CPUs
	// (sched_setaffinity): wake-up placement and the load balancer keep
	// them there. Empty means every CPU.
	CPUs []int32 `json:"cpus,omitempty"`
	// TaskCPUs, when set, pins each task of every replica on its own:
	// task i to TaskCPUs[i], as taskset pins single processes of one
	// cgroup (the manifest's cpus pins a whole group). It has Tasks
	// entries and takes the place of CPUs.
	TaskCPUs [][]int32 `json:"taskCPUs,omitempty"`
	// GridPhasesNs, when set, places each task's deadline grid (LatencyProbe,
	// Periodic; one entry per task, replica by replica, then task by task):
	// task k sleeps to GridPhasesNs[k] plus multiples of its interval (or
	// period), from the first such time after 0. Simulated time 0 stands
	// for a CLOCK_MONOTONIC time that is a multiple of every interval and
	// of the tick period (the node's ticks expire at multiples of it), so
	// phases as the agent records them (NodeRun gridPhasesNs: a task's
	// first deadline modulo its interval) put the grids against each other
	// and against the tick as they lay in that window. Empty: drawn at
	// random (probeStart for a LatencyProbe), or Pattern.PhaseNs.
	GridPhasesNs []int64 `json:"gridPhasesNs,omitempty"`
	// Session, when set, puts the tasks outside any cgroup in that session,
	// which autogroup turns into one task group per session.
	Session string `json:"session,omitempty"`
	// Root puts the tasks in the root task group whatever the autogroup
	// knob, as kernel threads are (they belong to init's default
	// autogroup, which is the root: autogroup_task_group(), v6.12).
	Root bool `json:"root,omitempty"`
	// AddressSpace says which tasks are threads of one process: the tasks
	// of every group with the same AddressSpace share one address space
	// (mm), and a switch between them costs no Constants.ProcessSwitchNs.
	// Empty: each task is a process of its own, as the agent runs a
	// workload's tasks (one worker process each).
	AddressSpace string `json:"addressSpace,omitempty"`
	// KernelThread: the tasks are kernel threads, which have no address
	// space of their own and run in the one the CPU holds (lazy TLB), so
	// the task that ran before one pays no ProcessSwitchNs to run again
	// after it. Excludes AddressSpace.
	KernelThread bool `json:"kernelThread,omitempty"`
	// Parent names an earlier group (with Replicas 1) whose cgroup this
	// group's cgroups nest under.
	Parent  string  `json:"parent,omitempty"`
	Pattern Pattern `json:"pattern"`
}

// Input is one simulation.
type Input struct {
	Node   Node    `json:"node"`
	Knobs  Knobs   `json:"knobs"`
	Groups []Group `json:"groups"`
	// Metrics cover [WarmupNs, WarmupNs+DurationNs).
	DurationNs int64  `json:"durationNs"`
	WarmupNs   int64  `json:"warmupNs,omitempty"`
	Seed       uint64 `json:"seed"`
	// LatencyThresholdsNs, when set, asks every group's latency summaries
	// (wake-up and request latency) for the fraction of values above each
	// of these thresholds (Latency.Above): a quantile's limit checked as the
	// fraction beyond it, which is smooth in the load where the quantile
	// itself jumps.
	LatencyThresholdsNs []int64 `json:"latencyThresholdsNs,omitempty"`
	// Trace, when set, receives a line per scheduling event (slow; for debugging).
	Trace io.Writer `json:"-"`
}

// Latency is a latency distribution in microseconds.
type Latency struct {
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95,omitempty"` // request latency only
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
	Mean  float64 `json:"mean"`
	Count int64   `json:"count"`
	// Over100us, Over1ms and Over10ms are the fractions of wake-ups later
	// than 100 µs, 1 ms and 10 ms.
	Over100us float64 `json:"over100us"`
	Over1ms   float64 `json:"over1ms"`
	Over10ms  float64 `json:"over10ms"`
	// Above holds, for each of Input.LatencyThresholdsNs in order, the
	// fraction of values above it (groups only).
	Above []float64 `json:"above,omitempty"`
	// Histogram is the whole distribution (groups only): Histogram[i]
	// counts the wake-ups with a latency in [2^(i-1), 2^i) µs, Histogram[0]
	// those below 1 µs; trailing empty buckets are left out.
	Histogram []int64 `json:"histogram,omitempty"`
}

// CtxSwitches are context switches per second.
type CtxSwitches struct {
	Voluntary   float64 `json:"voluntary"`
	Involuntary float64 `json:"involuntary"`
}

// Metrics are the measurements of a group or a task over the window.
type Metrics struct {
	// CPU is CPUs consumed on average (1.0 = one whole CPU).
	CPU        float64 `json:"cpu"`
	CPUPerTask float64 `json:"cpuPerTask"`
	// Share is the fraction of all workload CPU time.
	Share             float64     `json:"share"`
	WakeupLatencyUs   *Latency    `json:"wakeupLatencyUs,omitempty"`
	CtxSwitchesPerSec CtxSwitches `json:"ctxSwitchesPerSec"`
	DeadlineMissRatio *float64    `json:"deadlineMissRatio,omitempty"`
	OpsPerSec         *float64    `json:"opsPerSec,omitempty"`
	// Server groups: request latency from the scheduled arrival to the
	// completion, arrivals scheduled inside the window (admitted or
	// dropped), completed and dropped requests per second.
	RequestLatencyUs *Latency `json:"requestLatencyUs,omitempty"`
	Offered          *float64 `json:"offered,omitempty"`
	Throughput       *float64 `json:"throughput,omitempty"`
	Dropped          *float64 `json:"dropped,omitempty"`
}

// GroupResult holds a group's metrics and, in PerTask, its tasks' metrics
// (replica-major order).
type GroupResult struct {
	Name    string    `json:"name"`
	Tasks   int       `json:"tasks"`
	Metrics Metrics   `json:"metrics"`
	PerTask []Metrics `json:"perTask,omitempty"`
}

// Result is the outcome of Run.
type Result struct {
	Groups []GroupResult `json:"groups"`
	// CPUUtilization is the fraction of each CPU used by the workload over the window.
	CPUUtilization []float64 `json:"cpuUtilization"`
	// Events is the number of simulation events processed (including ticks).
	Events uint64 `json:"events"`
	// SimulatedNs is the simulated time (warmup plus duration).
	SimulatedNs int64 `json:"simulatedNs"`
}

// tunableFactor is the boot-time scaling of the slice tunables,
// get_update_sysctl_factor() in kernel/sched/fair.c (v6.1 and v6.6).
func tunableFactor(n Node) int64 {
	cpus := n.CPUs
	if cpus > 8 {
		cpus = 8
	}
	if cpus < 1 {
		cpus = 1
	}
	switch n.TunableScaling {
	case "None":
		return 1
	case "Linear":
		return int64(cpus)
	default: // Log
		f := int64(1)
		for c := cpus; c > 1; c >>= 1 {
			f++
		}
		return f
	}
}

// DefaultBaseSlice is the EEVDF base_slice_ns a stock kernel boots with on n:
// 0.70 ms (0.75 ms with LegacySlice, or a Kernel before 6.15 and before the
// stable backports 6.14.9, 6.12.31 and 6.6.93) times the tunable scaling
// factor.
func DefaultBaseSlice(n Node) int64 {
	base := int64(700_000)
	if n.LegacySlice || rulesFor(nodeKernel(n)).legacySlice && n.Kernel != "" {
		base = 750_000
	}
	return base * tunableFactor(n)
}

// DefaultLatency is CFS's sched_latency_ns on n: 6 ms times the scaling factor.
func DefaultLatency(n Node) int64 { return 6_000_000 * tunableFactor(n) }

// DefaultMinGranularity is CFS's sched_min_granularity_ns on n: 0.75 ms times the factor.
func DefaultMinGranularity(n Node) int64 { return 750_000 * tunableFactor(n) }

// DefaultWakeupGranularity is CFS's sched_wakeup_granularity_ns on n: 1 ms times the factor.
func DefaultWakeupGranularity(n Node) int64 { return 1_000_000 * tunableFactor(n) }

// DefaultMigrationCost is sched_migration_cost_ns: 0.5 ms.
const DefaultMigrationCost int64 = 500_000

// DefaultHZ is the tick rate used when Node.HZ is 0.
const DefaultHZ = 250
