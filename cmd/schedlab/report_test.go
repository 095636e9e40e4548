package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func reportFixture() (*v1alpha1.SchedExperiment, []v1alpha1.NodeRun) {
	w := func(v int32) *int32 { return &v }
	exp := &v1alpha1.SchedExperiment{
		ObjectMeta: metav1.ObjectMeta{Name: "weights"},
		Spec: v1alpha1.SchedExperimentSpec{
			Duration: metav1.Duration{Duration: 8e9},
			Variants: []v1alpha1.Variant{{Name: "stock"}},
			Workload: v1alpha1.Workload{Groups: []v1alpha1.Group{
				{Name: "w100", CPUWeight: w(100), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}},
				{Name: "w400", CPUWeight: w(400), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}},
			}},
		},
		Status: v1alpha1.SchedExperimentStatus{
			ResultsGeneration: 1,
			Nodes:             []v1alpha1.NodeProgress{{Name: "vm", Shape: "2cpu-EEVDF"}},
			PredictionError:   "3.0%",
			Results: []v1alpha1.GroupResult{
				{Variant: "stock", Group: "w100", Measured: &v1alpha1.MeasuredMetrics{Metrics: v1alpha1.Metrics{CPU: 0.97}, N: 2}, Predicted: &v1alpha1.Metrics{CPU: 1}},
				{Variant: "stock", Group: "w400", Measured: &v1alpha1.MeasuredMetrics{Metrics: v1alpha1.Metrics{CPU: 1.01}, N: 2}, Predicted: &v1alpha1.Metrics{CPU: 1}},
			},
		},
	}
	runs := []v1alpha1.NodeRun{{
		Spec: v1alpha1.NodeRunSpec{ExperimentName: "weights", ExperimentGeneration: 1, NodeName: "vm"},
		Status: v1alpha1.NodeRunStatus{
			Phase:        v1alpha1.NodeRunCompleted,
			Restored:     true,
			Capabilities: &v1alpha1.NodeCapabilities{CPUs: 2, KernelVersion: "6.18.0", Scheduler: v1alpha1.SchedulerEEVDF, CgroupVersion: "v1", HZ: 250},
			Knobs:        []v1alpha1.KnobRecord{{Name: "autogroup", Original: "1", Set: "0", Restored: "1", OK: true}},
		},
	}}
	return exp, runs
}

func TestExperimentReports(t *testing.T) {
	exp, runs := reportFixture()
	for name, rs := range map[string][]v1alpha1.NodeRun{"with NodeRun": runs, "Simulate (no NodeRun)": nil} {
		t.Run(name, func(t *testing.T) {
			reps := experimentReports(exp, rs)
			if len(reps) != 1 {
				t.Fatalf("got %d reports, want 1", len(reps))
			}
			r := reps[0].Report
			if got := []int32{r.Variants[0].Node.CPUs}; !cmp.Equal(got, []int32{2}) {
				t.Errorf("node CPUs %v, want 2 (from the capabilities or the shape name)", got)
			}
			var b bytes.Buffer
			if err := writeReportTables(&b, exp, reps); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"w100", "0.970", "1.000", "w400", "1.010", "prediction error (cpu, mean |relative|): 3.0%"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("table lacks %q:\n%s", want, b.String())
				}
			}
		})
	}
}

func TestWriteMarkdownReport(t *testing.T) {
	exp, runs := reportFixture()
	dir := t.TempDir()
	if err := writeMarkdownReport(dir, exp, runs, experimentReports(exp, runs)); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# schedlab report: weights", "group `w400`: 1 × 1 task(s) Hog, cpuWeight 400", "node `vm`: 2 CPUs",
		"## Measured vs predicted", "![CPU (CPUs): measured vs predicted](cpu.png)", "## Node vm: Completed, restored: true", `autogroup`} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	for _, f := range []string{"report.json", "cpu.png", "cpu.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
}

func TestEmptyReport(t *testing.T) {
	exp, _ := reportFixture()
	exp.Status = v1alpha1.SchedExperimentStatus{}
	var b bytes.Buffer
	if err := writeReportTables(&b, exp, experimentReports(exp, nil)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "weights has no results yet") {
		t.Errorf("got %q", b.String())
	}
}
