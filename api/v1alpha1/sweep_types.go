package v1alpha1

// Capacity planning: a sweep varies one or two parameters of the spec over a
// grid, the simulator predicts every point on every node shape, and the
// constraints say which points are acceptable. The answer is the largest (or
// smallest, or best) acceptable point per shape, and summed over the fleet.

// MaxSweepPoints bounds a sweep: grid points × variants. Every point is one
// simulation per node shape, and the curve is kept in the status.
const MaxSweepPoints = 2000

// SweepTarget is what a sweep parameter changes.
// +kubebuilder:validation:Enum=Replicas;Tasks;CPUWeight;Rate;CPUs;BaseSlice;Latency;MinGranularity;WakeupGranularity;MigrationCost;NrMigrate
type SweepTarget string

const (
	// SweepReplicas sets a group's replicas (pods, cgroups).
	SweepReplicas SweepTarget = "Replicas"
	// SweepTasks sets a group's tasks per replica.
	SweepTasks SweepTarget = "Tasks"
	// SweepCPUWeight sets a group's cpuWeight.
	SweepCPUWeight SweepTarget = "CPUWeight"
	// SweepRate sets a Server group's request rate per replica.
	SweepRate SweepTarget = "Rate"
	// SweepCPUs sets the CPU count of every node shape.
	SweepCPUs SweepTarget = "CPUs"
	// SweepBaseSlice sets the baseSlice knob, in microseconds.
	SweepBaseSlice SweepTarget = "BaseSlice"
	// SweepLatency sets the CFS latency knob, in microseconds.
	SweepLatency SweepTarget = "Latency"
	// SweepMinGranularity sets the CFS minGranularity knob, in microseconds.
	SweepMinGranularity SweepTarget = "MinGranularity"
	// SweepWakeupGranularity sets the CFS wakeupGranularity knob, in microseconds.
	SweepWakeupGranularity SweepTarget = "WakeupGranularity"
	// SweepMigrationCost sets the migrationCost knob, in microseconds.
	SweepMigrationCost SweepTarget = "MigrationCost"
	// SweepNrMigrate sets the nrMigrate knob.
	SweepNrMigrate SweepTarget = "NrMigrate"
)

// SweepAnswerKind says which acceptable point answers the question.
// +kubebuilder:validation:Enum=Largest;Smallest;Best
type SweepAnswerKind string

const (
	// SweepLargest is the largest value of the first parameter that meets
	// every constraint, as are all smaller values ("how many fit").
	SweepLargest SweepAnswerKind = "Largest"
	// SweepSmallest is the smallest value of the first parameter that meets
	// every constraint, as do all larger values ("how few CPUs suffice").
	SweepSmallest SweepAnswerKind = "Smallest"
	// SweepBest is the point that meets every constraint and is best by
	// spec.objectives (the first objective decides, later ones break ties).
	SweepBest SweepAnswerKind = "Best"
)

// Sweep varies one or two parameters over a grid (their cartesian product).
// Every variant is simulated at every point on every node shape.
type Sweep struct {
	// parameters of the grid: one or two.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	Parameters []SweepParameter `json:"parameters"`

	// answer is Largest (default: the largest value of the first parameter
	// such that it and every smaller value meet all constraints), Smallest,
	// or Best (by spec.objectives among the points that meet all constraints).
	// +optional
	// +kubebuilder:default=Largest
	Answer SweepAnswerKind `json:"answer,omitempty"`
}

// SweepRange is from, from+step, … up to to (inclusive when reached).
// +kubebuilder:validation:XValidation:rule="self.from <= self.to",message="range.from must not be above range.to"
type SweepRange struct {
	// from is the first value.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	From int64 `json:"from"`
	// to is the last value (reached when to − from is a multiple of step).
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	To int64 `json:"to"`
	// step between values.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	Step int64 `json:"step,omitempty"`
}

// SweepParameter is one axis of the grid: a target and its values, as a
// range or a list. Durations (BaseSlice, Latency, MinGranularity,
// WakeupGranularity, MigrationCost) are in microseconds.
//
// +kubebuilder:validation:XValidation:rule="has(self.range) != has(self.values)",message="give a sweep parameter either range or values, not both"
// +kubebuilder:validation:XValidation:rule="(self.target in ['Replicas', 'Tasks', 'CPUWeight', 'Rate']) == has(self.group)",message="Replicas, Tasks, CPUWeight and Rate need group (the workload group they change); other targets take no group"
// +kubebuilder:validation:XValidation:rule="!has(self.variant) || self.target in ['BaseSlice', 'Latency', 'MinGranularity', 'WakeupGranularity', 'MigrationCost', 'NrMigrate']",message="variant applies only to knob targets (BaseSlice, Latency, MinGranularity, WakeupGranularity, MigrationCost, NrMigrate)"
// +kubebuilder:validation:XValidation:rule="!has(self.values) || self.values.isSorted()",message="sweep values must be listed in increasing order, each once"
// +kubebuilder:validation:XValidation:rule="(has(self.values) ? self.values.min() : self.range.from) >= {'Replicas': 1, 'Tasks': 1, 'CPUWeight': 1, 'Rate': 1, 'CPUs': 1, 'NrMigrate': 1, 'BaseSlice': 100, 'MinGranularity': 100, 'Latency': 100, 'WakeupGranularity': 1, 'MigrationCost': 1}[self.target] && (has(self.values) ? self.values.max() : self.range.to) <= {'Replicas': 512, 'Tasks': 512, 'CPUWeight': 10000, 'Rate': 1000000, 'CPUs': 1024, 'NrMigrate': 1024, 'BaseSlice': 100000, 'MinGranularity': 100000, 'Latency': 1000000, 'WakeupGranularity': 1000000, 'MigrationCost': 100000}[self.target]",message="sweep values are out of range for the target: Replicas and Tasks 1..512, CPUWeight 1..10000, Rate 1..1000000, CPUs 1..1024, NrMigrate 1..1024, BaseSlice and MinGranularity 100..100000 (us), Latency 100..1000000 (us), WakeupGranularity 1..1000000 (us), MigrationCost 1..100000 (us)"
type SweepParameter struct {
	// target is what the parameter changes.
	// +required
	Target SweepTarget `json:"target"`

	// group whose replicas, tasks, cpuWeight or rate the parameter sets.
	// +optional
	// +kubebuilder:validation:MaxLength=40
	Group string `json:"group,omitempty"`

	// variant whose knob the parameter sets; empty means every variant.
	// +optional
	// +kubebuilder:validation:MaxLength=40
	Variant string `json:"variant,omitempty"`

	// range of values, from..to by step.
	// +optional
	Range *SweepRange `json:"range,omitempty"`

	// values listed one by one.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2000
	// +kubebuilder:validation:items:Minimum=0
	// +kubebuilder:validation:items:Maximum=1000000
	Values []int64 `json:"values,omitempty"`
}

// Constraint bounds one metric of one group: a point of a sweep is
// acceptable when every constraint holds on it.
// +kubebuilder:validation:XValidation:rule="has(self.max) || has(self.min)",message="a constraint needs max or min (or both)"
// +kubebuilder:validation:XValidation:rule="!has(self.max) || !has(self.min) || self.min <= self.max",message="a constraint's min must not be above its max"
type Constraint struct {
	// metric to bound, from the metric vocabulary (e.g. wakeupLatencyUs.p99).
	// +required
	Metric MetricName `json:"metric"`

	// group whose metric is bounded.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	Group string `json:"group"`

	// max is the largest acceptable value (in the metric's unit).
	// +optional
	Max *float64 `json:"max,omitempty"`

	// min is the smallest acceptable value.
	// +optional
	Min *float64 `json:"min,omitempty"`
}

// SweepStatus is a sweep's result: the curve per node shape × variant and
// the answer, per shape and over the fleet.
type SweepStatus struct {
	// parameters names the grid's axes, e.g. "probe.replicas".
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=2
	Parameters []string `json:"parameters,omitempty"`

	// columns names the curve's metrics, "group/metric", in the order of
	// each point's values: the constrained metrics, then the objectives.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=24
	Columns []string `json:"columns,omitempty"`

	// simulatedWindow is the simulated duration of each point, e.g. "2s".
	// +optional
	SimulatedWindow string `json:"simulatedWindow,omitempty"`

	// shapes holds one curve and answer per node shape × variant.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Shapes []SweepShapeResult `json:"shapes,omitempty"`

	// fleet is the answer summed over the node shapes' counts, one per
	// variant, when the first parameter counts something (Replicas, Tasks).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Fleet []FleetAnswer `json:"fleet,omitempty"`
}

// SweepShapeResult is the curve and the answer on one node shape for one
// variant.
type SweepShapeResult struct {
	// shape name, e.g. "64cpu-EEVDF".
	Shape string `json:"shape"`
	// variant name.
	Variant string `json:"variant"`
	// count of nodes of this shape in the fleet.
	// +optional
	Count int32 `json:"count,omitempty"`
	// points of the grid in order (the first parameter varies slowest).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=2000
	Points []SweepPoint `json:"points,omitempty"`
	// answer is the chosen point; absent when no point meets every
	// constraint.
	// +optional
	Answer *SweepPoint `json:"answer,omitempty"`
	// optimisticAnswer is the point the answer would be if every metric
	// sat at the favourable end of its 95% interval: the answer's range is
	// answer..optimisticAnswer.
	// +optional
	OptimisticAnswer *SweepPoint `json:"optimisticAnswer,omitempty"`
	// reason explains the answer (or its absence), e.g. which constraint
	// the next point breaks.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// SweepPoint is one point of the grid.
type SweepPoint struct {
	// at holds the parameters' values.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=2
	At []int64 `json:"at"`
	// values of the columns at this point (0 where a metric had no samples).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=24
	Values []float64 `json:"values,omitempty"`
	// low and high bound the 95% interval of each value over the
	// simulation's replicas (seeds); values are their means.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=24
	Low []float64 `json:"low,omitempty"`
	// high is the upper bound of each value's 95% interval (see low).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=24
	High []float64 `json:"high,omitempty"`
	// ok is true when the point meets every constraint across its whole
	// 95% interval.
	OK bool `json:"ok"`
	// unsupported says why the variant cannot run on this shape.
	// +optional
	Unsupported string `json:"unsupported,omitempty"`
}

// FleetAnswer is the answer over all node shapes: per node times the count
// of such nodes, summed.
type FleetAnswer struct {
	// variant the answer is for.
	Variant string `json:"variant"`
	// parameter is the counted parameter, e.g. "probe.replicas".
	Parameter string `json:"parameter"`
	// nodes in the fleet.
	Nodes int64 `json:"nodes"`
	// total of the parameter's answer × count over the shapes.
	Total int64 `json:"total"`
	// totalHigh is the total of the optimistic answers: the fleet answer's
	// range is total..totalHigh.
	// +optional
	TotalHigh int64 `json:"totalHigh,omitempty"`
	// perShape is "shape: answer × count" for each shape, e.g.
	// "8cpu-EEVDF: 12 × 40".
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	PerShape []string `json:"perShape,omitempty"`
}

// ShapeCalibration is the simulator calibration fitted for one node shape
// from measurements, with the prediction error before and after it.
type ShapeCalibration struct {
	// shape name, e.g. "8cpu-EEVDF".
	Shape string `json:"shape"`
	// timerOverheadNs delays every timer wake-up.
	// +optional
	TimerOverheadNs int64 `json:"timerOverheadNs,omitempty"`
	// wakeupOverheadNs delays every wake-up.
	// +optional
	WakeupOverheadNs int64 `json:"wakeupOverheadNs,omitempty"`
	// ctxSwitchNs is the CPU time a context switch costs.
	// +optional
	CtxSwitchNs int64 `json:"ctxSwitchNs,omitempty"`
	// backgroundLoad is the fraction of each CPU taken by noise, 0..0.95.
	// +optional
	BackgroundLoad float64 `json:"backgroundLoad,omitempty"`
	// errorBefore is the prediction error with no calibration, e.g. "31.0%".
	// +optional
	ErrorBefore string `json:"errorBefore,omitempty"`
	// errorAfter is the prediction error with this calibration.
	// +optional
	ErrorAfter string `json:"errorAfter,omitempty"`
	// configMap holding the fit, in the operator's namespace.
	// +optional
	ConfigMap string `json:"configMap,omitempty"`
}
