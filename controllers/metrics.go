package controllers

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// Metrics are the controller's Prometheus metrics. Every label takes values
// from a fixed set: condition types and statuses, NodeRun phases.
type Metrics struct {
	mu          sync.Mutex
	experiments map[string]experimentState

	experimentsDesc *prometheus.Desc
	nodeRunsDesc    *prometheus.Desc
	predictionError prometheus.Histogram
}

type experimentState struct {
	conditions map[string]metav1.ConditionStatus
	phases     map[v1alpha1.NodeRunPhase]int
}

var (
	conditionTypes = []string{v1alpha1.ConditionReady, v1alpha1.ConditionNodesLocked, v1alpha1.ConditionRunning,
		v1alpha1.ConditionCompleted, v1alpha1.ConditionDegraded, v1alpha1.ConditionFailed}
	conditionStatuses = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}
	nodeRunPhases     = []v1alpha1.NodeRunPhase{v1alpha1.NodeRunPending, v1alpha1.NodeRunRunning, v1alpha1.NodeRunCompleted,
		v1alpha1.NodeRunFailed, v1alpha1.NodeRunUnsupported, v1alpha1.NodeRunTimedOut, v1alpha1.NodeRunAborted}
)

// NewMetrics creates the metrics and registers them with reg (the
// controller-runtime registry, metrics.Registry, in the manager).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		experiments: map[string]experimentState{},
		experimentsDesc: prometheus.NewDesc("schedlab_experiments",
			"SchedExperiments by condition type and status.", []string{"condition", "status"}, nil),
		nodeRunsDesc: prometheus.NewDesc("schedlab_node_runs",
			"Nodes of running and finished SchedExperiments by phase, as the controller sees them.", []string{"phase"}, nil),
		predictionError: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "schedlab_prediction_relative_error",
			Help:    "Absolute relative error of the predicted cpu against the measured, one observation per result row of a completed experiment.",
			Buckets: []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2},
		}),
	}
	if reg != nil {
		if err := reg.Register(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.experimentsDesc
	ch <- m.nodeRunsDesc
	m.predictionError.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	conds := map[string]map[metav1.ConditionStatus]int{}
	phases := map[v1alpha1.NodeRunPhase]int{}
	for _, st := range m.experiments {
		for t, s := range st.conditions {
			if conds[t] == nil {
				conds[t] = map[metav1.ConditionStatus]int{}
			}
			conds[t][s]++
		}
		for p, n := range st.phases {
			phases[p] += n
		}
	}
	m.mu.Unlock()
	for _, t := range conditionTypes {
		for _, s := range conditionStatuses {
			ch <- prometheus.MustNewConstMetric(m.experimentsDesc, prometheus.GaugeValue, float64(conds[t][s]), t, string(s))
		}
	}
	for _, p := range nodeRunPhases {
		ch <- prometheus.MustNewConstMetric(m.nodeRunsDesc, prometheus.GaugeValue, float64(phases[p]), string(p))
	}
	m.predictionError.Collect(ch)
}

func (m *Metrics) observe(name string, st *v1alpha1.SchedExperimentStatus) {
	if m == nil {
		return
	}
	es := experimentState{conditions: map[string]metav1.ConditionStatus{}, phases: map[v1alpha1.NodeRunPhase]int{}}
	for _, c := range st.Conditions {
		if known(conditionTypes, c.Type) {
			es.conditions[c.Type] = c.Status
		}
	}
	for _, n := range st.Nodes {
		if known(nodeRunPhases, n.Phase) {
			es.phases[n.Phase]++
		}
	}
	m.mu.Lock()
	m.experiments[name] = es
	m.mu.Unlock()
}

func (m *Metrics) forget(name string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	delete(m.experiments, name)
	m.mu.Unlock()
}

func (m *Metrics) observePredictionErrors(errs []float64) {
	if m == nil {
		return
	}
	for _, e := range errs {
		if e < 0 {
			e = -e
		}
		m.predictionError.Observe(e)
	}
}

func known[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}
