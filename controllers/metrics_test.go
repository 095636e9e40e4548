package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// gather flattens the registry into "name{k=v,…}" → value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName() + "{"
			for i, l := range m.GetLabel() {
				if i > 0 {
					key += ","
				}
				key += l.GetName() + "=" + l.GetValue()
			}
			key += "}"
			switch {
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func TestMetricsHaveBoundedLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	expA := &v1alpha1.SchedExperiment{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	expB := &v1alpha1.SchedExperiment{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	m.observe(expA, &v1alpha1.SchedExperimentStatus{
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Made-Up"},
			{Type: "SomethingElse", Status: metav1.ConditionTrue}, {Type: v1alpha1.ConditionNodesLocked, Status: metav1.ConditionTrue}},
		Nodes: []v1alpha1.NodeProgress{{Name: "n1", Phase: v1alpha1.NodeRunRunning}, {Name: "n2", Phase: v1alpha1.NodeRunTimedOut}},
	}, []v1alpha1.NodeRun{{Status: v1alpha1.NodeRunStatus{StartTime: &metav1.Time{Time: time.Now()}}}, {}})
	m.observe(expB, &v1alpha1.SchedExperimentStatus{
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonWaitingForNodes}},
		Nodes:      []v1alpha1.NodeProgress{{Name: "n3", Phase: v1alpha1.NodeRunPending}},
	}, nil)
	got := gather(t, reg)
	// 18 conditions (6 types × 3 statuses) + 13 phases + 7 NodeRun phases + 2
	// node gauges + 6 outcomes + 2 modes + 2 reconcile results + 1 simulation
	// + 1 re-runs + one per prediction metric.
	if want := 18 + 13 + 7 + 2 + 6 + 2 + 2 + 1 + 1 + len(v1alpha1.MetricNames); len(got) != want {
		t.Errorf("%d series, want %d:\n%v", len(got), want, got)
	}
	want := map[string]float64{
		"schedlab_experiment_conditions{condition=NodesLocked,status=True}": 1,
		"schedlab_experiments{phase=Other}":                                 1,
		"schedlab_experiments{phase=WaitingForNodes}":                       1,
		"schedlab_node_runs{phase=Running}":                                 1,
		"schedlab_node_runs{phase=TimedOut}":                                1,
		"schedlab_nodes_locked{}":                                           2,
		"schedlab_nodes_unrestored{}":                                       1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	m.forget("a")
	got = gather(t, reg)
	if diff := cmp.Diff(map[string]float64{"other": 0, "waiting": 1, "locked": 0}, map[string]float64{
		"other": got["schedlab_experiments{phase=Other}"], "waiting": got["schedlab_experiments{phase=WaitingForNodes}"], "locked": got["schedlab_nodes_locked{}"],
	}); diff != "" {
		t.Errorf("after forgetting an experiment (-want +got):\n%s", diff)
	}
}

// A run that finishes is counted once (outcome, duration, window re-runs,
// prediction error per metric), however often it is observed; one that had
// finished before the manager started is not counted.
func TestMetricsCountFinishedRunsOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	exp := &v1alpha1.SchedExperiment{ObjectMeta: metav1.ObjectMeta{Name: "x", UID: "u1"}}
	st := &v1alpha1.SchedExperimentStatus{
		ResultsGeneration: 1,
		StartTime:         &metav1.Time{Time: now.Add(-90 * time.Second)},
		CompletionTime:    &metav1.Time{Time: now.Add(time.Second)},
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded},
			{Type: v1alpha1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded}},
		Results: []v1alpha1.GroupResult{{Variant: "v", Group: "g",
			Measured:      &v1alpha1.MeasuredMetrics{N: 2, Metrics: v1alpha1.Metrics{CPU: 1}},
			RelativeError: &v1alpha1.Metrics{CPU: -0.03, WakeupLatencyUs: &v1alpha1.LatencySummary{P99: 0.4}}}},
	}
	runs := []v1alpha1.NodeRun{{Spec: v1alpha1.NodeRunSpec{ExperimentGeneration: 1}, Status: v1alpha1.NodeRunStatus{
		StartTime: &metav1.Time{Time: now}, Restored: true,
		Windows: []v1alpha1.WindowResult{{Attempts: 3}, {Attempts: 1}, {Attempts: 2}}}}}
	for range 3 {
		m.observe(exp, st, runs)
	}
	old := &v1alpha1.SchedExperiment{ObjectMeta: metav1.ObjectMeta{Name: "old", UID: "u2"}}
	oldSt := st.DeepCopy()
	oldSt.CompletionTime = &metav1.Time{Time: now.Add(-time.Hour)}
	m.observe(old, oldSt, runs)
	got := gather(t, reg)
	want := map[string]float64{
		"schedlab_experiment_outcomes_total{outcome=Succeeded}":       1,
		"schedlab_experiment_run_duration_seconds{mode=Measure}":      1,
		"schedlab_agent_window_reruns_total{}":                        3,
		"schedlab_prediction_error_ratio{metric=cpu}":                 1,
		"schedlab_prediction_error_ratio{metric=wakeupLatencyUs.p99}": 1,
		"schedlab_prediction_error_ratio{metric=opsPerSec}":           0,
		"schedlab_experiments{phase=Succeeded}":                       2,
		"schedlab_nodes_unrestored{}":                                 0,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// The reconciler and analyzer wrappers observe durations.
func TestMetricsTimeReconcilesAndPredictions(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	rec := m.timed(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, errors.New("boom")
	}))
	_, _ = rec.Reconcile(context.Background(), reconcile.Request{})
	an := m.TimedAnalyzer(&stubAnalyzer{})
	if _, err := an.Analyze(context.Background(), AnalyzeInput{}); err != nil {
		t.Fatal(err)
	}
	got := gather(t, reg)
	if got["schedlab_reconcile_duration_seconds{result=error}"] != 1 || got["schedlab_reconcile_duration_seconds{result=success}"] != 0 ||
		got["schedlab_simulation_duration_seconds{}"] != 1 {
		t.Errorf("durations: %v", got)
	}
}

// The chart's Grafana dashboard parses, and every metric its queries name is
// one these Metrics export (a histogram's _bucket/_sum/_count series count as
// the histogram).
func TestDashboardQueriesExist(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "charts", "schedlab", "files", "dashboards", "schedlab.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]dto.MetricType{}
	for _, mf := range mfs {
		exported[mf.GetName()] = mf.GetType()
	}
	nameRE := regexp.MustCompile(`\bschedlab_[a-z_]+`)
	queries := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			names := nameRE.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no schedlab metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				base := n
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(n, suf); ok && exported[b] == dto.MetricType_HISTOGRAM {
						base = b
					}
				}
				if _, ok := exported[base]; !ok {
					t.Errorf("panel %q: query %q names %s, which is not exported", p.Title, tg.Expr, n)
				}
				if strings.HasSuffix(n, "_bucket") && base == n {
					t.Errorf("panel %q: %s is not a histogram", p.Title, n)
				}
			}
			queries++
		}
	}
	if queries < 5 {
		t.Errorf("the dashboard has %d queries, want its panels (experiments, latency measured vs predicted, node locks, …)", queries)
	}
}
