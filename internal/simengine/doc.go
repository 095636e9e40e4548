// Package simengine is a deterministic discrete-event simulator of the Linux
// fair scheduler: EEVDF (v6.6..v6.12, with the v6.12 defaults) and CFS
// (modelled on v6.1), selected per node.
//
// # Determinism
//
// Simulated time is an integer nanosecond clock. There is one event queue
// ordered by (time, sequence). All randomness comes from generators the run
// owns (a PCG per task, seeded from Input.Seed and the task's index).
// Nothing in the event loop depends on map order, goroutines or the wall
// clock. Scheduling state is integer; the floating-point state (PELT
// averages, group shares) uses plain IEEE arithmetic from literal constants,
// and Burst durations come from math/rand/v2's ExpFloat64. The same Input
// gives byte-identical JSON output on a given architecture (the golden files
// in testdata were recorded on amd64). Run keeps no package-level mutable
// state and may be called concurrently.
//
// # What is modelled
//
//   - Per-CPU root cfs_rq; per task group (cgroup, or autogroup per session
//     when autogroup is on) a cfs_rq and a group entity on every CPU.
//     Group entity weights follow calc_group_shares() with PELT load averages
//     (32-period half-life, 1024 µs periods, changes published to the task
//     group when above 1/64, as update_tg_load_avg() does), computed and
//     compared in fixed point (scale_load()ed tg->shares) as
//     update_cfs_group() does, or the full shares on every CPU when the
//     simulator-only feature SMP_FAIR_GROUPS is off.
//   - Weights: sched_prio_to_weight for nice, cgroup v2 weight → shares,
//     SCHED_IDLE and cpu.idle groups at weight 3 with the idle-preemption
//     rules, SCHED_BATCH without wakeup preemption.
//   - EEVDF: avg_vruntime, eligibility, virtual deadlines, lag kept across
//     sleep and scaled on reweight (PLACE_LAG), half-slice first deadlines
//     (PLACE_DEADLINE_INITIAL), slice protection by release (RUN_TO_PARITY
//     to the picked deadline with do_preempt_short() and did_preempt_short()
//     on 6.12..6.16; se->vprot with set_protect_slice(), the resched past it
//     in update_curr() and its end at a reweight of curr on 6.17+), custom
//     slices with group entities taking the smallest slice below them at
//     every enqueue and dequeue under them, PREEMPT_SHORT, DELAY_DEQUEUE with
//     DELAY_ZERO.
//   - CFS: vruntime, min_vruntime, sched_slice/sched_period (ALT_PERIOD,
//     BASE_SLICE), START_DEBIT, the GENTLE_FAIR_SLEEPERS sleeper credit,
//     check_preempt_tick, wakeup preemption with wakeup_gran, vruntime
//     normalisation on migration.
//   - The tick at HZ (ticks aligned across CPUs; idle CPUs are tickless),
//     the preemption model (see checkPreemptWakeup), cpu.max bandwidth with
//     throttling and period-timer unthrottling, debt carried over.
//   - SMP: fork balancing by load (an idle CPU, else the least cpu_load,
//     with each forked task's load attached), wakeup placement (wake_affine with WA_IDLE,
//     WA_WEIGHT, WA_BIAS, then select_idle_sibling), periodic, nohz-idle and
//     new-idle load balancing with group classification, migrate_task and
//     migrate_load imbalances, task_hot() with the migration cost,
//     nr_migrate and nr_balance_failed, h_load-based task loads; the
//     new-idle gate per kernel version (migration cost before v5.16,
//     sd->max_newidle_lb_cost with its decay from v5.16, the v6.18.0..4
//     bump; NI_RANDOM modelled but off by default, newidle.go) and the
//     blocked-load decay (update_blocked_averages() in the periodic, new-idle
//     and NOHZ idle balances, publishing to tg->load_avg, blocked.go).
//   - Topology (Node.Topology, topology.go): sockets, LLCs per socket and
//     SMT build the SMT, MC, PKG and NUMA sched domains with sd_init()'s
//     parameters; wake-ups follow record_wakee()/wake_wide(), wake_affine()
//     in the lowest spanning domain, select_idle_sibling() with
//     recent_used_cpu, select_idle_smt(), select_idle_core() and the
//     SIS_UTIL scan limit, and cross-LLC wake lists; each level balances
//     at its own balance_interval (doubling when balanced, reset on an
//     imbalance) with should_we_balance(), group_smt_balance,
//     sibling_imbalance(), migrate_util above the LLC, per-domain
//     nr_balance_failed and active balancing of a running task. The zero
//     Topology keeps the flat model below, unchanged.
//   - Workload patterns Hog, Periodic, LatencyProbe, PingPong and Burst, and
//     the metrics: CPU, share, wakeup latency (log-linear histogram, ≤3%
//     bucket width), context switches, deadline misses, operations.
//   - The latency floor, from the node's Constants (defaults in
//     DefaultConstants, never zero unless asked): a timer sleep ends at its
//     hrtimer's hard expiry (deadline + the task's timer slack, 50 µs by
//     default), or earlier at any timer interrupt on its CPU past the
//     deadline: the first tick on a busy CPU, or another sleep's hard
//     expiry (hrtimer_interrupt() expires every queued timer past its soft
//     expiry, in hard-expiry order, so two sleeps within a slack of each
//     other end together), then pays the timer interrupt (each CPU's moved by
//     Node.TimerExpiryShiftNs: a host's vCPUs have timer paths of their
//     own); a wake-up onto an idle CPU other than the
//     waker's goes through that CPU's wake list and pays the wake-up path
//     (ttwu_queue_cond(): the IPI), while onto the waker's own CPU or a
//     busy one the waker enqueues the task at once; a CPU leaving idle pays
//     the idle exit; the switch to the woken
//     task pays the context switch, the switch of address space when the
//     CPU last ran another process (ProcessSwitchNs: switch_mm_irqs_off();
//     Group.AddressSpace and KernelThread say which tasks share one, and
//     kernel threads and the idle task keep the one they find; in its
//     latency only), and after a sleep longer than 2 ms the
//     caches and TLB entries it lost (ColdWakeNs per doubling of the sleep,
//     up to 100 ms, in its latency only); every wake-up costs the task its system-call and
//     scheduler work (and a timer sleep its timer arm).
//     The histogram is reported whole (power-of-two µs buckets) with the
//     fractions of wake-ups later than 100 µs, 1 ms and 10 ms.
//   - Calibration (fitted across a fleet): timer and wakeup overheads added
//     to the constants, the context switch cost likewise, background load
//     slows the task clock (as IRQ time is excluded from rq_clock_task).
//
// # Simplifications
//
//   - Without a Topology: one flat scheduling domain spanning all CPUs (one
//     LLC, no SMT or NUMA levels, the idle-CPU scan limited by SIS_UTIL),
//     no active balancing, no recent_used_cpu or wake_wide. With one: a
//     symmetric machine (one NUMA node per socket at distance 21), no CLS
//     (cluster) level, no NUMA balancing, fork placement spread level by
//     level from the top. The topology changes the scheduler's decisions
//     only, not the hardware: busy SMT siblings run at full speed each, and
//     a task pays nothing for a cold cache or a remote node after a
//     migration (only a cross-LLC wake-up's IPI, WakeupNs). Either way
//     CPUs of equal capacity, no misfit or asymmetric capacity, no
//     energy-aware placement.
//   - Only the fair class: no RT/deadline tasks, no kernel threads beyond
//     Calibration.BackgroundLoad.
//   - The only hrtimers are the tasks' sleeps and the tick (not the
//     bandwidth period timer, nor other kernel timers), each sleep's on the
//     CPU it went to sleep on. A LatencyProbe's or Periodic's grid lies
//     where Group.GridPhasesNs puts it (the phases the agent recorded in a
//     window, against each other and the tick); without them a Periodic's
//     starts at a random phase, a LatencyProbe's too, a run's later probes
//     relative to the one before them as the agent's workers start
//     (probeStart), unless Pattern.PhaseNs sets it.
//     The idle exit and the context switch are charged to the woken task.
//   - Buddies only as the kernels have them by default: for CFS (v6.1) the
//     next buddy of a wake-up preemption and of a sleeping task's group,
//     LAST_BUDDY, and CACHE_HOT_BUDDY; for EEVDF from v6.12 the next buddy
//     of a sleeping task's group, which pick_eevdf() takes when it is
//     eligible (PICK_BUDDY); no skip buddy (nothing yields), and no EEVDF
//     NEXT_BUDDY (off by default in v6.6..v6.18). No HRTICK, no core
//     scheduling, no uclamp.
//   - Bandwidth uses one runtime pool per group instead of 5 ms per-CPU
//     slices; throttling happens at the next update_curr (the tick or a
//     scheduling event), as the kernel's does without HRTICK.
//   - PELT signals are evaluated lazily in whole 1024 µs periods; the
//     time left over is carried to the next update and attributed to the
//     signal's value then. Migrations move load, util and runnable averages
//     with the task and propagate the change to the group entities above
//     approximately (in proportion), not with update_tg_cfs_load()'s exact
//     sums.
//   - The runqueue is a slice kept sorted by vruntime (the kernel's
//     rb-tree order, equal keys in insertion order) instead of an augmented
//     rb-tree: insertion and removal move O(n) nodes and an EEVDF pick scans
//     the eligible prefix for the earliest deadline, which is fast for the
//     short per-CPU queues of realistic inputs and slower for hundreds of
//     tasks on one CPU.
//   - h_nr_running does not count delayed (DELAY_DEQUEUE) tasks, as
//     h_nr_runnable does from v6.13, so a CPU holding only delayed tasks
//     counts as idle for wakeup placement and balancing.
//   - PingPong: a message is read, spin, write; the wakee may preempt the
//     writer on its way back from write() (it reads when it runs again),
//     and the spin, which reads the thread's CPU clock, runs update_curr()
//     of the worker's queue at the end of its request as a Server's does;
//     between those the simulator does not model the clock reads. The
//     write() runs a fixed 1 µs past the last clock read before it wakes
//     the partner and the read() 1 µs before it blocks (the node's trace);
//     a partner woken from delay is placed against that stale vruntime
//     (requeue_delayed_entity() runs no update_curr(), v6.12..v6.18).
//     The spin ends at its first clock read past the work: each message's
//     spin overshoots by a draw uniform over one read (1.27 µs, a system
//     call on the node; spinOvershoot). Periodic, Burst and Server spins
//     end exactly on their target.
package simengine
