package simengine

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// Weights of nice levels, sched_prio_to_weight[] in kernel/sched/core.c.
var prioToWeight = [40]int64{
	/* -20 */ 88761, 71755, 56483, 46273, 36291,
	/* -15 */ 29154, 23254, 18705, 14949, 11916,
	/* -10 */ 9548, 7620, 6100, 4904, 3906,
	/*  -5 */ 3121, 2501, 1991, 1586, 1277,
	/*   0 */ 1024, 820, 655, 526, 423,
	/*   5 */ 335, 272, 215, 172, 137,
	/*  10 */ 110, 87, 70, 56, 45,
	/*  15 */ 36, 29, 23, 18, 15,
}

const (
	nice0Load       = 1024
	weightIdlePrio  = 3  // WEIGHT_IDLEPRIO
	minShares       = 2  // MIN_SHARES (unscaled, as calc_group_shares() clamps the fixed-point shares)
	loadShift       = 10 // SCHED_FIXEDPOINT_SHIFT: scale_load() on 64-bit
	maxShares       = 1 << 18
	idleMinGranNs   = 750_000 // sysctl_sched_idle_min_granularity (CFS)
	defaultProbeRun = 2_000
	imbalancePct    = 117 // MC-level sched_domain imbalance_pct
	busyFactor      = 16  // sd->busy_factor
	cacheNiceTries  = 1   // MC-level cache_nice_tries
	never           = math.MaxInt64
)

// Policies.
const (
	polNormal uint8 = iota
	polBatch
	polIdle
)

// Pattern kinds (PatternType as a small integer).
const (
	patHog uint8 = iota
	patPeriodic
	patProbe
	patPingPong
	patBurst
	patServer
	patForeign
)

// Task states.
const (
	tsSleeping uint8 = iota
	tsQueued
	tsWaking // TASK_WAKING: on a remote CPU's wake list, not queued yet
)

// Enqueue/dequeue flags (ENQUEUE_* / DEQUEUE_* in kernel/sched/sched.h).
const (
	enqWakeup  = 1 << iota // ENQUEUE_WAKEUP
	enqInitial             // ENQUEUE_INITIAL (new task)
	deqSleep               // DEQUEUE_SLEEP
	deqDelayed             // DEQUEUE_DELAYED: finishing a delayed dequeue
)

// Event kinds.
const (
	evTick uint8 = iota
	evRunEnd
	evWake
	evPeriod
	evTimerSoft // a timer sleep's soft expiry passed at a tick: expires if the tick runs on its CPU
	evArrival   // a Server replica's next request arrives (a = server)
	evWakeList  // the IPI of a wake-up queued on an idle CPU's wake list arrives (a = task)
	evStallEnd  // a stalled vCPU runs again (a = CPU; vcpustall.go)
)

// entity is a sched_entity: a task's or a per-CPU group entity. It is two
// whole cache lines (TestHotLayout); the first holds what update_curr, the
// pick (slice protection included) and the hierarchy walks read, so that a
// walk step loads one line of the entity.
type entity struct {
	// First cache line.
	vruntime  int64
	deadline  int64 // EEVDF virtual deadline
	weight    int64 // load.weight (NICE_0 = 1024)
	protect   int64 // slice protection: the deadline at pick time (v6.6..v6.16, stashed in se->vlag), or se->vprot (v6.17+)
	sumExec   int64
	invWeight uint32 // WMULT_CONST / weight
	rq        int32  // cfs_rq this entity is queued on
	my        int32  // group entities: the cfs_rq they own; -1 for tasks
	parent    int32  // parent group entity on the same CPU, -1 at the top
	task      int32  // -1 for group entities
	onRq      bool
	delayed   bool // se->sched_delayed: asleep (or empty) but still queued (DELAY_DEQUEUE)
	protectOK bool
	idle      bool // se_is_idle(): SCHED_IDLE task or entity of a cpu.idle group

	// Second cache line: what enqueue, dequeue, set_next_entity() and
	// put_prev_entity() touch besides (their PELT update, the execution
	// clock, the lag and the request size).
	slice       int64 // EEVDF request size (base or custom slice)
	execStart   int64 // while curr, its cfs_rq's currStart holds the live value
	prevSumExec int64
	vlag        int64 // EEVDF lag, V - v_i (kept while off the runqueue)
	weightFP    int64 // a group entity's load.weight as the kernel keeps it (scale_load()ed); 0 until first computed
	load        pelt  // se->avg.load_avg
	depth       int32
	customSlice bool
}

// cfsRq is a struct cfs_rq. The tree holds the queued entities except curr,
// as the kernel's rb-tree does; it is a slice sorted by vruntime (see
// enqueueTree), which is fast for the short per-CPU queues of realistic
// inputs.
type cfsRq struct {
	// First cache line: what update_curr, update_min_vruntime, pick and
	// the hierarchy walks touch.
	curr      int32
	nr        int32 // nr_running (entities queued, including curr)
	leftmost  int32 // tree entity with the smallest vruntime, -1 if none
	currOn    bool  // curr >= 0 and still on the queue (not dequeued while running)
	throttled bool
	hasQuota  bool  // the owning group has a cpu.max quota
	idle      bool  // cfs_rq_is_idle(): owned by a cpu.idle group
	currStart int64 // curr's execStart (update_curr has nothing to do until now passes it)
	minV      int64 // min_vruntime
	avgSum    int64 // avg_vruntime: Σ (v_i - min_vruntime) * w_i over the tree
	avgLoad   int64 // avg_load: Σ w_i over the tree
	leftV     int64 // vruntime of leftmost, never if none
	hNr       int32 // h_nr_running (tasks below, excluding throttled subtrees)
	idleHNr   int32 // idle_h_nr_running

	// Second cache line: what enqueue and dequeue touch besides (the
	// queue's load, the tree, the load average, the leaf list).
	load    int64 // load.weight of queued entities
	tree    []treeNode
	loadAvg pelt  // cfs_rq->avg.load_avg (sum of attached entities' load_avg)
	tg      int32 // owning task group, -1 for the root cfs_rq
	ge      int32 // group entity that represents this queue in the parent, -1 for root
	cpu     int32
	onList  bool // on its CPU's leaf list (cfs_rq->on_list): blocked load to decay
	shKeyOK bool // the calcGroupShares memo below is valid

	// Third cache line: the group's load contribution and the
	// calcGroupShares memo (the inputs of the last computation and its
	// result).
	contrib               int64   // tg_load_avg_contrib (an integer, as tg->load_avg)
	hLoadStamp            int32   // cfs_rq->last_h_load_update: jiffies+1 of hLoad, 0 if none yet
	hLoad                 float32 // cfs_rq->h_load (update_cfs_rq_h_load()) as of hLoadStamp
	shKeyLoad, shares     int64
	shKeyTg, shKeyContrib int64
	shKeyAvg              float64
	next, last            int32 // CFS (v6.1) buddies: cfs_rq->next, cfs_rq->last, -1 if none
}

// treeNode is a queued entity with the keys a pick reads, which do not
// change while the entity is queued and not running (32 bytes: two to a
// cache line). Equal vruntimes keep their insertion order by position.
type treeNode struct {
	v, d, slice int64
	se          int32
}

// taskGroup is a struct task_group: a cgroup or an autogroup.
type taskGroup struct {
	// calc_group_shares() reads shares and load_avg: keep them together.
	shares  int64
	loadAvg int64 // tg->load_avg: Σ per-CPU contributions (an atomic_long_t: integer)
	parent  int32
	idle    bool
	rq      []int32 // per CPU cfs_rq
	se      []int32 // per CPU group entity
	quota   int64
	period  int64
	runtime int64
}

// task is a simulated thread. It is five whole cache lines
// (TestHotLayout), the fields a wake-up, a switch and the PELT update touch
// in the first two, the latency record in the third.
type task struct {
	// First cache line.
	se  int32
	tg  int32 // -1: root
	cpu int32
	// rq is the queue the task's entity is on (ents[se].rq, set with it
	// by placeTaskOnCPU): the run-end and wake-up paths read it beside se
	// instead of after it.
	rq     int32
	policy uint8
	kind   uint8
	state  uint8

	running     bool
	vNormalized bool // CFS: vruntime is relative (kernel: after migrate/non-sleep dequeue)
	pendingWake bool
	// pingPhase: PingPong, where the task is in its message: its work
	// (pingWork), the write() that wakes the partner (pingWrite) or the
	// read() that waits for the reply (pingRead).
	pingPhase uint8
	floorIdx  uint8 // level of the wake-up path's costs for the current wake-up (drawFloor)

	workEnd int64 // sumExec at which the current CPU burst completes
	wakeAt  int64 // when the task should have run (for latency), -1 if none
	pl      pelt2 // util_avg and runnable_avg

	// Second cache line (with what a switch-in reads besides the first:
	// the address space and, after a sleep, when the sleep began).
	listStamp int64
	cpuNs     int64 // window metrics: CPU time
	sleptAt   int64 // when the task last blocked (coldWake)
	waker     int32 // CPU of the waker for a pending wake event
	cpuPos    int32
	// mm is the task's address space (switchMM): tasks with the same
	// one are threads of one process; noMM for a kernel thread.
	mm int32
	// aff indexes sim.affs: the CPUs the task may run on
	// (p->cpus_ptr); -1: every CPU.
	aff         int32
	pendingSync bool
	timerWake   bool // the pending or last wake-up is a timer's
	latFloat    bool
	hIdle       bool  // taskHIdle(), fixed at build (policies and cpu.idle do not change)
	waitReason  int64 // reason time carried by a pending wake event
	ops         int64

	// Third cache line: the latency record and the switch counts.
	hist *histogram
	// The histogram's count, sum and max, kept here (next to hist) and
	// copied into it at the end; see recordLatency.
	latN, latISum, latMax int64
	latFSum               float64
	vol, invol            int64
	misses                int64

	// Fourth cache line: the pattern.
	pat     taskPattern
	slack   int64 // timer_slack_ns
	rng     *rand.Rand
	periods int64

	// Fifth cache line.
	srv int32 // Server worker: its replica's server, -1 otherwise
	req int32 // Server worker: the request slot it serves
	// jitterNs: PingPong, the half-width of its messages' work spread
	// (Pattern.RunJitterNs).
	jitterNs int64
	release  int64 // Periodic: current release; LatencyProbe: current deadline
	// The sleep's hrtimer while it is queued on its CPU's timer queue
	// (cpuState.timers): the sequence number of its one pending expiry
	// check (evWake or evTimerSoft; an event with another is stale: the
	// timer was expired by another timer's interrupt), and its CPU.
	timerSeq   uint64
	group      int32 // input group index
	timerCPU   int32
	partner    int32
	timerArmed bool
	_          [19]byte
}

// taskPattern is the numeric part of a task's Pattern (its Type is kind).
type taskPattern struct {
	RunNs, PeriodNs, IntervalNs, MeanRunNs, MeanSleepNs int64
}

// cpuState is a CPU's struct rq outside the fair class's queues. It is
// four whole cache lines (TestHotLayout).
type cpuState struct {
	// First cache line: what a switch, the PELT update, accounting and
	// available_idle_cpu() touch.
	root        int32
	curr        int32 // running task, -1 when idle
	ttwuPending int32 // wake-ups queued on this CPU's wake list (rq->ttwu_pending)
	needResched bool
	lazyResched bool
	runEndT     int64  // end of the running task's CPU burst, never if none
	runEndSeq   uint64 // event sequence of that run end (ties with queued events)
	pl          pelt2  // util_avg and runnable_avg of the CPU
	busyNs      int64

	// Second cache line.
	tasks           []int32 // tasks queued on this CPU (cfs_tasks), including curr
	idleStamp       int64
	avgIdle         int64
	nextBalance     int64
	lastBalance     int64 // the flat domain's sd->last_balance
	nrBalanceFailed int
	forkCount       int32 // tasks placed here at start (fork balancing)

	// Blocked load (blocked.go): the group queues whose averages still
	// decay (rq->leaf_cfs_rq_list), rq->has_blocked_load and
	// rq->last_blocked_load_update_tick (jiffies).
	hasBlockedLoad  bool
	leaf            []int32
	lastBlockedTick int64
	ni              newidleState // the flat domain's new-idle cost tracking
	// rq->max_idle_balance_cost: sched_init() sets it to the migration
	// cost's boot default; sched_balance_domains() resets it to the larger
	// of the migration cost and the domains' max new-idle costs when one
	// decays, and a longer new-idle balance raises it. avg_idle is
	// clamped to twice it.
	maxIdleBalanceCost int64
	// Delayed tasks (DELAY_DEQUEUE) queued on this CPU outside throttled
	// hierarchies, and how many of them count as idle at the root
	// (SCHED_IDLE or below a cpu.idle group). The root queue's hNr and
	// idleHNr count runnable tasks only (h_nr_runnable); rq->nr_running
	// and the root's h_nr_queued and h_nr_idle (v6.13+ names; in v6.12
	// h_nr_running and idle_h_nr_running, which counted delayed tasks as
	// well) keep a delayed task until its final dequeue: nrRunning() and
	// hNrIdleQueued() add these.
	nrDelayed   int32
	idleDelayed int32
	// timers is the CPU's hrtimer queue of sleeps (the clock base's
	// timerqueue): tasks whose sleep timer is armed here, in the order of
	// their hard expiries, equal ones in the order they were armed.
	timers []hrtimerEnt
	// mm is the address space the CPU holds (its active_mm, switchMM):
	// the last task with one that ran here; noMM before any.
	mm int32
	// balanceInterval is the flat domain's sd->balance_interval, ms
	// (tuneBalanceInterval).
	balanceInterval int32
}

// hrtimerEnt is a sleep timer on its CPU's queue (cpuState.timers): the
// task and its expiries, copied from the task when it was armed (a queued
// timer's expiries do not change: armTimer takes it off the queue before it
// sets new ones), so that walking the queue reads the queue alone, not a
// task's lines per timer (the timerqueue node holds its expiry in the
// kernel as well: hrtimer's node.expires and _softexpires).
type hrtimerEnt struct {
	soft, hard int64 // t.waitReason and t.waitReason + t.slack
	ti         int32
}

type event struct {
	t    int64
	seq  uint64
	a    int32
	kind uint8
}

type sim struct {
	in       *Input
	nCPU     int32
	eevdf    bool
	anyQuota bool
	// anySchedIdle: some task is SCHED_IDLE or in a cpu.idle group, so a
	// CPU can be sched_idle_cpu().
	anySchedIdle bool
	// rdOverloaded is rd->overloaded: set when a CPU's nr_running reaches 2
	// (add_nr_running()), recomputed by every balance of the root domain
	// (update_sd_lb_stats(): some CPU with nr_running > 1).
	rdOverloaded bool
	feat         features
	lazy         bool
	// reweightPlaceCurr: reweight_entity() of the running entity calls
	// place_entity() with the entity still counted in avg_vruntime()
	// (v6.13..v6.18.44, v6.19; see reweightEntity).
	reweightPlaceCurr bool
	// lagClampMaxSlice: kernelRules.lagClampMaxSlice (EEVDF only).
	lagClampMaxSlice bool
	// didPreemptShort: kernelRules.didPreemptShort with PREEMPT_SHORT on.
	didPreemptShort bool
	// vprot: kernelRules.vprot on EEVDF (the v6.17 slice protection).
	vprot bool
	// buddyInPickEEVDF: kernelRules.buddyInPickEEVDF with PICK_BUDDY on
	// (pickEEVDF takes the next buddy; otherwise pickNextEntity does).
	buddyInPickEEVDF bool
	// groupSlice: EEVDF of v6.12 and later, where a queued group entity's
	// slice follows the smallest slice below it (propagateSlice), on an
	// input where some task's slice varies.
	groupSlice bool
	// sliceVaries: some task has a custom slice other than the base slice.
	// Without one every queued entity's slice is the base slice
	// (placeEntity and updateDeadline give tasks the base slice, and a
	// group entity the smallest slice queued below it), so
	// cfs_rq_min_slice() of a non-empty queue is the base slice and
	// propagateSlice has nothing to do.
	sliceVaries bool
	// normBaseSlice is normalized_sysctl_sched_base_slice: the base slice
	// divided by the CPU-count factor (the NO_RUN_TO_PARITY quantum).
	normBaseSlice int64

	tickNs, baseSlice, latency, minGran, wakeupGran, migrationCost int64
	nrLatency                                                      int64
	nrMigrate                                                      int
	bgNum                                                          int64 // task clock rate × 1e6
	ctxNs, timerNs, wakeNs, idleExitNs, wakeCPUNs, armCPUNs        int64
	floorTab                                                       [floorBuckets]floorCosts
	cpuTimerShift                                                  []int64 // Node.TimerExpiryShiftNs, one per CPU (nil: none)
	floorSpread                                                    bool
	floorRnd                                                       uint64
	spinRnd                                                        uint64 // spinOvershoot's stream
	jitterRnd                                                      uint64 // messageJitter's stream
	balanceIntervalNs                                              int64
	// nrIdleScan is the flat LLC's sd_llc_shared->nr_idle_scan (SIS_UTIL),
	// set by the periodic balances (balance.go).
	nrIdleScan int32
	// The new-idle balance rules of the node's kernel (newidle.go), the
	// tick rate, a new-idle balance's cost per domain and NI_RANDOM's
	// random stream.
	newidleCostGate, newidleBump, newidleProportional bool
	// idleStrictHierarchy: kernelRules.idleStrictHierarchy (EEVDF only).
	idleStrictHierarchy bool
	hz, newidleNs       int64
	niRnd               uint64
	// nohz.has_blocked and nohz.next_blocked (jiffies): the periodic
	// update of idle CPUs' blocked load (blocked.go).
	nohzHasBlocked  bool
	nohzNextBlocked int64

	now, end, winStart int64
	seq                uint64
	nEvents            uint64

	ev    []event
	ents  []entity
	rqs   []cfsRq
	tgs   []taskGroup
	tasks []task
	cpus  []cpuState

	servers  []server // Server replicas (server.go)
	expired  []int32  // hrtimerInterrupt's scratch: the timers one interrupt runs
	pending  []int32
	rt       *runEndTree // earliest run end over CPUs
	rp       int32       // leaves of rt in use (a power of two >= nCPU)
	idleMask []uint64
	scratch  []int32
	affs     []affinity // CPU masks of pinned groups (task.aff)
	// lbAllPinned is LBF_ALL_PINNED of the balance under way: no task
	// examined so far may run on its destination.
	lbAllPinned bool
	lbExcluded  []bool
	// lbSkip is env->cpus during a topology balance with pinned tasks:
	// the CPUs a redo leaves out (nil otherwise); lbPinnedSrc is the
	// source CPU whose every task was pinned away, or -1.
	lbSkip      []bool
	lbPinnedSrc int32
	pt          *peltTables
	trace       func(format string, a ...any)
	topo        *topology // sched domains; nil on the flat machine (topology.go)
	hp          hostPauses
	vs          vcpuStalls
}

// Run simulates in and returns the metrics. It validates the input first;
// every error says what to change.
func Run(in Input) (*Result, error) {
	if err := validate(&in); err != nil {
		return nil, err
	}
	s, err := newSim(&in)
	if err != nil {
		return nil, err
	}
	s.start()
	s.loop()
	return s.result(), nil
}

func newSim(in *Input) (*sim, error) {
	n := in.Node
	sched := nodeScheduler(n)
	kr := rulesFor(nodeKernel(n))
	feat, err := resolveFeatures(sched, in.Knobs.Features, kr)
	if err != nil {
		return nil, err
	}
	hz := n.HZ
	if hz == 0 {
		hz = DefaultHZ
	}
	s := &sim{
		in:                  in,
		nCPU:                int32(n.CPUs),
		eevdf:               sched == EEVDF,
		feat:                feat,
		lazy:                n.Preempt == "Lazy",
		reweightPlaceCurr:   kr.reweightPlaceCurr && sched == EEVDF,
		lagClampMaxSlice:    kr.lagClampMaxSlice && sched == EEVDF,
		didPreemptShort:     kr.didPreemptShort && sched == EEVDF && feat.preemptShort,
		vprot:               kr.vprot && sched == EEVDF,
		buddyInPickEEVDF:    kr.buddyInPickEEVDF && feat.pickBuddy,
		groupSlice:          kr.completeEEVDF && sched == EEVDF,
		tickNs:              1_000_000_000 / int64(hz),
		hz:                  int64(hz),
		idleStrictHierarchy: kr.idleStrictHierarchy && sched == EEVDF,
		newidleCostGate:     kr.newidleCostGate,
		newidleBump:         kr.newidleBump,
		newidleProportional: kr.newidleProportional && feat.niRandom,
		pt:                  newPeltTables(),
	}
	k := in.Knobs
	s.baseSlice = DefaultBaseSlice(n)
	if k.BaseSliceNs > 0 {
		s.baseSlice = k.BaseSliceNs
	}
	s.normBaseSlice = s.baseSlice / tunableFactor(n)
	s.latency = DefaultLatency(n)
	if k.LatencyNs > 0 {
		s.latency = k.LatencyNs
	}
	s.minGran = DefaultMinGranularity(n)
	if k.MinGranularityNs > 0 {
		s.minGran = k.MinGranularityNs
	}
	s.wakeupGran = DefaultWakeupGranularity(n)
	if k.WakeupGranularityNs > 0 {
		s.wakeupGran = k.WakeupGranularityNs
	}
	// sched_nr_latency = DIV_ROUND_UP(latency, min_granularity) (sched_proc_update_handler, v6.1).
	s.nrLatency = (s.latency + s.minGran - 1) / s.minGran
	switch {
	case k.MigrationCostNs == 0:
		s.migrationCost = DefaultMigrationCost
	case k.MigrationCostNs == MigrationCostZero:
		s.migrationCost = 0
	default:
		s.migrationCost = k.MigrationCostNs
	}
	s.nrMigrate = 32
	if k.NrMigrate > 0 {
		s.nrMigrate = k.NrMigrate
	}
	s.bgNum = 1_000_000 - int64(math.Round(n.Calibration.BackgroundLoad*1e6))
	k0 := n.Constants.resolve()
	s.ctxNs = k0.CtxSwitchNs + n.Calibration.CtxSwitchNs
	s.timerNs = k0.TimerExpiryNs + n.Calibration.TimerOverheadNs
	s.wakeNs = k0.WakeupNs + n.Calibration.WakeupOverheadNs
	s.idleExitNs = k0.IdleExitNs
	s.wakeCPUNs = k0.WakeupCPUNs
	s.armCPUNs = k0.TimerArmCPUNs
	s.newidleNs = k0.NewidleBalanceNs
	s.niRnd = in.Seed*0xd1b54a32d192ed03 + 0x8bb84b93962eacc9
	s.initFloor(k0, n.Calibration)
	if len(n.TimerExpiryShiftNs) > 0 {
		s.cpuTimerShift = make([]int64, n.CPUs)
		copy(s.cpuTimerShift, n.TimerExpiryShiftNs)
	}
	s.spinRnd = s.in.Seed*0xbf58476d1ce4e5b9 + 0x94d049bb133111eb
	s.jitterRnd = s.in.Seed*0x94d049bb133111eb + 0x2545f4914f6cdd1d
	s.initHostPauses(k0)
	s.initVCPUStalls(k0)
	// One flat sched_domain spanning all CPUs: min_interval = sd_weight ms
	// (sd_init(), v6.x).
	s.balanceIntervalNs = int64(n.CPUs) * 1_000_000
	// A booted machine's idle LLC let a wake-up scan all of it
	// (update_idle_cpu_scan() on an idle LLC), until the first periodic
	// balance says otherwise.
	s.nrIdleScan = int32(n.CPUs)
	s.winStart = in.WarmupNs
	s.end = in.WarmupNs + in.DurationNs
	if in.Trace != nil {
		w := in.Trace
		s.trace = func(format string, a ...any) {
			fmt.Fprintf(w, "%12d ", s.now)
			fmt.Fprintf(w, format, a...)
			fmt.Fprintln(w)
		}
	}
	s.build()
	if !n.Topology.IsZero() && n.CPUs > 1 {
		s.buildTopology(n.Topology, int64(hz))
		s.initTaskTopology()
		for c := range s.cpus {
			s.cpus[c].nextBalance = 0 // set per level by the first rebalanceDomains()
		}
	}
	return s, nil
}

// newEntity appends an entity and returns its index.
func (s *sim) newEntity(e entity) int32 {
	e.setWeight(e.weight)
	s.ents = append(s.ents, e)
	return int32(len(s.ents) - 1)
}

func (s *sim) newRq(cpu, tg, ge int32) int32 {
	s.rqs = append(s.rqs, cfsRq{cpu: cpu, tg: tg, ge: ge, curr: -1, leftmost: -1, leftV: never, next: -1, last: -1})
	return int32(len(s.rqs) - 1)
}

// build creates CPUs, task groups (cgroups and autogroups) with their per-CPU
// queues and group entities, and the tasks.
func (s *sim) build() {
	in := s.in
	nc := s.nCPU
	// Size the arrays up front: a task group per cgroup replica and per
	// session (autogroup), each with a queue and an entity per CPU.
	nTG, nTasks := 0, 0
	sessions := map[string]bool{}
	for i := range in.Groups {
		g := &in.Groups[i]
		reps := max(g.Replicas, 1)
		nTasks += reps * g.Tasks
		if g.Root {
			continue
		}
		if g.Session == "" {
			nTG += reps
		} else if !sessions[g.Session] {
			sessions[g.Session] = true
			nTG++
		}
	}
	s.rqs = make([]cfsRq, 0, int(nc)*(nTG+1))
	s.ents = make([]entity, 0, nTasks+int(nc)*nTG)
	s.tasks = make([]task, 0, nTasks)
	s.tgs = make([]taskGroup, 0, nTG)
	s.cpus = make([]cpuState, nc)
	s.initRunEnd()
	s.idleMask = make([]uint64, (nc+63)/64)
	for c := int32(0); c < nc; c++ {
		s.cpus[c].root = s.newRq(c, -1, -1)
		s.cpus[c].curr = -1
		s.cpus[c].avgIdle = 2 * s.migrationCost // rq->avg_idle = 2*sysctl_sched_migration_cost (sched_init)
		s.cpus[c].nextBalance = s.balanceIntervalNs
		s.cpus[c].lastBalance = never                                      // none yet: the first due balance runs
		s.cpus[c].balanceInterval = int32(s.balanceIntervalNs / 1_000_000) // sd->min_interval
		s.cpus[c].runEndT = never
		s.cpus[c].ni = newNewidleState()
		s.cpus[c].maxIdleBalanceCost = DefaultMigrationCost
		s.cpus[c].mm = noMM
		s.setIdle(c, true)
	}
	autogroup := in.Knobs.Autogroup == nil || *in.Knobs.Autogroup
	groupTG := make([][]int32, len(in.Groups)) // per group: its tgs (one per replica) or nil for root
	sessionTG := map[string]int32{}
	nameIdx := map[string]int{}
	for gi := range in.Groups {
		g := &in.Groups[gi]
		nameIdx[g.Name] = gi
		reps := g.Replicas
		if reps == 0 {
			reps = 1
		}
		if g.Root {
			groupTG[gi] = nil
			continue
		}
		if g.Session != "" {
			if !autogroup {
				groupTG[gi] = nil
				continue
			}
			tg, ok := sessionTG[g.Session]
			if !ok {
				// autogroup_create(): a new task group with nice 0 (weight 1024) under the root.
				tg = s.newTaskGroup(-1, nice0Load, false)
				sessionTG[g.Session] = tg
			}
			groupTG[gi] = []int32{tg}
			continue
		}
		parent := int32(-1)
		if g.Parent != "" {
			parent = groupTG[nameIdx[g.Parent]][0]
		}
		w := g.CPUWeight
		if w == 0 {
			w = 100
		}
		// sched_weight_from_cgroup(): DIV_ROUND_CLOSEST(weight * 1024, 100).
		shares := (int64(w)*1024 + 50) / 100
		if g.CPUShares != 0 {
			// cpu_shares_write_u64() (v1): the shares as written.
			shares = g.CPUShares
		}
		if g.CPUIdle {
			// sched_group_set_idle(): idle groups get the minimum weight.
			shares = weightIdlePrio
		}
		shares = max(minShares, min(shares, maxShares))
		for r := 0; r < reps; r++ {
			tg := s.newTaskGroup(parent, shares, g.CPUIdle)
			if g.CPUMaxQuotaNs > 0 {
				t := &s.tgs[tg]
				t.quota = g.CPUMaxQuotaNs
				t.period = g.CPUMaxPeriodNs
				if t.period == 0 {
					t.period = 100_000_000
				}
				t.runtime = t.quota
				s.anyQuota = true
				for _, cq := range t.rq {
					s.rqs[cq].hasQuota = true
				}
			}
			groupTG[gi] = append(groupTG[gi], tg)
		}
	}
	// Tasks, and their address spaces: one per task, one per named
	// AddressSpace, none for kernel threads.
	spaces := map[string]int32{}
	nextMM := int32(0)
	for gi := range in.Groups {
		g := &in.Groups[gi]
		reps := g.Replicas
		if reps == 0 {
			reps = 1
		}
		pol := polNormal
		switch g.Policy {
		case "Batch":
			pol = polBatch
		case "Idle":
			pol = polIdle
		}
		kind := patHog
		switch g.Pattern.Type {
		case Periodic:
			kind = patPeriodic
		case LatencyProbe:
			kind = patProbe
		case PingPong:
			kind = patPingPong
		case Burst:
			kind = patBurst
		case Server:
			kind = patServer
		case Foreign:
			kind = patForeign
		}
		slack := g.TimerSlackNs
		if slack == 0 {
			slack = DefaultTimerSlackNs
			if kind == patServer {
				// The agent's Server workers sleep to arrivals with a
				// 1 ns slack unless the group sets one.
				slack = 1
			}
		}
		w := prioToWeight[g.Nice+20]
		if pol == polIdle {
			w = weightIdlePrio
		}
		aff := s.newAffinity(g.CPUs)
		for r := 0; r < reps; r++ {
			tg := int32(-1)
			if groupTG[gi] != nil {
				if g.Session != "" {
					tg = groupTG[gi][0]
				} else {
					tg = groupTG[gi][r]
				}
			}
			first := int32(len(s.tasks))
			srv := int32(-1)
			if kind == patServer {
				srv = s.newServer(gi, r)
			}
			for i := 0; i < g.Tasks; i++ {
				ti := int32(len(s.tasks))
				aff := aff
				if len(g.TaskCPUs) > 0 {
					aff = s.newAffinity(g.TaskCPUs[i])
				}
				se := s.newEntity(entity{weight: w, my: -1, parent: -1, task: ti, idle: pol == polIdle,
					customSlice: g.SliceNs > 0, slice: g.SliceNs})
				t := task{se: se, tg: tg, cpu: -1, group: int32(gi), policy: pol, kind: kind,
					pat: taskPattern{RunNs: g.Pattern.RunNs, PeriodNs: g.Pattern.PeriodNs, IntervalNs: g.Pattern.IntervalNs,
						MeanRunNs: g.Pattern.MeanRunNs, MeanSleepNs: g.Pattern.MeanSleepNs}, wakeAt: -1, partner: -1, cpuPos: -1, vNormalized: true,
					slack: slack, aff: aff, srv: srv, req: -1, rng: rand.New(rand.NewPCG(in.Seed, uint64(ti)+0x9e3779b97f4a7c15))}
				switch {
				case g.KernelThread:
					t.mm = noMM
				case g.AddressSpace != "":
					mm, ok := spaces[g.AddressSpace]
					if !ok {
						mm = nextMM
						nextMM++
						spaces[g.AddressSpace] = mm
					}
					t.mm = mm
				default:
					t.mm = nextMM
					nextMM++
				}
				if kind == patPingPong {
					t.partner = first + int32(i^1)
					t.jitterNs = g.Pattern.RunJitterNs
				}
				if kind != patHog && kind != patForeign {
					t.hist = &histogram{}
				}
				s.tasks = append(s.tasks, t)
			}
		}
	}
	for i := range s.tasks {
		if s.taskHIdle(int32(i)) {
			s.tasks[i].hIdle = true
			s.anySchedIdle = true
		}
	}
	for i := range s.tasks {
		if e := &s.ents[s.tasks[i].se]; e.customSlice && e.slice != s.baseSlice {
			s.sliceVaries = true
			break
		}
	}
	s.groupSlice = s.groupSlice && s.sliceVaries
}

// taskHIdle is whether a task counts in h_nr_idle at the root: SCHED_IDLE,
// or in a cpu.idle group at some level.
func (s *sim) taskHIdle(ti int32) bool {
	t := &s.tasks[ti]
	return t.policy == polIdle || t.tg >= 0 && s.tgIdle(t.tg)
}

// tgIdle is whether a task group or one of its ancestors has cpu.idle.
func (s *sim) tgIdle(tg int32) bool {
	for ; tg >= 0; tg = s.tgs[tg].parent {
		if s.tgs[tg].idle {
			return true
		}
	}
	return false
}

// newTaskGroup creates a task group with a cfs_rq and a group entity per CPU
// (alloc_fair_sched_group / init_tg_cfs_entry).
func (s *sim) newTaskGroup(parent int32, shares int64, idle bool) int32 {
	ti := int32(len(s.tgs))
	tg := taskGroup{shares: shares, parent: parent, idle: idle,
		rq: make([]int32, s.nCPU), se: make([]int32, s.nCPU)}
	for c := int32(0); c < s.nCPU; c++ {
		var prq, pse int32 = s.cpus[c].root, -1
		depth := int32(0)
		if parent >= 0 {
			prq = s.tgs[parent].rq[c]
			pse = s.tgs[parent].se[c]
			depth = s.ents[pse].depth + 1
		}
		w := shares
		if s.feat.smpFairGroups {
			// init_tg_cfs_entry: se->load starts at NICE_0_LOAD; calc_group_shares adjusts it at enqueue.
			w = min(shares, nice0Load)
		}
		ge := s.newEntity(entity{weight: w, rq: prq, parent: pse, task: -1, depth: depth, idle: idle})
		rq := s.newRq(c, ti, ge)
		s.rqs[rq].idle = idle
		s.ents[ge].my = rq
		tg.rq[c] = rq
		tg.se[c] = ge
	}
	s.tgs = append(s.tgs, tg)
	return ti
}

// placeTaskOnCPU points a task's entity at its queue on CPU c.
func (s *sim) placeTaskOnCPU(ti, c int32) {
	t := &s.tasks[ti]
	t.cpu = c
	e := &s.ents[t.se]
	if t.tg >= 0 {
		e.rq = s.tgs[t.tg].rq[c]
		e.parent = s.tgs[t.tg].se[c]
		e.depth = s.ents[e.parent].depth + 1
	} else {
		e.rq = s.cpus[c].root
		e.parent = -1
		e.depth = 0
	}
	t.rq = e.rq
}

// start forks every task at time 0: fork balancing picks a CPU, runnable
// patterns are woken as new tasks (wake_up_new_task), the others start their
// first sleep with a seeded random phase.
func (s *sim) start() {
	s.ev = make([]event, 0, 64+len(s.tasks)*2)
	// The LatencyProbes' grids as the agent's start makes them (probeStart).
	var probeAt int64
	probes := 0
	// nth counts each input group's tasks: task k of a group takes
	// GridPhasesNs[k] (its first deadline the first grid point after 0).
	nth := make([]int, len(s.in.Groups))
	for i := range s.tasks {
		ti := int32(i)
		t := &s.tasks[ti]
		k := nth[t.group]
		nth[t.group]++
		gridPhase := func(interval int64) (int64, bool) {
			ph := s.in.Groups[t.group].GridPhasesNs
			if k >= len(ph) {
				return 0, false
			}
			if ph[k] == 0 {
				return interval, true
			}
			return ph[k], true
		}
		c := s.findIdlestCPUFork()
		if t.kind == patPingPong && t.partner >= 0 && t.partner < ti {
			// A pair's second task is forked while the first waits in
			// read() for it, so the first's CPU has just gone idle, and
			// find_idlest_group_cpu() (v6.12) takes the most recently
			// idled of the idle CPUs (rq->idle_stamp): the pair starts
			// on one CPU.
			if pc := s.tasks[t.partner].cpu; s.cpus[pc].forkCount == 1 {
				c = pc
			}
		}
		c = s.forkCPUAllowed(ti, c)
		s.placeTaskOnCPU(ti, c)
		s.cpus[c].forkCount++
		e := &s.ents[t.se]
		// post_init_entity_util_avg(): load_avg starts at the weight, and
		// attach_entity_cfs_rq() adds it to the queues above.
		e.load = pelt{avg: float64(e.weight)}
		s.attachTaskLoad(ti)
		switch t.kind {
		case patHog:
			t.workEnd = never
			s.wakeNewTask(ti)
		case patBurst:
			t.workEnd = s.expDraw(t, t.pat.MeanRunNs)
			s.wakeNewTask(ti)
		case patForeign:
			// Already running when the window's simulation starts: its
			// first wake-up comes after a sleep of random length.
			t.workEnd = s.foreignRun(t)
			t.state = tsSleeping
			s.armTimer(ti, s.now+s.expDraw(t, t.pat.MeanSleepNs))
		case patPingPong:
			t.workEnd = s.pingRun(t)
			if ti < t.partner {
				s.wakeNewTask(ti)
			} else {
				t.state = tsSleeping
			}
		case patPeriodic:
			if ph, ok := gridPhase(t.pat.PeriodNs); ok {
				t.release = ph
			} else {
				t.release = t.rng.Int64N(t.pat.PeriodNs)
			}
			t.state = tsSleeping
			s.armTimer(ti, t.release)
		case patProbe:
			if ph, ok := gridPhase(t.pat.IntervalNs); ok {
				t.release = ph
			} else if ph := s.in.Groups[t.group].Pattern.PhaseNs; ph > 0 {
				// The agent's firstDeadline() for a start at 0.
				t.release = 2*t.pat.IntervalNs + ph
			} else {
				t.release = probeStart(t, probeAt, probes > 0)
				probeAt = t.release
				probes++
			}
			t.state = tsSleeping
			s.armTimer(ti, t.release)
		case patServer:
			s.startWorker(ti)
		}
	}
	s.startServers()
	for i := range s.tgs {
		if s.tgs[i].quota > 0 {
			s.push(event{t: s.tgs[i].period, kind: evPeriod, a: int32(i)})
		}
	}
	s.push(event{t: s.tickNs, kind: evTick})
	s.flushResched()
}

// The agent's start of a run's LatencyProbes, measured on the development
// machine (custom-slice's two 2 ms probes, 29 worker starts traced,
// 2026-12-07). A probe's first deadline is an interval after its worker
// started its loop (nodeagent/workload firstDeadline()), and the agent
// sends "go" to the workers in task order, so their grids are not
// independent: 26 of the 29 pairs started 88-912 µs apart (median about
// 210 µs), either one first, and 3 started together on one CPU, each time
// the later task's grid first: 22, 55 and 55 µs before the earlier's (in
// the one start traced from "go", the later task was woken second and ran
// first).
// Two grids that close share a timer interrupt (hrtimerInterrupt), and
// then the later task's probe is woken first and waits.
const (
	probeCoStartP     = 0.10   // 3 of 29
	probeCoStartMinNs = 20_000 // the later task's grid this much before the earlier's
	probeCoStartMaxNs = 55_000
	probeApartMinNs   = 80_000 // otherwise apart by a log-uniform draw in [min, max) (node: 88-912 µs)
	probeApartMaxNs   = 1_000_000
)

// probeStart is the first deadline of a LatencyProbe without a phase: the
// run's first probe draws it uniformly over its interval (its start against
// the tick's grid); a later one starts relative to the probe before it in
// task order (prev, the first deadline drawn for it), as the agent's
// workers do (see probeCoStartP), from the probe's own stream.
func probeStart(t *task, prev int64, havePrev bool) int64 {
	iv := t.pat.IntervalNs
	if !havePrev {
		return t.rng.Int64N(iv)
	}
	var at int64
	if t.rng.Float64() < probeCoStartP {
		at = prev - probeCoStartMinNs - t.rng.Int64N(probeCoStartMaxNs-probeCoStartMinNs+1)
	} else {
		d := int64(float64(probeApartMinNs) * math.Pow(float64(probeApartMaxNs)/probeApartMinNs, t.rng.Float64()))
		if t.rng.IntN(2) == 0 {
			d = -d
		}
		at = prev + d
	}
	return (at%iv + iv) % iv
}

// wakeNewTask is wake_up_new_task(): enqueue with ENQUEUE_INITIAL and check
// preemption of the CPU's current task.
func (s *sim) wakeNewTask(ti int32) {
	t := &s.tasks[ti]
	t.state = tsQueued
	s.enqueueTask(ti, enqInitial)
	s.checkPreemptCurr(t.cpu, ti, t.cpu)
}

// loop processes events in (time, sequence) order: the earlier of the event
// heap's top and the run-end tree's winner (one run end per CPU, re-keyed in
// place when the CPU switches, so no stale events pile up).
func (s *sim) loop() {
	for {
		var e event
		top := &s.rt.node[1]
		c0, ct, cs := int32(top.k&(1<<runEndCPUBits-1)), top.t, top.k>>runEndCPUBits
		heapFirst := len(s.ev) > 0 && (s.ev[0].t < ct || (s.ev[0].t == ct && s.ev[0].seq < cs))
		te := ct
		if heapFirst {
			te = s.ev[0].t
		} else if ct == never {
			break
		}
		if te >= s.end {
			break
		}
		if s.hp.on && te >= s.hp.start {
			// A host pause: enter it (its run ends move), or, past its
			// end, draw the next one; then choose again.
			if !s.hp.entered {
				s.enterHostPause()
				continue
			}
			if te >= s.hp.end {
				s.nextHostPause(s.hp.end)
				continue
			}
		}
		if s.vs.on {
			// A stall of one vCPU: enter or leave it; an event the
			// stalled CPU would take waits for its end.
			if te >= s.vs.due {
				s.stepVCPUStalls()
				continue
			}
			pk := event{t: ct, seq: cs, kind: evRunEnd, a: c0}
			if heapFirst {
				pk = s.ev[0]
			}
			if s.deferToStall(&pk, heapFirst) {
				continue
			}
		}
		if heapFirst {
			e = s.pop()
		} else {
			e = event{t: ct, seq: cs, kind: evRunEnd, a: c0}
		}
		s.now = e.t
		if s.hp.entered && s.now < s.hp.end {
			// Due within the pause: it happens at the pause's end, in
			// its (t, seq) order among the others due then.
			if s.hp.end >= s.end {
				break
			}
			s.now = s.hp.end
		}
		s.nEvents++
		switch e.kind {
		case evTick:
			s.tick()
			// The tick's hrtimer keeps its period grid: after a pause
			// hrtimer_forward() skips the periods it missed.
			s.push(event{t: hrtimerForward(e.t, s.now, s.tickNs), kind: evTick})
		case evRunEnd:
			s.runEnd(e.a)
			s.flushResched()
			// Re-armed or re-keyed by a switch unless still this event.
			if s.cpus[e.a].runEndSeq == e.seq && s.cpus[e.a].runEndT == e.t {
				s.setRunEnd(e.a, never)
			}
			continue
		case evWake:
			if s.timerLive(e.a, e.seq) {
				s.hrtimerInterrupt(e.a)
			}
		case evTimerSoft:
			if s.timerLive(e.a, e.seq) {
				s.timerSoftExpiry(e.a)
			}
		case evPeriod:
			s.periodTimer(e.a, e.t)
		case evArrival:
			s.arrival(e.a)
		case evWakeList:
			s.ttwuPending(e.a)
		case evStallEnd:
			s.stallEnd(e.a)
		}
		s.flushResched()
	}
	// Close the window: charge the running tasks up to the end.
	s.now = s.end
	for c := range s.cpus {
		if cur := s.cpus[c].curr; cur >= 0 {
			for se := s.tasks[cur].se; se >= 0; se = s.ents[se].parent {
				s.updateCurr(s.ents[se].rq)
			}
		}
	}
}

// flushResched runs __schedule() on every CPU whose need_resched was set
// while handling the event (the return to user mode honours it at once).
func (s *sim) flushResched() {
	if len(s.pending) > 0 {
		s.flushReschedSlow()
	}
}

// flushReschedSlow is flushResched with CPUs pending (most events leave
// none: the check above inlines into the event loop).
func (s *sim) flushReschedSlow() {
	for i := 0; i < len(s.pending); i++ {
		c := s.pending[i]
		if s.cpus[c].needResched {
			if s.vs.on && s.vs.cpu[c].entered {
				continue // a stalled vCPU: at its end (stallEnd)
			}
			s.schedule(c)
		}
	}
	s.pending = s.pending[:0]
}

// reschedCurr is resched_curr()/resched_curr_lazy(). A lazy request only
// marks the CPU; its next tick turns it into a real one.
func (s *sim) reschedCurr(c int32, lazy bool) {
	cpu := &s.cpus[c]
	if lazy && cpu.curr >= 0 {
		cpu.lazyResched = true
		return
	}
	if !cpu.needResched {
		cpu.needResched = true
		s.pending = append(s.pending, c)
	}
}

// ---- event queue: a 4-ary heap ordered by (t, seq) ----

func (s *sim) push(e event) {
	e.seq = s.seq
	s.seq++
	s.ev = append(s.ev, e)
	h := s.ev
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) >> 2
		if !evLess(&e, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

func evLess(a, b *event) bool {
	return a.t < b.t || (a.t == b.t && a.seq < b.seq)
}

func (s *sim) pop() event {
	h := s.ev
	top := h[0]
	n := len(h) - 1
	last := h[n]
	s.ev = h[:n]
	h = h[:n]
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		var m int
		if c+3 < n {
			// Four children: a branch-free tournament (keys are unique).
			m = evMin(h, evMin(h, c, c+1), evMin(h, c+2, c+3))
		} else {
			m = c
			for j := c + 1; j < n; j++ {
				m = evMin(h, m, j)
			}
		}
		if !evLess(&h[m], &last) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = last
	return top
}

// evMin returns whichever of h[a], h[b] comes first, without a branch:
// the borrow out of the 128-bit subtraction (t, seq)_b - (t, seq)_a.
func evMin(h []event, a, b int) int {
	x, y := &h[a], &h[b]
	_, bw := bits.Sub64(y.seq, x.seq, 0)
	_, bw = bits.Sub64(uint64(y.t)^1<<63, uint64(x.t)^1<<63, bw)
	return a ^ ((a ^ b) & -int(bw))
}

// ---- run-end tournament tree: the earliest (runEndT, runEndSeq) over CPUs ----

// runEndNode is a node of the run-end tree: the key of the winner below it,
// its run end's time and, in one word, its event sequence and its CPU
// (seq<<runEndCPUBits | cpu). Sequences are unique, so the order of the
// words is the order of the sequences; ties are between CPUs without a run
// end (never, sequence 0), whose order does not matter.
type runEndNode struct {
	t int64
	k uint64
}

// runEndCPUBits holds a CPU number below maxCPUs.
const runEndCPUBits = 10

// The build fails if maxCPUs outgrows runEndCPUBits.
var _ [1<<runEndCPUBits - maxCPUs]struct{}

// runEndTree is a complete binary winner tree over rp leaves (the CPUs,
// padded with never): node[rp+c] is CPU c's key, node[1] the earliest. Each
// node holds a copy of its winner's key, so replaying a leaf's path reads
// only the siblings (independent loads) and carries the winner in
// registers. The array has a fixed size (maxCPUs leaves) so that masked
// indices need no bounds checks.
type runEndTree struct {
	node [2 * maxCPUs]runEndNode
}

// initRunEnd sizes the run-end tree.
func (s *sim) initRunEnd() {
	p := int32(2)
	for p < s.nCPU {
		p <<= 1
	}
	s.rp = p
	rt := &runEndTree{}
	for i := int32(0); i < p; i++ {
		rt.node[p+i] = runEndNode{t: never, k: uint64(i)}
	}
	for i := p - 1; i >= 1; i-- {
		rt.node[i] = rt.node[2*i]
	}
	s.rt = rt
}

// setRunEnd re-keys CPU c's run end (never: none) and replays the matches
// on its path to the root, branch-free (the CPU being re-keyed is usually
// the one whose run end just fired, the winner of every match on its path,
// so the whole path has to be replayed anyway).
func (s *sim) setRunEnd(c int32, t int64) {
	cpu := &s.cpus[c]
	cpu.runEndT = t
	var seq uint64
	if t != never {
		seq = s.seq
		s.seq++
	}
	cpu.runEndSeq = seq
	nd := &s.rt.node
	const m = 2*maxCPUs - 1
	i := s.rp + c
	ct, ck := t, seq<<runEndCPUBits|uint64(c)
	nd[i&m] = runEndNode{t: ct, k: ck}
	for i > 1 {
		o := &nd[(i^1)&m]
		ot, ok := o.t, o.k
		// The sibling wins if (o.t, o.k) < (ct, ck): the borrow out of
		// the 128-bit subtraction (times are never negative). The
		// selection compiles to conditional moves (no branch).
		_, b := bits.Sub64(ok, ck, 0)
		_, b = bits.Sub64(uint64(ot), uint64(ct), b)
		if mask := -b; mask != 0 {
			ct, ck = ot, ok
		}
		i >>= 1
		nd[i&m] = runEndNode{t: ct, k: ck}
	}
}

// ---- idle CPU bitmap ----

func (s *sim) setIdle(c int32, idle bool) {
	bit := uint64(1) << (uint(c) & 63)
	var set uint64
	if idle {
		set = bit
	}
	w := &s.idleMask[c>>6]
	*w = *w&^bit | set
}

// cpuIdle is available_idle_cpu(): nothing running, nothing queued and no
// wake-up on its way (idle_cpu() checks rq->ttwu_pending).
func (s *sim) cpuIdle(c int32) bool {
	return s.cpus[c].curr < 0 && s.rqs[s.cpus[c].root].hNr == 0 && s.cpus[c].ttwuPending == 0
}

// rqIdle is a CPU with nothing running and nothing queued
// (!cpu_rq(cpu)->nr_running, rq->idle_stamp set), wake-ups on its way or not.
func (s *sim) rqIdle(c int32) bool {
	return s.cpus[c].curr < 0 && s.rqs[s.cpus[c].root].hNr == 0
}

// schedIdleCPU is sched_idle_cpu(): only SCHED_IDLE (or idle-group) tasks
// are queued. Both counts are queued tasks: a task that went to sleep not eligible
// and is still queued, delayed (DELAY_DEQUEUE, v6.12+), counts until its
// final dequeue (rq->nr_running == rq->cfs.h_nr_idle, v6.18; nr_running ==
// idle_h_nr_running in v6.12, whose idle count keeps delayed tasks too).
func (s *sim) schedIdleCPU(c int32) bool {
	n := s.nrRunning(c)
	return n > 0 && n == s.hNrIdleQueued(c)
}

// nrRunning is rq->nr_running of a CPU (only the fair class is simulated):
// the root queue's h_nr_queued, runnable and delayed tasks alike.
func (s *sim) nrRunning(c int32) int32 {
	return s.rqs[s.cpus[c].root].hNr + s.cpus[c].nrDelayed
}

// hNrIdleQueued is the root queue's h_nr_idle (idle_h_nr_running before
// v6.14): idle tasks queued, delayed ones included.
func (s *sim) hNrIdleQueued(c int32) int32 {
	return s.rqs[s.cpus[c].root].idleHNr + s.cpus[c].idleDelayed
}

// countDelayed adds d to the CPU's delayed-task counts for task ti, which
// was delayed (d = 1) or stopped being delayed (d = -1: woken, or dequeued
// for good) on its queue: the root's counts see it only when no queue on
// its way up is throttled (set_delayed() and clear_delayed() stop their
// walks at a throttled queue).
func (s *sim) countDelayed(ti int32, d int32) {
	t := &s.tasks[ti]
	if s.throttledHierarchy(t.rq) {
		return
	}
	cpu := &s.cpus[t.cpu]
	cpu.nrDelayed += d
	if t.hIdle {
		cpu.idleDelayed += d
	}
}

// delayedBelow counts the delayed tasks below queue cq that no
// throttled queue already hides from the root, and how many of them count
// as idle: the part of h_nr_queued and h_nr_idle that throttle_cfs_rq()
// takes off the queues above cq and unthrottle_cfs_rq() gives back.
func (s *sim) delayedBelow(cq int32) (n, idle int32) {
	c := s.rqs[cq].cpu
	for _, ti := range s.cpus[c].tasks {
		se := s.tasks[ti].se
		if !s.ents[se].delayed {
			continue
		}
		for q := s.ents[se].rq; q >= 0; {
			if q == cq {
				n++
				if s.taskHIdle(ti) {
					idle++
				}
				break
			}
			r := &s.rqs[q]
			if r.throttled || r.ge < 0 {
				break
			}
			q = s.ents[r.ge].rq
		}
	}
	return n, idle
}

// splitmix64 advances a stream of the run and returns its next value: each
// kind of draw (floor levels, spin overshoots, message work, new-idle
// randomness, host pauses) has a stream of its own, seeded from the run's
// seed, so a draw added to one kind shifts no other.
func splitmix64(state *uint64) uint64 {
	*state += 0x9e3779b97f4a7c15
	z := *state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// hrtimerForward is the next expiry of a periodic hrtimer that was due at
// due and runs at now: due + period, or, when now is past that (a host
// pause), the first boundary of its grid after now (hrtimer_forward()).
func hrtimerForward(due, now, period int64) int64 {
	next := due + period
	if next <= now {
		next += ((now-next)/period + 1) * period
	}
	return next
}

// ---- task clock ----

// scaleExec converts wall time on a CPU to task-clock time (rq_clock_task
// excludes the background/IRQ share).
func (s *sim) scaleExec(d int64) int64 {
	if s.bgNum == 1_000_000 {
		return d
	}
	return d * s.bgNum / 1_000_000
}

// unscaleExec is the wall time needed for d of task-clock time (rounded up).
func (s *sim) unscaleExec(d int64) int64 {
	if s.bgNum == 1_000_000 {
		return d
	}
	return (d*1_000_000 + s.bgNum - 1) / s.bgNum
}

// ---- PELT helpers ----

// updateSeLoad brings an entity's load_avg up to date. Entity and queue
// averages are lazy: they are updated right before their input (weight,
// on_rq, queue load) changes and when read, which gives the values the
// kernel's eager update_load_avg() calls would.
func (s *sim) updateSeLoad(se int32) {
	if s.now-s.ents[se].load.t >= 1<<peltPeriodShift {
		s.updateSeLoadSlow(se)
	}
}

func (s *sim) updateSeLoadSlow(se int32) {
	e := &s.ents[se]
	v := 0.0
	if e.onRq {
		v = float64(e.weight)
	}
	e.load.update(s.pt, s.now, v)
}

// updateRqLoad is update_cfs_rq_load_avg() plus update_tg_load_avg(): the
// queue's load_avg follows the sum of its entities' runnable weights, and the
// task group's total load follows the queue's contribution.
func (s *sim) updateRqLoad(cq int32) {
	if s.now-s.rqs[cq].loadAvg.t >= 1<<peltPeriodShift {
		s.updateRqLoadSlow(cq)
	}
}

// updateRqLoadIn is updateRqLoad with the queue (r = &rqs[cq]) at hand.
func (s *sim) updateRqLoadIn(cq int32, r *cfsRq) {
	if s.now-r.loadAvg.t >= 1<<peltPeriodShift {
		s.updateRqLoadSlow(cq)
	}
}

func (s *sim) updateRqLoadSlow(cq int32) {
	r := &s.rqs[cq]
	r.loadAvg.update(s.pt, s.now, float64(r.load))
	if r.tg >= 0 {
		s.syncTgContrib(cq)
	}
}

// syncTgContrib is update_tg_load_avg() (v6.1..v6.18): publish the queue's
// load_avg to tg->load_avg when it moved by more than 1/64 of the last
// published contribution. The kernel's three figures are integers
// (cfs_rq->avg.load_avg and cfs_rq->tg_load_avg_contrib are unsigned long,
// tg->load_avg an atomic_long_t), so tg->load_avg is exactly the sum of the
// contributions, and a group whose load sits on one CPU only has
// tg->load_avg == contrib there: calc_group_shares() then gives it its full
// shares exactly, whatever its queue's load. The simulator's PELT averages
// are floats; they are published truncated, as load_avg = load_sum /
// divider truncates. Summing the floats instead left residues of one ulp
// (2.3e-13 at a load of 2000) once another CPU's contribution had come and
// gone, and that residue made the group's shares 1023.999 or 1024 as its
// queue's load.weight went between 1024 and 2048: a reweight of the
// running group entity at every full enqueue and dequeue below it, which
// on 6.13..6.18.44 grows its lag (reweightEntity) until the group takes
// the CPU (TestGroupOnOneCPUKeepsFullShares).
func (s *sim) syncTgContrib(cq int32) {
	r := &s.rqs[cq]
	if r.tg < 0 {
		return
	}
	la := int64(r.loadAvg.avg)
	d := la - r.contrib
	if d < 0 {
		d = -d
	}
	if d <= r.contrib/64 {
		return
	}
	s.tgs[r.tg].loadAvg += la - r.contrib
	r.contrib = la
}

func (s *sim) cpuPelt(c int32) {
	if s.now-s.cpus[c].pl.t >= 1<<peltPeriodShift {
		s.cpuPeltSlow(c)
	}
}

func (s *sim) cpuPeltSlow(c int32) {
	cpu := &s.cpus[c]
	u := 0.0
	if cpu.curr >= 0 {
		u = 1024
	}
	cpu.pl.update(s.pt, s.now, u, float64(s.rqs[cpu.root].hNr)*1024)
}

func (s *sim) taskPelt(ti int32) {
	if s.now-s.tasks[ti].pl.t >= 1<<peltPeriodShift {
		s.taskPeltSlow(ti)
	}
}

func (s *sim) taskPeltSlow(ti int32) {
	t := &s.tasks[ti]
	u, r := 0.0, 0.0
	if t.running {
		u = 1024
	}
	if t.state == tsQueued {
		r = 1024
	}
	t.pl.update(s.pt, s.now, u, r)
}

// ---- window accounting ----

func (s *sim) inWindow() bool { return s.now >= s.winStart && s.now < s.end }

// accountTask charges [from, to) of CPU time to task ti, clipped to the window.
func (s *sim) accountTask(ti int32, from, to int64) {
	if from < s.winStart {
		from = s.winStart
	}
	if to > s.end {
		to = s.end
	}
	if to <= from {
		return
	}
	t := &s.tasks[ti]
	t.cpuNs += to - from
	if t.kind != patForeign {
		s.cpus[t.cpu].busyNs += to - from
	}
}
