package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	m.observe("a", &v1alpha1.SchedExperimentStatus{
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionCompleted, Status: metav1.ConditionTrue}, {Type: "SomethingElse", Status: metav1.ConditionTrue}},
		Nodes:      []v1alpha1.NodeProgress{{Name: "n1", Phase: v1alpha1.NodeRunCompleted}, {Name: "n2", Phase: v1alpha1.NodeRunTimedOut}},
	})
	m.observe("b", &v1alpha1.SchedExperimentStatus{
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionCompleted, Status: metav1.ConditionTrue}},
		Nodes:      []v1alpha1.NodeProgress{{Name: "n3", Phase: v1alpha1.NodeRunCompleted}},
	})
	m.observePredictionErrors([]float64{0.03, -0.2})
	got := gather(t, reg)
	if len(got) != 18+7+1 {
		t.Errorf("%d series, want 18 (6 condition types × 3 statuses) + 7 phases + 1 histogram:\n%v", len(got), got)
	}
	want := map[string]float64{
		"schedlab_experiments{condition=Completed,status=True}": 2,
		"schedlab_experiments{condition=Ready,status=True}":     0,
		"schedlab_node_runs{phase=Completed}":                   2,
		"schedlab_node_runs{phase=TimedOut}":                    1,
		"schedlab_prediction_relative_error{}":                  2,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	m.forget("a")
	got = gather(t, reg)
	if diff := cmp.Diff(map[string]float64{"c": 1, "n": 1}, map[string]float64{
		"c": got["schedlab_experiments{condition=Completed,status=True}"], "n": got["schedlab_node_runs{phase=Completed}"],
	}); diff != "" {
		t.Errorf("after forgetting an experiment (-want +got):\n%s", diff)
	}
}
