package main

import (
	"fmt"
	"math"
	"sort"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

// Run is one stored `schedlab run`: what the node measured (its
// noderun.json) and what a replay of it predicted.
type Run struct {
	// Dir names the run in messages and in the runs table.
	Dir string
	// Status is the node's run status as the run stored it.
	Status v1alpha1.NodeRunStatus
	// Load is the 1-minute load average at the start, "" if not stored.
	Load string
	// Pred is the replay's report: the run's groups with their predictions.
	Pred *experiment.Report
}

// Scenario is the experiment's name.
func (r *Run) Scenario() string { return r.Pred.Experiment }

// replicas is the number of seeds behind each of the run's predictions.
func (r *Run) replicas() int {
	if r.Pred.Spec != nil {
		return experiment.Replicas(r.Pred.Spec, experiment.PredictOptions{})
	}
	return experiment.DefaultReplicas
}

// Thresholds are the late-fraction thresholds, in the order of
// v1alpha1.LateFraction's fields.
var Thresholds = [3]string{"100 µs", "1 ms", "10 ms"}

func lateFractions(l *v1alpha1.LateFraction) [3]float64 {
	if l == nil {
		return [3]float64{}
	}
	return [3]float64{l.Over100us, l.Over1ms, l.Over10ms}
}

// Row is one scenario × variant × group over all its runs.
type Row struct {
	Scenario, Variant, Group string

	// CPU is the measured CPU of every window; PredCPU the predicted mean
	// of every run.
	CPU, PredCPU []float64
	// P50 and P99 of every window with wake-ups; PredP50 and PredP99 of
	// every run's prediction.
	P50, P99, PredP50, PredP99 []float64

	// N is the measured wake-ups over all windows; K the measured ones
	// later than each threshold.
	N int64
	K [3]int64
	// PredFrac holds every run's predicted fraction per threshold (the
	// mean over its seeds).
	PredFrac [3][]float64
	// PredN is the simulated wake-ups over every run's seeds; PredK the
	// simulated ones later than each threshold.
	PredN float64
	PredK [3]float64

	// Vol and Invol are every window's voluntary and involuntary context
	// switches per second (the group's tasks summed); PredVol and
	// PredInvol every run's predicted ones (the mean over its seeds).
	Vol, Invol, PredVol, PredInvol []float64
}

// Latency says whether the row measured wake-ups.
func (r *Row) Latency() bool { return r.N > 0 }

// CPUDiff is the predicted mean minus the measured mean.
func (r *Row) CPUDiff() float64 { return mean(r.PredCPU) - mean(r.CPU) }

// CPUHolds: the predicted mean lies within 0.03 CPU of the measured mean.
func (r *Row) CPUHolds() bool {
	return len(r.CPU) > 0 && len(r.PredCPU) > 0 && math.Abs(r.CPUDiff()) <= 0.03+1e-12
}

// LateVerdict is the judgement of one late fraction.
type LateVerdict struct {
	Holds bool
	// Rule is "both 0", "×2" (the factor-2 rule, 10 or more measured
	// events) or "Poisson" (the counts' exact 95 % intervals, fewer than
	// 10 measured events).
	Rule string
	// Measured and Predicted are the fractions compared.
	Measured, Predicted float64
}

// Late judges the row's fraction beyond threshold i.
func (r *Row) Late(i int) LateVerdict {
	return judgeLate(r.K[i], r.N, mean(r.PredFrac[i]), r.PredK[i], r.PredN)
}

// judgeLate is VALIDATION.md's rule: a pair where both sides are 0 holds;
// with 10 or more measured events the predicted fraction must lie within a
// factor 2 of the measured one; below 10 the exact 95 % Poisson intervals
// of the measured count k (of n wake-ups) and of the predicted count (predK
// of predN simulated wake-ups), both as rates per wake-up, must overlap.
func judgeLate(k, n int64, predFrac, predK, predN float64) LateVerdict {
	v := LateVerdict{Predicted: predFrac}
	if n > 0 {
		v.Measured = float64(k) / float64(n)
	}
	kp := int64(math.Round(predK))
	switch {
	case k == 0 && kp == 0 && predFrac == 0:
		v.Rule, v.Holds = "both 0", true
	case k >= 10:
		v.Rule = "×2"
		v.Holds = predFrac >= v.Measured/2 && predFrac <= 2*v.Measured
	default:
		v.Rule = "Poisson"
		if n == 0 || predN <= 0 {
			return v
		}
		mlo, mhi := poisson95(k)
		plo, phi := poisson95(kp)
		mlo, mhi = mlo/float64(n), mhi/float64(n)
		plo, phi = plo/predN, phi/predN
		v.Holds = mlo <= phi && plo <= mhi
	}
	return v
}

type rowKey struct{ scenario, variant, group string }

// BuildRows aggregates the runs into rows, in the order of scenarios given
// (scenarios not in it follow in the order of their first run's start),
// then the experiment's variants and groups.
func BuildRows(runs []*Run, order []string) ([]*Row, error) {
	sorted := append([]*Run(nil), runs...)
	sort.SliceStable(sorted, func(i, j int) bool { return startOf(sorted[i]).Before(startOf(sorted[j])) })
	rank := map[string]int{}
	for i, s := range order {
		rank[s] = i
	}
	var scenarios []string
	seen := map[string]bool{}
	for _, r := range sorted {
		if !seen[r.Scenario()] {
			seen[r.Scenario()] = true
			scenarios = append(scenarios, r.Scenario())
		}
	}
	sort.SliceStable(scenarios, func(i, j int) bool {
		ri, iok := rank[scenarios[i]]
		rj, jok := rank[scenarios[j]]
		switch {
		case iok && jok:
			return ri < rj
		default:
			return iok && !jok
		}
	})

	rows := map[rowKey]*Row{}
	var out []*Row
	for _, s := range scenarios {
		for _, r := range sorted {
			if r.Scenario() != s {
				continue
			}
			for _, v := range r.Pred.Variants {
				for _, g := range v.Groups {
					k := rowKey{s, v.Name, g.Name}
					if rows[k] == nil {
						rows[k] = &Row{Scenario: s, Variant: v.Name, Group: g.Name}
						out = append(out, rows[k])
					}
				}
			}
		}
	}
	for _, r := range sorted {
		if err := addRun(rows, r); err != nil {
			return nil, err
		}
	}
	// A group the node measured in no window (a parent without tasks of
	// its own, or a variant unsupported here) has no row.
	kept := out[:0]
	for _, row := range out {
		if len(row.CPU) > 0 {
			kept = append(kept, row)
		}
	}
	return kept, nil
}

func addRun(rows map[rowKey]*Row, r *Run) error {
	s := r.Scenario()
	for _, w := range r.Status.Windows {
		if w.Unsupported != "" {
			continue
		}
		for _, g := range w.Groups {
			row := rows[rowKey{s, w.Variant, g.Name}]
			if row == nil {
				return fmt.Errorf("%s: window of variant %q has group %q, which the replay did not predict", r.Dir, w.Variant, g.Name)
			}
			m := g.Metrics
			row.CPU = append(row.CPU, m.CPU)
			addSwitches(&row.Vol, &row.Invol, m.CtxSwitchesPerSec)
			if l := m.WakeupLatencyUs; l != nil && l.Count > 0 {
				row.P50 = append(row.P50, l.P50)
				row.P99 = append(row.P99, l.P99)
				row.N += l.Count
				for i, f := range lateFractions(m.LateFraction) {
					row.K[i] += int64(math.Round(f * float64(l.Count)))
				}
			}
		}
	}
	reps := float64(r.replicas())
	for _, v := range r.Pred.Variants {
		for _, g := range v.Groups {
			p := g.Predicted
			if p == nil {
				continue
			}
			row := rows[rowKey{s, v.Name, g.Name}]
			row.PredCPU = append(row.PredCPU, p.CPU)
			addSwitches(&row.PredVol, &row.PredInvol, p.CtxSwitchesPerSec)
			if l := p.WakeupLatencyUs; l != nil && l.Count > 0 {
				row.PredP50 = append(row.PredP50, l.P50)
				row.PredP99 = append(row.PredP99, l.P99)
				n := float64(l.Count) * reps
				row.PredN += n
				for i, f := range lateFractions(p.LateFraction) {
					row.PredFrac[i] = append(row.PredFrac[i], f)
					row.PredK[i] += f * n
				}
			}
		}
	}
	return nil
}

// Tally counts the rows held: CPU rows, and late fractions per threshold.
type Tally struct {
	CPUHeld, CPURows   int
	LateHeld, LateRows [3]int
}

// Count tallies rows.
func Count(rows []*Row) Tally {
	var t Tally
	for _, r := range rows {
		if len(r.CPU) > 0 && len(r.PredCPU) > 0 {
			t.CPURows++
			if r.CPUHolds() {
				t.CPUHeld++
			}
		}
		if !r.Latency() {
			continue
		}
		for i := range Thresholds {
			t.LateRows[i]++
			if r.Late(i).Holds {
				t.LateHeld[i]++
			}
		}
	}
	return t
}

// Late sums the late fractions over the thresholds.
func (t Tally) Late() (held, rows int) {
	for i := range Thresholds {
		held += t.LateHeld[i]
		rows += t.LateRows[i]
	}
	return held, rows
}
