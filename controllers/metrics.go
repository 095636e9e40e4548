package controllers

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

// The metrics endpoint checks its callers' tokens and rights:
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Metrics are the controller's Prometheus metrics, named by the Prometheus
// conventions (_total counters, _seconds durations, _ratio ratios). Every
// label takes values from a fixed set: condition types and statuses, phases
// (the Ready condition's reasons), outcomes, NodeRun phases, metric names,
// modes. Durations are wall-clock time, not the reconciler's clock.
//
// Gauges are computed from what the reconciler last observed of each
// experiment; counters and histograms count experiments that finished while
// this manager ran (an experiment already finished when it starts is not
// counted again).
type Metrics struct {
	mu          sync.Mutex
	started     time.Time
	experiments map[string]experimentState
	finished    map[string]bool // name/uid/generation counted as finished

	conditionsDesc   *prometheus.Desc
	phasesDesc       *prometheus.Desc
	nodeRunsDesc     *prometheus.Desc
	nodesLockedDesc  *prometheus.Desc
	unrestoredDesc   *prometheus.Desc
	outcomes         *prometheus.CounterVec
	runDuration      *prometheus.HistogramVec
	reconcileTime    *prometheus.HistogramVec
	simulationTime   prometheus.Histogram
	windowReruns     prometheus.Counter
	predictionErrors *prometheus.HistogramVec
}

type experimentState struct {
	conditions map[string]metav1.ConditionStatus
	phase      string
	nodeRuns   map[v1alpha1.NodeRunPhase]int
	locked     int
	unrestored int
}

var (
	conditionTypes = []string{v1alpha1.ConditionReady, v1alpha1.ConditionNodesLocked, v1alpha1.ConditionRunning,
		v1alpha1.ConditionCompleted, v1alpha1.ConditionDegraded, v1alpha1.ConditionFailed}
	conditionStatuses = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}
	nodeRunPhases     = []v1alpha1.NodeRunPhase{v1alpha1.NodeRunPending, v1alpha1.NodeRunRunning, v1alpha1.NodeRunCompleted,
		v1alpha1.NodeRunFailed, v1alpha1.NodeRunUnsupported, v1alpha1.NodeRunTimedOut, v1alpha1.NodeRunAborted}
	// experimentPhases are the Ready condition's reasons: where an
	// experiment is. "Pending" stands for no Ready condition yet, "Other"
	// for a reason not listed.
	experimentPhases = []string{"Pending", v1alpha1.ReasonWaitingForNodes, v1alpha1.ReasonNodesLocked, v1alpha1.ReasonNoNodes,
		v1alpha1.ReasonInvalidSpec, v1alpha1.ReasonRunning, v1alpha1.ReasonSucceeded, v1alpha1.ReasonSimulated,
		v1alpha1.ReasonNodesFailed, v1alpha1.ReasonTimedOut, v1alpha1.ReasonSpecChanged, v1alpha1.ReasonDeleting, "Other"}
	// outcomes are how a run ends: the Ready reason once Completed or
	// Failed is True.
	experimentOutcomes = []string{v1alpha1.ReasonSucceeded, v1alpha1.ReasonSimulated, v1alpha1.ReasonNodesFailed,
		v1alpha1.ReasonTimedOut, v1alpha1.ReasonInvalidSpec, "Other"}
	modes = []string{string(v1alpha1.ModeMeasure), string(v1alpha1.ModeSimulate)}
)

// NewMetrics creates the metrics and registers them with reg (the
// controller-runtime registry, metrics.Registry, in the manager).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		started:     time.Now(),
		experiments: map[string]experimentState{},
		finished:    map[string]bool{},
		conditionsDesc: prometheus.NewDesc("schedlab_experiment_conditions",
			"SchedExperiments by condition type and status.", []string{"condition", "status"}, nil),
		phasesDesc: prometheus.NewDesc("schedlab_experiments",
			"SchedExperiments by phase: the reason of their Ready condition (Pending before it is set).", []string{"phase"}, nil),
		nodeRunsDesc: prometheus.NewDesc("schedlab_node_runs",
			"Nodes of running and finished SchedExperiments by NodeRun phase, as the controller sees them.", []string{"phase"}, nil),
		nodesLockedDesc: prometheus.NewDesc("schedlab_nodes_locked",
			"Nodes held by a SchedExperiment's node lock (Lease).", nil, nil),
		unrestoredDesc: prometheus.NewDesc("schedlab_nodes_unrestored",
			"Nodes whose agent started changing knobs and has not reported them restored.", nil, nil),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedlab_experiment_outcomes_total",
			Help: "SchedExperiment runs that ended, by outcome (the Ready condition's reason).",
		}, []string{"outcome"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "schedlab_experiment_run_duration_seconds",
			Help:    "Time from an experiment's start to its completion, by mode.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14), // 1 s … 2.3 h
		}, []string{"mode"}),
		reconcileTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "schedlab_reconcile_duration_seconds",
			Help:    "Time of one SchedExperiment reconcile, by result (success or error).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16), // 1 ms … 33 s
		}, []string{"result"}),
		simulationTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "schedlab_simulation_duration_seconds",
			Help:    "Time the simulator took for one prediction of an experiment's results (every variant on every node shape).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14), // 10 ms … 82 s
		}),
		windowReruns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "schedlab_agent_window_reruns_total",
			Help: "Measurement windows the node agents ran again because other processes used the CPUs, over finished experiments.",
		}),
		predictionErrors: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "schedlab_prediction_error_ratio",
			Help:    "Absolute relative error of a prediction against the measurement, by metric: one observation per result row of a finished Measure experiment.",
			Buckets: []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5},
		}, []string{"metric"}),
	}
	m.zero()
	if reg != nil {
		if err := reg.Register(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.conditionsDesc, m.phasesDesc, m.nodeRunsDesc, m.nodesLockedDesc, m.unrestoredDesc} {
		ch <- d
	}
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.outcomes, m.runDuration, m.reconcileTime, m.simulationTime, m.windowReruns, m.predictionErrors}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	conds := map[string]map[metav1.ConditionStatus]int{}
	phases := map[string]int{}
	nodeRuns := map[v1alpha1.NodeRunPhase]int{}
	locked, unrestored := 0, 0
	for _, st := range m.experiments {
		for t, s := range st.conditions {
			if conds[t] == nil {
				conds[t] = map[metav1.ConditionStatus]int{}
			}
			conds[t][s]++
		}
		phases[st.phase]++
		for p, n := range st.nodeRuns {
			nodeRuns[p] += n
		}
		locked += st.locked
		unrestored += st.unrestored
	}
	m.mu.Unlock()
	for _, t := range conditionTypes {
		for _, s := range conditionStatuses {
			ch <- prometheus.MustNewConstMetric(m.conditionsDesc, prometheus.GaugeValue, float64(conds[t][s]), t, string(s))
		}
	}
	for _, p := range experimentPhases {
		ch <- prometheus.MustNewConstMetric(m.phasesDesc, prometheus.GaugeValue, float64(phases[p]), p)
	}
	for _, p := range nodeRunPhases {
		ch <- prometheus.MustNewConstMetric(m.nodeRunsDesc, prometheus.GaugeValue, float64(nodeRuns[p]), string(p))
	}
	ch <- prometheus.MustNewConstMetric(m.nodesLockedDesc, prometheus.GaugeValue, float64(locked))
	ch <- prometheus.MustNewConstMetric(m.unrestoredDesc, prometheus.GaugeValue, float64(unrestored))
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// zero creates every labelled series at zero so that dashboards and alerts to zero so that dashboards and alerts
// see them before the first event.
func (m *Metrics) zero() {
	for _, o := range experimentOutcomes {
		m.outcomes.WithLabelValues(o)
	}
	for _, md := range modes {
		m.runDuration.WithLabelValues(md)
	}
	for _, r := range []string{"success", "error"} {
		m.reconcileTime.WithLabelValues(r)
	}
	for _, name := range v1alpha1.MetricNames {
		m.predictionErrors.WithLabelValues(name)
	}
}

// observe records what a reconcile wrote for an experiment, with the
// NodeRuns it saw; when the run just finished, its outcome and duration.
func (m *Metrics) observe(exp *v1alpha1.SchedExperiment, st *v1alpha1.SchedExperimentStatus, runs []v1alpha1.NodeRun) {
	if m == nil {
		return
	}
	es := experimentState{conditions: map[string]metav1.ConditionStatus{}, nodeRuns: map[v1alpha1.NodeRunPhase]int{}, phase: "Pending"}
	for _, c := range st.Conditions {
		if known(conditionTypes, c.Type) {
			es.conditions[c.Type] = c.Status
		}
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c != nil {
		es.phase = bounded(experimentPhases, c.Reason)
	}
	for _, n := range st.Nodes {
		if known(nodeRunPhases, n.Phase) {
			es.nodeRuns[n.Phase]++
		}
	}
	if meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionNodesLocked) {
		es.locked = len(st.Nodes)
	}
	for i := range runs {
		if runs[i].Status.StartTime != nil && !runs[i].Status.Restored {
			es.unrestored++
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.experiments[exp.Name] = es

	// A run that finished: count it once, and only if it finished while
	// this manager ran.
	done := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionCompleted)
	failed := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionFailed)
	finished := done != nil && done.Status == metav1.ConditionTrue || failed != nil && failed.Status == metav1.ConditionTrue
	if !finished || st.CompletionTime == nil || st.CompletionTime.Time.Before(m.started.Truncate(time.Second)) {
		return
	}
	key := exp.Name + "/" + string(exp.UID) + "/" + strconv.FormatInt(st.ResultsGeneration, 10)
	if m.finished[key] {
		return
	}
	m.finished[key] = true
	m.outcomes.WithLabelValues(bounded(experimentOutcomes, es.phase)).Inc()
	mode := string(exp.Spec.Mode)
	if mode == "" {
		mode = string(v1alpha1.ModeMeasure)
	}
	if st.StartTime != nil && known(modes, mode) {
		m.runDuration.WithLabelValues(mode).Observe(st.CompletionTime.Sub(st.StartTime.Time).Seconds())
	}
	reruns := 0
	for i := range runs {
		if runs[i].Spec.ExperimentGeneration != st.ResultsGeneration {
			continue
		}
		for _, w := range runs[i].Status.Windows {
			reruns += max(int(w.Attempts)-1, 0)
		}
	}
	m.windowReruns.Add(float64(reruns))
	for _, r := range st.Results {
		if r.RelativeError == nil || r.Measured == nil {
			continue
		}
		for _, name := range v1alpha1.MetricNames {
			if v, ok := experiment.MetricValue(r.RelativeError, name); ok && !math.IsNaN(v) {
				m.predictionErrors.WithLabelValues(name).Observe(math.Abs(v))
			}
		}
	}
}

func (m *Metrics) forget(name string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	delete(m.experiments, name)
	for k := range m.finished {
		if len(k) > len(name) && k[:len(name)+1] == name+"/" {
			delete(m.finished, k)
		}
	}
	m.mu.Unlock()
}

// timed wraps a reconciler so that every reconcile's duration is observed.
func (m *Metrics) timed(r reconcile.Reconciler) reconcile.Reconciler {
	if m == nil {
		return r
	}
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		start := time.Now()
		res, err := r.Reconcile(ctx, req)
		result := "success"
		if err != nil {
			result = "error"
		}
		m.reconcileTime.WithLabelValues(result).Observe(time.Since(start).Seconds())
		return res, err
	})
}

// TimedAnalyzer wraps an Analyzer so that the time of every prediction is
// observed in schedlab_simulation_duration_seconds.
func (m *Metrics) TimedAnalyzer(a Analyzer) Analyzer {
	if m == nil {
		return a
	}
	return timedAnalyzer{Analyzer: a, m: m}
}

type timedAnalyzer struct {
	Analyzer
	m *Metrics
}

func (t timedAnalyzer) Analyze(ctx context.Context, in AnalyzeInput) (*Analysis, error) {
	start := time.Now()
	an, err := t.Analyzer.Analyze(ctx, in)
	if err == nil {
		t.m.simulationTime.Observe(time.Since(start).Seconds())
	}
	return an, err
}

func bounded(set []string, v string) string {
	if known(set, v) {
		return v
	}
	return "Other"
}

func known[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}
