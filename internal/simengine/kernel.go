package simengine

import (
	"fmt"
	"strconv"
	"strings"
)

// kernelVersion is a kernel release, major.minor.patch.
type kernelVersion struct{ major, minor, patch int }

// parseKernel reads a release as uname -r prints it ("6.18.44-fc-v1045") or
// as a shape names it ("6.18", "6.12.0"): the leading numbers count, a
// suffix after them is ignored.
func parseKernel(s string) (kernelVersion, error) {
	var v kernelVersion
	rest := s
	for i, p := range []*int{&v.major, &v.minor, &v.patch} {
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == 0 {
			if i < 2 {
				return v, fmt.Errorf("node.kernel %q is not a kernel release; use one such as \"6.12\", \"6.18.44\" or what uname -r prints", s)
			}
			break
		}
		n, err := strconv.Atoi(rest[:j])
		if err != nil || n > 1000 {
			return v, fmt.Errorf("node.kernel %q is not a kernel release; use one such as \"6.12\", \"6.18.44\" or what uname -r prints", s)
		}
		*p = n
		rest = rest[j:]
		if i < 2 {
			if !strings.HasPrefix(rest, ".") {
				if i == 0 {
					return v, fmt.Errorf("node.kernel %q is not a kernel release; use one such as \"6.12\", \"6.18.44\" or what uname -r prints", s)
				}
				break
			}
			rest = rest[1:]
		}
	}
	return v, nil
}

// atLeast reports v >= major.minor.patch.
func (v kernelVersion) atLeast(major, minor, patch int) bool {
	if v.major != major {
		return v.major > major
	}
	if v.minor != minor {
		return v.minor > minor
	}
	return v.patch >= patch
}

// kernelRules are the version-dependent code paths and defaults of the
// fair class that the simulator follows.
type kernelRules struct {
	// eevdf: EEVDF replaced CFS in v6.6.
	eevdf bool
	// legacySlice: the base slice is 0.75 ms; 0.70 ms from commit
	// 2ae891b82695 ("sched: Reduce the default slice to avoid tasks getting
	// an extra tick"), merged for v6.15 and taken by the stable series in
	// 6.14.9, 6.12.31 and 6.6.93 (stable reviews of 27 May and 2 June 2025;
	// 6.12.67's and 6.18's sources have 700000, 6.12.0's 750000). The other
	// EEVDF series (6.7..6.11, 6.13) ended with 0.75 ms.
	legacySlice bool
	// completeEEVDF: DELAY_DEQUEUE and PREEMPT_SHORT exist from v6.12.
	completeEEVDF bool
	// reweightPlaceCurr: reweight_entity() of a queued entity ends in
	// place_entity(cfs_rq, se, 0) from v6.13 (commit 6d71a9c61604,
	// "sched/fair: Fix EEVDF entity placement bug causing scheduling
	// lag"), which for the running entity (cfs_rq->curr) counts the entity
	// itself in avg_vruntime() and in the lag scaling. Reverted in v7.0
	// (commit 101f3498b4bd) and in the 6.18.y stable series at 6.18.45.
	reweightPlaceCurr bool
	// lagClampMaxSlice: update_entity_lag() clamps the lag at the largest
	// slice queued on the cfs_rq (curr included, cfs_rq_max_slice()) plus
	// TICK_NSEC, weight-scaled, where v6.6 clamped it at max(2 * se->slice,
	// TICK_NSEC): commit 6e3c0a4e1ad1 ("sched/fair: Fix lag clamp", tip
	// sched/urgent of 23 February 2026, so v7.0). The stable series took it
	// in the round of 10 March 2026 (6.19.7's review posts it as 029/311;
	// 6.12.77-rc1 carried it too, but that round's 6.12 pair was reported
	// to freeze at boot and 6.12.y took it again in September 2026, so 6.12
	// keeps the v6.6 clamp here). In 6.18.y, fair.c of 6.18.35 has it
	// (update_entity_lag() with cfs_rq_max_slice(), beside the v6.13
	// placement in reweight_entity()), and linux-6.18.y took its two
	// follow-up fixes in September 2026 ("sched/eevdf: Fix augmented
	// max_slice", "Fix rb augmented with multi fields"); its first 6.18.y
	// release is taken as 6.18.17, the release of 6.19.7's round (6.18.18
	// had 13 patches and 6.18.19 no change to fair.c).
	lagClampMaxSlice bool
	// didPreemptShort: update_curr() of v6.12..v6.16 reschedules a curr
	// whose slice protection was cancelled (its stashed deadline is no
	// longer its deadline) once it is not eligible (did_preempt_short()).
	// v6.17 replaced it with se->vprot (see vprot). The same releases
	// decide a shorter-slice wake-up with do_preempt_short() (its
	// eligibility and deadline tests, cancelling curr's protection even
	// when the wakee is not picked).
	didPreemptShort bool
	// vprot: the slice protection of v6.17 and later (Vincent Guittot's
	// series, commits 052c3d87c82e "Limit run to parity to the min slice
	// of enqueued entities", 9de74a9850b9 "Remove spurious shorter slice
	// preemption", 3a0baa8e6c57 "Fix entity's lag with run to parity",
	// 0b9ca2dcabc3 "Always trigger resched at the end of a protected
	// period", and "Fix NO_RUN_TO_PARITY case"): set_next_entity() sets
	// se->vprot = min(deadline, vruntime + the queue's smallest slice)
	// (set_protect_slice(); with NO_RUN_TO_PARITY a quantum of
	// min(normalized base slice, slice)); pick_eevdf() keeps curr while
	// vruntime < vprot; update_curr() reschedules whenever curr is past it
	// and another entity is queued; a shorter-slice wake-up that does not
	// preempt only tightens it (update_protect_slice()). se->vprot shares a
	// union with se->vlag (until tip commit 6b6d09f, December 2025), so
	// reweight_entity() of curr, which writes se->vlag, ends the protection.
	vprot bool
	// pickBuddy: the pick takes an eligible cfs_rq->next first (PICK_BUDDY,
	// on by default), which dequeue_entities() sets to the group of a task
	// that goes to sleep when the group keeps other entities. Commit
	// 2a77e4be12cb ("sched/fair: Untangle NEXT_BUDDY and pick_next_task()"),
	// v6.14, taken by the stable series in February 2025 (6.13.2, reviewed
	// 5 February; 6.12.13 in the same round); before it the pick took the
	// buddy only under NEXT_BUDDY, off by default.
	pickBuddy bool
	// buddyInPickEEVDF: the PICK_BUDDY test sits in __pick_eevdf() itself,
	// so the wake-up preemption's pick sees the buddy too (commit
	// e837456fdca8, "sched/fair: Reimplement NEXT_BUDDY to align with EEVDF
	// goals", v6.19; in the 6.18.y stable series from the round reviewed as
	// 6.18.32-rc1 on 20 May 2026 and released as 6.18.33, whose pushes of
	// 23 May list it); before, it is in pick_next_entity() only. Its
	// NEXT_BUDDY side (a wakee as buddy) stays off: features.h keeps
	// NEXT_BUDDY false in 6.18.y (the node's sysctl_sched_features 0x5f0e7df
	// has bit 5 clear).
	buddyInPickEEVDF bool
	// idleStrictHierarchy: check_preempt_wakeup_fair() makes its SCHED_IDLE
	// tests on the entities find_matching_se() returns, and gives up on
	// batch and idle wakees after them (commit faa42d29419d, v6.12, and
	// 6.10.13); before, a SCHED_IDLE curr was preempted by any non-idle
	// wakee whatever their groups, and a batch or idle wakee gave up first.
	idleStrictHierarchy bool
	// newidleCostGate: sched_balance_newidle() (newidle_balance() before
	// v6.10) skips the balance when rq->avg_idle < sd->max_newidle_lb_cost
	// from v5.16, when it is below sysctl_sched_migration_cost before.
	newidleCostGate bool
	// newidleBump: v6.18.0..v6.18.4 count a new-idle balance that pulled
	// nothing as 3/2 of the domain's max cost (newidle.go).
	newidleBump bool
	// newidleProportional: NI_RANDOM, v6.18.5+ and v6.19+ (newidle.go).
	newidleProportional bool
}

// referenceKernel is the release the simulator models when Node.Kernel is
// empty: v6.12 (mainline, before any stable backport).
var referenceKernel = kernelVersion{6, 12, 0}

// rulesFor returns the rules of release v.
func rulesFor(v kernelVersion) kernelRules {
	return kernelRules{
		eevdf: v.atLeast(6, 6, 0),
		legacySlice: !(v.atLeast(6, 15, 0) || v.major == 6 && (v.minor == 14 && v.patch >= 9 ||
			v.minor == 12 && v.patch >= 31 || v.minor == 6 && v.patch >= 93)),
		completeEEVDF:     v.atLeast(6, 12, 0),
		reweightPlaceCurr: v.atLeast(6, 13, 0) && !v.atLeast(7, 0, 0) && !(v.major == 6 && v.minor == 18 && v.patch >= 45),
		lagClampMaxSlice: v.atLeast(7, 0, 0) || v.major == 6 && (v.minor == 19 && v.patch >= 7 ||
			v.minor == 18 && v.patch >= 17),
		didPreemptShort: v.atLeast(6, 12, 0) && !v.atLeast(6, 17, 0),
		vprot:           v.atLeast(6, 17, 0),
		pickBuddy: v.atLeast(6, 14, 0) || v.major == 6 && (v.minor == 13 && v.patch >= 2 ||
			v.minor == 12 && v.patch >= 13),
		buddyInPickEEVDF:    v.atLeast(6, 19, 0) || v.major == 6 && v.minor == 18 && v.patch >= 33,
		idleStrictHierarchy: v.atLeast(6, 12, 0) || v.major == 6 && v.minor == 10 && v.patch >= 13,
		newidleCostGate:     v.atLeast(5, 16, 0),
		newidleBump:         v.major == 6 && v.minor == 18 && v.patch < 5,
		newidleProportional: v.atLeast(6, 19, 0) || v.major == 6 && v.minor == 18 && v.patch >= 5,
	}
}

// nodeKernel returns the release n models.
func nodeKernel(n Node) kernelVersion {
	if n.Kernel == "" {
		return referenceKernel
	}
	v, err := parseKernel(n.Kernel)
	if err != nil {
		return referenceKernel // validate() refuses it before a run
	}
	return v
}

// nodeScheduler is n's fair-class algorithm: Node.Scheduler, or the
// kernel's (CFS before 6.6).
func nodeScheduler(n Node) Scheduler {
	if n.Scheduler != "" {
		return n.Scheduler
	}
	if !rulesFor(nodeKernel(n)).eevdf {
		return CFS
	}
	return EEVDF
}
