package util

import "math"

// FairShares is weighted max-min fairness of single-task groups (one
// always-runnable task each) on cpus CPUs: each gets at most one CPU, the
// rest is shared by weight (water-filling: a group whose weighted part of
// what is left exceeds one CPU is capped at one, and the others share the
// remainder again).
func FairShares(cpus float64, weights []float64) []float64 {
	out := make([]float64, len(weights))
	capped := make([]bool, len(weights))
	left := cpus
	for {
		var sum float64
		for i, w := range weights {
			if !capped[i] {
				sum += w
			}
		}
		changed := false
		for i, w := range weights {
			if !capped[i] && left*w/sum > 1 {
				capped[i], out[i], left, changed = true, 1, left-1, true
			}
		}
		if !changed {
			for i, w := range weights {
				if !capped[i] {
					out[i] = left * w / sum
				}
			}
			return out
		}
	}
}

// NoiseLoss is, per single-task group of FairShares(cpus, weights), the most
// CPU it can lose for each CPU of time other processes take from the groups'
// CPUs over a window: 1 for a group capped at one CPU, w / (the uncapped
// groups' weights) for the others.
//
// Derivation. Always runnable, the groups' tasks leave no CPU time idle, so
// the time others take (noise N, in CPUs) comes out of theirs, N in all.
// Without others a capped group's task runs alone on its CPU and the
// uncapped groups' tasks share the remaining CPUs. A CPU's time goes to its
// runnable entities in proportion to their weights (EEVDF, Linux 6.6+:
// update_curr() advances each entity's vruntime by its runtime scaled by
// NICE_0_LOAD / weight, and pick_eevdf() picks among those not ahead of
// avg_vruntime()), so others' time n on the uncapped groups' CPUs takes
// n·w/W from an uncapped group of weight w (W: the uncapped groups'
// weights together), their ratios unchanged, and others' time on a capped
// group's CPU is all its loss. With n ≤ N the loss of group i is at most
// N·NoiseLoss[i]. Less CPU to share never gives a group more than its
// share of all of it (water-filling is monotone in the capacity), so a
// group's CPU lies in [want − N·NoiseLoss − tol, want + tol], where want
// is its FairShares and tol the measurement's own tolerance.
//
// The bound keeps the placement the groups have without others. Others'
// work heavy enough to move a task (on two CPUs, more than two nice-0
// tasks' weight beside the two uncapped groups of 100 and 200) takes more
// than two fifths of that CPU, and the moved placement stays within the
// bounds then too (the heaviest group shares a CPU with the lightest, losing a
// fifth; the middle one runs beside the others' work).
func NoiseLoss(cpus float64, weights []float64) []float64 {
	want := FairShares(cpus, weights)
	var uncapped float64
	for i, w := range weights {
		if want[i] < 1 {
			uncapped += w
		}
	}
	out := make([]float64, len(weights))
	for i, w := range weights {
		if want[i] >= 1 {
			out[i] = 1
		} else {
			out[i] = w / uncapped
		}
	}
	return out
}

// SharedByWeight is, per group of FairShares(cpus, weights) that is not
// capped at one CPU, its weight's part of the CPU those groups got together
// (got, measured); NaN for a capped group.
//
// The uncapped groups' tasks share the same CPUs, and a CPU's time goes to
// its entities by weight (see NoiseLoss): others' time there takes from
// each in proportion to its weight, so what they got together is split by
// their weights however much others took, busy or quiet. When others' work
// takes most of the CPUs every group may fall below one CPU and all share
// both CPUs; their split is by weight then too, but this judges only the
// groups uncapped without others. The premise is the placement NoiseLoss
// keeps: on two CPUs, others' work of more than two nice-0 tasks' weight
// on the light groups' CPU moves the lightest beside the capped one, and
// its part is then off by (N − 0.6)/3 of a CPU (the model of NoiseLoss's
// moved placement): within 0.05 up to N = 0.75.
func SharedByWeight(cpus float64, weights, got []float64) []float64 {
	want := FairShares(cpus, weights)
	var w, sum float64
	for i := range weights {
		if want[i] < 1 {
			w, sum = w+weights[i], sum+got[i]
		}
	}
	out := make([]float64, len(weights))
	for i := range weights {
		out[i] = math.NaN()
		if want[i] < 1 {
			out[i] = sum * weights[i] / w
		}
	}
	return out
}
