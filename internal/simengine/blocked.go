package simengine

// Blocked load (kernel/sched/fair.c, v6.12 and v6.18). A group queue whose
// tasks sleep keeps their PELT load, which decays; the decay reaches the
// task group's load_avg (and so calc_group_shares() on the other CPUs) only
// when something updates that queue. The simulator's PELT averages are lazy
// and exact when read, so what has to follow the kernel's cadence is the
// publication to tg->load_avg: update_tg_load_avg() from
// sched_balance_update_blocked_averages() (update_blocked_averages() before
// v6.10), which runs
//
//   - in the periodic balance softirq of a CPU whose rq->next_balance is due
//     (sched_balance_softirq() → sched_balance_update_blocked_averages(),
//     then sched_balance_domains());
//   - in sched_balance_newidle() once its gate has passed, before the
//     domain walk;
//   - for idle CPUs, from the NOHZ idle balance (_nohz_idle_balance() →
//     update_nohz_stats()), kicked by a busy CPU's tick either with a
//     balance kick or, every LOAD_AVG_PERIOD (32 ms) while some idle CPU
//     still has blocked load, with NOHZ_STATS_KICK alone
//     (nohz_balancer_kick()), or run by a CPU about to go idle
//     (nohz_newidle_balance() → nohz_run_idle_balance()).
//
// Without it a group whose task went to sleep on an idle CPU kept that
// CPU's last contribution in tg->load_avg for as long as the task slept, and
// the group's entities on the other CPUs got their shares divided by a load
// that was no longer there.

// loadAvgPeriodMs is LOAD_AVG_PERIOD, the NOHZ blocked-load update period
// in ms (nohz.next_blocked = now + msecs_to_jiffies(LOAD_AVG_PERIOD)).
const loadAvgPeriodMs = 32

// jiffies is the tick count at the current time.
func (s *sim) jiffies() int64 { return s.now / s.tickNs }

// msecsToJiffies is msecs_to_jiffies(): rounded up.
func (s *sim) msecsToJiffies(ms int64) int64 {
	return (ms*1_000_000 + s.tickNs - 1) / s.tickNs
}

// listAddLeafCfsRq is list_add_leaf_cfs_rq(): a group queue that gets an
// entity or attached load joins its CPU's list of queues whose averages
// need updating while blocked.
func (s *sim) listAddLeafCfsRq(cq int32) {
	r := &s.rqs[cq]
	if r.tg < 0 || r.onList {
		return
	}
	r.onList = true
	s.cpus[r.cpu].leaf = append(s.cpus[r.cpu].leaf, cq)
}

// updateBlockedAverages is sched_balance_update_blocked_averages() with
// __update_blocked_fair() (v6.12, v6.18): every group queue of the CPU on
// the leaf list is brought up to date (update_cfs_rq_load_avg()) and its
// change published to the task group (update_tg_load_avg(), which keeps its
// 1/64 threshold here); a queue with nothing queued whose load has decayed
// to zero leaves the list (cfs_rq_is_decayed()). The kernel's load_avg is
// an integer: a float average below 1 is taken as the 0 it would be.
// rq->has_blocked_load stays set while a listed queue or the CPU's
// utilization is not yet zero (cfs_rq_has_blocked()).
func (s *sim) updateBlockedAverages(c int32) {
	cpu := &s.cpus[c]
	cpu.lastBlockedTick = s.jiffies()
	leaf := cpu.leaf
	kept := leaf[:0]
	for _, cq := range leaf {
		s.updateRqLoad(cq)
		r := &s.rqs[cq]
		if r.load == 0 && r.loadAvg.avg < 1 {
			r.loadAvg.avg = 0
			s.syncTgContrib(cq)
			r.onList = false
			continue
		}
		kept = append(kept, cq)
	}
	cpu.leaf = kept
	s.cpuPelt(c)
	cpu.hasBlockedLoad = len(kept) > 0 || cpu.pl.util >= 1
}

// nohzEnterIdle is the part of nohz_balance_enter_idle() (v6.12, v6.18)
// that concerns blocked load: the CPU going idle is assumed to have some
// (rq->has_blocked_load), and the periodic update of idle CPUs' blocked
// load is armed (nohz.has_blocked).
func (s *sim) nohzEnterIdle(c int32) {
	s.cpus[c].hasBlockedLoad = true
	s.nohzHasBlocked = true
}

// nohzStatsDue is the NOHZ_STATS_KICK test of nohz_balancer_kick() (v6.12,
// v6.18): idle CPUs have blocked load and nohz.next_blocked has passed.
func (s *sim) nohzStatsDue() bool {
	return s.nohzHasBlocked && s.jiffies() > s.nohzNextBlocked
}

// updateNohzStats is update_nohz_stats(): an idle CPU's blocked averages,
// at most once per jiffy. It returns whether the CPU still has blocked load.
func (s *sim) updateNohzStats(c int32) bool {
	cpu := &s.cpus[c]
	if !cpu.hasBlockedLoad {
		return false
	}
	if s.jiffies() <= cpu.lastBlockedTick {
		return true
	}
	s.updateBlockedAverages(c)
	return cpu.hasBlockedLoad
}

// nohzStatsStart and nohzStatsEnd bracket a NOHZ_STATS_KICK pass of
// _nohz_idle_balance() over the idle CPUs: nohz.has_blocked is cleared at
// the start and set again at the end if some CPU still has blocked load;
// nohz.next_blocked moves LOAD_AVG_PERIOD ahead.
func (s *sim) nohzStatsStart() { s.nohzHasBlocked = false }

func (s *sim) nohzStatsEnd(hasBlocked bool) {
	s.nohzNextBlocked = s.jiffies() + s.msecsToJiffies(loadAvgPeriodMs)
	if hasBlocked {
		s.nohzHasBlocked = true
	}
}

// nohzStatsPass is _nohz_idle_balance(NOHZ_STATS_KICK) alone: the blocked
// averages of every idle CPU except skip (-1: none).
func (s *sim) nohzStatsPass(skip int32) {
	s.nohzStatsStart()
	has := false
	for c := int32(0); c < s.nCPU; c++ {
		if c != skip && s.cpuIdle(c) && s.updateNohzStats(c) {
			has = true
		}
	}
	s.nohzStatsEnd(has)
}

// nohzNewidleBalance is nohz_newidle_balance() with the
// nohz_run_idle_balance() it arms (v6.12, v6.18): a CPU going idle without
// having pulled a task updates the idle CPUs' blocked load itself when it
// expects to stay idle for at least the migration cost and the update is
// due. It is not yet in the NOHZ idle mask (its tick runs until it is
// stopped), so its own queues are not part of the pass.
func (s *sim) nohzNewidleBalance(c int32) {
	if s.nCPU == 1 || s.cpus[c].avgIdle < max(s.migrationCost, 0) || !s.nohzStatsDue() {
		return
	}
	s.nohzStatsPass(c)
}
