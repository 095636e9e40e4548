package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// Context switches (-switches): per group, voluntary and involuntary
// switches per second of the group's tasks summed (the node reads each work
// thread's voluntary_ctxt_switches and nonvoluntary_ctxt_switches from
// /proc/PID/task/TID/status, the kernel's nvcsw and nivcsw; the simulator
// counts a block as voluntary and a switch away from a still-queued task as
// involuntary), measured next to predicted.

// SwitchFactor and SwitchFloor are the rule of a switches row: the
// predicted mean holds when it lies within a factor 1.5 of the measured
// mean, or within 5 switches per second of it. In the session-9 campaign
// the windows of most rows spread by a coefficient of variation of 0.2 or
// less (a single window within ±40 % of the row's mean at two standard
// deviations; the mean of 6-12 windows far closer), so a prediction off by
// more than ×1.5 is a different rate, not a window's luck. The floor covers
// the rows the model keeps at zero: a waking probe's involuntary switches
// were 0-4.1 per second in its windows (the agent's and the kernel's own
// threads preempting it), which no factor can judge against a predicted 0.
const (
	SwitchFactor = 1.5
	SwitchFloor  = 5.0
)

// SwitchVerdict judges one rate of a row.
type SwitchVerdict struct {
	Holds bool
	// Rule is "floor" (within SwitchFloor per second) or "×1.5".
	Rule string
	// Measured and Predicted are the means compared; Ratio is predicted
	// over measured (+Inf when only the prediction is above 0, NaN when
	// both are 0).
	Measured, Predicted, Ratio float64
}

// judgeSwitches is the rule of a switches row (SwitchFactor, SwitchFloor).
func judgeSwitches(measured, predicted float64) SwitchVerdict {
	v := SwitchVerdict{Measured: measured, Predicted: predicted, Ratio: predicted / measured}
	if math.Abs(predicted-measured) <= SwitchFloor+1e-9 {
		v.Rule, v.Holds = "floor", true
		return v
	}
	v.Rule = "×1.5"
	v.Holds = predicted >= measured/SwitchFactor-1e-9 && predicted <= measured*SwitchFactor+1e-9
	return v
}

// Switches says whether the row has switch rates on both sides.
func (r *Row) Switches() bool { return len(r.Vol) > 0 && len(r.PredVol) > 0 }

// SwitchesVol and SwitchesInvol judge the row's voluntary and involuntary
// rates: the mean over the windows against the mean of the runs'
// predictions.
func (r *Row) SwitchesVol() SwitchVerdict   { return judgeSwitches(mean(r.Vol), mean(r.PredVol)) }
func (r *Row) SwitchesInvol() SwitchVerdict { return judgeSwitches(mean(r.Invol), mean(r.PredInvol)) }

func addSwitches(vol, invol *[]float64, c *v1alpha1.ContextSwitches) {
	if c == nil {
		return
	}
	*vol = append(*vol, c.Voluntary)
	*invol = append(*invol, c.Involuntary)
}

// SwitchTally counts the switches rows held.
type SwitchTally struct {
	Rows, VolHeld, InvolHeld int
}

// CountSwitches tallies the rows with switch rates on both sides.
func CountSwitches(rows []*Row) SwitchTally {
	var t SwitchTally
	for _, r := range rows {
		if !r.Switches() {
			continue
		}
		t.Rows++
		if r.SwitchesVol().Holds {
			t.VolHeld++
		}
		if r.SwitchesInvol().Holds {
			t.InvolHeld++
		}
	}
	return t
}

// rate prints a rate per second: one decimal below 10, none above.
func rate(v float64) string {
	if math.Abs(v) < 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func rateRange(v []float64) string {
	lo, hi := minMax(v)
	return fmt.Sprintf("%s (%s–%s)", rate(mean(v)), rate(lo), rate(hi))
}

func switchCell(v SwitchVerdict) string {
	if v.Rule == "floor" {
		return "holds (≤ 5/s)"
	}
	r := "×" + strconvRatio(v.Ratio)
	return verdict(v.Holds) + " " + r
}

func strconvRatio(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "∞"
	case x >= 10:
		return fmt.Sprintf("%.0f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

// WriteSwitches prints the context-switch rows: per group, the windows'
// mean voluntary and involuntary switches per second with their range, the
// runs' predicted mean with its range, and the verdicts (predicted over
// measured, judged by SwitchFactor and SwitchFloor); then the tally.
func WriteSwitches(w io.Writer, rows []*Row) {
	fmt.Fprintln(w, "| scenario | variant | group | windows | voluntary/s measured (windows' range) | predicted (runs' range) | voluntary | involuntary/s measured (windows' range) | predicted (runs' range) | involuntary |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	prev := ""
	for _, r := range rows {
		if !r.Switches() {
			continue
		}
		scen := r.Scenario
		if scen == prev {
			scen = ""
		}
		prev = r.Scenario
		cells := []string{scen, r.Variant, r.Group, fmt.Sprint(len(r.Vol)),
			rateRange(r.Vol), rateRange(r.PredVol), switchCell(r.SwitchesVol()),
			rateRange(r.Invol), rateRange(r.PredInvol), switchCell(r.SwitchesInvol())}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	t := CountSwitches(rows)
	fmt.Fprintf(w, "\nContext switches within ×%.1f (or %.0f per second): voluntary %d of %d rows hold, involuntary %d of %d.\n",
		SwitchFactor, SwitchFloor, t.VolHeld, t.Rows, t.InvolHeld, t.Rows)
}
