package simengine

import "math/bits"

// This file holds the fair-class rules of kernel/sched/fair.c. Functions
// are named after their kernel counterparts; each comment names the version
// it follows: v6.1 for CFS, v6.6..v6.12 for EEVDF.

// floorDiv divides rounding towards minus infinity, as avg_vruntime() does
// for negative sums.
func floorDiv(a, b int64) int64 {
	q, r := a/b, a%b
	if b > 0 {
		// The remainder has a's sign: step down when it is negative
		// (branch-free; the callers divide by positive loads).
		return q + r>>63
	}
	if r != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// calcDeltaFair is calc_delta_fair() with __calc_delta() (v6.1/v6.6):
// delta * NICE_0_LOAD / weight computed with the 32-bit inverse weight,
// as the kernel does.
func calcDeltaFair(delta int64, e *entity) int64 {
	if e.weight == nice0Load {
		return delta
	}
	neg := delta < 0
	if neg {
		delta = -delta
	}
	hi, lo := bits.Mul64(uint64(delta)*nice0Load, uint64(e.invWeight))
	r := int64(hi<<32 | lo>>32)
	if neg {
		return -r
	}
	return r
}

// wmultConst is WMULT_CONST (~0U): inv_weight = WMULT_CONST / weight.
const wmultConst = 1<<32 - 1

// setWeight is update_load_set(): the weight and its inverse.
func (e *entity) setWeight(w int64) {
	e.weight = w
	e.invWeight = uint32(wmultConst / uint64(w))
}

// ---- tree (the rb-tree of queued entities, minus curr) ----

// treeUpper returns the number of nodes with vruntime <= v (where a new
// node with vruntime v goes: after the equal keys). A binary search whose
// step is taken with a borrow mask instead of a branch, so that its
// branches depend on the length only (a data-dependent branch here is
// mispredicted half the time).
func treeUpper(t []treeNode, v int64) int {
	lo, n := 0, len(t)
	for n > 0 {
		half := n >> 1
		// Borrow of v - key is 1 iff v < key: take the upper part unless so.
		_, b := bits.Sub64(uint64(v)^1<<63, uint64(t[lo+half].v)^1<<63, 0)
		m := int(b) - 1 // all ones iff key <= v
		lo += (half + 1) & m
		n = half + (n-1-2*half)&m
	}
	return lo
}

// enqueueTree is __enqueue_entity() with avg_vruntime_add() (v6.6). The
// queue is a slice kept sorted by vruntime like the kernel's rb-tree (equal
// keys after the ones already there), each node caching the keys a pick
// reads: the leftmost entity is the first node and the eligible entities
// are a prefix.
func (s *sim) enqueueTree(cq, se int32) {
	r := &s.rqs[cq]
	e := &s.ents[se]
	v := e.vruntime
	// Insertion from the right end: the nodes after the new one move up
	// as they are compared. Most queues hold zero to a few entities, and
	// the shift costs as much as the search would.
	// r.tree = r.tree[:n] stores the length alone (no write barrier).
	if n := len(r.tree); n == cap(r.tree) {
		r.tree = append(r.tree, treeNode{})
	} else {
		r.tree = r.tree[:n+1]
	}
	t := r.tree
	j := len(t) - 1
	for j > 0 && t[j-1].v > v {
		t[j] = t[j-1]
		j--
	}
	// The node's fields are written in place: a treeNode built on the
	// stack and copied is read back with 16-byte loads that span its
	// 8-byte stores, which the CPU cannot forward (a stall per enqueue).
	n := &t[j]
	n.v, n.d, n.slice, n.se = v, e.deadline, e.slice, se
	r.avgSum += (v - r.minV) * e.weight
	r.avgLoad += e.weight
	r.leftmost, r.leftV = t[0].se, t[0].v
}

// dequeueTree is __dequeue_entity() with avg_vruntime_sub() (v6.6).
func (s *sim) dequeueTree(cq, se int32) {
	r := &s.rqs[cq]
	e := &s.ents[se]
	t := r.tree
	// A linear search from the left: the entity is usually the only one
	// or among the first few (a pick takes an early eligible one).
	lo := 0
	for t[lo].se != se {
		lo++
	}
	for j := lo + 1; j < len(t); j++ {
		t[j-1] = t[j]
	}
	t = t[:len(t)-1]
	r.tree = r.tree[:len(t)] // the length alone (no write barrier)
	r.avgSum -= (e.vruntime - r.minV) * e.weight
	r.avgLoad -= e.weight
	if len(t) > 0 {
		r.leftmost, r.leftV = t[0].se, t[0].v
	} else {
		r.leftmost, r.leftV = -1, never
	}
}

// treeIndex returns the position of se in cq's tree.
func (s *sim) treeIndex(cq, se int32) int {
	t := s.rqs[cq].tree
	lo := 0
	for t[lo].se != se {
		lo++
	}
	return lo
}

// treeMove is dequeueTree + enqueueTree for the node at position i (se,
// whose keys changed while its weight was already taken out of the sums,
// as reweightEntity does): the node moves to its new place in one shift.
func (s *sim) treeMove(cq int32, i int, se int32) {
	r := &s.rqs[cq]
	e := &s.ents[se]
	t := r.tree
	lo := treeUpper(t, e.vruntime)
	if lo > i {
		// Moves right: the old node counted among those <= v.
		lo--
		for j := i; j < lo; j++ {
			t[j] = t[j+1]
		}
	} else {
		for j := i; j > lo; j-- {
			t[j] = t[j-1]
		}
	}
	n := &t[lo] // in place, as in enqueueTree
	n.v, n.d, n.slice, n.se = e.vruntime, e.deadline, e.slice, se
	r.avgSum += (e.vruntime - r.minV) * e.weight
	r.avgLoad += e.weight
	r.leftmost, r.leftV = t[0].se, t[0].v
}

// ---- EEVDF: avg_vruntime, eligibility, deadlines ----

// avgVruntime is avg_vruntime() (v6.6): the weighted average vruntime V of
// the queue, including curr.
func (s *sim) avgVruntime(cq int32) int64 {
	r := &s.rqs[cq]
	avg, load := r.avgSum, r.avgLoad
	// With a single entity, V is its vruntime (the division is exact):
	// skip the division in that common case (a task alone in its group).
	if r.currOn {
		c := &s.ents[r.curr]
		if load == 0 {
			return c.vruntime
		}
		avg += (c.vruntime - r.minV) * c.weight
		load += c.weight
	} else if len(r.tree) == 1 {
		return r.leftV
	}
	if load > 0 {
		avg = floorDiv(avg, load)
	}
	return r.minV + avg
}

// entityEligible is entity_eligible()/vruntime_eligible() (v6.6): lag >= 0,
// i.e. v_i <= V, without the division.
func (s *sim) entityEligible(cq, se int32) bool { return s.eligibleIn(&s.rqs[cq], &s.ents[se]) }

// eligibleIn is entityEligible of entity e on queue r, both held by pointer.
func (s *sim) eligibleIn(r *cfsRq, e *entity) bool {
	avg, load := r.avgSum, r.avgLoad
	if r.currOn {
		c := &s.ents[r.curr]
		avg += (c.vruntime - r.minV) * c.weight
		load += c.weight
	}
	return avg >= (e.vruntime-r.minV)*load
}

// currEligible is entityEligible of r's curr, e (r.curr's entity).
func currEligible(r *cfsRq, e *entity) bool {
	avg, load := r.avgSum, r.avgLoad
	if r.currOn {
		avg += (e.vruntime - r.minV) * e.weight
		load += e.weight
	}
	return avg >= (e.vruntime-r.minV)*load
}

// updateEntityLag is update_entity_lag() (v6.6): vlag = V - v, clamped to
// the lag a request of max(2*slice, TICK_NSEC) could build up; with commit
// 6e3c0a4e1ad1 (kernelRules.lagClampMaxSlice) to that of the largest slice
// queued, cfs_rq_max_slice(), plus TICK_NSEC.
func (s *sim) updateEntityLag(cq, se int32) {
	e := &s.ents[se]
	lag := s.avgVruntime(cq) - e.vruntime
	var limit int64
	if s.lagClampMaxSlice {
		limit = calcDeltaFair(s.maxSlice(cq)+s.tickNs, e)
	} else {
		limit = calcDeltaFair(max(2*e.slice, s.tickNs), e)
	}
	e.vlag = max(-limit, min(lag, limit))
}

// maxSlice is cfs_rq_max_slice() (commit 6e3c0a4e1ad1): the largest slice
// of curr (if queued) and the queued entities, 0 when there is none. The
// kernel reads it from the tree's augmented max_slice, which until the
// fixes of September 2026 ("sched/eevdf: Fix augmented max_slice", "Fix rb
// augmented with multi fields") could be stale after an insertion or a
// rotation; this is the value the augmentation is meant to hold. Without
// a custom slice every queued entity's slice is the base slice.
func (s *sim) maxSlice(cq int32) int64 {
	r := &s.rqs[cq]
	if !s.sliceVaries {
		if r.currOn || len(r.tree) > 0 {
			return s.baseSlice
		}
		return 0
	}
	m := int64(0)
	if r.currOn {
		m = s.ents[r.curr].slice
	}
	for i := range r.tree {
		m = max(m, r.tree[i].slice)
	}
	return m
}

// entitySlice is the request size of an entity: a task's custom slice or the
// base slice; a group entity's slice is the smallest slice queued below it
// (cfs_rq_min_slice(), v6.12).
func (s *sim) entitySlice(se int32) int64 {
	e := &s.ents[se]
	if e.my < 0 {
		if e.customSlice {
			return e.slice
		}
		return s.baseSlice
	}
	if !s.sliceVaries {
		return s.baseSlice // see sim.sliceVaries
	}
	m := s.minSlice(e.my)
	if m == never {
		return s.baseSlice
	}
	return m
}

// updateDeadline is update_deadline() (v6.6): once the entity has consumed
// its request (vruntime passed its deadline) it gets a new one and, if others
// wait, the CPU is rescheduled and curr stops being its queue's next buddy
// (resched_curr() and clear_buddies() in update_deadline(), v6.6..v6.11;
// the same two in update_curr() when update_deadline() returns true,
// v6.12..v6.18).
func (s *sim) updateDeadline(cq, se int32) {
	e := &s.ents[se]
	if e.vruntime-e.deadline < 0 {
		return
	}
	if e.my < 0 {
		e.slice = s.entitySlice(se)
	}
	e.deadline = e.vruntime + calcDeltaFair(e.slice, e)
	if s.rqs[cq].nr > 1 {
		s.reschedCurr(s.rqs[cq].cpu, false)
		s.clearBuddies(cq, se)
	}
}

// protectSlice is protect_slice(): whether curr se still runs under the
// protection it was picked with. v6.6..v6.16: with RUN_TO_PARITY, until its
// deadline changes (the kernel stashes the deadline in se->vlag at pick,
// and a new deadline, a reweight or cancel_protect_slice() breaks the
// equality). v6.17+: while vruntime < se->vprot (set_protect_slice()); the
// feature only shapes the protection when it is set.
func (s *sim) protectSlice(se int32) bool { return s.protectSliceOf(&s.ents[se]) }

// protectSliceOf is protectSlice of an entity held by pointer.
func (s *sim) protectSliceOf(e *entity) bool {
	if !e.protectOK {
		return false
	}
	if s.vprot {
		return e.vruntime-e.protect < 0
	}
	return s.feat.runToParity && e.protect == e.deadline
}

// cancelProtectSlice is cancel_protect_slice(): v6.17+ sets se->vprot to
// the current vruntime, earlier releases break the stashed deadline.
func (s *sim) cancelProtectSlice(se int32) {
	s.ents[se].protectOK = false
}

// minSlice is cfs_rq_min_slice() (v6.12): the smallest slice of curr (if
// queued) and the queued entities; never when there is none.
func (s *sim) minSlice(cq int32) int64 {
	r := &s.rqs[cq]
	m := int64(never)
	if r.currOn {
		m = s.ents[r.curr].slice
	}
	for i := range r.tree {
		if sl := r.tree[i].slice; sl < m {
			m = sl
		}
	}
	return m
}

// setProtectSlice is set_protect_slice() (v6.17+, called from
// set_next_entity() after se left the tree): protection up to the deadline,
// or for a shorter quantum when another queued entity has a shorter slice
// (RUN_TO_PARITY) or the normalized base slice is shorter (NO_RUN_TO_PARITY).
func (s *sim) setProtectSlice(cq, se int32) {
	e := &s.ents[se]
	slice := s.normBaseSlice
	if s.feat.runToParity {
		slice = s.minSlice(cq)
	}
	slice = min(slice, e.slice)
	vprot := e.deadline
	if slice != e.slice {
		vprot = min(vprot, e.vruntime+calcDeltaFair(slice, e))
	}
	e.protect, e.protectOK = vprot, true
}

// updateProtectSlice is update_protect_slice() (v6.17+): a shorter-slice
// wake-up that did not preempt curr shortens curr's protection to the
// queue's smallest slice from now.
func (s *sim) updateProtectSlice(cq, se int32) {
	e := &s.ents[se]
	if !e.protectOK {
		return // se->vprot holds a lag (see reweightEntity): already past
	}
	e.protect = min(e.protect, e.vruntime+calcDeltaFair(s.minSlice(cq), e))
}

// pickEEVDF is pick_eevdf()/__pick_eevdf(cfs_rq, protect) (v6.6, with the
// v6.17 protect argument): the eligible entity with the earliest virtual
// deadline; curr keeps the CPU while its slice protection lasts
// (protectSlice). Where the PICK_BUDDY test sits in __pick_eevdf()
// (kernelRules.buddyInPickEEVDF: v6.19, 6.18.33+) an eligible next buddy
// comes first, whatever protect says, so a wake-up at a level whose queue
// has a buddy preempts only if it is the buddy: the protect argument gates
// the buddy only from commit 78cde54ea5f0 ("sched/eevdf: Clear buddies for
// preempt_short", v7.1, taken by 7.0.y and 6.19.y), not modelled.
func (s *sim) pickEEVDF(cq int32, protect bool) int32 {
	r := &s.rqs[cq]
	curr := int32(-1)
	if r.currOn {
		curr = r.curr
	}
	if r.nr == 1 {
		if curr >= 0 {
			return curr
		}
		return r.leftmost
	}
	if r.next >= 0 && s.buddyInPickEEVDF && s.eligibleIn(r, &s.ents[r.next]) {
		return r.next // ->next is never delayed: dequeue_entity() clears it first
	}
	// Eligibility: (v_i - min_vruntime) * load <= Σ (v_j - min_vruntime) w_j,
	// the sums over the tree and curr (entityEligible's, computed once for
	// curr and the tree).
	avg, load := r.avgSum, r.avgLoad
	if curr >= 0 {
		c := &s.ents[curr]
		avg += (c.vruntime - r.minV) * c.weight
		load += c.weight
		if avg < (c.vruntime-r.minV)*load {
			curr = -1 // not eligible
		} else if protect && s.protectSlice(curr) {
			return curr
		}
	}
	// n is eligible iff x*load <= avg with x = v - min_vruntime, i.e.
	// x <= floor(avg / load). The product is used (no division) when it
	// cannot overflow for any node: load < 2^31 and |x| < 2^31 for the
	// first and the last node (the tree is sorted by vruntime, so every x
	// lies between theirs).
	//
	// Among eligible nodes the earliest deadline wins; on equal deadlines
	// the kernel's tree order decides (the smaller vruntime, then the
	// earlier insertion). The tree is in that order already (enqueueTree and
	// treeMove insert after equal vruntimes), so the first node with the
	// earliest deadline is the one.
	best := int32(-1)
	var bd int64
	t, minV := r.tree, r.minV
	if nt := len(t); nt > 0 && load < 1<<31 && uint64(t[0].v-minV+1<<31) < 1<<32 && uint64(t[nt-1].v-minV+1<<31) < 1<<32 {
		for i := range t {
			n := &t[i]
			if (n.v-minV)*load > avg {
				break // sorted by vruntime: the rest is not eligible
			}
			if best < 0 || n.d < bd {
				best, bd = n.se, n.d
			}
		}
	} else if nt > 0 {
		limit := minV + floorDiv(avg, load) // load > 0: the tree is not empty
		for i := range t {
			n := &t[i]
			if n.v > limit {
				break
			}
			if best < 0 || n.d < bd {
				best, bd = n.se, n.d
			}
		}
	}
	if best < 0 || (curr >= 0 && s.ents[curr].deadline < bd) {
		best = curr
	}
	if best < 0 {
		best = r.leftmost
	}
	return best
}

// pickNextEntity is pick_next_entity(): pick_eevdf() for EEVDF, after an
// eligible next buddy with PICK_BUDDY where the test sits here (v6.14,
// 6.12.13+, up to 6.18.32: "Picking the ->next buddy will affect latency
// but not fairness"); for CFS (v6.1) the leftmost entity, or curr if it is
// further left.
func (s *sim) pickNextEntity(cq int32) int32 {
	if s.eevdf {
		if r := &s.rqs[cq]; r.next >= 0 && s.feat.pickBuddy && !s.buddyInPickEEVDF && s.eligibleIn(r, &s.ents[r.next]) {
			return r.next
		}
		return s.pickEEVDF(cq, true)
	}
	return s.pickNextEntityCFS(cq)
}

// pickNextEntityCFS is pickNextEntity for CFS (v6.1), apart so that the
// EEVDF case inlines into its callers.
func (s *sim) pickNextEntityCFS(cq int32) int32 {
	r := &s.rqs[cq]
	left := r.leftmost
	if r.currOn {
		if left < 0 || s.ents[r.curr].vruntime < r.leftV {
			left = r.curr
		}
	}
	// "Someone really wants this to run. If it's not unfair, run it", else
	// "prefer last buddy, try to return the CPU to a preempted task"
	// (v6.1; no skip buddy: the simulated tasks never yield).
	if r.next >= 0 && s.wakeupPreemptEntity(r.next, left) < 1 {
		return r.next
	}
	if r.last >= 0 && s.wakeupPreemptEntity(r.last, left) < 1 {
		return r.last
	}
	return left
}

// ---- buddies (CFS, v6.1; EEVDF's next buddy, v6.12..v6.18) ----

// setNextBuddy is set_next_buddy() (v6.1, v6.6..v6.18): se and its
// ancestors become their queues' next buddies, unless one is off its queue
// or idle.
func (s *sim) setNextBuddy(se int32) {
	for ; se >= 0; se = s.ents[se].parent {
		if e := &s.ents[se]; !e.onRq || e.idle {
			return
		}
		s.rqs[s.ents[se].rq].next = se
	}
}

// setLastBuddy is set_last_buddy() (v6.1).
func (s *sim) setLastBuddy(se int32) {
	for ; se >= 0; se = s.ents[se].parent {
		if e := &s.ents[se]; !e.onRq || e.idle {
			return
		}
		s.rqs[s.ents[se].rq].last = se
	}
}

// clearBuddies is clear_buddies() (v6.1): se stops being its queue's next
// or last buddy, and so do the ancestors that were buddies through it.
func (s *sim) clearBuddies(cq, se int32) {
	if s.rqs[cq].last == se {
		for x := se; x >= 0; x = s.ents[x].parent {
			r := &s.rqs[s.ents[x].rq]
			if r.last != x {
				break
			}
			r.last = -1
		}
	}
	if s.rqs[cq].next == se {
		for x := se; x >= 0; x = s.ents[x].parent {
			r := &s.rqs[s.ents[x].rq]
			if r.next != x {
				break
			}
			r.next = -1
		}
	}
}

// updateMinVruntime is update_min_vruntime() (v6.1 and v6.6): the queue's
// monotonic zero point; for EEVDF moving it shifts avg_vruntime's sum.
func (s *sim) updateMinVruntime(cq int32) {
	r := &s.rqs[cq]
	v := r.leftV // never when the tree is empty
	if r.currOn {
		v = min(v, s.ents[r.curr].vruntime)
	}
	if v != never {
		d := max(v-r.minV, 0)
		r.avgSum -= r.avgLoad * d
		r.minV += d
	}
}

// updateCurr is update_curr(): charge the running entity of cq for the time
// since it last was, advance its vruntime, renew its EEVDF deadline, and
// charge the group's bandwidth.
func (s *sim) updateCurr(cq int32) {
	if r := &s.rqs[cq]; r.curr >= 0 && s.now > r.currStart {
		s.updateCurrSlow(cq)
	}
}

// updateCurrIn is updateCurr with the queue (r = &rqs[cq]) at hand.
func (s *sim) updateCurrIn(cq int32, r *cfsRq) {
	if r.curr >= 0 && s.now > r.currStart {
		s.updateCurrSlow(cq)
	}
}

func (s *sim) updateCurrSlow(cq int32) {
	// updateCurr checked that now > exec_start (kept in r.currStart
	// while the entity is curr). The queue and its curr are held by
	// pointer throughout (the arrays are sized at build and never move),
	// so the steps below (update_min_vruntime() included) index neither
	// again.
	r := &s.rqs[cq]
	e := &s.ents[r.curr]
	now := s.now
	start := r.currStart
	r.currStart = now
	d := s.scaleExec(now - start)
	e.sumExec += d
	e.vruntime += calcDeltaFair(d, e)
	if s.eevdf && e.vruntime-e.deadline >= 0 || r.hasQuota {
		// A used-up request (update_deadline()) or a quota: the rest
		// in a function of its own, so that the common path below
		// makes no call with values live across it (no spills).
		s.updateCurrTail(cq, r, e, start, d)
		return
	}
	// currResched, written out: it does not inline.
	resched := false
	if r.nr > 1 && (s.didPreemptShort || s.vprot) && !s.protectSliceOf(e) {
		resched = s.vprot || !currEligible(r, e)
	}
	updateMinVruntimeCurr(r, e)
	if e.task >= 0 {
		s.accountTask(e.task, start, now)
	}
	if resched {
		// clear_buddies() with the resched, as update_curr() does.
		s.reschedCurr(r.cpu, false)
		s.clearBuddies(cq, r.curr)
	}
}

// updateCurrTail is the rest of updateCurrSlow (queue r, its curr e,
// start the old exec_start, d the time charged) when curr's request is
// used up or its group has a quota, in update_curr()'s order.
func (s *sim) updateCurrTail(cq int32, r *cfsRq, e *entity, start, d int64) {
	if s.eevdf && e.vruntime-e.deadline >= 0 {
		s.updateDeadline(cq, r.curr) // the request is used up
	}
	if r.nr > 1 && s.currResched(r, e) {
		// clear_buddies() with the resched, as update_curr() does.
		s.reschedCurr(r.cpu, false)
		s.clearBuddies(cq, r.curr)
	}
	updateMinVruntimeCurr(r, e)
	if e.task >= 0 {
		s.accountTask(e.task, start, s.now)
	}
	if r.hasQuota {
		s.accountCfsRqRuntime(cq, d)
	}
}

// currResched is update_curr()'s resched test of a curr e on a queue r
// with others queued (r.nr > 1).
func (s *sim) currResched(r *cfsRq, e *entity) bool {
	// update_curr() (v6.12..v6.16): did_preempt_short(), a curr whose
	// slice protection was cancelled (a shorter-slice wake-up, a new
	// deadline or a reweight) is rescheduled once it is not eligible.
	// update_curr() (v6.17+, "Always trigger resched at the end of a
	// protected period"): past its protection, curr is rescheduled
	// whenever another entity is queued, eligible or not.
	if !s.didPreemptShort && !s.vprot || s.protectSliceOf(e) {
		return false
	}
	return s.vprot || !currEligible(r, e)
}

// updateMinVruntimeCurr is update_min_vruntime() (updateMinVruntime) of
// queue r with its curr e at hand.
func updateMinVruntimeCurr(r *cfsRq, e *entity) {
	v := r.leftV // never when the tree is empty
	if r.currOn {
		v = min(v, e.vruntime)
	}
	if v != never {
		dv := max(v-r.minV, 0)
		r.avgSum -= r.avgLoad * dv
		r.minV += dv
	}
}

// ---- CFS (v6.1) ----

// schedPeriod is __sched_period() (v6.1).
func (s *sim) schedPeriod(nr int64) int64 {
	if nr > s.nrLatency {
		return nr * s.minGran
	}
	return s.latency
}

// schedSlice is sched_slice() (v6.1): the entity's share of the period,
// scaled by its weight at every level of the hierarchy.
func (s *sim) schedSlice(cq, se int32) int64 {
	r := &s.rqs[cq]
	nr := int64(r.nr)
	if s.feat.altPeriod {
		nr = int64(s.rqs[s.cpus[r.cpu].root].hNr)
	}
	if !s.ents[se].onRq {
		nr++
	}
	slice := s.schedPeriod(nr)
	init := se
	for x := se; x >= 0; x = s.ents[x].parent {
		e := &s.ents[x]
		load := s.rqs[e.rq].load
		if !e.onRq {
			load += e.weight
		}
		if load > 0 {
			slice = slice * e.weight / load
		}
	}
	if s.feat.baseSlice {
		mg := s.minGran
		if s.ents[init].idle && !s.schedIdleRq(cq) {
			mg = idleMinGranNs
		}
		slice = max(slice, mg)
	}
	return slice
}

// schedIdleRq is sched_idle_cfs_rq(): only idle entities are queued
// (approximated with task counts).
func (s *sim) schedIdleRq(cq int32) bool {
	r := &s.rqs[cq]
	return r.hNr > 0 && r.hNr == r.idleHNr
}

// checkPreemptTick is check_preempt_tick() (v6.1).
func (s *sim) checkPreemptTick(cq, se int32) {
	e := &s.ents[se]
	ideal := s.schedSlice(cq, se)
	deltaExec := e.sumExec - e.prevSumExec
	if deltaExec > ideal {
		s.reschedCurr(s.rqs[cq].cpu, false)
		// "The current task ran long enough, ensure it doesn't get
		// re-elected due to buddy favours."
		s.clearBuddies(cq, se)
		return
	}
	// Ensure that a task that missed wakeup preemption by a narrow margin
	// doesn't have to wait for a full slice.
	if deltaExec < s.minGran {
		return
	}
	if s.rqs[cq].leftmost < 0 {
		return
	}
	delta := e.vruntime - s.rqs[cq].leftV
	if delta < 0 {
		return
	}
	if delta > ideal {
		s.reschedCurr(s.rqs[cq].cpu, false)
	}
}

// wakeupPreemptEntity is wakeup_preempt_entity() (v6.1) with wakeup_gran().
func (s *sim) wakeupPreemptEntity(curr, se int32) int {
	vdiff := s.ents[curr].vruntime - s.ents[se].vruntime
	if vdiff <= 0 {
		return -1
	}
	gran := calcDeltaFair(s.wakeupGran, &s.ents[se])
	if vdiff > gran {
		return 1
	}
	return 0
}

// ---- placement ----

// placeEntity is place_entity().
//
// EEVDF (v6.6): the entity is placed at V minus its preserved lag, the lag
// inflated by (W + w_i)/W so that adding it does not move V by more than its
// own lag (PLACE_LAG); its deadline is one request ahead, half a request for
// a new task (PLACE_DEADLINE_INITIAL).
//
// CFS (v6.1): new tasks start one vslice after min_vruntime (START_DEBIT);
// waking entities get a sleeper credit of sched_latency (half with
// GENTLE_FAIR_SLEEPERS), but never move backwards.
func (s *sim) placeEntity(cq, se int32, flags int) {
	r := &s.rqs[cq]
	e := &s.ents[se]
	if s.eevdf {
		V := s.avgVruntime(cq)
		e.slice = s.entitySlice(se)
		vslice := calcDeltaFair(e.slice, e)
		var lag int64
		if s.feat.placeLag && r.nr > 0 {
			lag = e.vlag
			load := r.avgLoad
			if r.currOn {
				load += s.ents[r.curr].weight
			}
			if load > 0 {
				lag = lag * (load + e.weight) / load
			}
		}
		e.vruntime = V - lag
		if s.feat.placeDeadlineInitial && flags&enqInitial != 0 {
			vslice /= 2
		}
		e.deadline = e.vruntime + vslice
		return
	}
	v := r.minV
	initial := flags&enqInitial != 0
	if initial && s.feat.startDebit {
		v += calcDeltaFair(s.schedSlice(cq, se), e) // sched_vslice()
	}
	if !initial {
		thresh := s.latency
		if e.idle {
			thresh = s.minGran
		}
		if s.feat.gentleFairSleepers {
			thresh >>= 1
		}
		v -= thresh
	}
	if initial || v > e.vruntime {
		e.vruntime = v
	}
}

// ---- enqueue / dequeue ----

// enqueueEntity is enqueue_entity() (v6.6 for EEVDF, v6.1 for CFS).
func (s *sim) enqueueEntity(cq, se int32, flags int) {
	r := &s.rqs[cq]
	e := &s.ents[se]
	if !s.eevdf && e.task >= 0 && s.tasks[e.task].vNormalized {
		// renorm: vruntime was made relative at migration / non-sleep dequeue.
		s.updateCurr(cq)
		e.vruntime += r.minV
		s.tasks[e.task].vNormalized = false
	} else {
		s.updateCurr(cq)
	}
	s.updateRqLoad(cq)
	s.updateSeLoad(se)
	s.updateCfsGroup(se)
	if s.eevdf || flags&(enqWakeup|enqInitial) != 0 {
		s.placeEntity(cq, se, flags)
	}
	r.load += e.weight
	r.nr++
	if !r.onList {
		s.listAddLeafCfsRq(cq)
	}
	if r.curr != se {
		s.enqueueTree(cq, se)
	}
	e.onRq = true
	if r.curr == se {
		r.currOn = true
	}
	if !s.eevdf {
		s.updateMinVruntime(cq)
	}
}

// dequeueEntity is dequeue_entity() (v6.6 / v6.1).
func (s *sim) dequeueEntity(cq, se int32, flags int) {
	r := &s.rqs[cq]
	e := &s.ents[se]
	s.updateCurr(cq)
	s.updateRqLoad(cq)
	s.updateSeLoad(se)
	if s.eevdf {
		s.updateEntityLag(cq, se)
		if flags&deqDelayed != 0 && s.feat.delayZero && e.vlag > 0 {
			e.vlag = 0
		}
	}
	s.clearBuddies(cq, se) // clear_buddies() (dequeue_entity(), v6.1, v6.6..v6.18)
	if r.curr != se {
		s.dequeueTree(cq, se)
	}
	e.onRq = false
	if r.curr == se {
		r.currOn = false
	}
	r.load -= e.weight
	r.nr--
	if !s.eevdf && flags&deqSleep == 0 && e.task >= 0 {
		e.vruntime -= r.minV
		s.tasks[e.task].vNormalized = true
	}
	s.updateCfsGroup(se)
	s.updateMinVruntime(cq)
}

// enqueueTask is enqueue_task_fair(): enqueue the task's entity and every
// ancestor that was not queued yet, and account h_nr_running up to the root
// or the first throttled queue.
func (s *sim) enqueueTask(ti int32, flags int) {
	t := &s.tasks[ti]
	c := t.cpu
	s.cpuPelt(c)
	s.taskPelt(ti)
	idle := int32(0)
	if t.policy == polIdle {
		idle = 1
	}
	se := t.se
	throttled := false
	// ENQUEUE_DELAYED (v6.12 enqueue_task_fair()): waking a task that is
	// still queued as delayed only requeues it; the walk up the hierarchy
	// counts it as runnable again (clear_delayed(), v6.13) but leaves the
	// group entities' load and weight alone (no update_cfs_group()).
	e0 := &s.ents[se]
	requeued := e0.onRq && e0.delayed
	if requeued && e0.task >= 0 {
		s.countDelayed(ti, -1)
	}
	for se >= 0 {
		e := &s.ents[se]
		if e.onRq {
			if e.delayed {
				s.requeueDelayedEntity(se)
			}
			break
		}
		cq := e.rq
		s.enqueueEntity(cq, se, flags)
		r := &s.rqs[cq]
		r.hNr++
		r.idleHNr += idle
		if r.idle {
			idle = 1
		}
		if r.throttled {
			throttled = true
			break
		}
		flags = enqWakeup
		se = e.parent
	}
	if !throttled && se >= 0 {
		for se >= 0 {
			e := &s.ents[se]
			cq := e.rq
			r := &s.rqs[cq]
			if !requeued {
				s.updateRqLoadIn(cq, r)
				s.updateCfsGroup(se)
				if s.groupSlice {
					s.propagateSlice(se)
				}
			}
			r.hNr++
			r.idleHNr += idle
			if r.idle {
				idle = 1
			}
			if r.throttled {
				break
			}
			se = e.parent
		}
	}
	if !requeued && s.nrRunning(c) >= 2 {
		s.rdOverloaded = true // add_nr_running()
	}
	cpu := &s.cpus[c]
	t.cpuPos = int32(len(cpu.tasks))
	cpu.tasks = append(cpu.tasks, ti)
	t.listStamp = s.now
	s.setIdle(c, s.cpuIdle(c))
}

// dequeueTask is dequeue_task_fair(). It returns false when the task was
// delayed (DELAY_DEQUEUE) instead of dequeued.
func (s *sim) dequeueTask(ti int32, flags int) bool {
	t := &s.tasks[ti]
	c := t.cpu
	s.cpuPelt(c)
	s.taskPelt(ti)
	one := int32(1)
	if flags&deqDelayed != 0 {
		one = 0 // h_nr_running already dropped it when it was delayed
	}
	idle := int32(0)
	if t.policy == polIdle {
		idle = one
	}
	// sched_idle_rq() before the dequeue.
	wasSchedIdle := s.anySchedIdle && s.schedIdleCPU(c)
	if flags&deqDelayed != 0 {
		s.countDelayed(ti, -1)
	}
	if !s.dequeueEntities(t.se, flags, one, idle) {
		s.countDelayed(ti, 1)
		s.setIdle(c, s.cpuIdle(c))
		return false
	}
	if s.anySchedIdle && !wasSchedIdle && s.schedIdleCPU(c) {
		// dequeue_entities() (v6.12, v6.18): "balance early to pull high
		// priority tasks" when only idle tasks are left.
		s.cpus[c].nextBalance = s.now
	}
	cpu := &s.cpus[c]
	last := int32(len(cpu.tasks) - 1)
	moved := cpu.tasks[last]
	cpu.tasks[t.cpuPos] = moved
	s.tasks[moved].cpuPos = t.cpuPos
	cpu.tasks = cpu.tasks[:last]
	t.cpuPos = -1
	s.setIdle(c, s.cpuIdle(c))
	return true
}

// dequeueEntities is dequeue_entities() (v6.12): dequeue se and every
// ancestor left empty, and take one task (one = 0 when it was already taken
// off h_nr_running) off the counts above. With DELAY_DEQUEUE an entity
// going to sleep while not eligible (negative lag) is not dequeued but
// marked delayed: it keeps competing, ineligible, until its lag is burned
// off and it is picked, or until it is woken. Returns false when se itself
// was delayed.
func (s *sim) dequeueEntities(se int32, flags int, one, idle int32) bool {
	taskSleep := flags&deqSleep != 0
	dequeued := true
	first := true
	throttled := false
	for se >= 0 {
		e := &s.ents[se]
		cq := e.rq
		r := &s.rqs[cq]
		if s.eevdf && s.feat.delayDequeue && flags&deqSleep != 0 && flags&deqDelayed == 0 {
			s.updateCurrIn(cq, r)
			// dequeue_entity() clears se's buddy before it decides to
			// delay it, so a delayed entity is never ->next.
			s.clearBuddies(cq, se)
			if !s.eligibleIn(r, e) {
				s.updateRqLoadIn(cq, r)
				e.delayed = true
				if first {
					dequeued = false
				}
				r.hNr -= one
				r.idleHNr -= idle
				if r.idle {
					idle = one
				}
				se = e.parent
				throttled = r.throttled
				break
			}
		}
		s.dequeueEntity(cq, se, flags)
		e.delayed = false
		r.hNr -= one
		r.idleHNr -= idle
		if r.idle {
			idle = one
		}
		se = e.parent
		if r.throttled {
			throttled = true
			break
		}
		// Don't dequeue the parent if it has other entities besides us.
		if r.load > 0 {
			// "Bias pick_next to pick a task from this cfs_rq, as p is
			// sleeping when it is within its sched_slice."
			// (dequeue_task_fair(), v6.1; dequeue_entities(), v6.12..v6.18,
			// where pick_eevdf() takes the buddy with PICK_BUDDY; v6.6..v6.11
			// set it too but picked it only under NEXT_BUDDY, off, so it is
			// left out there.)
			if taskSleep && se >= 0 && (!s.eevdf || s.feat.pickBuddy) && !s.throttledHierarchy(cq) {
				s.setNextBuddy(se)
			}
			break
		}
		flags = flags&^deqDelayed | deqSleep
		first = false
	}
	if !throttled {
		for se >= 0 {
			e := &s.ents[se]
			cq := e.rq
			r := &s.rqs[cq]
			// A task that was delayed itself returns from dequeue_entities()
			// (v6.12) before this walk: the group entities above keep their
			// load and weight (no update_cfs_group()); only the runnable
			// counts drop (set_delayed(), v6.13).
			if dequeued {
				s.updateRqLoadIn(cq, r)
				s.updateCfsGroup(se)
				if s.groupSlice {
					s.propagateSlice(se)
				}
			}
			r.hNr -= one
			r.idleHNr -= idle
			if r.idle {
				idle = one
			}
			if r.throttled {
				break
			}
			se = e.parent
		}
	}
	return dequeued
}

// propagateSlice is the se->slice = cfs_rq_min_slice() step of the second
// walks of enqueue_task_fair() and dequeue_entities() (v6.12, "sched/eevdf:
// Propagate min_slice up the cgroup hierarchy"): every enqueue or dequeue
// below an already-queued group entity sets its slice to the smallest slice
// queued in its group's queue, so a custom slice reaches the ancestors at
// once and not only when they are placed again. The tree node's cached
// slice follows (min_vruntime_cb_propagate()). A requeued or delayed task
// returns before this walk and changes nothing.
func (s *sim) propagateSlice(se int32) {
	e := &s.ents[se]
	if !s.groupSlice || e.my < 0 || !e.onRq {
		return
	}
	m := s.minSlice(e.my)
	if m == never || m == e.slice {
		return
	}
	e.slice = m
	if cq := e.rq; s.rqs[cq].curr != se {
		s.rqs[cq].tree[s.treeIndex(cq, se)].slice = m
	}
}

// ---- group weights ----

// calcGroupShares is calc_group_shares() (v6.1..v6.18): the group's shares
// split across CPUs in proportion to each CPU's part of the group's load,
//
//	shares = tg->shares * load / (tg->load_avg - contrib + load),
//	load = max(cfs_rq->load.weight, cfs_rq->avg.load_avg),
//
// clamped to [MIN_SHARES, tg->shares]. tg->shares is scale_load()ed (<< 10
// on 64-bit, SCHED_FIXEDPOINT_SHIFT) while load and tg->load_avg are not,
// so the kernel's result has 1/1024 of a weight unit of resolution; the
// value returned here is that fixed-point weight. With SMP_FAIR_GROUPS off
// (a simulator-only switch) every per-CPU group entity weighs the full
// shares.
func (s *sim) calcGroupSharesFP(cq int32) int64 {
	r := &s.rqs[cq]
	tg := &s.tgs[r.tg]
	if !s.feat.smpFairGroups {
		return tg.shares << loadShift
	}
	// The queue's load is the input that changes most often: test it first.
	if r.shKeyLoad == r.load && r.shKeyOK && r.shKeyAvg == r.loadAvg.avg && r.shKeyContrib == r.contrib && r.shKeyTg == tg.loadAvg {
		return r.shares
	}
	// Integer arithmetic, as the kernel's (long): cfs_rq->avg.load_avg is
	// an integer (the float average truncated, see syncTgContrib).
	load := max(r.load, int64(r.loadAvg.avg))
	tgWeight := tg.loadAvg - r.contrib + load
	tgShares := tg.shares << loadShift
	shares := tgShares
	if tgWeight != 0 {
		shares = tgShares * load / tgWeight
	}
	shares = max(minShares, min(shares, tgShares))
	r.shKeyOK, r.shKeyTg, r.shKeyLoad, r.shKeyAvg, r.shKeyContrib, r.shares = true, tg.loadAvg, r.load, r.loadAvg.avg, r.contrib, shares
	return shares
}

// scaleLoadDown is scale_load_down(): the weight the vruntime and average
// arithmetic use.
func scaleLoadDown(w int64) int64 {
	if w == 0 {
		return 0
	}
	return max(2, w>>loadShift)
}

// calcGroupShares is calcGroupSharesFP as a weight (scale_load_down()).
func (s *sim) calcGroupShares(cq int32) int64 {
	return scaleLoadDown(s.calcGroupSharesFP(cq))
}

// updateCfsGroup is update_cfs_group(): recompute a group entity's weight.
// The kernel compares the fixed-point result with se->load.weight, so a
// change below one weight unit still runs reweight_entity() (and, on
// 6.13..6.18.44, its placement of curr).
func (s *sim) updateCfsGroup(se int32) {
	e := &s.ents[se]
	if e.my < 0 || (s.anyQuota && s.throttledHierarchy(e.my)) {
		return
	}
	if e.weightFP == 0 {
		e.weightFP = e.weight << loadShift
	}
	if w := s.calcGroupSharesFP(e.my); w != e.weightFP {
		e.weightFP = w
		s.reweightEntity(e.rq, se, scaleLoadDown(w))
	}
}

// reweightEntity is reweight_entity(). For EEVDF (v6.12) a queued entity
// keeps its lag scaled by old/new weight (lag_i = w_i*(V - v_i) is
// preserved) and its relative deadline likewise, and is placed again. For
// CFS (v6.1) only the weight and the queue load change.
//
// v6.13..v6.18.44 (kernelRules.reweightPlaceCurr): the placement is
// place_entity(cfs_rq, se, 0) called while se is still cfs_rq->curr and
// on_rq. avg_vruntime() then counts se itself (its old vruntime with its new
// weight) and the PLACE_LAG scaling counts curr's weight in the load, so the
// lag is multiplied by (W + 2w)/(W + w) instead of being kept: every reweight
// of the running group entity grows its lag, in either sign, up to the
// update_entity_lag() clamp. A group entity is reweighted (update_cfs_group())
// at each enqueue and dequeue of a task below it and at each tick; a group
// whose tasks wake and sleep every few microseconds on a CPU where it is
// running keeps its positive lag at the clamp and stays eligible, and the
// group entities beside it (lag below zero) are never picked. Peter Zijlstra
// reverted it in v7.0 (commit 101f3498b4bd, "avg_vruntime() always includes
// cfs_rq->curr ... place_entity() doesn't work right"); 6.18.45 carries the
// revert. See docs/wakeup-heavy-groups.md.
func (s *sim) reweightEntity(cq, se int32, w int64) {
	r := &s.rqs[cq]
	e := &s.ents[se]
	old := e.weight
	if !e.onRq {
		s.updateRqLoad(cq)
		s.updateSeLoad(se)
		if s.eevdf {
			e.vlag = e.vlag * old / w
		}
		s.reweightLoadAvg(cq, se, w)
		e.setWeight(w)
		return
	}
	isCurr := r.curr == se
	if isCurr {
		s.updateCurr(cq)
		if s.vprot {
			// se->vprot is se->vlag (a union, v6.17..v6.18; tip commit
			// 6b6d09f separates them): update_entity_lag() below
			// overwrites it with a lag, which protect_slice() compares
			// with a vruntime, so the protection is over.
			e.protectOK = false
		}
	}
	s.updateRqLoad(cq)
	s.updateSeLoad(se)
	s.reweightLoadAvg(cq, se, w)
	if !s.eevdf {
		r.load += w - old
		e.setWeight(w)
		return
	}
	if x := e.vruntime - r.minV; isCurr && r.nr == 1 && uint64(x+1<<40) < 1<<41 {
		// Alone on its queue (a group entity alone under its parent, the
		// common case): V is its own vruntime, so its lag is 0 and it is
		// placed where it is, by either placement below (V = min_vruntime
		// + x*w/w exactly: |x| < 2^40 and w <= 2^18 cannot overflow); only
		// the relative deadline scales.
		e.vlag = 0
		rel := (e.deadline - e.vruntime) * old / w
		e.setWeight(w)
		e.deadline = e.vruntime + rel
		r.load += w - old
		s.updateMinVruntime(cq)
		return
	}
	s.updateEntityLag(cq, se)
	relDeadline := e.deadline - e.vruntime
	pos := -1
	if !isCurr {
		// Dequeue from the sums now; the node is moved in place below.
		pos = s.treeIndex(cq, se)
		r.avgSum -= (e.vruntime - r.minV) * e.weight
		r.avgLoad -= e.weight
	}
	r.load -= old
	e.vlag = e.vlag * old / w
	relDeadline = relDeadline * old / w
	e.setWeight(w)
	if isCurr && s.reweightPlaceCurr {
		// place_entity() with se as curr: V over the tree plus se (old
		// vruntime, new weight); lag *= (avg_load + w + w) / (avg_load + w)
		// when another entity is queued (cfs_rq->nr_queued excludes se).
		sum, load := r.avgSum+(e.vruntime-r.minV)*w, r.avgLoad+w
		V := r.minV + floorDiv(sum, load)
		lag := int64(0)
		if s.feat.placeLag && r.nr > 1 {
			lag = e.vlag * (load + w) / load
		}
		e.vruntime = V - lag
		e.deadline = e.vruntime + relDeadline
		r.load += w
		s.updateMinVruntime(cq)
		return
	}
	// place_entity(cfs_rq, se, 0) without counting se itself in the load.
	oth, othLoad := r.avgSum, r.avgLoad
	if !isCurr && r.currOn {
		c := &s.ents[r.curr]
		oth += (c.vruntime - r.minV) * c.weight
		othLoad += c.weight
	}
	if othLoad > 0 {
		V := r.minV + floorDiv(oth, othLoad)
		lag := int64(0)
		if s.feat.placeLag {
			lag = e.vlag * (othLoad + w) / othLoad
		}
		e.vruntime = V - lag
	}
	e.deadline = e.vruntime + relDeadline
	r.load += w
	if !isCurr {
		s.treeMove(cq, pos, se)
	}
	s.updateMinVruntime(cq)
}

// reweightLoadAvg is the averages' part of reweight_entity() (v6.1..v6.18,
// kernel/sched/fair.c; read in 6.12): dequeue_load_avg(cfs_rq, se), then
//
//	se->avg.load_avg = div_u64(se_weight(se) * se->avg.load_sum, divider)
//
// with the new weight, then enqueue_load_avg(cfs_rq, se), for a queued and
// a blocked entity alike. An entity's load_sum counts its runnable time
// unweighted and __update_load_avg_se() (pelt.c) multiplies it by the
// current weight at every update, so its load_avg is its weight now times
// its runnable average, and the queue it is attached to takes the
// difference at once: a group entity's reweight reaches cpu_load() and the
// balancer without waiting for PELT's 32 ms half-life. The simulator's
// entity average is that of weight × on_rq, which equals weight × runnable
// average between reweights; rescaling it here keeps it so. Call with both
// averages brought up to date and before setWeight().
func (s *sim) reweightLoadAvg(cq, se int32, w int64) {
	e := &s.ents[se]
	old := e.weight
	if old <= 0 || w == old {
		return
	}
	before := e.load.avg
	e.load.avg = before * float64(w) / float64(old)
	r := &s.rqs[cq]
	r.loadAvg.avg = max(0, r.loadAvg.avg-before) + e.load.avg
}

// throttledHierarchy is throttled_hierarchy(): cq or an ancestor is throttled.
func (s *sim) throttledHierarchy(cq int32) bool {
	if !s.anyQuota {
		return false
	}
	for cq >= 0 {
		r := &s.rqs[cq]
		if r.throttled {
			return true
		}
		if r.ge < 0 {
			return false
		}
		cq = s.ents[r.ge].rq
	}
	return false
}

// ---- pick / put / set ----

// setNextEntity is set_next_entity() (v6.6): take the entity out of the
// tree, remember the deadline it was picked with (RUN_TO_PARITY), and start
// its execution clock.
func (s *sim) setNextEntity(cq, se int32) {
	s.clearBuddies(cq, se) // clear_buddies() (set_next_entity(), v6.6..v6.18)
	e := &s.ents[se]
	if e.onRq {
		s.dequeueTree(cq, se)
		if s.vprot {
			s.setProtectSlice(cq, se)
		} else {
			e.protect = e.deadline
			e.protectOK = true
		}
	}
	r := &s.rqs[cq]
	r.curr = se
	r.currStart = s.now // exec_start; written back to the entity at put
	r.currOn = e.onRq
	e.prevSumExec = e.sumExec
}

// putPrevEntity is put_prev_entity(): put a still-queued entity back in the
// tree.
func (s *sim) putPrevEntity(cq, se int32) {
	e := &s.ents[se]
	r := &s.rqs[cq]
	if e.onRq {
		s.updateCurrIn(cq, r)
		s.enqueueTree(cq, se)
	}
	e.execStart = r.currStart
	r.curr = -1
	r.currOn = false
}

// pickNextTaskFair is pick_next_task_fair() (v6.6): walk down from the root,
// picking at each level with the level's current entity still in place.
func (s *sim) pickNextTaskFair(c int32) int32 {
	cq := s.cpus[c].root
	r := &s.rqs[cq]
	if r.nr == 0 {
		return -1
	}
	for {
		if r.currOn {
			s.updateCurrIn(cq, r)
		}
		// pick_next_entity(): with PICK_BUDDY's test before pick_eevdf()
		// (up to 6.18.32) it does not inline, a call per level.
		se := s.pickNextEntity(cq)
		if se < 0 {
			return -1
		}
		e := &s.ents[se]
		if e.delayed {
			// pick_next_entity() (v6.12): a delayed entity that gets picked
			// is dequeued for real; pick again from the top.
			s.finishDelayedDequeue(se)
			cq = s.cpus[c].root
			r = &s.rqs[cq]
			if r.nr == 0 {
				return -1
			}
			continue
		}
		if e.my < 0 {
			return e.task
		}
		cq = e.my
		r = &s.rqs[cq]
	}
}

// finishDelayedDequeue is dequeue_entities(DEQUEUE_SLEEP | DEQUEUE_DELAYED)
// for a picked delayed entity (a sleeping task, or a group whose queue has
// emptied).
func (s *sim) finishDelayedDequeue(se int32) {
	if ti := s.ents[se].task; ti >= 0 {
		s.dequeueTask(ti, deqSleep|deqDelayed)
	} else {
		s.cpuPelt(s.rqs[s.ents[se].rq].cpu)
		s.dequeueEntities(se, deqSleep|deqDelayed, 0, 0)
	}
	if s.trace != nil {
		s.trace("cpu%d dequeue delayed se%d", s.rqs[s.ents[se].rq].cpu, se)
	}
}

// ---- wakeup preemption ----

// checkPreemptCurr is wakeup_preempt()/check_preempt_curr(): an idle CPU is
// always rescheduled; otherwise the fair class decides.
func (s *sim) checkPreemptCurr(c, ti, wakerCPU int32) {
	if s.cpus[c].curr < 0 {
		s.reschedCurr(c, false)
		return
	}
	s.checkPreemptWakeup(c, ti, wakerCPU)
}

// checkPreemptWakeup is check_preempt_wakeup() (v6.1) /
// check_preempt_wakeup_fair() (v6.6, with PREEMPT_SHORT from v6.12).
//
// Preemption model: the fair class sets TIF_NEED_RESCHED on the running
// task. The workload runs in user space, where the flag is honoured on the
// way back from the interrupt or IPI that delivered it, so None, Voluntary
// and Full behave alike for it (they differ only for tasks running in the
// kernel). Lazy (v6.13) sets TIF_NEED_RESCHED_LAZY without an IPI: a wakeup
// raised on the same CPU (a timer interrupt there) is still honoured on its
// return to user, but a wakeup from another CPU waits for the target's next
// tick.
func (s *sim) checkPreemptWakeup(c, ti, wakerCPU int32) {
	cpu := &s.cpus[c]
	curT := cpu.curr
	if curT == ti || cpu.needResched {
		return
	}
	t := &s.tasks[ti]
	cur := &s.tasks[curT]
	pse := t.se
	if s.anyQuota && s.throttledHierarchy(s.ents[pse].rq) {
		return
	}
	lazy := s.lazy && wakerCPU != c
	if s.idleStrictHierarchy {
		// v6.12+ (commit faa42d29419d, "sched/fair: Make SCHED_IDLE
		// entity be preempted in strict hierarchy"): no task-level idle
		// test; the idle tests are made on the matched entities below, and
		// only then do batch and idle wakees give up.
		if !s.feat.wakeupPreemption {
			return
		}
	} else {
		// v6.1..v6.11: idle tasks are by definition preempted by non-idle
		// tasks (whatever their groups).
		if cur.policy == polIdle && t.policy != polIdle {
			s.reschedCurr(c, lazy)
			s.lastBuddyOnPreempt(curT, cur.se)
			return
		}
		// Batch and idle tasks do not preempt non-idle tasks.
		if t.policy != polNormal || !s.feat.wakeupPreemption {
			return
		}
	}
	se := cur.se
	// find_matching_se(): walk both up to siblings on the same queue.
	// Entities on one queue have the same depth: siblings (the common
	// case) need no walk.
	es, ep := &s.ents[se], &s.ents[pse]
	if es.rq != ep.rq {
		for s.ents[se].depth > s.ents[pse].depth {
			se = s.ents[se].parent
		}
		for s.ents[pse].depth > s.ents[se].depth {
			pse = s.ents[pse].parent
		}
		for s.ents[se].rq != s.ents[pse].rq {
			se = s.ents[se].parent
			pse = s.ents[pse].parent
		}
		es, ep = &s.ents[se], &s.ents[pse]
	}
	cIdle, pIdle := es.idle, ep.idle
	// Preempt an idle group in favor of a non-idle group (and don't preempt
	// in the inverse case).
	if cIdle && !pIdle {
		if s.vprot {
			// v6.17: do_preempt_short = true; goto preempt, which cancels
			// the idle entity's protection.
			s.cancelProtectSlice(se)
		}
		s.reschedCurr(c, lazy)
		s.lastBuddyOnPreempt(curT, se)
		return
	}
	if cIdle != pIdle {
		return
	}
	if s.idleStrictHierarchy && t.policy != polNormal {
		return // BATCH and IDLE tasks do not preempt others (v6.12+)
	}
	cq := s.ents[se].rq
	s.updateCurr(cq)
	if s.trace != nil {
		s.traceWakeupCheck(cq, se, pse)
	}
	if s.eevdf && s.vprot {
		// v6.17+: a shorter slice lets the pick ignore curr's protection;
		// the protection is cancelled only when the wakee is picked, and
		// otherwise tightened to the shortest slice queued.
		doPreemptShort := s.feat.preemptShort && s.ents[pse].slice < s.ents[se].slice
		if s.pickEEVDF(cq, !doPreemptShort) == pse {
			if doPreemptShort {
				s.cancelProtectSlice(se)
			}
			s.reschedCurr(c, lazy)
			return
		}
		if s.feat.runToParity && doPreemptShort {
			s.updateProtectSlice(cq, se)
		}
		return
	}
	if s.eevdf {
		// v6.6..v6.16: do_preempt_short() (v6.12..v6.16) cancels curr's
		// protection, even when the wakee does not turn out to be picked;
		// then pick_eevdf() with whatever protection is left.
		if s.doPreemptShort(cq, pse, se) {
			s.cancelProtectSlice(se)
		}
		if s.pickEEVDF(cq, true) == pse {
			s.reschedCurr(c, lazy)
		}
		return
	}
	if s.wakeupPreemptEntity(se, pse) == 1 {
		// "Bias pick_next to pick the sched entity that is triggering
		// this preemption" (v6.1, whatever NEXT_BUDDY says).
		s.setNextBuddy(pse)
		s.reschedCurr(c, lazy)
		s.lastBuddyOnPreempt(curT, se)
	}
}

// traceWakeupCheck traces the wake-up preemption check of wakee pse
// against curr se on queue cq. It is a function of its own, never inlined,
// so that checkPreemptWakeup's code stays short: the call with its eleven
// converted arguments was most of that function's machine code, between the
// update_curr() and the pick that run at every wake-up (instruction-cache
// lines that every wake-up loaded and no untraced run executes).
//
//go:noinline
func (s *sim) traceWakeupCheck(cq, se, pse int32) {
	r := &s.rqs[cq]
	s.trace("  check wakeup: V=%d curr se%d v=%d d=%d prot=%v elig=%v | wakee se%d v=%d d=%d lag=%d", s.avgVruntime(cq),
		se, s.ents[se].vruntime, s.ents[se].deadline, s.protectSlice(se), s.entityEligible(cq, se),
		pse, s.ents[pse].vruntime, s.ents[pse].deadline, s.ents[pse].vlag)
	for _, n := range r.tree {
		s.trace("    tree se%d v=%d d=%d w=%d", n.se, n.v, n.d, s.ents[n.se].weight)
	}
}

// lastBuddyOnPreempt is the end of check_preempt_wakeup() (v6.1) after a
// preemption: with LAST_BUDDY (on by default) and at least sched_nr_latency
// entities on curr's own queue, the preempted entity, if it is a task still
// queued, becomes the last buddy so the CPU returns to it.
func (s *sim) lastBuddyOnPreempt(curT, se int32) {
	if s.eevdf || !s.ents[se].onRq || s.ents[se].task < 0 {
		return
	}
	if int64(s.rqs[s.ents[s.tasks[curT].se].rq].nr) >= s.nrLatency {
		s.setLastBuddy(se)
	}
}

// doPreemptShort is do_preempt_short() (v6.12..v6.16): the wakee pse has a
// shorter slice than curr se, is eligible, and either has the earlier
// deadline or curr is no longer eligible.
func (s *sim) doPreemptShort(cq, pse, se int32) bool {
	if !s.feat.preemptShort || s.ents[pse].slice >= s.ents[se].slice {
		return false
	}
	if !s.entityEligible(cq, pse) {
		return false
	}
	if s.ents[pse].deadline-s.ents[se].deadline < 0 { // entity_before()
		return true
	}
	return !s.entityEligible(cq, se)
}

// ---- the tick ----

// entityTick is entity_tick() (v6.6 / v6.1). PELT averages are evaluated
// lazily (every change of a signal's input updates it first, so a late
// update gives the same value); the tick only has to publish group queues'
// load to their task group, as update_tg_load_avg() does.
func (s *sim) entityTick(cq, se int32) {
	s.updateCurr(cq)
	if s.ents[se].parent >= 0 {
		// A group's queue (the root queue is the one of the entities
		// without a parent): update_load_avg() with UPDATE_TG.
		s.updateRqLoad(cq)
	}
	s.updateCfsGroup(se)
	if !s.eevdf && s.rqs[cq].nr > 1 {
		s.checkPreemptTick(cq, se)
	}
}

// taskTickFair is task_tick_fair(): entity_tick() at every level of the
// running task's hierarchy.
func (s *sim) taskTickFair(c int32) {
	for se := s.tasks[s.cpus[c].curr].se; se >= 0; se = s.ents[se].parent {
		s.entityTick(s.ents[se].rq, se)
	}
}

// ---- bandwidth (cpu.max) ----

// accountCfsRqRuntime is account_cfs_rq_runtime() (v6.1): charge the group's
// runtime pool; when it runs dry, reschedule so the queue gets throttled.
// The kernel hands out runtime in 5 ms slices per CPU; the simulator charges
// one global pool, with the same effect at the tick granularity.
func (s *sim) accountCfsRqRuntime(cq int32, d int64) {
	r := &s.rqs[cq]
	tg := &s.tgs[r.tg]
	tg.runtime -= d
	if tg.runtime <= 0 && r.curr >= 0 {
		s.reschedCurr(r.cpu, false)
	}
}

// checkCfsRqRuntime is check_cfs_rq_runtime(): throttle a queue whose group
// ran out of runtime.
func (s *sim) checkCfsRqRuntime(cq int32) bool {
	r := &s.rqs[cq]
	if r.tg < 0 || r.throttled {
		return false
	}
	tg := &s.tgs[r.tg]
	if tg.quota == 0 || tg.runtime > 0 {
		return false
	}
	s.throttleCfsRq(cq)
	return true
}

// throttleCfsRq is throttle_cfs_rq() (v6.1; v6.12..v6.17 with delayed
// dequeue): dequeue the group entity (and ancestors left empty) and remove
// the queue's tasks from h_nr_running above. The hierarchical model: v6.18's
// task-based throttling (tasks dequeued on their way back to user space) is
// not modelled.
func (s *sim) throttleCfsRq(cq int32) {
	r := &s.rqs[cq]
	c := r.cpu
	s.cpuPelt(c)
	delta, idleDelta := r.hNr, r.idleHNr
	if r.idle {
		idleDelta = delta
	}
	delayedDelta, delayedIdleDelta := s.delayedBelow(cq)
	se := r.ge
	stopped := false
	for se >= 0 {
		if !s.ents[se].onRq {
			stopped = true // throttled entity or throttle-on-deactivate
			break
		}
		qcq := s.ents[se].rq
		// v6.12..v6.17: a delayed group entity (its queue emptied, its
		// dequeue deferred) is dequeued for good with DEQUEUE_DELAYED,
		// which clears sched_delayed; left set, the entity would come
		// back delayed at unthrottle and a later pick would dequeue it
		// with the queue's tasks below.
		flags := deqSleep
		if s.ents[se].delayed {
			flags |= deqDelayed
		}
		s.dequeueEntity(qcq, se, flags)
		s.ents[se].delayed = false
		q := &s.rqs[qcq]
		q.hNr -= delta
		q.idleHNr -= idleDelta
		if q.idle {
			idleDelta = delta
		}
		se = s.ents[se].parent
		if q.throttled {
			stopped = true
			break
		}
		if q.load > 0 {
			break
		}
	}
	if !stopped {
		for ; se >= 0; se = s.ents[se].parent {
			qcq := s.ents[se].rq
			s.updateRqLoad(qcq)
			s.updateCfsGroup(se)
			q := &s.rqs[qcq]
			q.hNr -= delta
			q.idleHNr -= idleDelta
			if q.idle {
				idleDelta = delta
			}
			if q.throttled {
				break
			}
		}
	}
	if !s.throttledHierarchy(s.ents[r.ge].rq) {
		s.cpus[c].nrDelayed -= delayedDelta
		s.cpus[c].idleDelayed -= delayedIdleDelta
	}
	r.throttled = true
	s.setIdle(c, s.cpuIdle(c))
	if s.trace != nil {
		s.trace("cpu%d throttle tg%d", c, r.tg)
	}
}

// unthrottleCfsRq is unthrottle_cfs_rq() (v6.1; v6.12..v6.17 with delayed
// dequeue).
func (s *sim) unthrottleCfsRq(cq int32) {
	r := &s.rqs[cq]
	c := r.cpu
	r.throttled = false
	if r.load == 0 {
		return
	}
	s.cpuPelt(c)
	delta, idleDelta := r.hNr, r.idleHNr
	if r.idle {
		idleDelta = delta
	}
	delayedDelta, delayedIdleDelta := s.delayedBelow(cq)
	se := r.ge
	stopped := false
	for ; se >= 0; se = s.ents[se].parent {
		qcq := s.ents[se].rq
		// "Handle any unfinished DELAY_DEQUEUE business first"
		// (v6.12..v6.17): a delayed entity is dequeued for good and
		// enqueued again, awake.
		if s.ents[se].delayed {
			s.dequeueEntity(qcq, se, deqSleep|deqDelayed)
			s.ents[se].delayed = false
		} else if s.ents[se].onRq {
			break
		}
		s.enqueueEntity(qcq, se, enqWakeup)
		q := &s.rqs[qcq]
		q.hNr += delta
		q.idleHNr += idleDelta
		if q.idle {
			idleDelta = delta
		}
		if q.throttled {
			stopped = true
			break
		}
	}
	if !stopped {
		for ; se >= 0; se = s.ents[se].parent {
			qcq := s.ents[se].rq
			s.updateRqLoad(qcq)
			s.updateCfsGroup(se)
			q := &s.rqs[qcq]
			q.hNr += delta
			q.idleHNr += idleDelta
			if q.idle {
				idleDelta = delta
			}
			if q.throttled {
				break
			}
		}
	}
	if !s.throttledHierarchy(s.ents[r.ge].rq) {
		s.cpus[c].nrDelayed += delayedDelta
		s.cpus[c].idleDelayed += delayedIdleDelta
	}
	s.setIdle(c, s.cpuIdle(c))
	// Determine whether we need to wake up a potentially idle CPU.
	if s.cpus[c].curr < 0 && s.rqs[s.cpus[c].root].nr > 0 {
		s.reschedCurr(c, false)
	}
	if s.trace != nil {
		s.trace("cpu%d unthrottle tg%d", c, r.tg)
	}
}

// periodTimer is sched_cfs_period_timer()/do_sched_cfs_period_timer(): refill
// the quota (debt carries over) and unthrottle the group's queues.
func (s *sim) periodTimer(tgi int32, due int64) {
	tg := &s.tgs[tgi]
	tg.runtime = min(tg.runtime+tg.quota, tg.quota)
	if tg.runtime > 0 {
		for c := int32(0); c < s.nCPU; c++ {
			if cq := tg.rq[c]; s.rqs[cq].throttled {
				s.unthrottleCfsRq(cq)
			}
		}
	}
	// hrtimer_forward_now(): the next period boundary after now, on the
	// timer's grid (a host pause can make it miss some; it refills once).
	s.push(event{t: hrtimerForward(due, s.now, tg.period), kind: evPeriod, a: tgi})
}
