package v1alpha1

// LatencySummary summarises wakeup latencies in microseconds: from the moment
// a task should run (timer expiry, its partner's wake-up) to the moment it runs.
type LatencySummary struct {
	// p50 is the median wakeup latency, µs.
	// +optional
	P50 float64 `json:"p50"`
	// p90 is the 90th percentile, µs.
	// +optional
	P90 float64 `json:"p90"`
	// p95 is reported for request latency only.
	// +optional
	P95 float64 `json:"p95,omitempty"`
	// p99 is the 99th percentile, µs.
	// +optional
	P99 float64 `json:"p99"`
	// p999 is the 99.9th percentile, µs.
	// +optional
	P999 float64 `json:"p999"`
	// max is the largest wakeup latency seen, µs.
	// +optional
	Max float64 `json:"max"`
	// mean is the mean wakeup latency, µs.
	// +optional
	Mean float64 `json:"mean"`
	// count is the number of wake-ups measured.
	// +optional
	Count int64 `json:"count"`
}

// ContextSwitches are context switches per second.
type ContextSwitches struct {
	// voluntary switches: the task blocked or slept.
	// +optional
	Voluntary float64 `json:"voluntary"`
	// involuntary switches: the task was preempted.
	// +optional
	Involuntary float64 `json:"involuntary"`
}

// Metrics is the one vocabulary of the agent, the simulator, the status and
// the CLI. Units are fixed; fields that do not apply to a group's pattern are
// left out.
type Metrics struct {
	// cpu is the CPUs the group consumed on average over the window
	// (1.0 = one whole CPU), summed over all its tasks.
	// +optional
	CPU float64 `json:"cpu"`
	// cpuPerTask is cpu divided by the group's replicas × tasks.
	// +optional
	CPUPerTask float64 `json:"cpuPerTask"`
	// share is the group's fraction of all the workload's CPU time.
	// +optional
	Share float64 `json:"share"`
	// wakeupLatencyUs summarises the group's wakeup latencies.
	// +optional
	WakeupLatencyUs *LatencySummary `json:"wakeupLatencyUs,omitempty"`
	// ctxSwitchesPerSec over all the group's tasks.
	// +optional
	CtxSwitchesPerSec *ContextSwitches `json:"ctxSwitchesPerSec,omitempty"`
	// deadlineMissRatio is the fraction of periods whose run did not finish
	// within the period (Periodic only).
	// +optional
	DeadlineMissRatio *float64 `json:"deadlineMissRatio,omitempty"`
	// opsPerSec: PingPong round trips, Burst jobs, Periodic frames or probe
	// wake-ups per second, over the group.
	// +optional
	OpsPerSec *float64 `json:"opsPerSec,omitempty"`
	// lateFraction: the fractions of wake-ups later than fixed thresholds,
	// to compare tails as distributions rather than by one percentile.
	// +optional
	LateFraction *LateFraction `json:"lateFraction,omitempty"`
	// requestLatencyUs summarises a Server group's request latencies in
	// microseconds: from a request's scheduled arrival to its completion
	// (queueing, scheduling and service), with p95.
	// +optional
	RequestLatencyUs *LatencySummary `json:"requestLatencyUs,omitempty"`
	// offered is a Server group's arrivals per second scheduled inside the
	// window (admitted or dropped), over all its replicas: the offered load
	// the window actually drew, to set throughput against (a Poisson
	// process's count over a window spreads by 1/√count around rate).
	// +optional
	Offered *float64 `json:"offered,omitempty"`
	// throughput is a Server group's completed requests per second, over
	// all its replicas.
	// +optional
	Throughput *float64 `json:"throughput,omitempty"`
	// dropped is a Server group's requests per second that found the queue
	// full and were refused, over all its replicas.
	// +optional
	Dropped *float64 `json:"dropped,omitempty"`
}

// LateFraction is the fraction of wake-ups later than 100us, 1ms and 10ms.
type LateFraction struct {
	// over100us is the fraction of wake-ups later than 100 µs.
	// +optional
	Over100us float64 `json:"over100us"`
	// over1ms is the fraction of wake-ups later than 1 ms.
	// +optional
	Over1ms float64 `json:"over1ms"`
	// over10ms is the fraction of wake-ups later than 10 ms.
	// +optional
	Over10ms float64 `json:"over10ms"`
}

// MeasuredMetrics are means over n samples (nodes × repetitions), with their
// standard deviations.
type MeasuredMetrics struct {
	Metrics `json:",inline"`
	// n is the number of samples behind the means.
	// +optional
	N int32 `json:"n"`
	// stddev of each metric over the samples.
	// +optional
	Stddev *Metrics `json:"stddev,omitempty"`
}
