package simengine

import "fmt"

// This file holds the CPU topology: the sched domains the kernel builds
// from it (build_sched_domains() and sd_init() in kernel/sched/topology.c,
// v6.12 and v6.18 alike for what is modelled here), the wake-up placement
// that reads them (select_task_rq_fair(), wake_wide(), wake_affine(),
// select_idle_sibling() in kernel/sched/fair.c) and the per-level periodic
// and new-idle balancing (sched_balance_domains(), sched_balance_rq() and
// sched_balance_newidle(), named rebalance_domains(), load_balance() and
// newidle_balance() before v6.10).
//
// A Node with the zero Topology never reaches this file: it keeps the
// original single-domain model of balance.go, so flat results do not move.
//
// The modelled machine is symmetric: Sockets packages, each its own NUMA
// node at distance 21 (the common two-socket SLIT, below
// node_reclaim_distance 30, so the NUMA level keeps SD_WAKE_AFFINE),
// LLCsPerSocket last-level caches per package, ThreadsPerCore SMT siblings
// per core, every CPU of capacity 1024. CPUs are numbered so that every
// domain and group spans consecutive CPUs. Not modelled: CLS (cluster)
// domains, asymmetric capacities, NUMA balancing, misfit and asym-packing
// balancing, CPU affinity (nothing is pinned, so LBF_*PINNED never arise),
// core scheduling cookies, and the cost of the balancing itself
// (max_newidle_lb_cost).

// Scheduling domain flags (include/linux/sched/sd_flags.h).
const (
	sdShareCPUCapacity uint8 = 1 << iota // SD_SHARE_CPUCAPACITY: SMT siblings
	sdShareLLC                           // SD_SHARE_LLC (SD_SHARE_PKG_RESOURCES before v6.10)
	sdNUMA                               // SD_NUMA
	sdPreferSibling                      // SD_PREFER_SIBLING
	sdWakeAffine                         // SD_WAKE_AFFINE
)

// Kinds of balancing, enum cpu_idle_type (v6.12).
const (
	cpuNotIdle = iota
	cpuIdleBal
	cpuNewlyIdle
)

// Migration types of struct lb_env.
const (
	migrateLoad = iota
	migrateUtil
	migrateTask
)

// Group types of group_classify() (v6.6+ order; misfit, asym packing and
// imbalanced need capacities or affinities that are not modelled).
const (
	gtHasSpare = iota
	gtFullyBusy
	gtMisfit
	gtSMTBalance
	gtAsymPacking
	gtImbalanced
	gtOverloaded
)

// sdLevel is one level of sched domains: the same for every CPU but for the
// span's position.
type sdLevel struct {
	name           string
	weight         int32 // span_weight: CPUs in each domain of the level
	groupW         int32 // CPUs in each of its groups (the child's span, or 1)
	flags          uint8
	groupFlags     uint8 // sg->flags: the child domain's flags
	imbalancePct   int64
	cacheNiceTries int
	minInterval    int64 // ms: sd_weight
	maxInterval    int64 // ms: 2 × sd_weight
	imbNumaNr      int32 // sd->imb_numa_nr
	preferSibling  bool  // the child has SD_PREFER_SIBLING
}

// sdState is the per-CPU part of a sched_domain.
type sdState struct {
	balanceInterval int64 // ms
	lastBalance     int64 // ns (a jiffy boundary)
	nrBalanceFailed int
	ni              newidleState // new-idle cost tracking (newidle.go)
}

// wakeeState is a task's (or a CPU's idle task's) wake_wide() record.
type wakeeState struct {
	flips   uint32
	last    int32 // task index of last_wakee, -1 none
	decayTs int64 // wakee_flip_decay_ts, ns
}

type topology struct {
	threads, llcSize, socketSize int32
	levels                       []sdLevel
	llcLevel                     int // index of sd_llc in levels, -1 if none
	sd                           []sdState
	hasIdleCores                 []bool  // per LLC: sd_llc_shared->has_idle_cores
	nrIdleScan                   []int32 // per LLC: sd_llc_shared->nr_idle_scan
	wk                           []wakeeState
	idleWk                       []wakeeState // per CPU: its idle task's
	recentUsed                   []int32      // per task: p->recent_used_cpu
	maxLBIntervalJ               int64        // max_load_balance_interval, jiffies
	checked                      []bool       // scratch: cores seen by select_idle_cpu()
	stats                        []sgStats    // scratch: group stats of one balance
}

// validateTopology checks a topology against the CPU count.
func validateTopology(t Topology, cpus int) error {
	if t.IsZero() {
		return nil
	}
	for _, f := range []struct {
		name   string
		v, max int
	}{{"sockets", t.Sockets, 16}, {"llcsPerSocket", t.LLCsPerSocket, 64}, {"threadsPerCore", t.ThreadsPerCore, 8}} {
		if f.v < 0 || f.v > f.max {
			return fmt.Errorf("node.topology.%s is %d; set it between 1 and %d (0 means 1)", f.name, f.v, f.max)
		}
	}
	s, l, th := max(t.Sockets, 1), max(t.LLCsPerSocket, 1), max(t.ThreadsPerCore, 1)
	if cpus%(s*l*th) != 0 {
		return fmt.Errorf("node.topology: %d CPUs are not %d sockets × %d LLCs × %d threads × a whole number of cores; make cpus a multiple of %d",
			cpus, s, l, th, s*l*th)
	}
	return nil
}

// buildTopology is build_sched_domains() for the node: the levels that do
// not degenerate (sd_degenerate()/sd_parent_degenerate(): a span of one CPU,
// or the same span as the child) with sd_init()'s parameters.
func (s *sim) buildTopology(t Topology, hz int64) {
	n := s.nCPU
	th := int32(max(t.ThreadsPerCore, 1))
	sockets := int32(max(t.Sockets, 1))
	llcs := int32(max(t.LLCsPerSocket, 1))
	socketSize := n / sockets
	llcSize := socketSize / llcs
	tp := &topology{threads: th, llcSize: llcSize, socketSize: socketSize, llcLevel: -1}
	add := func(name string, w int32, flags uint8) {
		prevW := int32(1)
		var gflags uint8
		if k := len(tp.levels); k > 0 {
			prevW = tp.levels[k-1].weight
			gflags = tp.levels[k-1].flags
		}
		if w <= prevW {
			return // degenerate: the same span as the child
		}
		l := sdLevel{name: name, weight: w, groupW: prevW, flags: flags | sdWakeAffine, groupFlags: gflags,
			imbalancePct: 117, minInterval: int64(w), maxInterval: 2 * int64(w),
			preferSibling: gflags&sdPreferSibling != 0}
		switch {
		case flags&sdShareCPUCapacity != 0:
			l.imbalancePct = 110
		case flags&sdShareLLC != 0:
			l.cacheNiceTries = 1
		case flags&sdNUMA != 0:
			l.cacheNiceTries = 2
		default:
			l.cacheNiceTries = 1
		}
		tp.levels = append(tp.levels, l)
	}
	// x86_topology (arch/x86/kernel/smpboot.c): SMT, MC (the LLC), PKG;
	// then the NUMA levels (sched_init_numa()) of which only the one
	// spanning every node survives with one node per package.
	add("SMT", th, sdShareCPUCapacity|sdShareLLC|sdPreferSibling)
	add("MC", llcSize, sdShareLLC|sdPreferSibling)
	add("PKG", socketSize, sdPreferSibling)
	add("NUMA", n, sdNUMA)
	for i := range tp.levels {
		if tp.levels[i].flags&sdShareLLC != 0 {
			tp.llcLevel = i
		}
	}
	// imb_numa_nr (build_sched_domains(), v6.12): on the first domain
	// above the LLC, the LLCs it spans (or 1/8 of its span with a single
	// LLC); above it, scaled by how many such spans the level holds.
	imb, imbSpan := int32(0), int32(1)
	for i := range tp.levels {
		l := &tp.levels[i]
		if l.flags&sdShareLLC == 0 && i > 0 && tp.levels[i-1].flags&sdShareLLC != 0 {
			nrLLCs := l.weight / tp.levels[i-1].weight
			if nrLLCs == 1 {
				imb = l.weight >> 3
			} else {
				imb = nrLLCs
			}
			imb = max(1, imb)
			l.imbNumaNr = imb
			imbSpan = l.weight
			for j := i + 1; j < len(tp.levels); j++ {
				if tp.levels[j].flags&sdNUMA != 0 {
					imbSpan = tp.levels[j].weight
					break
				}
			}
		} else {
			l.imbNumaNr = imb * max(1, l.weight/imbSpan)
		}
	}
	nl := len(tp.levels)
	tp.sd = make([]sdState, int(n)*nl)
	for c := 0; c < int(n); c++ {
		for i := range tp.levels {
			tp.sd[c*nl+i] = sdState{balanceInterval: tp.levels[i].minInterval, ni: newNewidleState()}
		}
	}
	nLLC := n / llcSize
	tp.hasIdleCores = make([]bool, nLLC)
	tp.nrIdleScan = make([]int32, nLLC)
	for i := range tp.hasIdleCores {
		// A booted machine's CPUs have all run their idle task
		// (__update_idle_core()), and an idle LLC's periodic balance set
		// nr_idle_scan to its whole size (update_idle_cpu_scan()).
		tp.hasIdleCores[i] = th > 1
		tp.nrIdleScan[i] = llcSize
	}
	tp.idleWk = make([]wakeeState, n)
	for i := range tp.idleWk {
		tp.idleWk[i].last = -1
	}
	// max_load_balance_interval = HZ*num_online_cpus()/10 (update_max_interval()).
	tp.maxLBIntervalJ = max(1, hz*int64(n)/10)
	tp.checked = make([]bool, max(1, llcSize/th))
	s.topo = tp
}

// initTaskTopology sizes the per-task wake-up state once the tasks exist.
func (s *sim) initTaskTopology() {
	tp := s.topo
	tp.wk = make([]wakeeState, len(s.tasks))
	tp.recentUsed = make([]int32, len(s.tasks))
	for i := range tp.wk {
		tp.wk[i].last = -1
		tp.recentUsed[i] = -1
	}
}

// llcOf is the LLC index of CPU c (sd_llc_id up to a factor).
func (tp *topology) llcOf(c int32) int32 { return c / tp.llcSize }

// sharesCache is cpus_share_cache().
func (tp *topology) sharesCache(a, b int32) bool { return a == b || a/tp.llcSize == b/tp.llcSize }

// span is the first CPU and the weight of CPU c's domain at level l.
func (tp *topology) span(c int32, l int) (int32, int32) {
	w := tp.levels[l].weight
	return c / w * w, w
}

func (tp *topology) state(c int32, l int) *sdState { return &tp.sd[int(c)*len(tp.levels)+l] }

// llcSizeOf is sd_llc_size: the LLC domain's weight, 1 without one.
func (tp *topology) llcSizeOf() int32 {
	if tp.llcLevel < 0 {
		return 1
	}
	return tp.levels[tp.llcLevel].weight
}

// ---- wake-up placement ----

// current is the task running on CPU c (the waker, or the task a timer
// interrupt interrupted), or its idle task.
func (s *sim) wakeeRecord(c int32) *wakeeState {
	if cur := s.cpus[c].curr; cur >= 0 {
		return &s.topo.wk[cur]
	}
	return &s.topo.idleWk[c]
}

// recordWakee is record_wakee() (v6.12): the waker's flips decay by half
// once a second and count every change of wakee.
func (s *sim) recordWakee(w *wakeeState, ti int32) {
	if s.now > w.decayTs+1_000_000_000 {
		w.flips >>= 1
		w.decayTs = s.now
	}
	if w.last != ti {
		w.last = ti
		w.flips++
	}
}

// wakeWide is wake_wide() (v6.12): a waker that switches between at least
// sd_llc_size wakees, each of which wakes others too, spreads them instead
// of pulling them into its LLC.
func (s *sim) wakeWide(w *wakeeState, ti int32) bool {
	master, slave := w.flips, s.topo.wk[ti].flips
	factor := uint32(s.topo.llcSizeOf())
	if master < slave {
		master, slave = slave, master
	}
	return !(slave < factor || master < slave*factor)
}

// selectTaskRqTopo is select_task_rq_fair() for a wake-up (WF_TTWU) on a
// machine with sched domains: record_wakee(), want_affine = !wake_wide(),
// wake_affine() in the lowest SD_WAKE_AFFINE domain spanning both the
// waking CPU and prev, then select_idle_sibling() around the result. No
// domain sets SD_BALANCE_WAKE, so the slow path is never taken.
func (s *sim) selectTaskRqTopo(ti, this int32, sync bool) int32 {
	tp := s.topo
	prev := s.tasks[ti].cpu
	w := s.wakeeRecord(this)
	s.recordWakee(w, ti)
	newCPU := prev
	if !s.wakeWide(w, ti) && this != prev && s.allowed(ti, this) {
		for l := range tp.levels {
			if tp.levels[l].flags&sdWakeAffine == 0 {
				continue
			}
			if lo, wt := tp.span(this, l); prev >= lo && prev < lo+wt {
				newCPU = s.wakeAffine(ti, this, prev, sync, tp.levels[l].imbalancePct, tp.sharesCache(this, prev))
				break
			}
		}
	}
	return s.selectIdleSiblingTopo(ti, prev, newCPU)
}

// idleOrSchedIdle is available_idle_cpu() || sched_idle_cpu().
func (s *sim) idleOrSchedIdle(c int32) bool { return s.cpuIdle(c) || s.schedIdleCPU(c) }

// selectIdleSiblingTopo is select_idle_sibling() (v6.12, also v6.18):
// target if idle; prev if idle and sharing target's LLC; the task's
// recent_used_cpu likewise; then, in target's LLC, an idle SMT sibling of
// prev when the LLC has no idle core (select_idle_smt()), else
// select_idle_cpu(): a whole idle core when the LLC has one
// (select_idle_core()), else an idle CPU within the SIS_UTIL scan limit.
func (s *sim) selectIdleSiblingTopo(ti, prev, target int32) int32 {
	tp := s.topo
	if s.idleOrSchedIdle(target) {
		return target
	}
	if prev != target && tp.sharesCache(prev, target) && s.idleOrSchedIdle(prev) {
		return prev
	}
	recent := tp.recentUsed[ti]
	tp.recentUsed[ti] = prev
	if recent >= 0 && recent != prev && recent != target && tp.sharesCache(recent, target) && s.idleOrSchedIdle(recent) && s.allowed(ti, recent) {
		return recent
	}
	if tp.llcLevel < 0 {
		return target // no sd_llc
	}
	hasIdleCore := false
	if tp.threads > 1 {
		hasIdleCore = tp.hasIdleCores[tp.llcOf(target)]
		if !hasIdleCore && tp.sharesCache(prev, target) {
			if c := s.selectIdleSMT(ti, prev); c >= 0 {
				return c
			}
		}
	}
	if c := s.selectIdleCPU(ti, hasIdleCore, target); c >= 0 {
		return c
	}
	return target
}

// selectIdleSMT is select_idle_smt(): an idle sibling of target.
func (s *sim) selectIdleSMT(ti, target int32) int32 {
	th := s.topo.threads
	base := target / th * th
	for c := base; c < base+th; c++ {
		if c != target && s.idleOrSchedIdle(c) && s.allowed(ti, c) {
			return c
		}
	}
	return -1
}

// selectIdleCPU is select_idle_cpu() with SIS_UTIL (v6.12): scan target's
// LLC from target+1, wrapping; with an idle core somewhere, look for a
// whole idle core (no scan limit) and clear has_idle_cores if there is
// none; otherwise stop after nr_idle_scan CPUs.
//
// The scan covers the LLC's CPUs the task may run on (sched_domain_span(sd)
// & p->cpus_ptr).
func (s *sim) selectIdleCPU(ti int32, hasIdleCore bool, target int32) int32 {
	tp := s.topo
	llc := tp.llcOf(target)
	lo, w := llc*tp.llcSize, tp.llcSize
	nr := tp.nrIdleScan[llc] + 1
	if nr == 1 {
		return -1
	}
	idleCPU := int32(-1)
	if hasIdleCore {
		clear(tp.checked)
	}
	start := target + 1 - lo
	for i := int32(0); i < w; i++ {
		c := lo + (start+i)%w
		if !s.allowed(ti, c) {
			continue
		}
		if hasIdleCore {
			core := (c - lo) / tp.threads
			if tp.checked[core] {
				continue
			}
			tp.checked[core] = true
			if r := s.selectIdleCore(ti, c, &idleCPU); r >= 0 {
				return r
			}
			continue
		}
		nr--
		if nr <= 0 {
			return -1
		}
		if s.idleOrSchedIdle(c) {
			return c
		}
	}
	if hasIdleCore {
		tp.hasIdleCores[llc] = false
	}
	return idleCPU
}

// selectIdleCore is select_idle_core(): core (the CPU the scan reached) if
// every sibling is idle; else remember the first idle (or SCHED_IDLE-only)
// sibling in *idleCPU.
func (s *sim) selectIdleCore(ti, core int32, idleCPU *int32) int32 {
	th := s.topo.threads
	base := core / th * th
	idle := true
	for c := base; c < base+th; c++ {
		if !s.cpuIdle(c) {
			idle = false
			if *idleCPU == -1 {
				if s.schedIdleCPU(c) && s.allowed(ti, c) {
					*idleCPU = c
					break
				}
				continue
			}
			break
		}
		if *idleCPU == -1 && s.allowed(ti, c) {
			*idleCPU = c
		}
	}
	if idle {
		return core
	}
	return -1
}

// updateIdleCore is __update_idle_core(), run when CPU c picks its idle
// task: if every SMT sibling is idle too, the LLC has an idle core.
func (s *sim) updateIdleCore(c int32) {
	tp := s.topo
	if tp.threads == 1 || tp.hasIdleCores[tp.llcOf(c)] {
		return
	}
	base := c / tp.threads * tp.threads
	for x := base; x < base+tp.threads; x++ {
		if x != c && !s.cpuIdle(x) {
			return
		}
	}
	tp.hasIdleCores[tp.llcOf(c)] = true
}

// findIdlestCPUForkTopo places the burst of forks at time 0 as
// sched_balance_find_dst_cpu() (find_idlest_cpu() before v6.10) walks the
// domains from the top: at each level, the group with the most CPUs no task
// was forked onto yet (find_idlest_group()'s has_spare rule), ties to the
// lower load and then the lower index; within the last group the CPU as
// findIdlestCPUFork picks it. (The kernel starts from the forking CPU's
// group and lets NUMA groups keep a small imbalance; all simulated tasks
// fork at once from one parent, so this spreads them as evenly.)
func (s *sim) findIdlestCPUForkTopo() int32 {
	tp := s.topo
	lo, w := int32(0), s.nCPU
	for l := len(tp.levels) - 1; l >= 0; l-- {
		gw := tp.levels[l].groupW
		if w != tp.levels[l].weight {
			continue
		}
		best, bestFree := lo, int32(-1)
		var bestLoad float64
		for g := lo; g < lo+w; g += gw {
			free := int32(0)
			load := 0.0
			for c := g; c < g+gw; c++ {
				if s.cpus[c].forkCount == 0 {
					free++
				}
				load += s.cpuLoad(c)
			}
			if free > bestFree || free == bestFree && load < bestLoad {
				best, bestFree, bestLoad = g, free, load
			}
		}
		lo, w = best, gw
	}
	best := lo
	for c := lo; c < lo+w; c++ {
		if s.cpus[c].forkCount == 0 {
			return c
		}
	}
	bl := s.cpuLoad(lo)
	for c := lo + 1; c < lo+w; c++ {
		if l := s.cpuLoad(c); l < bl {
			best, bl = c, l
		}
	}
	return best
}

// ---- load balancing ----

// sgStats is struct sg_lb_stats for one group.
type sgStats struct {
	first, weight int32
	nr            int32 // sum_h_nr_running (= sum_nr_running: only fair tasks)
	idleCPUs      int32
	load, util    float64
	runnable      float64
	avgLoad       float64
	capacity      float64
	typ           int
	cores         int32
}

// groupClassifyTopo is group_classify() with group_is_overloaded() and
// group_has_capacity() (v6.12) for a group of weight CPUs.
func groupClassifyTopo(pct int64, g *sgStats, smtBalance bool) int {
	p := float64(pct)
	if g.nr > g.weight && (g.capacity*100 < g.util*p || g.capacity*p < g.runnable*100) {
		return gtOverloaded
	}
	if smtBalance {
		return gtSMTBalance
	}
	if g.nr < g.weight {
		return gtHasSpare
	}
	if g.capacity*p < g.runnable*100 {
		return gtFullyBusy
	}
	if g.capacity*100 > g.util*p {
		return gtHasSpare
	}
	return gtFullyBusy
}

// groupStats is update_sg_lb_stats() for the group of CPUs [first, first+w)
// at level l; smt_balance() marks a non-local SMT core running more than
// one task when the balancing CPU is idle.
func (s *sim) groupStats(l int, first, w int32, local bool, idle int) sgStats {
	lv := &s.topo.levels[l]
	g := sgStats{first: first, weight: w, capacity: float64(w) * 1024, cores: max(1, w/s.topo.threads)}
	for c := first; c < first+w; c++ {
		if s.lbSkip != nil && s.lbSkip[c] {
			continue // for_each_cpu_and(..., env->cpus): left out by a redo
		}
		s.cpuPelt(c)
		cpu := &s.cpus[c]
		nr := s.nrRunning(c) // rq->nr_running, delayed tasks included
		g.nr += nr
		g.load += s.cpuLoad(c)
		g.util += min(cpu.pl.util, 1024)
		g.runnable += cpu.pl.runnable
		if nr == 0 && s.cpuIdle(c) {
			g.idleCPUs++
		}
	}
	smt := !local && idle != cpuNotIdle && lv.groupFlags&sdShareCPUCapacity != 0 && g.nr > 1
	g.typ = groupClassifyTopo(lv.imbalancePct, &g, smt)
	if g.typ == gtOverloaded {
		g.avgLoad = g.load * 1024 / g.capacity
	}
	return g
}

// isCoreIdle is is_core_idle(): every SMT sibling of c is idle.
func (s *sim) isCoreIdle(c int32) bool {
	th := s.topo.threads
	base := c / th * th
	for x := base; x < base+th; x++ {
		if x != c && !s.cpuIdle(x) {
			return false
		}
	}
	return true
}

// shouldWeBalance is should_we_balance() (v6.12): a new-idle balance runs
// if nothing arrived meanwhile; a periodic one only on the first idle CPU
// of the local group (preferring a CPU of an idle core above the SMT
// level), or on the group's first CPU when none is idle.
func (s *sim) shouldWeBalance(c int32, l int, idle int) bool {
	if idle == cpuNewlyIdle {
		return s.nrRunning(c) == 0 && s.cpus[c].ttwuPending == 0
	}
	lv := &s.topo.levels[l]
	first := c / lv.groupW * lv.groupW
	idleSMT := int32(-1)
	for x := first; x < first+lv.groupW; x++ {
		if !s.cpuIdle(x) {
			continue
		}
		if lv.flags&sdShareCPUCapacity == 0 && s.topo.threads > 1 && !s.isCoreIdle(x) {
			if idleSMT == -1 {
				idleSMT = x
			}
			// skip the rest of this core: its siblings are not idle cores either
			th := s.topo.threads
			x = x/th*th + th - 1
			continue
		}
		return x == c
	}
	if idleSMT != -1 {
		return idleSMT == c
	}
	return first == c
}

// siblingImbalance is sibling_imbalance() (v6.6+).
func siblingImbalance(idle int, busiest, local *sgStats) int64 {
	if idle == cpuNotIdle || busiest.nr == 0 {
		return 0
	}
	if busiest.cores == local.cores {
		return max(0, int64(busiest.nr-local.nr))
	}
	imb := max(0, int64(local.cores)*int64(busiest.nr)-int64(busiest.cores)*int64(local.nr))
	imb = (2*imb + int64(local.cores) + int64(busiest.cores)) / int64(local.cores+busiest.cores)
	if imb <= 1 && local.nr == 0 && busiest.nr > 1 {
		imb = 2
	}
	return imb
}

// balanceResult says what one sched_balance_rq() did.
type balanceResult struct {
	moved    bool
	balanced bool // went to out_balanced (nothing to fix, or not our turn)
	cont     bool // continue_balancing
}

// balanceLevel is sched_balance_rq() (load_balance() before v6.10) at
// level l for CPU dst, with sched_balance_find_src_group()
// (find_busiest_group()), calculate_imbalance(),
// sched_balance_find_src_rq() (find_busiest_queue()), detach_tasks() and
// the active balance of a running task; it keeps nr_balance_failed and
// balance_interval as the kernel does: on an imbalance that moved nothing
// nr_balance_failed grows (periodic balancing only); on any imbalance
// balance_interval resets to min_interval; when balanced
// nr_balance_failed resets and, outside new-idle balancing,
// balance_interval doubles up to max_interval.
func (s *sim) balanceLevel(dst int32, l int, idle int) balanceResult {
	tp := s.topo
	lv := &tp.levels[l]
	st := tp.state(dst, l)
	res := balanceResult{cont: true}
	moved, unbalanced := false, false
	if !s.shouldWeBalance(dst, l, idle) {
		res.cont = false
	} else {
		moved, unbalanced = s.findAndPull(dst, l, idle, st)
	}
	if unbalanced {
		st.balanceInterval = lv.minInterval
		res.moved = moved
		return res
	}
	// out_balanced / out_all_pinned / out_one_pinned
	res.balanced = true
	st.nrBalanceFailed = 0
	if idle != cpuNewlyIdle && st.balanceInterval < lv.maxInterval {
		st.balanceInterval *= 2
	}
	return res
}

// findAndPull finds the busiest group and queue at level l and pulls from
// it; unbalanced says an imbalance was found (whether or not a task moved).
func (s *sim) findAndPull(dst int32, l int, idle int, st *sdState) (moved, unbalanced bool) {
	if len(s.affs) == 0 {
		return s.findAndPullOnce(dst, l, idle, st)
	}
	// load_balance()'s redo: a source CPU whose every task is pinned away
	// from dst (LBF_ALL_PINNED) is left out of env->cpus and the domain
	// looked at again, while CPUs outside the local group are left; else
	// out_all_pinned, which clears the failure count. (LBF_DST_PINNED,
	// which retries with another CPU of the local group as destination
	// when some task may not run on dst, is not modelled: one balance
	// here pulls to dst only.)
	tp := s.topo
	lo, w := tp.span(dst, l)
	gw := tp.levels[l].groupW
	localFirst := dst / gw * gw
	s.lbSkip = s.lbExcluded[:0]
	for range s.nCPU {
		s.lbSkip = append(s.lbSkip, false)
	}
	s.lbExcluded = s.lbSkip
	defer func() { s.lbSkip = nil }()
	for {
		s.lbPinnedSrc = -1
		moved, unbalanced = s.findAndPullOnce(dst, l, idle, st)
		if moved || s.lbPinnedSrc < 0 {
			return moved, unbalanced
		}
		s.lbSkip[s.lbPinnedSrc] = true
		left := false
		for c := lo; c < lo+w; c++ {
			if (c < localFirst || c >= localFirst+gw) && !s.lbSkip[c] {
				left = true
				break
			}
		}
		if !left {
			st.nrBalanceFailed = 0
			return false, false
		}
	}
}

// findAndPullOnce is one pass of findAndPull; with pinned tasks it sets
// lbPinnedSrc to a source CPU whose every task was pinned away from dst.
func (s *sim) findAndPullOnce(dst int32, l int, idle int, st *sdState) (moved, unbalanced bool) {
	tp := s.topo
	lv := &tp.levels[l]
	lo, w := tp.span(dst, l)
	gw := lv.groupW
	localFirst := dst / gw * gw
	// update_sd_lb_stats(): groups in the kernel's order, the local one first.
	stats := tp.stats[:0]
	var totalLoad, totalCap, sumUtil float64
	busiest := -1
	for i := int32(0); i < w; i += gw {
		first := lo + (localFirst-lo+i)%w
		g := s.groupStats(l, first, gw, first == localFirst, idle)
		stats = append(stats, g)
		totalLoad += g.load
		totalCap += g.capacity
		sumUtil += g.util
		if first == localFirst || g.nr == 0 {
			continue
		}
		if busiest < 0 || s.pickBusiest(lv, &g, &stats[busiest]) {
			busiest = len(stats) - 1
		}
	}
	tp.stats = stats
	if l == len(tp.levels)-1 {
		// update_sd_lb_stats() at the root domain (!env->sd->parent) sets
		// rd->overloaded: some CPU of env->cpus with nr_running > 1.
		s.rdOverloaded = false
		for c := lo; c < lo+w; c++ {
			if (s.lbSkip == nil || !s.lbSkip[c]) && s.nrRunning(c) > 1 {
				s.rdOverloaded = true
				break
			}
		}
	}
	if l == tp.llcLevel && idle != cpuNewlyIdle {
		s.updateIdleCPUScan(dst, lv, sumUtil)
	}
	if busiest < 0 {
		return false, false
	}
	local, bst := &stats[0], &stats[busiest]
	domAvg := totalLoad * 1024 / totalCap
	// sched_balance_find_src_group()
	if local.typ > bst.typ {
		return false, false
	}
	force := false
	if local.typ == gtOverloaded {
		if local.avgLoad >= bst.avgLoad || local.avgLoad >= domAvg || 100*bst.avgLoad <= float64(lv.imbalancePct)*local.avgLoad {
			return false, false
		}
	}
	if lv.preferSibling && local.typ == gtHasSpare && siblingImbalance(idle, bst, local) > 1 {
		force = true
	}
	if !force && bst.typ != gtOverloaded {
		if idle == cpuNotIdle {
			return false, false
		}
		// (smt_vs_nonsmt_groups() is never true on a symmetric machine.)
		if bst.weight > 1 && local.idleCPUs <= bst.idleCPUs+1 {
			return false, false
		}
		if bst.nr == 1 {
			return false, false
		}
	}
	// calculate_imbalance()
	mt, imb := migrateLoad, 0.0
	switch {
	case bst.typ == gtSMTBalance:
		mt, imb = migrateTask, 1
	case local.typ == gtHasSpare:
		if bst.typ > gtFullyBusy && lv.flags&sdShareLLC == 0 {
			mt, imb = migrateUtil, max(local.capacity, local.util)-local.util
			if idle != cpuNotIdle && imb == 0 {
				mt, imb = migrateTask, 1
			}
			break
		}
		var n int64
		if bst.weight == 1 || lv.preferSibling {
			n = siblingImbalance(idle, bst, local)
		} else {
			n = max(0, int64(local.idleCPUs-bst.idleCPUs))
		}
		if lv.flags&sdNUMA != 0 && int32(local.nr)+1 <= lv.imbNumaNr && n <= 2 {
			n = 0 // adjust_numa_imbalance(): NUMA_IMBALANCE_MIN
		}
		mt, imb = migrateTask, float64(n>>1)
	default:
		if local.typ < gtOverloaded {
			local.avgLoad = local.load * 1024 / local.capacity
			if local.avgLoad >= bst.avgLoad || local.avgLoad >= domAvg {
				return false, false
			}
		}
		imb = min((bst.avgLoad-domAvg)*bst.capacity, (domAvg-local.avgLoad)*local.capacity) / 1024
	}
	if imb <= 0 {
		return false, false
	}
	// sched_balance_find_src_rq()
	src := int32(-1)
	var bl, bu float64
	var bn int32
	for c := bst.first; c < bst.first+bst.weight; c++ {
		nr := s.nrRunning(c) // rq->cfs.h_nr_queued
		if nr == 0 || (s.lbSkip != nil && s.lbSkip[c]) {
			continue
		}
		switch mt {
		case migrateLoad:
			ld := s.cpuLoad(c)
			if nr == 1 && ld > imb {
				continue
			}
			if src < 0 || ld > bl {
				src, bl = c, ld
			}
		case migrateUtil:
			if nr <= 1 {
				continue
			}
			if u := s.cpus[c].pl.util; src < 0 || u > bu {
				src, bu = c, u
			}
		case migrateTask:
			if nr > bn {
				src, bn = c, nr
			}
		}
	}
	if src < 0 {
		return false, false
	}
	n := 0
	if s.nrRunning(src) > 1 {
		s.lbAllPinned = true
		n = s.detachTasks(src, dst, lv, st, idle, mt, imb)
		if n == 0 && s.lbAllPinned && s.lbSkip != nil {
			s.lbPinnedSrc = src
			return false, true
		}
	}
	if n > 0 {
		st.nrBalanceFailed = 0
		return true, true
	}
	if idle != cpuNewlyIdle {
		st.nrBalanceFailed++
	}
	// need_active_balance() → imbalanced_active_balance(): repeated
	// failures to even out tasks push the running task away
	// (active_load_balance_cpu_stop()).
	if mt == migrateTask && st.nrBalanceFailed > lv.cacheNiceTries+2 {
		return s.activeBalance(src, dst), true
	}
	return false, true
}

// pickBusiest is update_sd_pick_busiest() (v6.12) for what is modelled.
func (s *sim) pickBusiest(lv *sdLevel, g, b *sgStats) bool {
	if g.typ != b.typ {
		return g.typ > b.typ
	}
	switch g.typ {
	case gtOverloaded:
		return g.avgLoad > b.avgLoad
	case gtSMTBalance:
		if g.idleCPUs != 0 || b.idleCPUs != 0 {
			return hasSpareBusier(g, b)
		}
		fallthrough
	case gtFullyBusy:
		if g.avgLoad < b.avgLoad {
			return false
		}
		if g.avgLoad == b.avgLoad && lv.groupFlags&sdShareCPUCapacity != 0 {
			return false
		}
		return true
	default:
		return hasSpareBusier(g, b)
	}
}

// hasSpareBusier: the group with fewer idle CPUs, then more tasks.
func hasSpareBusier(g, b *sgStats) bool {
	if g.idleCPUs != b.idleCPUs {
		return g.idleCPUs < b.idleCPUs
	}
	return g.nr > b.nr
}

// detachTasks is detach_tasks() + attach_tasks() (v6.12): walk src's
// tasks from the least recently run, move what can_migrate_task() allows
// until the imbalance is met; a new-idle balance stops after one.
func (s *sim) detachTasks(src, dst int32, lv *sdLevel, st *sdState, idle, mt int, imb float64) int {
	cand := append(s.scratch[:0], s.cpus[src].tasks...)
	sortByListStamp(s, cand)
	loopMax := min(s.nrMigrate, int(s.nrRunning(src)))
	failed := st.nrBalanceFailed
	moved := 0
	for i, ti := range cand {
		if i >= loopMax {
			break
		}
		if idle != cpuNotIdle && s.nrRunning(src) <= 1 {
			break
		}
		if !s.canMigrateTaskTopo(ti, dst, failed, lv) {
			continue
		}
		switch mt {
		case migrateTask:
			imb--
		case migrateUtil:
			u := s.tasks[ti].pl.util
			if u/float64(uint64(1)<<min(uint(failed), 62)) > imb {
				continue
			}
			imb -= u
		default:
			load := max(s.taskHLoad(ti), 1)
			if s.feat.lbMin && load < 16 && failed == 0 {
				continue
			}
			if load/float64(uint64(1)<<min(uint(failed), 62)) > imb {
				continue
			}
			imb -= load
		}
		s.moveQueuedTask(ti, dst)
		moved++
		if idle == cpuNewlyIdle || imb <= 0 {
			break
		}
	}
	s.scratch = cand[:0]
	return moved
}

// canMigrateTaskTopo is can_migrate_task() with task_hot() (v6.12) at a
// level: SMT siblings share every cache, so nothing is hot there.
func (s *sim) canMigrateTaskTopo(ti, dst int32, failed int, lv *sdLevel) bool {
	if lv.flags&sdShareCPUCapacity != 0 {
		return s.canMigrateTask(ti, dst, 1<<30, 0)
	}
	return s.canMigrateTask(ti, dst, failed, lv.cacheNiceTries)
}

// activeBalance is the stopper's active_load_balance_cpu_stop() run at
// once: the task running on src is preempted and moved to dst (idle), and
// src picks its next task or goes idle.
func (s *sim) activeBalance(src, dst int32) bool {
	ti := s.cpus[src].curr
	// load_balance() does not stop busiest's task when it may not run on
	// dst (out_one_pinned).
	if ti < 0 || !s.cpuIdle(dst) || !s.allowed(ti, dst) {
		return false
	}
	t := &s.tasks[ti]
	if s.throttledHierarchy(s.ents[t.se].rq) || (t.tg >= 0 && s.throttledHierarchy(s.tgs[t.tg].rq[dst])) {
		return false
	}
	s.putPrevTask(ti)
	s.switchOut(src, ti)
	s.moveQueuedTask(ti, dst)
	cpu := &s.cpus[src]
	cpu.needResched = false
	if next := s.pickNextTaskFair(src); next >= 0 {
		s.setNextTask(next)
		s.switchIn(src, next, false)
		return true
	}
	if cpu.runEndT != never {
		s.setRunEnd(src, never)
	}
	cpu.idleStamp = s.now
	s.setIdle(src, s.cpuIdle(src))
	s.updateIdleCore(src)
	return true
}

// updateIdleCPUScan is update_idle_cpu_scan() (v6.12, SIS_UTIL): the LLC's
// periodic balance sets how many CPUs a wake-up may scan, falling to 0 as
// the LLC's utilisation nears 85 %.
func (s *sim) updateIdleCPUScan(dst int32, lv *sdLevel, sumUtil float64) {
	s.topo.nrIdleScan[s.topo.llcOf(dst)] = idleCPUScan(sumUtil, int64(lv.weight), lv.imbalancePct)
}

// idleCPUScan is update_idle_cpu_scan()'s formula (v6.12, v6.18): the
// number of CPUs a wake-up may scan in an LLC of w CPUs whose utilisation
// sums to sumUtil, llc_weight × (1 − x²·pct²/10000) with x the mean
// utilisation (of 1024), 0 from about 85 % up.
func idleCPUScan(sumUtil float64, w, pct int64) int32 {
	x := int64(sumUtil) / w
	tmp := min(x*x*pct*pct/(10000*1024), 1024)
	return int32((1024 - tmp) * w / 1024)
}

// balanceIntervalNs is get_sd_balance_interval() in ns: balance_interval
// ms (× busy_factor on a busy CPU, less one jiffy), in jiffies, clamped to
// [1, max_load_balance_interval].
func (s *sim) balanceIntervalNsTopo(st *sdState, busy bool) int64 {
	hz := 1_000_000_000 / s.tickNs
	ms := st.balanceInterval
	if busy {
		ms *= busyFactor
	}
	j := (ms*hz + 999) / 1000 // msecs_to_jiffies()
	if busy {
		j--
	}
	j = min(max(j, 1), s.topo.maxLBIntervalJ)
	return j * s.tickNs
}

// rebalanceDomains is sched_balance_domains() (rebalance_domains() before
// v6.10) for CPU c at a tick: every level whose interval has passed
// balances, bottom up, until one says another CPU of its group balances
// for it; rq->next_balance becomes the earliest next due time.
func (s *sim) rebalanceDomains(c int32, idle int) {
	tp := s.topo
	busy := idle != cpuIdleBal && !s.schedIdleCPU(c)
	next := s.now + 60*1_000_000_000
	cont := true
	needDecay, maxCost := false, int64(0)
	for l := range tp.levels {
		st := tp.state(c, l)
		// "Decay the newidle max times here because this is a regular
		// visit to all the domains" (sched_balance_domains(), v6.12).
		needDecay = s.updateNewidleCost(&st.ni, 0, 0)
		maxCost += st.ni.maxCost
		if !cont {
			if needDecay {
				continue
			}
			break
		}
		interval := s.balanceIntervalNsTopo(st, busy)
		if s.now >= st.lastBalance+interval {
			r := s.balanceLevel(c, l, idle)
			if r.moved {
				idle = cpuNotIdle
				if s.cpuIdle(c) {
					idle = cpuIdleBal
				}
				busy = idle != cpuIdleBal && !s.schedIdleCPU(c)
			}
			cont = r.cont
			st.lastBalance = s.now
			interval = s.balanceIntervalNsTopo(st, busy)
		}
		next = min(next, st.lastBalance+interval)
	}
	if needDecay {
		s.cpus[c].maxIdleBalanceCost = max(s.migrationCost, maxCost)
	}
	s.cpus[c].nextBalance = next
}

// newidleBalanceTopo is sched_balance_newidle() (newidle_balance()
// before v6.10) on the domains: the gate on the lowest, the blocked
// averages, then each level bottom up with CPU_NEWLY_IDLE (newidleDomain)
// until a task is pulled.
func (s *sim) newidleBalanceTopo(c int32) bool {
	if !s.newidleGate(c, &s.topo.state(c, 0).ni) {
		return false
	}
	s.updateBlockedAverages(c)
	var curr int64
	for l := range s.topo.levels {
		pulled, cont := s.newidleDomain(c, &s.topo.state(c, l).ni, &curr, func() (bool, bool) {
			r := s.balanceLevel(c, l, cpuNewlyIdle)
			return r.moved, r.cont && s.nrRunning(c) == 0
		})
		if pulled || !cont {
			s.newidleDone(c, curr)
			return pulled
		}
	}
	s.newidleDone(c, curr)
	return false
}

// nohzKickTopo is the part of nohz_balancer_kick() (v6.12) that decides
// whether idle CPUs balance: a CPU with two or more tasks, or an LLC with
// more than one busy CPU (sd_llc_shared->nr_busy_cpus > 1).
func (s *sim) nohzKickTopo() bool {
	if s.overloaded() {
		return true
	}
	tp := s.topo
	busy, llc := int32(0), int32(-1)
	for c := int32(0); c < s.nCPU; c++ {
		if l := tp.llcOf(c); l != llc {
			llc, busy = l, 0
		}
		if s.cpus[c].curr >= 0 {
			busy++
			if busy > 1 {
				return true
			}
		}
	}
	return false
}

// sortByListStamp orders tasks from the least recently run (the tail of
// cfs_tasks), ties by index.
func sortByListStamp(s *sim, cand []int32) {
	for i := 1; i < len(cand); i++ {
		for j := i; j > 0; j-- {
			a, b := cand[j-1], cand[j]
			ta, tb := s.tasks[a].listStamp, s.tasks[b].listStamp
			if ta < tb || ta == tb && a < b {
				break
			}
			cand[j-1], cand[j] = b, a
		}
	}
}
