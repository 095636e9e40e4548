package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
	"github.com/schedlab/schedlab/internal/nodeagent"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
	"github.com/schedlab/schedlab/internal/simengine"
)

func init() { register("run", newRunCmd) }

type runFlags struct {
	manifest                   manifestFlag
	out                        outputFormat
	outputDir, stateDir, runID string
	calibration, replay        string
	restoreOnly, verbose       bool
	noCalibrationWindow        bool
	noTimerTrace               bool
	timerPath                  string
	wait                       time.Duration
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [-f] EXPERIMENT.yaml",
		Short: "run an experiment on this machine and compare with the simulator",
		Long: `Runs every variant of the experiment on this machine (as root: it sets the knobs and
creates cgroups, and restores everything afterwards), then prints what was measured next
to the simulator's prediction for this machine's shape. Without root it prints this
machine's capabilities and the predictions only, and exits 1.

'schedlab run --restore-only' restores what an interrupted run left in the journal.`,
		Example: `  sudo schedlab run config/samples/weights-100-200-400.yaml --output-dir out/
  sudo schedlab run --restore-only`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.restoreOnly && (len(args) > 0 || f.manifest.file != "") {
				return usagef("--restore-only takes no manifest")
			}
			log := logr.Discard()
			if f.verbose {
				stderr := cmd.ErrOrStderr()
				log = funcr.New(func(prefix, args string) { fmt.Fprintln(stderr, prefix, args) }, funcr.Options{Verbosity: 1})
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), &f, args, log)
		},
	}
	f.manifest.register(cmd)
	addOutputFlag(cmd, &f.out)
	addOutputDirFlag(cmd, &f.outputDir, "report.json and the charts")
	fs := cmd.Flags()
	fs.StringVar(&f.stateDir, "state-dir", nodeagent.DefaultStateDir, "directory of the journal and the lock")
	fs.StringVar(&f.runID, "run-id", "", "run id: names the cgroups schedlab/<id>/… (default local-<time>)")
	fs.StringVar(&f.calibration, "calibration", "", "calibration file (from schedlab calibrate) for this machine's shape, used by the predictions")
	fs.BoolVar(&f.noTimerTrace, "no-timer-trace", false, "do not record the timer interrupts in a tracefs instance during the windows (the windows then give only their edges' timer paths)")
	fs.StringVar(&f.timerPath, "timer-path", "", "where the prediction takes each window's timer path from: in-window (the window's timer trace where it has a usable one, its edges otherwise; the default), edges, or none (the calibration window's for every window)")
	fs.BoolVar(&f.noCalibrationWindow, "no-calibration-window", false, "skip the calibration window (about two seconds before the first window that measures this machine's wake-up path for the predictions); predict with the simulator's default constants")
	fs.StringVar(&f.replay, "replay", "", "measure nothing: take the node's measurements from noderun.json of an earlier run's --output-dir and predict them again with this build's simulator (no root needed)")
	fs.BoolVar(&f.restoreOnly, "restore-only", false, "only restore what an earlier run left in --state-dir's journal, then exit")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "log what the agent does (stderr)")
	fs.DurationVar(&f.wait, "wait", 0, "wait this long for another run on this machine to finish (default: fail at once, naming it)")
	return cmd
}

func run(ctx context.Context, stdout, stderr io.Writer, f *runFlags, args []string, log logr.Logger) error {
	if f.runID == "" {
		f.runID = fmt.Sprintf("local-%d", time.Now().Unix())
	}
	if err := host.CheckRunID(f.runID); err != nil {
		return usagef("--run-id: %v", err)
	}
	opts := nodeagent.Options{StateDir: f.stateDir, RunID: f.runID, Log: log, LockWait: f.wait, NoCalibration: f.noCalibrationWindow, NoTimerTrace: f.noTimerTrace}
	if f.restoreOnly {
		if os.Geteuid() != 0 {
			return errors.New("restoring knobs and cgroups needs root: run it as root (sudo schedlab run --restore-only)")
		}
		recs, err := nodeagent.RestoreOnly(opts)
		printRecords(stderr, recs)
		if err == nil && recs == nil {
			fmt.Fprintf(stderr, "nothing to restore: no journal in %s\n", f.stateDir)
		}
		return err
	}
	timerSrc, err := experiment.ParseTimerSource(f.timerPath)
	if err != nil {
		return usagef("--timer-path: %v", err)
	}
	exp, err := loadExperiment(&f.manifest, args, "to run")
	if err != nil {
		return err
	}
	spec := &exp.Spec
	if err := host.Validate(spec); err != nil {
		return invalidInput(err)
	}
	var st *v1alpha1.NodeRunStatus
	var runErr error
	switch {
	case f.replay != "":
		if st, err = loadNodeRun(f.replay, spec); err != nil {
			return invalidInput(fmt.Errorf("--replay: %w", err))
		}
	case os.Geteuid() != 0:
		return unprivileged(stdout, stderr, exp, f)
	default:
		var bar *progressBar
		if isTerminal(stderr) {
			bar = &progressBar{w: stderr, start: time.Now()}
			opts.Progress = bar.update
			defer bar.finish()
		}
		st, runErr = nodeagent.Run(ctx, spec, opts)
		if bar != nil {
			bar.finish()
		}
		if st.Capabilities == nil {
			return runErr
		}
		summarize(stderr, st)
	}
	caps := st.Capabilities

	hostname, _ := os.Hostname()
	results := experiment.Aggregate(spec, []v1alpha1.NodeRun{{Spec: v1alpha1.NodeRunSpec{NodeName: hostname}, Status: *st}})
	shape := experiment.ShapeFromCapabilities(caps)
	predErr := ""
	popts, perr := runPredictOptions(f)
	var preds []experiment.Prediction
	var pauses *experiment.HostPauses
	var stalls *experiment.VCPUStalls
	if perr == nil {
		if cal := st.Calibration; cal != nil {
			k := cal.Constants
			fmt.Fprintf(stderr, "calibration window: timer %.1f µs, idle exit %.1f µs, wake-up %.1f µs, context switch %.1f µs, background load %.1f%% (other processes %.2f CPUs)\n",
				us(k.TimerExpiryNs), us(k.IdleExitNs), us(k.WakeupNs), us(k.CtxSwitchNs), 100*cal.BackgroundLoad, cal.NoiseCPU)
			if idle := cal.IdleCPUIdle; idle != nil && *idle < 0.5 {
				fmt.Fprintf(stderr, "calibration window: the idle-timer sleeps' CPU was idle only %.2f of the time: other work ran there (SCHED_IDLE work too, which a wake-up preempts with no idle exit), so the idle exit measured is not an idle CPU's\n", *idle)
			}
			if k.TimerArmCPUNs > 0 {
				fmt.Fprintf(stderr, "calibration window: a timer sleep's CPU leaves %.1f µs for arming the timer beyond the switch and the wake-up\n", us(k.TimerArmCPUNs))
			}
			if cw := cal.ColdWake; cw != nil {
				fmt.Fprintln(stderr, coldWakeLine(cw))
			}
			if ps := cal.ProcessSwitch; ps != nil {
				fmt.Fprintln(stderr, processSwitchLine(ps))
			}
			if q := k.TimerExpiryQuantilesNs; len(q) == 7 {
				fmt.Fprintf(stderr, "calibration window: timer p5..p99 %.1f %.1f %.1f %.1f %.1f %.1f %.1f µs (each wake-up draws its path from these)\n",
					us(q[0]), us(q[1]), us(q[2]), us(q[3]), us(q[4]), us(q[5]), us(q[6]))
			}
		}
		var cpus int32
		if caps != nil {
			cpus = caps.CPUs
		}
		printForeignCgroups(stderr, st.Windows)
		cal := experiment.WithWindowNoise(st.Calibration, st.Windows, cpus)
		popts.Foreign = experiment.ForeignTasks(cpus, spec.Duration.Duration, st.Windows)
		popts.GridPhases, popts.TimerShifts = experiment.WindowConditionsFrom(timerSrc, st.Calibration, nil, st.Windows)
		printTimerPaths(stderr, st.Calibration, st.Windows, popts.TimerShifts, f.verbose)
		if n, cpu := experiment.ForeignSummary(popts.Foreign); n > 0 {
			fmt.Fprintf(stderr, "predictions run %d threads of other processes beside the workload (%.3f CPUs, the windows' mean per variant)\n", n, cpu)
		}
		if c, n := experiment.ForeignCgroupSummary(popts.Foreign); c > 0 {
			fmt.Fprintf(stderr, "predictions run the other threads of %d top-level cgroups as %d tasks in them, each cgroup at the root with its weight and cpu.idle\n", c, n)
		}
		if cal != nil {
			fmt.Fprintf(stderr, "predictions count %.1f%% of the CPUs as taken by other processes (the windows' mean, beyond those threads)\n", 100*cal.BackgroundLoad)
		}
		cal, pauses = experiment.WithWindowPauses(cal, st.Windows)
		printHostPauses(stderr, pauses)
		cal, stalls = experiment.WithWindowStalls(cal, st.Windows, experiment.HogWindowOf(spec))
		printVCPUStalls(stderr, stalls)
		shape, popts = experiment.WithNodeCalibration(shape, cal, popts)
		preds, perr = experiment.Predict(spec, []v1alpha1.NodeShape{shape}, popts)
	}
	if perr != nil {
		fmt.Fprintf(stderr, "warning: no predictions: %v\n", perr)
	} else {
		predErr = experiment.Compare(results, preds)
	}
	rep := experiment.MeasuredReport(spec, shape, caps, results, predErr)
	rep.Experiment = exp.Name
	rep.HostPauses = pauses
	rep.VCPUStalls = stalls
	if f.out != outputTable {
		if err := printStructured(stdout, f.out, rep); err != nil {
			return err
		}
	} else {
		on := "kernel " + caps.KernelVersion
		if caps.CPUModel != "" {
			on += ", " + caps.CPUModel
		}
		fmt.Fprintf(stdout, "%s: measured on %s (%s) next to the simulator's prediction for its shape, %s\n",
			exp.Name, hostname, on, experiment.ShapeName(shape))
		if len(caps.NonMainlineSchedSysctls) > 0 {
			fmt.Fprintf(stdout, "this kernel has scheduler sysctls no mainline kernel has (%s): a vendor's scheduler changes, which the simulator, a model of mainline, does not know\n",
				strings.Join(caps.NonMainlineSchedSysctls, ", "))
		}
		fmt.Fprintln(stdout)
		if err := rep.WriteTable(stdout); err != nil {
			return err
		}
	}
	if f.outputDir != "" {
		if err := writeReport(f.outputDir, spec, exp.Name, rep, st); err != nil {
			return errors.Join(runErr, fmt.Errorf("--%s: %w", outputDirFlag, err))
		}
		fmt.Fprintf(stderr, "report written to %s\n", f.outputDir)
	}
	return runErr
}

// runPredictOptions are the prediction options of run: its calibration file.
func runPredictOptions(f *runFlags) (experiment.PredictOptions, error) {
	sf := shapeFlags{seed: -1, calibration: f.calibration}
	return sf.options()
}

// unprivileged runs what needs no root: capabilities and predictions.
func unprivileged(stdout, stderr io.Writer, exp *v1alpha1.SchedExperiment, f *runFlags) error {
	fmt.Fprintln(stderr, "schedlab run: not running as root, so no knob can be set and no cgroup created on this machine.\n"+
		"Showing this machine's capabilities and the simulator's predictions only; run as root (sudo schedlab run -f …) to measure.")
	caps, err := host.Detect(host.NewFS("/"))
	if err != nil {
		return err
	}
	shape := experiment.ShapeFromCapabilities(caps)
	popts, err := runPredictOptions(f)
	if err != nil {
		return err
	}
	preds, err := experiment.Predict(&exp.Spec, []v1alpha1.NodeShape{shape}, popts)
	if err != nil {
		return err
	}
	rep := experiment.SimulationReport(&exp.Spec, preds)
	rep.Capabilities = caps
	for vi := range exp.Spec.Variants {
		if _, err := host.Plan(caps, &exp.Spec.Variants[vi].Knobs); err != nil {
			fmt.Fprintf(stderr, "variant %s would be unsupported here: %v\n", exp.Spec.Variants[vi].Name, err)
		}
	}
	if f.out != outputTable {
		if err := printStructured(stdout, f.out, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "%s: predicted by the simulator for this machine (%s); nothing measured\n\n", exp.Name, experiment.ShapeName(shape))
		if err := rep.WriteTable(stdout); err != nil {
			return err
		}
	}
	return errors.New("not measured: needs root")
}

// summarize tells, on stderr, how the run went: noisy or unsupported
// windows and the restore.
func summarize(w io.Writer, st *v1alpha1.NodeRunStatus) {
	for _, win := range st.Windows {
		for _, a := range win.Rejected {
			var why []string
			if a.Noisy {
				why = append(why, fmt.Sprintf("noisy (%.2f CPUs used by other processes, %.2f of it by the named ones: %s)", a.NoiseCPU, a.NamedNoiseCPU, a.NoiseSources))
			}
			if a.PerturbedReason != "" {
				why = append(why, "perturbed by its own workers: "+a.PerturbedReason)
			}
			fmt.Fprintf(w, "variant %s, repetition %d: attempt %d run again: %s\n", win.Variant, win.Repetition, a.Attempt, strings.Join(why, "; "))
		}
		switch {
		case win.Unsupported != "":
			fmt.Fprintf(w, "variant %s, repetition %d: unsupported here: %s\n", win.Variant, win.Repetition, win.Unsupported)
		case win.Noisy:
			who := ""
			if len(win.NoiseSources) > 0 {
				who = "; the most: " + nodeagent.FormatNoiseSources(win.NoiseSources)
			}
			fmt.Fprintf(w, "variant %s, repetition %d: noisy (%.2f CPUs used by other processes, after %d attempts%s)\n", win.Variant, win.Repetition, win.NoiseCPU, win.Attempts, who)
		}
		if win.Perturbed {
			fmt.Fprintf(w, "variant %s, repetition %d: perturbed by its own workers (after %d attempts): %s\n", win.Variant, win.Repetition, win.Attempts, win.PerturbedReason)
		}
		if win.Unsupported == "" {
			fmt.Fprintf(w, "variant %s, repetition %d: host pauses: %s\n", win.Variant, win.Repetition, formatWindowPauses(win.HostPauses))
		}
	}
	bad := 0
	for _, r := range st.Knobs {
		if !r.OK {
			bad++
		}
	}
	switch {
	case st.Restored:
		fmt.Fprintf(w, "%s: %d windows; this machine is restored (%d changes undone and checked)\n", st.Phase, st.StepsDone, len(st.Knobs))
	default:
		fmt.Fprintf(w, "%s: this machine is NOT fully restored (%d of %d changes): %s\n", st.Phase, bad, len(st.Knobs), st.Message)
		printRecords(w, st.Knobs)
	}
}

// printForeignCgroups shows, per window, the other top-level cgroups of the
// cpu hierarchy the window recorded (a run measured here or replayed).
func printForeignCgroups(w io.Writer, windows []v1alpha1.WindowResult) {
	for _, win := range windows {
		if len(win.ForeignCgroups) > 0 {
			fmt.Fprintf(w, "variant %s, repetition %d: other top-level cgroups: %s\n", win.Variant, win.Repetition, nodeagent.FormatForeignCgroups(win.ForeignCgroups))
		}
	}
}

// formatWindowPauses says what one window's hogs saw of host pauses.
func formatWindowPauses(hp *v1alpha1.HostPauseMeasurement) string {
	if hp == nil {
		return "not observed (no Hog ran in this window)"
	}
	s := fmt.Sprintf("%d in %.1f s observed by %d hogs", hp.Count, float64(hp.ObservedNs)/1e9, hp.Hogs)
	if len(hp.LengthsNs) > 0 {
		ls := make([]string, len(hp.LengthsNs))
		for i, l := range hp.LengthsNs {
			ls[i] = fmt.Sprintf("%.1f", float64(l)/1e6)
		}
		s += fmt.Sprintf(", lengths %s ms", strings.Join(ls, " "))
		if int(hp.Count) > len(hp.LengthsNs) {
			s += " …"
		}
	}
	if hp.SeenByMore > 0 {
		s += fmt.Sprintf(", %d seen by more than one hog", hp.SeenByMore)
	}
	if hp.VCPUStalls > 0 {
		s += fmt.Sprintf("; %d stalls of one vCPU while another hog ran (not pauses, the longest %.1f ms)", hp.VCPUStalls, float64(hp.VCPUStallLongestNs)/1e6)
	}
	s += fmt.Sprintf(" (and %d gaps of 5 ms or more that were preemptions; %d charged stalls of 1-5 ms, not counted, %d of them seen by more than one hog", hp.OffCPUGaps, hp.ShortStalls, hp.ShortStallsSeenByMore)
	if q := hp.ShortStallQuantilesNs; len(q) == 7 {
		s += fmt.Sprintf(", those one hog saw %.2f ms at the median and %.2f at 99 %%", float64(q[2])/1e6, float64(q[6])/1e6)
	}
	if hp.LostStalls > 0 {
		s += fmt.Sprintf("; %d stalls lost from a full log", hp.LostStalls)
	}
	return s + ")"
}

// msList prints lengths in ns as milliseconds with prec decimals, space
// separated.
func msList(q []int64, prec int) string {
	s := make([]string, len(q))
	for i, v := range q {
		s[i] = strconv.FormatFloat(float64(v)/1e6, 'f', prec, 64)
	}
	return strings.Join(s, " ")
}

// printHostPauses says what the run measured of host pauses and what the
// prediction uses.
func printHostPauses(w io.Writer, hp *experiment.HostPauses) {
	if hp == nil {
		return
	}
	ms := func(q []int64) string { return msList(q, 1) }
	seen := "host pauses: not observed (no window ran a Hog, the only pattern that watches for them)"
	if hp.Windows > 0 {
		seen = fmt.Sprintf("host pauses: %d in %.1f s observed (%d of %d windows had a Hog), %.0f per hour", hp.Count, float64(hp.ObservedNs)/1e9, hp.Windows, hp.WindowsRun, hp.PerHour)
		if len(hp.QuantilesNs) > 0 {
			seen += ", lengths p5..p99 " + ms(hp.QuantilesNs) + " ms"
		}
	}
	switch hp.Prediction {
	case experiment.PausesSet:
		fmt.Fprintf(w, "%s; predictions use the pauses the calibration sets instead: %d per hour, p5..p99 %s ms\n", seen, hp.SetPerHour, ms(hp.SetQuantilesNs))
	case experiment.PausesMeasured:
		if hp.Count > 0 {
			fmt.Fprintf(w, "%s; predictions use them\n", seen)
		} else {
			fmt.Fprintf(w, "%s; predictions have none\n", seen)
		}
	default:
		fmt.Fprintf(w, "%s; predictions have none\n", seen)
	}
}

// printVCPUStalls says what the run measured of the stalls of one vCPU and
// what the prediction uses.
func printVCPUStalls(w io.Writer, st *experiment.VCPUStalls) {
	if st == nil || st.Windows == 0 {
		return
	}
	ms := func(q []int64) string { return msList(q, 2) }
	s := fmt.Sprintf("stalls of one vCPU: %d of 5 ms or more in %.1f s of the hogs' CPU time, %.0f per CPU per hour", st.Long, float64(st.LongHogCPUNs)/1e9, st.LongPerHour)
	if len(st.LongQuantilesNs) > 0 {
		s += ", lengths p5..p99 " + ms(st.LongQuantilesNs) + " ms"
	}
	if st.LongLeftOut > 0 {
		s += fmt.Sprintf(" (%d left out: windows without their lengths)", st.LongLeftOut)
	}
	s += fmt.Sprintf("; %d short ones in %.1f s, %.0f per CPU per hour", st.Short, float64(st.ShortHogCPUNs)/1e9, st.ShortPerHour)
	if len(st.ShortQuantilesNs) > 0 {
		s += ", lengths p5..p99 " + ms(st.ShortQuantilesNs) + " ms"
	}
	if st.ShortNotModelled > 0 {
		s += fmt.Sprintf(" (%d more not modelled: windows that recorded no lengths)", st.ShortNotModelled)
	}
	if st.HogCPUEstimated > 0 {
		s += fmt.Sprintf("; the hogs' CPU time of %d windows estimated from their groups' CPU", st.HogCPUEstimated)
	}
	switch {
	case st.Prediction == experiment.PausesSet:
		s += "; predictions use the stalls the calibration sets instead"
	case st.Prediction == experiment.PausesMeasured && st.Long+st.Short > 0:
		s += "; predictions use them"
	default:
		s += "; predictions have none"
	}
	fmt.Fprintln(w, s)
}

func printRecords(w io.Writer, recs []v1alpha1.KnobRecord) {
	for _, r := range recs {
		ok := "ok"
		if !r.OK {
			ok = "NOT RESTORED"
		}
		fmt.Fprintf(w, "  %-50s original %-10q set %-10q now %-10q %s\n", r.Name, r.Original, r.Set, r.Restored, ok)
	}
}

// progressBar draws "[=====>    ] 3/8 variant …" on one terminal line.
type progressBar struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	done  bool
	drawn bool
}

func (p *progressBar) update(done, total int, what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done || total <= 0 {
		return
	}
	const width = 30
	n := done * width / total
	bar := strings.Repeat("=", n) + strings.Repeat(" ", width-n)
	if n < width {
		bar = bar[:n] + ">" + bar[n+1:]
	}
	line := fmt.Sprintf("[%s] %d/%d %s (%s)", bar, done, total, what, time.Since(p.start).Round(time.Second))
	if len(line) > 100 {
		line = line[:100]
	}
	fmt.Fprintf(p.w, "\r\033[K%s", line)
	p.drawn = true
}

func (p *progressBar) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
	p.done = true
}

// writeReport writes report.json (the printed JSON), the charts that answer
// the experiment's objectives (PNG and SVG), report.md embedding them, and
// noderun.json: the node's run status (capabilities, calibration window,
// measured windows), which --replay predicts again.
func writeReport(dir string, spec *v1alpha1.SchedExperimentSpec, name string, rep *experiment.Report, st *v1alpha1.NodeRunStatus) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	nb, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "noderun.json"), append(nb, '\n'), 0o644); err != nil {
		return err
	}
	fh, err := os.Create(filepath.Join(dir, "report.json"))
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(fh); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	charts, err := writeReportCharts(dir, spec, rep)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# schedlab run: %s\n\n", name)
	if c := rep.Capabilities; c != nil {
		fmt.Fprintf(&b, "- this machine: %d CPUs, kernel %s (%s), cgroup %s, HZ %d, preempt %s\n", c.CPUs, c.KernelVersion, c.Scheduler, c.CgroupVersion, c.HZ, c.Preempt)
		if c.CPUModel != "" {
			fmt.Fprintf(&b, "- its CPU: %s\n", c.CPUModel)
		}
		if len(c.NonMainlineSchedSysctls) > 0 {
			fmt.Fprintf(&b, "- scheduler sysctls no mainline kernel has: %s (the simulator models mainline)\n", strings.Join(c.NonMainlineSchedSysctls, ", "))
		}
	}
	if rep.BestVariant != "" {
		fmt.Fprintf(&b, "- best variant: %s (%s)\n", rep.BestVariant, rep.BestReason)
	}
	b.WriteString("\n## Measured vs predicted\n\n```\n")
	if err := rep.WriteTable(&b); err != nil {
		return err
	}
	b.WriteString("```\n")
	b.WriteString(chartsMarkdown(charts))
	b.WriteString("\n## Restore\n\n```\n")
	summarize(&b, st)
	b.WriteString("```\n")
	return os.WriteFile(filepath.Join(dir, "report.md"), b.Bytes(), 0o644)
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

// coldWakeLine tells what the calibration window measured of the cold
// wake-up cost (status.calibration.coldWake) and whether the prediction
// uses it.
func coldWakeLine(cw *v1alpha1.ColdWakeCalibration) string {
	seen := fmt.Sprintf("%.1f µs per doubling of a sleep past 2 ms (95 %% %.1f to %.1f; the median 40 ms sleep woke %.1f µs late, the 2 ms one %.1f, of %d and %d quiet sleeps beside a spinner %s; others took %.3f of the CPU)",
		us(cw.PerDoublingNs), us(cw.LowNs), us(cw.HighNs), us(cw.LongP50Ns), us(cw.ShortP50Ns), cw.LongSamples, cw.ShortSamples, spinnerKind(cw.Neighbour), cw.OtherCPU)
	if cw.Rejected != "" {
		return fmt.Sprintf("calibration window: cold wake-up not recorded, %s: %s; the predictions keep the default %.1f µs",
			cw.Rejected, seen, us(simengine.DefaultConstants().ColdWakeNs))
	}
	return "calibration window: cold wake-up " + seen
}

// processSwitchLine tells what the calibration window measured of the
// process switch (status.calibration.processSwitch) and whether the
// prediction uses it.
func processSwitchLine(ps *v1alpha1.ProcessSwitchCalibration) string {
	seen := fmt.Sprintf("%.1f µs (95 %% %.1f to %.1f; the median 1 ms sleep on a busy CPU woke %.1f µs late beside a spinner process, %.1f beside a spinner thread, of %d and %d quiet sleeps)",
		us(ps.PerSwitchNs), us(ps.LowNs), us(ps.HighNs), us(ps.ProcessP50Ns), us(ps.ThreadP50Ns), ps.ProcessSamples, ps.ThreadSamples)
	if ps.Rejected != "" {
		return fmt.Sprintf("calibration window: process switch not recorded, %s: %s; the predictions keep the default %.1f µs",
			ps.Rejected, seen, us(simengine.DefaultConstants().ProcessSwitchNs))
	}
	return "calibration window: process switch " + seen
}

// spinnerKind names the cold wake-up measurement's neighbour; runs recorded
// before the field had a thread.
func spinnerKind(n v1alpha1.ColdWakeNeighbour) string {
	if n == v1alpha1.ColdWakeNeighbourProcess {
		return "process"
	}
	return "thread"
}

// loadNodeRun reads a node's run status written by run --output-dir
// (noderun.json) and checks that it measured spec's variants.
func loadNodeRun(path string, spec *v1alpha1.SchedExperimentSpec) (*v1alpha1.NodeRunStatus, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st v1alpha1.NodeRunStatus
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if st.Capabilities == nil || len(st.Windows) == 0 {
		return nil, fmt.Errorf("%s has no capabilities or no windows: give the noderun.json that run --output-dir wrote", path)
	}
	known := map[string]bool{}
	for _, v := range spec.Variants {
		known[v.Name] = true
	}
	groups := map[string]bool{}
	for _, g := range spec.Workload.Groups {
		groups[g.Name] = true
	}
	for _, w := range st.Windows {
		if !known[w.Variant] {
			return nil, fmt.Errorf("%s measured variant %q, which the experiment does not have: give the experiment file the run measured", path, w.Variant)
		}
		for _, g := range w.Groups {
			if !groups[g.Name] {
				return nil, fmt.Errorf("%s measured group %q, which the experiment does not have: give the experiment file the run measured", path, g.Name)
			}
		}
	}
	return &st, nil
}

// printTimerPaths shows, per window that recorded it, the node's timer path
// at the window's edges against the calibration window's, its timer trace's
// interrupt lateness per CPU, and what the prediction moves the timer
// expiry and idle exit by for it, and from which source; verbose adds the
// edges' busy quantiles.
func printTimerPaths(w io.Writer, cal *v1alpha1.NodeCalibration, windows []v1alpha1.WindowResult, shifts map[string][]experiment.TimerShift, verbose bool) {
	if cal == nil || shifts == nil {
		return
	}
	busy, idle := experiment.CalibrationTimerPath(cal)
	fmt.Fprintf(w, "calibration window: timer path idle %.1f µs, busy %.1f µs (the windows' shifts are against these)\n", us(idle), us(busy))
	printTimerTrace(w, "calibration window", cal.TimerTrace)
	edge := func(s *v1alpha1.TimerPathSample) string {
		if s == nil {
			return "-"
		}
		out := fmt.Sprintf("idle %.1f µs, busy %.1f µs", us(s.IdleTimerNs), us(s.BusyTimerNs))
		if q := s.BusyTimerQuantilesNs; verbose && len(q) == 7 {
			out += fmt.Sprintf(" (busy p5..p99 %.1f %.1f %.1f %.1f %.1f %.1f %.1f)", us(q[0]), us(q[1]), us(q[2]), us(q[3]), us(q[4]), us(q[5]), us(q[6]))
		}
		return out
	}
	next := map[string]int{}
	for _, win := range windows {
		if win.Unsupported != "" {
			continue
		}
		i := next[win.Variant]
		next[win.Variant]++
		if (win.TimerPath == nil && win.TimerTrace == nil) || i >= len(shifts[win.Variant]) {
			continue
		}
		s := shifts[win.Variant][i]
		src := string(s.Source)
		if src == "" {
			src = "none usable: the calibration's"
		}
		var before, after *v1alpha1.TimerPathSample
		if win.TimerPath != nil {
			before, after = win.TimerPath.Before, win.TimerPath.After
		}
		fmt.Fprintf(w, "variant %s, repetition %d: timer path before %s; after %s; predicted with the timer expiry %+.1f µs, the idle exit %+.1f µs (timer path from: %s)\n",
			win.Variant, win.Repetition, edge(before), edge(after), us(s.TimerExpiryNs), us(s.IdleExitNs), src)
		if verbose && win.TimerPath != nil {
			for _, e := range []struct {
				name string
				ss   []v1alpha1.TimerPathSample
			}{{"before", win.TimerPath.BeforeOtherCPUs}, {"after", win.TimerPath.AfterOtherCPUs}} {
				for _, o := range e.ss {
					c := int32(-1)
					if o.CPU != nil {
						c = *o.CPU
					}
					fmt.Fprintf(w, "  %s on CPU %d: %s\n", e.name, c, edge(&o))
				}
			}
		}
		printTimerTrace(w, "  in the window", win.TimerTrace)
		why := "its edges' busy path against the measured CPU's"
		if s.Source == experiment.TimerSourceTrace {
			why = "its interrupts' median lateness in the window against the busiest CPU's"
		}
		for c, d := range s.CPUTimerExpiryNs {
			if d != 0 {
				fmt.Fprintf(w, "  CPU %d: its timer expiry %+.1f µs more (%s)\n", c, us(d), why)
			}
		}
	}
}

// printTimerTrace shows a timer trace's interrupt lateness per CPU (after
// the timers' hard expiry): its quantiles, and the range of its per-second
// medians.
func printTimerTrace(w io.Writer, what string, tt *v1alpha1.TimerTrace) {
	if tt == nil {
		return
	}
	if tt.Unsupported != "" {
		fmt.Fprintf(w, "%s: no timer trace (%s)\n", what, tt.Unsupported)
		return
	}
	fmt.Fprintf(w, "%s: timer trace of %.1f s, %d events (%.0f a second)\n", what, time.Duration(tt.DurationNs).Seconds(), tt.Events, float64(tt.Events)/max(time.Duration(tt.DurationNs).Seconds(), 1e-9))
	for _, c := range tt.CPUs {
		lost := ""
		if c.LostEvents > 0 {
			lost = fmt.Sprintf(", %d events lost: not used", c.LostEvents)
		}
		q := c.LatenessQuantilesNs
		if len(q) != 7 {
			fmt.Fprintf(w, "  CPU %d: %d interrupts%s\n", c.CPU, c.Interrupts, lost)
			continue
		}
		lo, hi := int64(-1), int64(0)
		for _, m := range c.SecondMediansNs {
			if m > 0 {
				if lo < 0 || m < lo {
					lo = m
				}
				hi = max(hi, m)
			}
		}
		fmt.Fprintf(w, "  CPU %d: %d interrupts, lateness after the hard expiry p5..p99 %.1f %.1f %.1f %.1f %.1f %.1f %.1f µs, per-second medians %.1f-%.1f µs%s\n",
			c.CPU, c.Interrupts, us(q[0]), us(q[1]), us(q[2]), us(q[3]), us(q[4]), us(q[5]), us(q[6]), us(max(lo, 0)), us(hi), lost)
	}
}
