package experiment

import (
	"math"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// MetricValue reads one named metric; ok is false where the metric does not
// apply (no latency samples, not a Periodic group).
func MetricValue(m *v1alpha1.Metrics, name string) (float64, bool) {
	if m == nil {
		return 0, false
	}
	switch name {
	case "cpu":
		return m.CPU, true
	case "cpuPerTask":
		return m.CPUPerTask, true
	case "share":
		return m.Share, true
	case "deadlineMissRatio":
		if m.DeadlineMissRatio == nil {
			return 0, false
		}
		return *m.DeadlineMissRatio, true
	case "opsPerSec":
		if m.OpsPerSec == nil {
			return 0, false
		}
		return *m.OpsPerSec, true
	case "offered":
		if m.Offered == nil {
			return 0, false
		}
		return *m.Offered, true
	case "throughput":
		if m.Throughput == nil {
			return 0, false
		}
		return *m.Throughput, true
	case "dropped":
		if m.Dropped == nil {
			return 0, false
		}
		return *m.Dropped, true
	case "ctxSwitchesPerSec.voluntary", "ctxSwitchesPerSec.involuntary":
		if m.CtxSwitchesPerSec == nil {
			return 0, false
		}
		if name == "ctxSwitchesPerSec.voluntary" {
			return m.CtxSwitchesPerSec.Voluntary, true
		}
		return m.CtxSwitchesPerSec.Involuntary, true
	case "lateFraction.over100us", "lateFraction.over1ms", "lateFraction.over10ms":
		f := m.LateFraction
		if f == nil {
			return 0, false
		}
		switch name {
		case "lateFraction.over100us":
			return f.Over100us, true
		case "lateFraction.over1ms":
			return f.Over1ms, true
		}
		return f.Over10ms, true
	}
	// A summary is present only where the group had wake-ups (requests);
	// its Count is not checked, since a standard-deviation summary carries
	// none.
	l := m.WakeupLatencyUs
	if strings.HasPrefix(name, "requestLatencyUs.") {
		l, name = m.RequestLatencyUs, "wakeupLatencyUs."+strings.TrimPrefix(name, "requestLatencyUs.")
		if l != nil && name == "wakeupLatencyUs.p95" {
			return l.P95, true
		}
	}
	if l == nil {
		return 0, false
	}
	switch name {
	case "wakeupLatencyUs.p50":
		return l.P50, true
	case "wakeupLatencyUs.p90":
		return l.P90, true
	case "wakeupLatencyUs.p99":
		return l.P99, true
	case "wakeupLatencyUs.p999":
		return l.P999, true
	case "wakeupLatencyUs.max":
		return l.Max, true
	case "wakeupLatencyUs.mean":
		return l.Mean, true
	}
	return 0, false
}

// combine builds a Metrics from per-metric values computed by f over the
// named metrics of the given samples; fields that no sample has stay unset.
// It is the one place that walks the metric vocabulary field by field.
func combine(samples []*v1alpha1.Metrics, f func(values []float64) float64) v1alpha1.Metrics {
	var out v1alpha1.Metrics
	for _, name := range v1alpha1.MetricNames {
		var vals []float64
		for _, s := range samples {
			if v, ok := MetricValue(s, name); ok {
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			continue
		}
		setMetric(&out, name, f(vals))
	}
	if out.WakeupLatencyUs != nil {
		var count []float64
		for _, s := range samples {
			if s != nil && s.WakeupLatencyUs != nil {
				count = append(count, float64(s.WakeupLatencyUs.Count))
			}
		}
		out.WakeupLatencyUs.Count = int64(math.Round(f(count)))
	}
	if out.RequestLatencyUs != nil {
		var count []float64
		for _, s := range samples {
			if s != nil && s.RequestLatencyUs != nil {
				count = append(count, float64(s.RequestLatencyUs.Count))
			}
		}
		out.RequestLatencyUs.Count = int64(math.Round(f(count)))
	}
	return out
}

func setMetric(m *v1alpha1.Metrics, name string, v float64) {
	switch name {
	case "cpu":
		m.CPU = v
	case "cpuPerTask":
		m.CPUPerTask = v
	case "share":
		m.Share = v
	case "deadlineMissRatio":
		m.DeadlineMissRatio = &v
	case "opsPerSec":
		m.OpsPerSec = &v
	case "offered":
		m.Offered = &v
	case "throughput":
		m.Throughput = &v
	case "dropped":
		m.Dropped = &v
	case "ctxSwitchesPerSec.voluntary":
		if m.CtxSwitchesPerSec == nil {
			m.CtxSwitchesPerSec = &v1alpha1.ContextSwitches{}
		}
		m.CtxSwitchesPerSec.Voluntary = v
	case "ctxSwitchesPerSec.involuntary":
		if m.CtxSwitchesPerSec == nil {
			m.CtxSwitchesPerSec = &v1alpha1.ContextSwitches{}
		}
		m.CtxSwitchesPerSec.Involuntary = v
	case "lateFraction.over100us", "lateFraction.over1ms", "lateFraction.over10ms":
		if m.LateFraction == nil {
			m.LateFraction = &v1alpha1.LateFraction{}
		}
		switch name {
		case "lateFraction.over100us":
			m.LateFraction.Over100us = v
		case "lateFraction.over1ms":
			m.LateFraction.Over1ms = v
		default:
			m.LateFraction.Over10ms = v
		}
	default:
		if strings.HasPrefix(name, "requestLatencyUs.") {
			if m.RequestLatencyUs == nil {
				m.RequestLatencyUs = &v1alpha1.LatencySummary{}
			}
			if name == "requestLatencyUs.p95" {
				m.RequestLatencyUs.P95 = v
				return
			}
			setLatency(m.RequestLatencyUs, "wakeupLatencyUs."+strings.TrimPrefix(name, "requestLatencyUs."), v)
			return
		}
		if m.WakeupLatencyUs == nil {
			m.WakeupLatencyUs = &v1alpha1.LatencySummary{}
		}
		setLatency(m.WakeupLatencyUs, name, v)
	}
}

func setLatency(l *v1alpha1.LatencySummary, name string, v float64) {
	{
		switch name {
		case "wakeupLatencyUs.p50":
			l.P50 = v
		case "wakeupLatencyUs.p90":
			l.P90 = v
		case "wakeupLatencyUs.p99":
			l.P99 = v
		case "wakeupLatencyUs.p999":
			l.P999 = v
		case "wakeupLatencyUs.max":
			l.Max = v
		case "wakeupLatencyUs.mean":
			l.Mean = v
		}
	}
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return stat.Mean(v, nil)
}

// stddev is the sample standard deviation (n−1); 0 for fewer than two.
func stddev(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	return stat.StdDev(v, nil)
}
