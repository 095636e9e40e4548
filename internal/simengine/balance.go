package simengine

import (
	"math/bits"
	"slices"
)

// This file holds SMP placement and load balancing (kernel/sched/fair.c,
// v6.1..v6.12) of the flat machine (Node.Topology unset): one scheduling
// domain (one LLC, an MC-level domain) whose groups are single CPUs:
// imbalance_pct 117, cache_nice_tries 1, balance interval = number of CPUs
// in ms, ×16 when busy. A node with a topology takes the per-level paths of
// topology.go from the hooks below.

// findIdlestCPUFork is find_idlest_cpu() for the burst of forks at time 0
// (every forked task is runnable at its fork): an idle CPU (none forked onto
// it yet), lowest first; else the least loaded by cpu_load(), which holds
// the load attached by the tasks forked so far, ties to the lowest index.
// With fixed group weights (SMP_FAIR_GROUPS off) a further task of a group
// already present does not add load, so a large group's extra tasks pile
// onto one CPU, as on a kernel without calc_group_shares.
func (s *sim) findIdlestCPUFork() int32 {
	if s.topo != nil {
		return s.findIdlestCPUForkTopo()
	}
	for c := int32(0); c < s.nCPU; c++ {
		if s.cpus[c].forkCount == 0 {
			return c
		}
	}
	best := int32(0)
	bl := s.cpuLoad(0)
	for c := int32(1); c < s.nCPU; c++ {
		if l := s.cpuLoad(c); l < bl {
			best, bl = c, l
		}
	}
	return best
}

// cpuLoad is cpu_load(): the root queue's load_avg.
func (s *sim) cpuLoad(c int32) float64 {
	cq := s.cpus[c].root
	s.updateRqLoad(cq)
	return s.rqs[cq].loadAvg.avg
}

// hLoad is the hierarchical load of a queue, cfs_rq->h_load as
// update_cfs_rq_h_load() keeps it (read in v6.12 and v6.18; applied to
// v6.1 and v6.6 too, whose sources were not read for it): the root's load_avg
// scaled down by each group entity's part of its parent, computed at most
// once per jiffy per queue ("if (cfs_rq->last_h_load_update == now)
// return;"). A queue whose h_load is stale walks up to the first ancestor
// updated in this jiffy (or the root) and recomputes the chain down from
// there; within the jiffy task_h_load() then scales the cached h_load by
// the task's and the queue's current load_avg. So the h_load that the
// periodic balance computes at a tick is the one wake_affine_weight() reads
// for the rest of that tick's jiffy.
func (s *sim) hLoad(cq int32) float64 {
	stamp := int32(s.jiffies() + 1)
	r := &s.rqs[cq]
	if r.hLoadStamp == stamp {
		return float64(r.hLoad)
	}
	var h float64
	if r.ge < 0 {
		s.updateRqLoad(cq)
		h = r.loadAvg.avg
	} else {
		ge := r.ge
		s.updateSeLoad(ge)
		pcq := s.ents[ge].rq
		s.updateRqLoad(pcq)
		h = s.hLoad(pcq) * s.ents[ge].load.avg / (s.rqs[pcq].loadAvg.avg + 1)
	}
	r.hLoad, r.hLoadStamp = float32(h), stamp
	return float64(r.hLoad)
}

// taskHLoad is task_h_load(): the task's load_avg times its queue's
// h_load (hLoad) over the queue's load_avg, the last two as of now.
func (s *sim) taskHLoad(ti int32) float64 {
	se := s.tasks[ti].se
	s.updateSeLoad(se)
	cq := s.ents[se].rq
	h := s.hLoad(cq)
	s.updateRqLoad(cq)
	return s.ents[se].load.avg * h / (s.rqs[cq].loadAvg.avg + 1)
}

// selectTaskRq is select_task_rq_fair() for a wakeup: wake_affine() between
// the waker's and the previous CPU, then select_idle_sibling().
//
// A task pinned to one CPU goes there without either (select_task_rq() in
// core.c calls the class only when p->nr_cpus_allowed > 1). Otherwise
// want_affine needs the waking CPU among the task's CPUs, the idle scans
// look at its CPUs only, and a CPU outside them becomes
// select_fallback_rq()'s.
func (s *sim) selectTaskRq(ti, this int32, sync bool) int32 {
	prev := s.tasks[ti].cpu
	if s.nCPU == 1 {
		return prev
	}
	if c := s.pinnedCPU(ti); c >= 0 {
		return c
	}
	if s.topo != nil {
		return s.fallbackCPU(ti, s.selectTaskRqTopo(ti, this, sync))
	}
	target := prev
	if this != prev && s.allowed(ti, this) {
		target = s.wakeAffine(ti, this, prev, sync, imbalancePct, true)
	}
	return s.fallbackCPU(ti, s.selectIdleSibling(ti, prev, target))
}

// wakeAffine is wake_affine() with wake_affine_idle() and
// wake_affine_weight() (v6.12) in a domain of imbalance_pct pct; shareCache
// is cpus_share_cache(this, prev).
func (s *sim) wakeAffine(ti, this, prev int32, sync bool, pct int64, shareCache bool) int32 {
	target := int32(-1)
	if s.feat.waIdle {
		switch {
		case s.cpuIdle(this) && shareCache:
			if s.cpuIdle(prev) {
				target = prev
			} else {
				target = this
			}
		case sync && s.rqs[s.cpus[this].root].hNr == 1:
			// rq->nr_running - cfs_h_nr_delayed(rq) == 1, delayed tasks
			// left out, as read in Debian's 6.12.118 source, where it came
			// as a fix (the first 6.12 releases read plain nr_running,
			// which is not modelled).
			target = this
		case s.cpuIdle(prev):
			target = prev
		}
	}
	if target < 0 && s.feat.waWeight {
		thisEff := s.cpuLoad(this)
		if sync && s.cpus[this].curr >= 0 {
			cur := s.taskHLoad(s.cpus[this].curr)
			if cur > thisEff {
				target = this
			} else {
				thisEff -= cur
			}
		}
		if target < 0 {
			tl := s.taskHLoad(ti)
			thisEff += tl
			prevEff := s.cpuLoad(prev) - tl
			if s.feat.waBias {
				thisEff *= 100
				prevEff *= float64(100 + (pct-100)/2)
			}
			if sync {
				prevEff++
			}
			if thisEff < prevEff {
				target = this
			}
		}
	}
	if target != this {
		return prev
	}
	return target
}

// selectIdleSibling is select_idle_sibling(): the target if idle, else the
// previous CPU if idle, else the first idle CPU scanning the LLC from
// target+1 within the SIS_UTIL limit (select_idle_cpu()), else target.
func (s *sim) selectIdleSibling(ti, prev, target int32) int32 {
	if s.cpuIdle(target) || s.schedIdleCPU(target) {
		return target
	}
	if prev != target && (s.cpuIdle(prev) || s.schedIdleCPU(prev)) {
		return prev
	}
	if c := s.selectIdleCPUFlat(ti, target); c >= 0 {
		return c
	}
	return target
}

// selectIdleCPUFlat is select_idle_cpu() with SIS_UTIL (on by default from
// v6.0, so in every modelled kernel; read in v6.12 and v6.18) on the flat
// machine's one LLC (no SMT, so no idle-core search): the scan from
// target+1, wrapping, stops after sd_llc_shared->nr_idle_scan CPUs
// ("because !--nr is the condition to stop scan"), and does not start when
// the last periodic balance found the LLC about 85 % busy or more
// (nr_idle_scan 0: "overloaded LLC is unlikely to have idle cpu/core").
// Without the limit, a machine whose every CPU runs a hog sent every
// waking task whose CPU was busy to whichever CPU had just gone idle.
//
// A pinned task's scan covers its CPUs only (sched_domain_span(sd) &
// p->cpus_ptr), and only those count against nr_idle_scan.
func (s *sim) selectIdleCPUFlat(ti, target int32) int32 {
	nr := s.nrIdleScan
	if nr <= 0 {
		return -1
	}
	if s.tasks[ti].aff >= 0 {
		for i := int32(1); i <= s.nCPU && nr > 0; i++ {
			c := (target + i) % s.nCPU
			if !s.allowed(ti, c) {
				continue
			}
			if s.cpuIdle(c) || s.schedIdleCPU(c) {
				return c
			}
			nr--
		}
		return -1
	}
	from := target + 1
	if from >= s.nCPU {
		from = 0
	}
	c := s.nextIdleCPU(from)
	d := s.nCPU
	if c >= 0 {
		d = (c - from + s.nCPU) % s.nCPU
	}
	if s.anySchedIdle {
		// __select_idle_cpu() takes a CPU that runs only SCHED_IDLE or
		// idle-group tasks (sched_idle_cpu()) as it takes an idle one: the
		// first of either within the limit.
		for i := int32(0); i < min(d, nr); i++ {
			if x := (from + i) % s.nCPU; s.schedIdleCPU(x) {
				return x
			}
		}
	}
	if c < 0 || d >= nr {
		return -1
	}
	return c
}

// nextIdleCPU returns the first idle CPU at or after from, wrapping, or -1.
func (s *sim) nextIdleCPU(from int32) int32 {
	n := s.nCPU
	if from >= n {
		from = 0
	}
	words := int32(len(s.idleMask))
	w := from >> 6
	m := s.idleMask[w] &^ (1<<(uint(from)&63) - 1)
	for i := int32(0); i <= words; i++ {
		if m != 0 {
			c := w<<6 + int32(bits.TrailingZeros64(m))
			if c < n {
				return c
			}
		}
		w++
		if w == words {
			w = 0
		}
		m = s.idleMask[w]
	}
	return -1
}

// overloaded reports whether some CPU has rq->nr_running >= 2, delayed
// tasks included: the test of nohz_balancer_kick() (v6.12, v6.18), made on
// the busy CPUs' ticks. The new-idle balance reads rd->overloaded instead
// (rdOverloaded), which keeps what the last balance of the root domain saw.
func (s *sim) overloaded() bool {
	for c := range s.cpus {
		if s.nrRunning(int32(c)) > 1 {
			return true
		}
	}
	return false
}

// Group types of group_classify() that a single-CPU group can take.
const (
	groupHasSpare = iota
	groupFullyBusy
	groupOverloaded
)

type lbStat struct {
	nr   int32
	load float64
	typ  int
}

// groupClassify is group_classify() with group_is_overloaded() and
// group_has_capacity() for a one-CPU group (capacity 1024).
func groupClassify(nr int32, util, runnable float64) int {
	const capacity = 1024
	if nr > 1 && (capacity*100 < util*imbalancePct || capacity*imbalancePct < runnable*100) {
		return groupOverloaded
	}
	if nr < 1 {
		return groupHasSpare
	}
	if capacity*imbalancePct < runnable*100 {
		return groupFullyBusy
	}
	if capacity*100 > util*imbalancePct {
		return groupHasSpare
	}
	return groupFullyBusy
}

// newidleBalance is sched_balance_newidle() (v6.10+; newidle_balance()
// before): nothing to do with a wake-up on its way (rq->ttwu_pending), the
// version's gate (newidleGate), the blocked averages, then the domains
// bottom up (newidleDomain); the flat machine has one.
func (s *sim) newidleBalance(c int32) bool {
	if s.nCPU == 1 || s.migrationCost < 0 || s.cpus[c].ttwuPending > 0 {
		return false
	}
	if s.topo != nil {
		return s.newidleBalanceTopo(c)
	}
	ni := &s.cpus[c].ni
	if !s.newidleGate(c, ni) {
		return false
	}
	s.updateBlockedAverages(c)
	var curr int64
	pulled, _ := s.newidleDomain(c, ni, &curr, func() (bool, bool) {
		return s.loadBalance(c, true, true), true
	})
	s.newidleDone(c, curr)
	return pulled
}

// loadBalance is load_balance() with find_busiest_group(),
// calculate_imbalance() and detach_tasks()/attach_tasks(), pulling tasks to
// dst. It returns whether any task moved.
func (s *sim) loadBalance(dst int32, idle, newIdle bool) bool {
	if s.nCPU == 1 {
		return false
	}
	// balanced is the out_balanced exit of load_balance() (v6.1..v6.18):
	// the failure count starts again from zero.
	balanced := func() bool {
		s.cpus[dst].nrBalanceFailed = 0
		s.tuneBalanceInterval(dst, newIdle, false)
		return false
	}
	// excluded holds the CPUs a redo leaves out (env->cpus): each one whose
	// every task was pinned away from dst (LBF_ALL_PINNED). Only pinned
	// tasks can cause one.
	var excluded []bool
	if len(s.affs) > 0 {
		excluded = s.lbExcluded[:0]
		for range s.nCPU {
			excluded = append(excluded, false)
		}
		s.lbExcluded = excluded
	}
redo:
	// update_sd_lb_stats()
	var total, sumUtil float64
	sgOverloaded := false
	busiest := int32(-1)
	var bst, local lbStat
	for c := int32(0); c < s.nCPU; c++ {
		if excluded != nil && excluded[c] {
			continue
		}
		s.cpuPelt(c)
		cpu := &s.cpus[c]
		// update_sg_lb_stats() (v6.12, v6.18): sum_nr_running is
		// rq->nr_running and sum_h_nr_running the root's h_nr_queued,
		// delayed tasks included (one number here: only the fair class
		// runs).
		st := lbStat{nr: s.nrRunning(c), load: s.cpuLoad(c)}
		if st.nr > 1 {
			sgOverloaded = true
		}
		st.typ = groupClassify(st.nr, cpu.pl.util, cpu.pl.runnable)
		total += st.load
		sumUtil += min(cpu.pl.util, 1024) // cpu_util_cfs() is capped at the capacity
		if c == dst {
			local = st
			continue
		}
		if st.nr == 0 {
			continue
		}
		// update_sd_pick_busiest()
		if busiest < 0 || st.typ > bst.typ ||
			(st.typ == bst.typ && st.typ == groupOverloaded && st.load > bst.load) ||
			(st.typ == bst.typ && st.typ == groupHasSpare && st.nr > bst.nr) {
			busiest, bst = c, st
		}
	}
	if !newIdle {
		// update_idle_cpu_scan() at the end of update_sd_lb_stats(): the
		// periodic and idle balances of the LLC domain set the SIS_UTIL
		// scan limit, a new-idle balance does not.
		s.nrIdleScan = idleCPUScan(sumUtil, int64(s.nCPU), imbalancePct)
	}
	// The flat machine's one domain is the root domain: its stats set
	// rd->overloaded (update_sd_lb_stats(), !env->sd->parent).
	s.rdOverloaded = sgOverloaded
	if busiest < 0 {
		return balanced()
	}
	// find_busiest_group()
	sdsAvg := total / float64(s.nCPU)
	if local.typ > bst.typ {
		return balanced()
	}
	if local.typ == groupOverloaded {
		if local.load >= bst.load || local.load >= sdsAvg || 100*bst.load <= imbalancePct*local.load {
			return balanced()
		}
	}
	if bst.typ != groupOverloaded {
		if !idle || bst.nr <= 1 {
			return balanced()
		}
	}
	// calculate_imbalance()
	migrateTask := false
	var imbalance float64
	if local.typ == groupHasSpare {
		migrateTask = true
		imbalance = float64(max(0, bst.nr-local.nr) >> 1)
	} else {
		if local.typ < groupOverloaded && local.load >= bst.load {
			return balanced()
		}
		imbalance = min(bst.load-sdsAvg, sdsAvg-local.load)
	}
	if imbalance <= 0 {
		return balanced()
	}
	// detach_tasks(): walk the busiest CPU's tasks from the least recently
	// run (the tail of cfs_tasks), delayed tasks among them, up to
	// loop_max = min(sysctl_sched_nr_migrate, busiest->nr_running); an idle
	// balance leaves busiest one task (env->src_rq->nr_running <= 1). Both
	// counts are rq->nr_running, delayed tasks included (v6.12, v6.18).
	cand := append(s.scratch[:0], s.cpus[busiest].tasks...)
	slices.SortFunc(cand, func(a, b int32) int {
		ta, tb := s.tasks[a].listStamp, s.tasks[b].listStamp
		if ta != tb {
			if ta < tb {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	loopMax := min(s.nrMigrate, int(s.nrRunning(busiest)))
	failed := s.cpus[dst].nrBalanceFailed
	moved := 0
	detaching := s.nrRunning(busiest) > 1
	s.lbAllPinned = true
	for i, ti := range cand {
		if i >= loopMax {
			break
		}
		if idle && s.nrRunning(busiest) <= 1 {
			break
		}
		if !s.canMigrateTask(ti, dst, failed, cacheNiceTries) {
			continue
		}
		if migrateTask {
			imbalance--
		} else {
			load := max(s.taskHLoad(ti), 1)
			if s.feat.lbMin && load < 16 && failed == 0 {
				continue
			}
			if load/float64(uint64(1)<<min(uint(failed), 62)) > imbalance {
				continue
			}
			imbalance -= load
		}
		s.moveQueuedTask(ti, dst)
		moved++
		if newIdle || imbalance <= 0 {
			break
		}
	}
	s.scratch = cand[:0]
	if moved == 0 && detaching && s.lbAllPinned && excluded != nil {
		// load_balance(): every task of busiest is pinned away from dst;
		// leave busiest out and look again, while some CPU besides dst
		// is left; else out_all_pinned, which clears the failure count.
		excluded[busiest] = true
		for c := int32(0); c < s.nCPU; c++ {
			if c != dst && !excluded[c] {
				goto redo
			}
		}
		s.cpus[dst].nrBalanceFailed = 0
		s.tuneBalanceInterval(dst, newIdle, true)
		return false
	}
	// load_balance() (v6.1..v6.18): only a periodic balance that moved
	// nothing counts a failure ("We do not want newidle balance, which can
	// be very frequent, pollute the failure counter"), but any balance
	// that moved a task, new-idle too, clears the count.
	if moved == 0 {
		if !newIdle {
			s.cpus[dst].nrBalanceFailed++
		}
	} else {
		s.cpus[dst].nrBalanceFailed = 0
	}
	// "We were unbalanced, so reset the balancing interval"
	// (sched_balance_rq(), v6.18; no active balance on the flat machine).
	s.cpus[dst].balanceInterval = int32(s.balanceIntervalNs / 1_000_000)
	return moved > 0
}

// tuneBalanceInterval is the end of sched_balance_rq() (v6.18; load_balance()
// of v6.1..v6.9 alike) when the domain is found balanced (out_balanced,
// out_all_pinned, out_one_pinned): outside new-idle balancing
// sd->balance_interval doubles up to sd->max_interval (2 × sd_weight ms,
// sd_init()), or up to MAX_PINNED_INTERVAL (512 ms) when every task was
// pinned away (LBF_ALL_PINNED). An unbalanced pass resets it to
// sd->min_interval (sd_weight ms).
func (s *sim) tuneBalanceInterval(dst int32, newIdle, allPinned bool) {
	if newIdle {
		return
	}
	cpu := &s.cpus[dst]
	minMs := int32(s.balanceIntervalNs / 1_000_000)
	if allPinned && cpu.balanceInterval < 512 || cpu.balanceInterval < 2*minMs {
		cpu.balanceInterval *= 2
	}
}

// canMigrateTask is can_migrate_task(): not running, not in a throttled
// hierarchy on either side, and not cache hot unless balancing failed more
// than the domain's cache_nice_tries times.
//
// Its checks come in the kernel's order (v6.12): a task that may not run
// on dst is refused before the running test, and every task that passes
// that test clears lbAllPinned (LBF_ALL_PINNED).
//
// A delayed task (DELAY_DEQUEUE: blocked, still queued) is never moved
// here, which is a simplification, not the kernel's rule: v6.12's
// can_migrate_task() has no such test (read in 6.12.19), and from v6.14
// (commit 61b82dfb6b7e, "sched/fair: Do not try to migrate delayed dequeue
// task"; read in 6.18.35) it refuses a delayed task only when the balance
// is not migrate_load. v6.18 also refuses a task that is not eligible on
// its queue while the destination's queue of its group has entities, until
// a balance has failed (task_is_ineligible_on_dst_cpu()), which is not
// modelled either.
func (s *sim) canMigrateTask(ti, dst int32, failed, cacheNiceTries int) bool {
	t := &s.tasks[ti]
	if s.ents[t.se].delayed {
		return false
	}
	if s.throttledHierarchy(s.ents[t.se].rq) {
		return false
	}
	if t.tg >= 0 && s.throttledHierarchy(s.tgs[t.tg].rq[dst]) {
		return false
	}
	if !s.allowed(ti, dst) {
		return false
	}
	s.lbAllPinned = false
	if t.running {
		return false
	}
	if (s.taskHot(ti) || s.buddyHot(ti, dst)) && failed <= cacheNiceTries {
		return false
	}
	return true
}

// buddyHot is CACHE_HOT_BUDDY in task_hot() (v6.1): a next or last buddy
// counts as cache hot when the destination has tasks.
func (s *sim) buddyHot(ti, dst int32) bool {
	if s.eevdf || s.rqs[s.cpus[dst].root].hNr == 0 {
		return false
	}
	se := s.tasks[ti].se
	r := &s.rqs[s.ents[se].rq]
	return r.next == se || r.last == se
}

// taskHot is task_hot(): did the task run within the last migration cost?
func (s *sim) taskHot(ti int32) bool {
	t := &s.tasks[ti]
	if t.policy == polIdle {
		return false
	}
	if s.migrationCost < 0 {
		return true
	}
	if s.migrationCost == 0 {
		return false
	}
	return s.now-s.ents[t.se].execStart < s.migrationCost
}

// moveQueuedTask is detach_task() + attach_task(): dequeue, move, enqueue,
// and check preemption on the destination.
func (s *sim) moveQueuedTask(ti, dst int32) {
	s.dequeueTask(ti, 0)
	s.migrateTask(ti, dst, false)
	s.enqueueTask(ti, 0)
	s.checkPreemptCurr(dst, ti, dst)
}

// rebalanceFlat is sched_balance_domains() (v6.12; v6.18 alike) for the flat
// machine's one domain at a busy CPU's tick: the domain balances once its
// interval since the last balance (sd->last_balance) has passed, an
// interval busy_factor times longer on a busy CPU, and a CPU whose queue
// holds only SCHED_IDLE or idle-group tasks (sched_idle_cpu()) is not busy;
// after a pull the CPU's state is read again. rq->next_balance is the next
// due time. dequeueTask() brings it forward when a CPU is left with idle
// tasks only.
func (s *sim) rebalanceFlat(c int32) {
	cpu := &s.cpus[c]
	s.decayNewidleCost(c)
	busy := !s.schedIdleCPU(c)
	interval := s.balanceIntervalFlat(c, busy)
	if cpu.lastBalance == never || s.now >= cpu.lastBalance+interval {
		if s.loadBalance(c, false, false) {
			busy = !s.cpuIdle(c) && !s.schedIdleCPU(c)
		}
		cpu.lastBalance = s.now
		interval = s.balanceIntervalFlat(c, busy)
	}
	cpu.nextBalance = cpu.lastBalance + interval
}

// balanceIntervalFlat is get_sd_balance_interval() (v6.18) of the flat
// domain at CPU c: sd->balance_interval ms (tuneBalanceInterval), times
// busy_factor on a busy CPU, in jiffies (msecs_to_jiffies() rounds up),
// less one jiffy when busy, clamped to [1, max_load_balance_interval]
// (HZ × CPUs / 10). Two CPUs at HZ 250 balance a busy CPU every 28 ms, or
// 60 ms once a pass found the domain balanced.
func (s *sim) balanceIntervalFlat(c int32, busy bool) int64 {
	ms := int64(s.cpus[c].balanceInterval)
	if busy {
		ms *= busyFactor
	}
	hz := 1_000_000_000 / s.tickNs
	j := (ms*hz + 999) / 1000
	if busy {
		j--
	}
	j = min(max(j, 1), max(hz*int64(s.nCPU)/10, 1))
	return j * s.tickNs
}
