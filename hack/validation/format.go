package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// frac prints a fraction with three significant digits, without an
// exponent: 0.621, 0.00920, 0.0000113.
func frac(v float64) string {
	if v == 0 {
		return "0"
	}
	d := 2 - int(math.Floor(math.Log10(math.Abs(v))))
	d = max(d, 3)
	return strconv.FormatFloat(v, 'f', d, 64)
}

// signed prints a difference with its sign and three decimals; one that
// rounds to zero is +0.000 whatever its sign.
func signed(v float64) string {
	if math.Abs(v) < 0.0005 {
		v = 0
	}
	return fmt.Sprintf("%+.3f", v)
}

func verdict(holds bool) string {
	if holds {
		return "holds"
	}
	return "**misses**"
}

// WriteTable prints the rows as VALIDATION.md's table.
func WriteTable(w io.Writer, rows []*Row) {
	fmt.Fprintln(w, "| scenario | variant | group | windows | measured cpu (95 %) | predicted cpu (runs) | difference | cpu ≤ 0.03 | p50 / p99 µs measured | predicted | wake-ups | beyond 100 µs: measured (count) / predicted | beyond 1 ms | beyond 10 ms |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	prev := ""
	for _, r := range rows {
		scen := r.Scenario
		if scen == prev {
			scen = ""
		}
		prev = r.Scenario
		lo, hi := minMax(r.PredCPU)
		cells := []string{
			scen, r.Variant, r.Group, strconv.Itoa(len(r.CPU)),
			fmt.Sprintf("%.3f ± %.3f", mean(r.CPU), tHalf95(r.CPU)),
			fmt.Sprintf("%.3f (%.3f–%.3f)", mean(r.PredCPU), lo, hi),
			signed(r.CPUDiff()),
			verdict(r.CPUHolds()),
		}
		if len(r.PredCPU) == 0 {
			cells[5], cells[6], cells[7] = "none", "", ""
		}
		if r.Latency() {
			cells = append(cells,
				fmt.Sprintf("%.0f / %.0f", mean(r.P50), mean(r.P99)),
				fmt.Sprintf("%.0f / %.0f", mean(r.PredP50), mean(r.PredP99)),
				strconv.FormatInt(r.N, 10))
			for i := range Thresholds {
				cells = append(cells, lateCell(r, i))
			}
		} else {
			cells = append(cells, "", "", "", "", "", "")
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

func lateCell(r *Row, i int) string {
	v := r.Late(i)
	s := fmt.Sprintf("%s (%d) / %s", frac(v.Measured), r.K[i], frac(v.Predicted))
	switch v.Rule {
	case "Poisson":
		s += fmt.Sprintf(" (%.0f of %s simulated): %s (Poisson)", math.Round(r.PredK[i]), count(r.PredN), verdict(v.Holds))
	case "both 0":
		s += ": holds (both 0)"
	default:
		s += ": " + verdict(v.Holds) + " ×2"
	}
	return s
}

// count prints a large count shortly: 3.1M, 420k, 950.
func count(n float64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", n/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.0fk", n/1e3)
	default:
		return fmt.Sprintf("%.0f", n)
	}
}

// WriteTally prints the rows held.
func WriteTally(w io.Writer, t Tally) {
	held, rows := t.Late()
	fmt.Fprintf(w, "CPU within 0.03: %d of %d rows hold.\n", t.CPUHeld, t.CPURows)
	fmt.Fprintf(w, "Late fractions: %d of %d hold (", held, rows)
	for i, th := range Thresholds {
		if i > 0 {
			fmt.Fprint(w, "; ")
		}
		fmt.Fprintf(w, "beyond %s %d of %d", th, t.LateHeld[i], t.LateRows[i])
	}
	fmt.Fprintln(w, ").")
}

// WriteMedians prints, for every row with wake-ups, the windows' and the
// runs' p50 and p99 as medians with their ranges: a p99 sits on a knee, so
// a mean of p99s can be far from most of them.
func WriteMedians(w io.Writer, rows []*Row) {
	fmt.Fprintln(w, "| scenario | variant | group | p50 µs: windows' median (range) | runs' predicted median (range) | p99 µs: windows' median (range) | runs' predicted median (range) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	rng := func(v []float64) string {
		lo, hi := minMax(v)
		return fmt.Sprintf("%.0f (%.0f–%.0f)", median(v), lo, hi)
	}
	for _, r := range rows {
		if !r.Latency() {
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Scenario, r.Variant, r.Group, rng(r.P50), rng(r.PredP50), rng(r.P99), rng(r.PredP99))
	}
}

// Names turns a noise source into the label the runs table shows: its
// command name (or an alias for it), marked "(idle)" when it runs in an
// idle cgroup or all its recorded threads are SCHED_IDLE.
type Names map[string]string

func (n Names) label(s *v1alpha1.NoiseSource) string {
	name := s.Name
	if a, ok := n[name]; ok {
		name = a
	}
	idle := s.CgroupIdle
	if !idle && len(s.Threads) > 0 {
		idle = true
		for _, t := range s.Threads {
			idle = idle && t.Policy == "Idle"
		}
	}
	if idle {
		name += " (idle)"
	}
	return name
}

// noiseMeans is each label's mean CPU over the windows (absent = 0).
func (n Names) noiseMeans(windows []*v1alpha1.WindowResult) map[string]float64 {
	sum := map[string]float64{}
	for _, w := range windows {
		for i := range w.NoiseSources {
			sum[n.label(&w.NoiseSources[i])] += w.NoiseSources[i].CPU
		}
	}
	for k := range sum {
		sum[k] /= float64(len(windows))
	}
	return sum
}

func topNoise(m map[string]float64, k int) string {
	type kv struct {
		name string
		cpu  float64
	}
	var all []kv
	for n, c := range m {
		all = append(all, kv{n, c})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].cpu != all[j].cpu {
			return all[i].cpu > all[j].cpu
		}
		return all[i].name < all[j].name
	})
	var parts []string
	for i := 0; i < len(all) && i < k; i++ {
		parts = append(parts, fmt.Sprintf("%s %.3f", all[i].name, all[i].cpu))
	}
	return strings.Join(parts, ", ")
}

func measuredWindows(st *v1alpha1.NodeRunStatus) []*v1alpha1.WindowResult {
	var out []*v1alpha1.WindowResult
	for i := range st.Windows {
		if st.Windows[i].Unsupported == "" {
			out = append(out, &st.Windows[i])
		}
	}
	return out
}

func startOf(r *Run) time.Time {
	if r.Status.StartTime != nil {
		return r.Status.StartTime.Time
	}
	return time.Time{}
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05") }

// WriteRuns prints one line per run: its times, the load at its start,
// the other processes' CPUs in its calibration window and in its measured
// windows, the noise sources that took the most, the calibration window's
// timer path (and its cold wake-up and process switch figures, when it
// measured them), and the windows the agent flagged or re-ran.
func WriteRuns(w io.Writer, runs []*Run, rows []*Row, names Names) {
	fmt.Fprintln(w, "| scenario | run (UTC) | load at start | others' CPUs, calibration window | others' CPUs, measured windows (mean, max) | the most CPU among them (mean over the windows) | window timer p5 / p50 / p99 µs | windows: re-run attempts, noisy, perturbed |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	order := map[string]int{}
	for _, r := range rows {
		if _, ok := order[r.Scenario]; !ok {
			order[r.Scenario] = len(order)
		}
	}
	sorted := append([]*Run(nil), runs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := order[sorted[i].Scenario()], order[sorted[j].Scenario()]
		if a != b {
			return a < b
		}
		return startOf(sorted[i]).Before(startOf(sorted[j]))
	})
	prev := ""
	for _, r := range sorted {
		scen := r.Scenario()
		if scen == prev {
			scen = ""
		}
		prev = r.Scenario()
		st := &r.Status
		when := ""
		if st.StartTime != nil {
			when = clock(st.StartTime.Time)
			if st.CompletionTime != nil {
				when += "–" + clock(st.CompletionTime.Time)
			}
		}
		cal, timer := "", ""
		if c := st.Calibration; c != nil {
			cal = fmt.Sprintf("%.2f", c.NoiseCPU)
			if q := c.Constants.TimerExpiryQuantilesNs; len(q) == 7 {
				timer = fmt.Sprintf("%.1f / %.1f / %.1f", float64(q[0])/1e3, float64(q[2])/1e3, float64(q[6])/1e3)
			}
			timer += coldWakeCell(c.ColdWake) + processSwitchCell(c.ProcessSwitch)
		}
		ws := measuredWindows(st)
		var noise []float64
		for _, win := range ws {
			noise = append(noise, win.NoiseCPU)
		}
		extra, noisy, perturbed := attemptCounts(ws)
		_, nmax := minMax(noise)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.3f, %.3f | %s | %s | %d: %d, %d, %d |\n", scen, when, r.Load, cal,
			mean(noise), nmax, topNoise(names.noiseMeans(ws), 3), timer, len(ws), extra, noisy, perturbed)
	}
}

// coldWakeCell is the calibration window's cold wake-up figure, for the
// runs table's timer cell ("" when the window did not measure it).
func coldWakeCell(cw *v1alpha1.ColdWakeCalibration) string {
	switch {
	case cw == nil:
		return ""
	case cw.Rejected != "":
		return fmt.Sprintf("; cold wake-up not recorded (%.1f µs per doubling seen)", float64(cw.PerDoublingNs)/1e3)
	}
	return fmt.Sprintf("; cold wake-up %.1f µs per doubling", float64(cw.PerDoublingNs)/1e3)
}

// processSwitchCell is the calibration window's process switch figure,
// for the runs table's timer cell ("" when the window did not measure it).
func processSwitchCell(ps *v1alpha1.ProcessSwitchCalibration) string {
	switch {
	case ps == nil:
		return ""
	case ps.Rejected != "":
		return fmt.Sprintf("; process switch not recorded (%.1f µs seen)", float64(ps.PerSwitchNs)/1e3)
	}
	return fmt.Sprintf("; process switch %.1f µs", float64(ps.PerSwitchNs)/1e3)
}

// attemptCounts are the windows' attempts beyond the first, and how many
// windows stayed noisy or perturbed.
func attemptCounts(ws []*v1alpha1.WindowResult) (extra, noisy, perturbed int) {
	for _, win := range ws {
		if win.Attempts > 1 {
			extra += int(win.Attempts) - 1
		}
		if win.Noisy {
			noisy++
		}
		if win.Perturbed {
			perturbed++
		}
	}
	return extra, noisy, perturbed
}

// WriteSummary prints what the runs share: how many, when, the load at
// their starts, the other processes' CPUs, and the noise sources over all
// windows.
func WriteSummary(w io.Writer, runs []*Run, names Names) {
	var first, last time.Time
	var loads, cal, noise []float64
	var all []*v1alpha1.WindowResult
	for _, r := range runs {
		st := &r.Status
		if st.StartTime != nil && (first.IsZero() || st.StartTime.Time.Before(first)) {
			first = st.StartTime.Time
		}
		if st.CompletionTime != nil && st.CompletionTime.Time.After(last) {
			last = st.CompletionTime.Time
		}
		if l, err := strconv.ParseFloat(r.Load, 64); err == nil {
			loads = append(loads, l)
		}
		if st.Calibration != nil {
			cal = append(cal, st.Calibration.NoiseCPU)
		}
		for _, win := range measuredWindows(st) {
			all = append(all, win)
			noise = append(noise, win.NoiseCPU)
		}
	}
	extra, noisy, perturbed := attemptCounts(all)
	fmt.Fprintf(w, "- %d runs, %d measured windows", len(runs), len(all))
	if !first.IsZero() {
		fmt.Fprintf(w, ", %s–%s UTC", clock(first), clock(last))
	}
	fmt.Fprintln(w, ".")
	if len(loads) > 0 {
		lo, hi := minMax(loads)
		fmt.Fprintf(w, "- 1-minute load average at the starts: %.2f–%.2f (median %.2f).\n", lo, hi, median(loads))
	}
	if len(cal) > 0 {
		lo, hi := minMax(cal)
		fmt.Fprintf(w, "- Other processes in the calibration windows: %.2f–%.2f CPUs.\n", lo, hi)
	}
	if len(noise) > 0 {
		lo, hi := minMax(noise)
		fmt.Fprintf(w, "- Other processes in the measured windows: %.3f–%.3f CPUs (mean %.3f).\n", lo, hi, mean(noise))
		fmt.Fprintf(w, "- Noise sources over all measured windows (mean CPU): %s.\n", topNoise(names.noiseMeans(all), 8))
	}
	fmt.Fprintf(w, "- Windows re-run after a noisy or perturbed attempt: %d attempts; windows still noisy: %d; still perturbed: %d.\n", extra, noisy, perturbed)
}
