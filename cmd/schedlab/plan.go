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
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/schedlab/schedlab/api"
	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/api/v1alpha1/validation"
	"github.com/schedlab/schedlab/controllers"
	"github.com/schedlab/schedlab/internal/experiment"
)

func init() { register("plan", newPlanCmd) }

// planFlags are the flags of schedlab plan.
type planFlags struct {
	manifest    manifestFlag
	out         outputFormat
	outputDir   string
	cpus        string
	scheduler   string
	hz          int
	preempt     string
	seed        int64
	duration    time.Duration
	workers     int
	calibration string
	merge       []string
	quiet       bool
}

func newPlanCmd() *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan [-f] EXPERIMENT.yaml",
		Short: "capacity planning: sweep a parameter on the simulator and answer the constraints",
		Long: `Simulates every point of spec.sweep's grid on every node shape and variant, and answers
spec.constraints: the largest value of the swept parameter that keeps every constraint,
per shape and for the fleet.`,
		Example: `  schedlab plan config/samples/capacity-plan.yaml --cpus 8,64 --output-dir plan/
  schedlab plan -f config/samples/capacity-plan.yaml --merge shard-0.json,shard-1.json -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return plan(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), &f, args)
		},
	}
	f.manifest.register(cmd)
	addOutputFlag(cmd, &f.out)
	addOutputDirFlag(cmd, &f.outputDir, "plan.json and a chart (PNG and SVG) of each curve with its constraint line")
	fs := cmd.Flags()
	fs.StringVar(&f.cpus, "cpus", "", "node shapes' CPU counts, comma-separated (e.g. 8,64); overrides spec.simulation.nodes")
	fs.StringVar(&f.scheduler, "scheduler", "", "scheduler family of the --cpus shapes: eevdf or cfs")
	fs.IntVar(&f.hz, "hz", 0, "tick rate of the --cpus shapes: 100, 250, 300 or 1000")
	fs.StringVar(&f.preempt, "preempt", "", "preemption model of the --cpus shapes: none, voluntary, full or lazy")
	fs.Int64Var(&f.seed, "seed", -1, "simulator seed (overrides spec.simulation.seed)")
	fs.DurationVar(&f.duration, "duration", 0, fmt.Sprintf("simulated window of each point (default %s, or the spec's duration if shorter; warmup capped at %s)", experiment.DefaultSweepWindow, experiment.DefaultSweepWarmup))
	fs.IntVar(&f.workers, "workers", 0, "points simulated at once (default: all cores)")
	fs.StringVar(&f.calibration, "calibration", "", "calibration file (from schedlab calibrate) used for the shapes it names")
	fs.StringSliceVar(&f.merge, "merge", nil, "JSON outputs of 'schedlab simulate --shard i/n' to merge instead of simulating (comma-separated or repeated)")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "no progress on stderr (progress is only drawn when stderr is a terminal)")
	return cmd
}

// PlanOutput is what schedlab plan prints with -o json and writes to
// plan.json: the sweep's status as the controller would write it, plus the
// constraints in words. It holds nothing that varies between runs.
type PlanOutput struct {
	Experiment  string                `json:"experiment"`
	Constraints []string              `json:"constraints"`
	Calibrated  []string              `json:"calibrated,omitempty"`
	Sweep       *v1alpha1.SweepStatus `json:"sweep"`
}

func plan(ctx context.Context, stdout, stderr io.Writer, f *planFlags, args []string) error {
	exp, err := loadExperiment(&f.manifest, args, "with a sweep")
	if err != nil {
		return err
	}
	if exp.Spec.Sweep == nil {
		return invalidInput(fmt.Errorf("%s has no spec.sweep: add one (see config/samples/capacity-plan.yaml), or use schedlab simulate", f.manifest.file))
	}
	shapes, err := planShapes(&exp.Spec, f)
	if err != nil {
		return invalidInput(err)
	}
	opts := experiment.SweepOptions{Workers: f.workers}
	opts.Duration = f.duration
	if f.seed >= 0 {
		s := uint64(f.seed)
		opts.Seed = &s
	}
	out := &PlanOutput{Experiment: exp.Name}
	for _, c := range exp.Spec.Constraints {
		out.Constraints = append(out.Constraints, experiment.ConstraintText(c))
	}
	if f.calibration != "" {
		cf, err := experiment.LoadCalibrationFile(f.calibration)
		if err != nil {
			return invalidInput(err)
		}
		opts.Calibration = experiment.CalibrationMap(cf.Shapes)
		for _, s := range shapes {
			if _, ok := opts.Calibration[experiment.ShapeName(s)]; ok {
				out.Calibrated = append(out.Calibrated, experiment.ShapeName(s))
			}
		}
	}

	start := time.Now()
	var jobs int
	if len(f.merge) > 0 {
		var shards []*experiment.SweepShard
		for _, p := range f.merge {
			sh, err := readShard(p)
			if err != nil {
				return invalidInput(err)
			}
			shards = append(shards, sh)
		}
		out.Sweep, err = experiment.MergeSweep(&exp.Spec, shapes, shards)
	} else {
		progress := !f.quiet && isTerminal(stderr)
		if progress {
			opts.Progress = func(done, total int) {
				if done == total || done%max(1, total/50) == 0 {
					fmt.Fprintf(stderr, "\rsimulating sweep points: %d/%d", done, total)
				}
			}
		}
		jobs = len(shapes) * len(exp.Spec.Variants) * int(exp.Spec.Sweep.PointCount())
		out.Sweep, err = experiment.Plan(ctx, &exp.Spec, shapes, opts)
		if progress && jobs > 0 {
			fmt.Fprintln(stderr)
		}
	}
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if f.outputDir != "" {
		if err := writePlanReport(f.outputDir, &exp.Spec, out); err != nil {
			return fmt.Errorf("--%s: %w", outputDirFlag, err)
		}
	}
	if f.out != outputTable {
		return printStructured(stdout, f.out, out)
	}
	if len(f.merge) == 0 {
		fmt.Fprintf(stdout, "%s: %d simulations of %s each in %s\n", exp.Name, jobs, out.Sweep.SimulatedWindow, elapsed.Round(10*time.Millisecond))
	}
	return writePlanTable(stdout, &exp.Spec, out)
}

// planShapes resolves the node shapes: --cpus (a list) with the other shape
// flags overrides spec.simulation.nodes; with neither, this machine's shape.
// A --cpus shape keeps the count of a spec shape with the same CPUs.
func planShapes(spec *v1alpha1.SchedExperimentSpec, f *planFlags) ([]v1alpha1.NodeShape, error) {
	var specNodes []v1alpha1.NodeShape
	if spec.Simulation != nil {
		specNodes = spec.Simulation.Nodes
	}
	if f.cpus == "" && f.scheduler == "" && f.hz == 0 && f.preempt == "" {
		if len(specNodes) > 0 {
			return specNodes, nil
		}
		return []v1alpha1.NodeShape{localShape()}, nil
	}
	var cpus []int
	if f.cpus != "" {
		for _, s := range strings.Split(f.cpus, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 || n > 1024 {
				return nil, fmt.Errorf("--cpus %q: give CPU counts 1..1024, comma-separated", f.cpus)
			}
			cpus = append(cpus, n)
		}
	}
	var shapes []v1alpha1.NodeShape
	if len(cpus) == 0 {
		shapes = append(shapes, specNodes...)
		if len(shapes) == 0 {
			shapes = append(shapes, localShape())
		}
	}
	for _, n := range cpus {
		base := localShape()
		if len(specNodes) > 0 {
			base = specNodes[0]
			base.Count = nil
		}
		for _, s := range specNodes {
			if int(s.CPUs) == n {
				base = s
			}
		}
		base.CPUs = int32(n)
		shapes = append(shapes, base)
	}
	sf := shapeFlags{scheduler: f.scheduler, hz: f.hz, preempt: f.preempt}
	for i := range shapes {
		one, err := sf.applyTo(shapes[i])
		if err != nil {
			return nil, err
		}
		shapes[i] = one
	}
	return shapes, nil
}

// applyTo applies the scheduler, hz and preempt flags to a shape.
func (f *shapeFlags) applyTo(base v1alpha1.NodeShape) (v1alpha1.NodeShape, error) {
	if f.scheduler != "" {
		s, err := experiment.ParseScheduler(f.scheduler)
		if err != nil {
			return base, fmt.Errorf("--scheduler: %w", err)
		}
		base.Scheduler = s
	}
	if f.hz != 0 {
		switch f.hz {
		case 100, 250, 300, 1000:
		default:
			return base, fmt.Errorf("--hz %d: use 100, 250, 300 or 1000", f.hz)
		}
		base.HZ = int32(f.hz)
	}
	if f.preempt != "" {
		p, err := experiment.ParsePreempt(f.preempt)
		if err != nil {
			return base, fmt.Errorf("--preempt: %w", err)
		}
		base.Preempt = p
	}
	if f.topology != "" {
		base.Topology = nil
		if f.topology != "flat" {
			var t v1alpha1.NodeTopology
			if _, err := fmt.Sscanf(f.topology, "%dx%dx%d", &t.Sockets, &t.LLCsPerSocket, &t.ThreadsPerCore); err != nil {
				return base, fmt.Errorf("--topology %q: use SOCKETSxLLCSxTHREADS such as 2x2x2, or flat", f.topology)
			}
			base.Topology = &t
		}
	}
	if errs := validation.ValidateTopology(base.Topology, base.CPUs, field.NewPath("topology")); len(errs) > 0 {
		return base, fmt.Errorf("--topology %q with %d CPUs: %v", f.topology, base.CPUs, errs.ToAggregate())
	}
	return base, nil
}

func readShard(path string) (*experiment.SweepShard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var sh experiment.SweepShard
	if err := json.Unmarshal(data, &sh); err != nil {
		return nil, fmt.Errorf("%s: not the output of schedlab simulate --shard: %w", path, err)
	}
	if sh.Shards < 1 {
		return nil, errors.New(path + ": not the output of schedlab simulate --shard (no shards field)")
	}
	return &sh, nil
}

// writePlanTable prints each curve (point by point, the constrained and
// objective metrics, ok or the constraint broken) and the answers.
func writePlanTable(w io.Writer, spec *v1alpha1.SchedExperimentSpec, out *PlanOutput) error {
	st := out.Sweep
	if len(out.Constraints) > 0 {
		fmt.Fprintf(w, "constraints: %s\n", strings.Join(out.Constraints, ", "))
	}
	if len(out.Calibrated) > 0 {
		fmt.Fprintf(w, "calibrated shapes: %s\n", strings.Join(out.Calibrated, ", "))
	}
	cols := experiment.SweepColumns(spec)
	for _, s := range st.Shapes {
		fmt.Fprintf(w, "\n%s × %d, variant %s\n", s.Shape, s.Count, s.Variant)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		hdr := append(append([]string{}, st.Parameters...), st.Columns...)
		fmt.Fprintln(tw, strings.Join(hdr, "\t")+"\tok\t")
		for _, p := range s.Points {
			var row []string
			for _, v := range p.At {
				row = append(row, strconv.FormatInt(v, 10))
			}
			for _, v := range p.Values {
				row = append(row, strconv.FormatFloat(v, 'f', prec(v), 64))
			}
			ok := "yes"
			switch {
			case p.Unsupported != "":
				ok = "unsupported"
				for range cols {
					row = append(row, "-")
				}
			case !p.OK:
				ok = "no"
			}
			if s.Answer != nil && sameAt(s.Answer.At, p.At) {
				ok += " <- answer"
			}
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t"+ok+"\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\nanswers:")
	for _, line := range experiment.SweepSummary(spec, st) {
		fmt.Fprintln(w, "  "+line)
	}
	for _, fl := range st.Fleet {
		total := fmt.Sprint(fl.Total)
		if fl.TotalHigh > fl.Total {
			total = fmt.Sprintf("%d (95%% range %d-%d)", fl.Total, fl.Total, fl.TotalHigh)
		}
		fmt.Fprintf(w, "fleet, %s: %s %s over %d nodes (%s)\n", fl.Variant, total, fl.Parameter, fl.Nodes, strings.Join(fl.PerShape, ", "))
	}
	return nil
}

func prec(v float64) int {
	switch {
	case v == 0:
		return 0
	case v < 1 && v > -1:
		return 4
	case v < 100 && v > -100:
		return 2
	}
	return 1
}

func sameAt(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// writePlanReport writes plan.json, one chart per curve column and plan.md
// embedding them.
func writePlanReport(dir string, spec *v1alpha1.SchedExperimentSpec, out *PlanOutput) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	charts, err := writePlanCharts(dir, spec, out.Sweep)
	if err != nil {
		return err
	}
	var md bytes.Buffer
	fmt.Fprintf(&md, "# schedlab plan: %s\n\n```\n", out.Experiment)
	if err := writePlanTable(&md, spec, out); err != nil {
		return err
	}
	md.WriteString("```\n")
	md.WriteString(chartsMarkdown(charts))
	return os.WriteFile(filepath.Join(dir, "plan.md"), md.Bytes(), 0o644)
}

// simulateShard is `schedlab simulate --shard i/n`: one deterministic slice
// of the sweep's jobs (every n-th, from i), printed as JSON for
// `schedlab plan --merge`. An Indexed Job runs it as --shard job/n.
func simulateShard(ctx context.Context, w io.Writer, m *manifestFlag, args []string, spec, toConfigMap string, sf *shapeFlags) error {
	i, n, err := parseShard(spec)
	if err != nil {
		return usageError(nil, err)
	}
	exp, err := loadExperiment(m, args, "with a sweep")
	if err != nil {
		return err
	}
	if exp.Spec.Sweep == nil {
		return invalidInput(fmt.Errorf("--shard needs spec.sweep: %s has none", m.file))
	}
	shapes, err := sf.shapes(&exp.Spec)
	if err != nil {
		return invalidInput(err)
	}
	popts, err := sf.options()
	if err != nil {
		return err
	}
	var ns, job string
	if toConfigMap != "" {
		var ok bool
		ns, job, ok = strings.Cut(toConfigMap, "/")
		if !ok || ns == "" || job == "" {
			return usageError(nil, fmt.Errorf("--to-configmap %q: write NAMESPACE/JOB", toConfigMap))
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	opts := experiment.SweepOptions{PredictOptions: popts, Shard: i, Shards: n}
	sh, err := experiment.RunSweep(ctx, &exp.Spec, shapes, opts)
	if err != nil {
		return err
	}
	sh.Experiment = exp.Name
	if toConfigMap != "" {
		restCfg, err := config.GetConfig()
		if err != nil {
			return fmt.Errorf("finding the cluster: %w", err)
		}
		c, err := client.New(restCfg, client.Options{Scheme: api.NewScheme()})
		if err != nil {
			return err
		}
		return controllers.WriteSweepShard(ctx, c, ns, names.SweepShard(job, i), sh)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sh)
}

// parseShard reads "i/n" (0 <= i < n <= 1000); "job/n" takes i from
// JOB_COMPLETION_INDEX, as a pod of an Indexed Job has it.
func parseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	if a == "job" {
		a = os.Getenv("JOB_COMPLETION_INDEX")
	}
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > 1000 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard %q: write i/n with 0 <= i < n <= 1000, e.g. 0/4 (or job/n in an Indexed Job)", s)
	}
	return i, n, nil
}
