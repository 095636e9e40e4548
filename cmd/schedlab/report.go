package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

func init() { register("report", newReportCmd) }

func newReportCmd() *cobra.Command {
	var (
		out outputFormat
		dir string
	)
	kube := newClusterFlags()
	cmd := &cobra.Command{
		Use:   "report NAME",
		Short: "print a SchedExperiment's measured vs predicted table from the cluster",
		Long: `Prints the results of SchedExperiment NAME (status.results): measured next to predicted,
per variant and group, and each node's restore record. --output-dir also writes report.md,
report.json and the charts.`,
		Example: `  schedlab report group-fairness
  schedlab report group-fairness -o yaml --output-dir ./report`,
		Args: exactArgs(1, "the experiment's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := kube.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			return reportExperiment(ctx, cmd.OutOrStdout(), c, args[0], out, dir)
		},
		ValidArgsFunction: kube.completeExperiments,
	}
	kube.register(cmd)
	addOutputFlag(cmd, &out)
	addOutputDirFlag(cmd, &dir, "report.md, report.json and the charts")
	return cmd
}

// reportExperiment prints experiment name's report and, with dir, writes it.
func reportExperiment(ctx context.Context, w io.Writer, c client.Client, name string, out outputFormat, dir string) error {
	exp, runs, err := fetchExperiment(ctx, c, name)
	if err != nil {
		return err
	}
	reps := experimentReports(exp, runs)
	if out != outputTable {
		err = printStructured(w, out, reps)
	} else {
		err = writeReportTables(w, exp, reps)
		for _, r := range runs {
			fmt.Fprintf(w, "\nnode %s:\n", r.Spec.NodeName)
			summarize(w, &r.Status)
		}
	}
	if err == nil && dir != "" {
		err = writeMarkdownReport(dir, exp, runs, reps)
	}
	return err
}

// fetchExperiment reads the experiment and its NodeRuns, sorted by node.
func fetchExperiment(ctx context.Context, c client.Client, name string) (*v1alpha1.SchedExperiment, []v1alpha1.NodeRun, error) {
	var exp v1alpha1.SchedExperiment
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &exp); err != nil {
		return nil, nil, notFound(fmt.Errorf("SchedExperiment %s: %w", name, err))
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
			s := experiment.ShapeFromCapabilities(c)
			if shape == "" || s.Name() == shape {
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
	s, _ := v1alpha1.ParseShapeName(shape)
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

// writeMarkdownReport writes report.md (what was run, where, the table, the charts, the restore
// record), report.json and, when there are results, the charts (PNG and SVG).
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
	for _, r := range reps {
		// One set of charts per node shape; in a directory of its own when
		// the nodes have several shapes.
		sub := ""
		if len(reps) > 1 {
			sub = fileSafe(r.Shape)
			fmt.Fprintf(&b, "\n### Nodes of shape %s\n", r.Shape)
		}
		charts, err := writeReportCharts(filepath.Join(dir, sub), &exp.Spec, r.Report)
		if err != nil {
			return fmt.Errorf("charts: %w", err)
		}
		for i := range charts {
			charts[i].Name = filepath.ToSlash(filepath.Join(sub, charts[i].Name))
		}
		b.WriteString(chartsMarkdown(charts))
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
