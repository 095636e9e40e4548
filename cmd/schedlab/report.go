package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/schedlab/schedlab/api"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

func init() {
	register(command{name: "report", summary: "print a SchedExperiment's measured vs predicted table from the cluster", run: runReport})
}

func runReport(args []string) int {
	fs := flag.NewFlagSet("schedlab report", flag.ContinueOnError)
	config.RegisterFlags(fs) // --kubeconfig; else $KUBECONFIG, else in-cluster
	output := fs.String("o", "table", "output format: table or json")
	dir := fs.String("report", "", "also write report.md, report.json and cpu.png (measured vs predicted) into this directory")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: schedlab report NAME [flags]\n\nPrints the results of SchedExperiment NAME (status.results): measured next to predicted, per variant and group.\n\nFlags:")
		fs.PrintDefaults()
	}
	// Flags may come before or after the name.
	var name string
	for {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		if name != "" {
			fmt.Fprintln(os.Stderr, "schedlab report: one experiment name only")
			return 2
		}
		name, args = fs.Arg(0), fs.Args()[1:]
	}
	if name == "" {
		fs.Usage()
		return 2
	}
	if *output != "table" && *output != "json" {
		fmt.Fprintf(os.Stderr, "schedlab report: -o %q: use table or json\n", *output)
		return 2
	}
	cfg, err := config.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedlab report: finding the cluster:", err)
		return 1
	}
	c, err := client.New(cfg, client.Options{Scheme: api.NewScheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedlab report:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	exp, runs, err := fetchExperiment(ctx, c, name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedlab report:", err)
		return 1
	}
	reps := experimentReports(exp, runs)
	if *output == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(reps)
	} else {
		err = writeReportTables(os.Stdout, exp, reps)
		for _, r := range runs {
			fmt.Printf("\nnode %s:\n", r.Spec.NodeName)
			summarize(os.Stdout, &r.Status)
		}
	}
	if err == nil && *dir != "" {
		err = writeMarkdownReport(*dir, exp, runs, reps)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedlab report:", err)
		return 1
	}
	return 0
}

// fetchExperiment reads the experiment and its NodeRuns, sorted by node.
func fetchExperiment(ctx context.Context, c client.Client, name string) (*v1alpha1.SchedExperiment, []v1alpha1.NodeRun, error) {
	var exp v1alpha1.SchedExperiment
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &exp); err != nil {
		return nil, nil, fmt.Errorf("SchedExperiment %s: %w", name, err)
	}
	var list v1alpha1.NodeRunList
	if err := c.List(ctx, &list, client.MatchingLabelsSelector{Selector: labels.Everything()}); err != nil {
		return nil, nil, fmt.Errorf("NodeRuns of %s: %w", name, err)
	}
	var runs []v1alpha1.NodeRun
	for _, r := range list.Items {
		if r.Spec.ExperimentName == name && r.Spec.ExperimentGeneration == exp.Status.ResultsGeneration {
			runs = append(runs, r)
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Spec.NodeName < runs[j].Spec.NodeName })
	return &exp, runs, nil
}

// shapeReport is the report of the result rows of one node shape.
type shapeReport struct {
	Shape  string             `json:"shape,omitempty"`
	Report *experiment.Report `json:"report"`
}

// experimentReports lays status.results out per node shape (one report when the rows cover all
// nodes), with the capabilities of the first NodeRun of that shape.
func experimentReports(exp *v1alpha1.SchedExperiment, runs []v1alpha1.NodeRun) []shapeReport {
	var order []string
	rows := map[string][]v1alpha1.GroupResult{}
	for _, r := range exp.Status.Results {
		if _, ok := rows[r.Shape]; !ok {
			order = append(order, r.Shape)
		}
		rows[r.Shape] = append(rows[r.Shape], r)
	}
	var out []shapeReport
	for _, shape := range order {
		node, caps := shapeOf(shape, exp, runs)
		rep := experiment.MeasuredReport(&exp.Spec, node, caps, rows[shape], exp.Status.PredictionError)
		if exp.Status.BestVariant != "" || exp.Status.BestVariantReason != "" {
			rep.BestVariant, rep.BestReason = exp.Status.BestVariant, exp.Status.BestVariantReason
		}
		out = append(out, shapeReport{Shape: shape, Report: rep})
	}
	return out
}

// shapeOf finds the node shape of a result row's shape name ("" for all nodes): the first
// NodeRun's capabilities when there is one, else the name itself ("2cpu-EEVDF").
func shapeOf(shape string, exp *v1alpha1.SchedExperiment, runs []v1alpha1.NodeRun) (v1alpha1.NodeShape, *v1alpha1.NodeCapabilities) {
	for _, r := range runs {
		if c := r.Status.Capabilities; c != nil {
			s := localShapeFrom(c)
			if shape == "" || v1alpha1.ShapeName(s.CPUs, s.Scheduler) == shape {
				return s, c
			}
		}
	}
	if shape == "" {
		for _, n := range exp.Status.Nodes {
			if n.Shape != "" {
				shape = n.Shape
				break
			}
		}
	}
	var s v1alpha1.NodeShape
	var cpus int32
	var sched string
	if _, err := fmt.Sscanf(strings.Replace(shape, "cpu-", " ", 1), "%d %s", &cpus, &sched); err == nil {
		s.CPUs, s.Scheduler = cpus, v1alpha1.SchedulerFamily(sched)
	}
	return s, nil
}

func writeReportTables(w io.Writer, exp *v1alpha1.SchedExperiment, reps []shapeReport) error {
	if len(reps) == 0 {
		_, err := fmt.Fprintf(w, "%s has no results yet (%s)\n", exp.Name, conditionSummary(exp))
		return err
	}
	for i, r := range reps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if r.Shape != "" && len(reps) > 1 {
			fmt.Fprintf(w, "nodes of shape %s:\n", r.Shape)
		}
		if err := r.Report.WriteTable(w); err != nil {
			return err
		}
	}
	return nil
}

func conditionSummary(exp *v1alpha1.SchedExperiment) string {
	var s []string
	for _, c := range exp.Status.Conditions {
		s = append(s, fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason))
	}
	if len(s) == 0 {
		return "no conditions"
	}
	return strings.Join(s, ", ")
}

// writeMarkdownReport writes report.md (what was run, where, the table, the restore record),
// report.json and, when there are results, cpu.png.
func writeMarkdownReport(dir string, exp *v1alpha1.SchedExperiment, runs []v1alpha1.NodeRun, reps []shapeReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(struct {
		Experiment *v1alpha1.SchedExperiment `json:"experiment"`
		NodeRuns   []v1alpha1.NodeRun        `json:"nodeRuns,omitempty"`
		Reports    []shapeReport             `json:"reports"`
	}{exp, runs, reps}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "# schedlab report: %s\n\n", exp.Name)
	mode := string(exp.Spec.Mode)
	if mode == "" {
		mode = string(v1alpha1.ModeMeasure)
	}
	fmt.Fprintf(&b, "- mode: %s, generation %d\n", mode, exp.Status.ResultsGeneration)
	fmt.Fprintf(&b, "- duration %s per window", exp.Spec.Duration.Duration)
	if exp.Spec.Warmup != nil {
		fmt.Fprintf(&b, " after %s of warm-up", exp.Spec.Warmup.Duration)
	}
	fmt.Fprintf(&b, ", %d repetition(s)\n", max(exp.Spec.Repetitions, 1))
	for _, v := range exp.Spec.Variants {
		knobs, _ := json.Marshal(v.Knobs)
		fmt.Fprintf(&b, "- variant `%s`: knobs `%s`\n", v.Name, knobs)
	}
	for _, g := range exp.Spec.Workload.Groups {
		pat := ""
		if g.Pattern != nil {
			pat = string(g.Pattern.Type)
		}
		fmt.Fprintf(&b, "- group `%s`: %d × %d task(s) %s", g.Name, g.ReplicaCount(), g.TaskCount(), pat)
		if g.CPUWeight != nil {
			fmt.Fprintf(&b, ", cpuWeight %d", *g.CPUWeight)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "- conditions: %s\n", conditionSummary(exp))
	if exp.Status.StartTime != nil && exp.Status.CompletionTime != nil {
		fmt.Fprintf(&b, "- ran from %s to %s\n", exp.Status.StartTime.UTC().Format(time.RFC3339), exp.Status.CompletionTime.UTC().Format(time.RFC3339))
	}
	for _, r := range runs {
		if c := r.Status.Capabilities; c != nil {
			fmt.Fprintf(&b, "- node `%s`: %d CPUs, kernel %s (%s), cgroup %s, HZ %d, preempt %s\n",
				r.Spec.NodeName, c.CPUs, c.KernelVersion, c.Scheduler, c.CgroupVersion, c.HZ, c.Preempt)
		}
	}

	b.WriteString("\n## Measured vs predicted\n\n```\n")
	if err := writeReportTables(&b, exp, reps); err != nil {
		return err
	}
	b.WriteString("```\n")
	if len(reps) > 0 {
		if err := writeChart(filepath.Join(dir, "cpu.png"), reps[0].Report); err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "cpu.png")); err == nil {
			b.WriteString("\n![CPU per group: measured (with ± one standard deviation) and predicted](cpu.png)\n")
		}
	}

	for _, r := range runs {
		fmt.Fprintf(&b, "\n## Node %s: %s, restored: %v\n\n", r.Spec.NodeName, r.Status.Phase, r.Status.Restored)
		var out bytes.Buffer
		summarize(&out, &r.Status)
		if len(r.Status.Knobs) > 0 {
			out.WriteString("changes and their restore:\n")
			printRecords(&out, r.Status.Knobs)
		}
		fmt.Fprintf(&b, "```\n%s```\n", out.String())
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), b.Bytes(), 0o644)
}
