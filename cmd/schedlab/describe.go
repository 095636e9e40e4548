package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/progress"
)

func init() { register("describe", newDescribeCmd) }

func newDescribeCmd() *cobra.Command {
	kube := newClusterFlags()
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "show a SchedExperiment from the cluster: what it runs, where it is, each node, its events",
		Long: `Shows SchedExperiment NAME as a person reads it: mode, nodes, variants and their knobs, the
workload, the objectives; its conditions; each node's phase and steps; the best variant
and the recommendation; and the experiment's Events. The measured vs predicted table is
printed by schedlab report NAME.`,
		Example: `  schedlab describe group-fairness`,
		Args:    exactArgs(1, "the experiment's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := kube.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			return describeExperiment(ctx, cmd.OutOrStdout(), c, args[0], time.Now())
		},
		ValidArgsFunction: kube.completeExperiments,
	}
	kube.register(cmd)
	return cmd
}

// describeExperiment writes the description of experiment name; now is the
// time ages are counted from.
func describeExperiment(ctx context.Context, w io.Writer, c client.Client, name string, now time.Time) error {
	var exp v1alpha1.SchedExperiment
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &exp); err != nil {
		return notFound(fmt.Errorf("SchedExperiment %s: %w", name, err))
	}
	// Events of a cluster-scoped object live in the default namespace;
	// look in every namespace, as kubectl describe does.
	var events corev1.EventList
	evErr := c.List(ctx, &events, client.MatchingFields{
		"involvedObject.kind": "SchedExperiment",
		"involvedObject.name": name,
	})
	writeDescription(w, &exp, events.Items, evErr, now)
	return nil
}

// age is kubectl's short duration since t ("5m", "2d3h"), or "<unknown>".
func age(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// writeDescription lays out exp, its events (or why they could not be read)
// in kubectl describe's style: "Field:  value", sections indented.
func writeDescription(w io.Writer, exp *v1alpha1.SchedExperiment, events []corev1.Event, evErr error, now time.Time) {
	tw := printers.GetNewTabWriter(w)
	defer tw.Flush()
	line := func(indent int, format string, a ...any) {
		fmt.Fprintf(tw, strings.Repeat("  ", indent)+format+"\n", a...)
	}
	s := &exp.Spec
	mode := s.Mode
	if mode == "" {
		mode = v1alpha1.ModeMeasure
	}
	line(0, "Name:\t%s", exp.Name)
	if len(exp.Labels) > 0 {
		var ls []string
		for k, v := range exp.Labels {
			ls = append(ls, k+"="+v)
		}
		sort.Strings(ls)
		line(0, "Labels:\t%s", strings.Join(ls, ","))
	}
	line(0, "Created:\t%s (%s ago)", exp.CreationTimestamp.UTC().Format(time.RFC3339), age(exp.CreationTimestamp.Time, now))
	status := "Pending"
	if c := meta.FindStatusCondition(exp.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		status = c.Reason
		if c.Message != "" {
			status += ": " + c.Message
		}
	}
	line(0, "Status:\t%s", status)
	line(0, "Progress:\t%s", progress.Line(exp))
	line(0, "Mode:\t%s", mode)
	line(0, "Generation:\t%d (observed %d, results of %d)", exp.Generation, exp.Status.ObservedGeneration, exp.Status.ResultsGeneration)
	if s.NodeSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(s.NodeSelector)
		if err == nil {
			line(0, "Node selector:\t%s", orDash(sel.String()))
		}
	}
	win := fmt.Sprintf("%s per window", s.Duration.Duration)
	if s.Warmup != nil {
		win += fmt.Sprintf(" after %s of warm-up", s.Warmup.Duration)
	}
	line(0, "Windows:\t%s, %d repetition(s)", win, max(s.Repetitions, 1))
	if st := exp.Status.StartTime; st != nil {
		line(0, "Started:\t%s (%s ago)", st.UTC().Format(time.RFC3339), age(st.Time, now))
	}
	if ct := exp.Status.CompletionTime; ct != nil {
		line(0, "Completed:\t%s (%s ago)", ct.UTC().Format(time.RFC3339), age(ct.Time, now))
	}

	line(0, "Variants:")
	for _, v := range s.Variants {
		k, _ := json.Marshal(v.Knobs)
		knobs := string(k)
		if knobs == "{}" || knobs == "null" {
			knobs = "(no knobs: the node as it is)"
		}
		line(1, "%s:\t%s", v.Name, knobs)
	}
	line(0, "Workload:")
	for _, g := range s.Workload.Groups {
		pat := "-"
		if g.Pattern != nil {
			pat = string(g.Pattern.Type)
		}
		extra := ""
		if g.CPUWeight != nil {
			extra = fmt.Sprintf(", cpuWeight %d", *g.CPUWeight)
		}
		line(1, "%s:\t%d × %d task(s) %s%s", g.Name, g.ReplicaCount(), g.TaskCount(), pat, extra)
	}
	if len(s.Objectives) > 0 {
		line(0, "Objectives:")
		for _, o := range s.Objectives {
			line(1, "%s of %s:\t%s", o.Metric, o.Group, o.Goal)
		}
	}

	line(0, "Conditions:")
	if len(exp.Status.Conditions) == 0 {
		line(1, "<none>")
	} else {
		line(1, "TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
		for _, c := range exp.Status.Conditions {
			line(1, "%s\t%s\t%s\t%s\t%s", c.Type, c.Status, c.Reason, age(c.LastTransitionTime.Time, now), c.Message)
		}
	}
	line(0, "Nodes:")
	if len(exp.Status.Nodes) == 0 {
		line(1, "<none chosen yet>")
	} else {
		line(1, "NODE\tPHASE\tSHAPE\tSTEPS\tMESSAGE")
		for _, n := range exp.Status.Nodes {
			steps := "-"
			if n.StepsTotal > 0 {
				steps = fmt.Sprintf("%d/%d", n.StepsDone, n.StepsTotal)
			}
			line(1, "%s\t%s\t%s\t%s\t%s", n.Name, orDash(string(n.Phase)), orDash(n.Shape), steps, n.Message)
		}
	}
	if exp.Status.BestVariant != "" {
		line(0, "Best variant:\t%s", exp.Status.BestVariant)
		if exp.Status.BestVariantReason != "" {
			line(1, "%s", exp.Status.BestVariantReason)
		}
	}
	if r := exp.Status.Recommendation; r != nil {
		k, _ := json.Marshal(r.Knobs)
		line(0, "Recommendation:\t%s over %s, knobs %s (schedlab promote %s)", r.Variant, orDash(r.Baseline), k, exp.Name)
		for _, e := range r.Effects {
			sig := "not significant"
			if e.Significant {
				sig = "significant"
			}
			line(1, "%s of %s:\t%s → %s (%s), 95%% interval of the difference %s, %s", e.Metric, e.Group, e.Baseline, e.Variant, e.Change, e.Interval, sig)
		}
	}
	if exp.Status.PredictionError != "" {
		line(0, "Prediction error:\t%s (mean |relative| of predicted cpu)", exp.Status.PredictionError)
	}
	if n := len(exp.Status.Results); n > 0 {
		line(0, "Results:\t%d rows: schedlab report %s", n, exp.Name)
	}

	line(0, "Events:")
	switch {
	case evErr != nil:
		line(1, "<cannot read: %v>", evErr)
	case len(events) == 0:
		line(1, "<none>")
	default:
		sort.SliceStable(events, func(i, j int) bool { return eventTime(&events[i]).Before(eventTime(&events[j])) })
		line(1, "TYPE\tREASON\tAGE\tFROM\tMESSAGE")
		for i := range events {
			e := &events[i]
			from := e.ReportingController
			if from == "" {
				from = e.Source.Component
			}
			when := age(eventTime(e), now)
			if n := eventCount(e); n > 1 {
				when += fmt.Sprintf(" (x%d)", n)
			}
			line(1, "%s\t%s\t%s\t%s\t%s", e.Type, e.Reason, when, orDash(from), strings.TrimSpace(e.Message))
		}
	}
}

// eventTime is when an event (of either API) last happened.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func eventCount(e *corev1.Event) int32 {
	if e.Series != nil {
		return e.Series.Count
	}
	return e.Count
}
