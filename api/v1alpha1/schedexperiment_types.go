package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Hard limits, enforced by the CRD schema at apply time and again by the node
// agent before it touches a node. They are constants so that both enforce the
// same numbers.
const (
	MaxTotalTasks   = 512 // replicas × tasks over all groups
	MaxGroups       = 16
	MaxVariants     = 8
	MaxRepetitions  = 20
	MaxNodes        = 1000
	MaxNestingDepth = 4
	MaxDuration     = "1h"
	// WindowAttempts is how many times an agent runs a window in all while
	// it is noisy (the first run and up to two re-runs); the controller's
	// deadline counts every attempt.
	WindowAttempts = 3
)

// ExperimentMode says whether an experiment runs workloads on nodes or only
// asks the simulator.
// +kubebuilder:validation:Enum=Measure;Simulate
type ExperimentMode string

const (
	// ModeMeasure runs the workload on the selected nodes and compares the
	// measurements with the simulator's predictions.
	ModeMeasure ExperimentMode = "Measure"
	// ModeSimulate only predicts, for each distinct node shape.
	ModeSimulate ExperimentMode = "Simulate"
)

// SchedExperimentSpec is what the user asks for: which nodes, which knob
// settings to compare, which workload to run and how to pick a winner.
//
// +kubebuilder:validation:XValidation:rule="self.mode != 'Measure' || has(self.nodeSelector)",message="mode Measure needs a nodeSelector that picks the nodes to run on (or set mode: Simulate)"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Simulate' || has(self.nodeSelector) || (has(self.simulation) && has(self.simulation.nodes) && size(self.simulation.nodes) > 0)",message="mode Simulate needs either a nodeSelector (to predict for the selected nodes' shapes) or simulation.nodes"
// +kubebuilder:validation:XValidation:rule="!has(self.warmup) || duration(self.warmup) < duration(self.duration)",message="warmup must be shorter than duration"
// +kubebuilder:validation:XValidation:rule="duration(self.duration) >= duration('100ms') && duration(self.duration) <= duration('1h')",message="duration must be between 100ms and 1h"
// +kubebuilder:validation:XValidation:rule="!has(self.warmup) || duration(self.warmup) <= duration('10m')",message="warmup must be at most 10m"
// +kubebuilder:validation:XValidation:rule="(duration(self.duration) + (has(self.warmup) ? duration(self.warmup) : duration('1s'))).getMilliseconds() * size(self.variants) * self.repetitions <= 86400000",message="(warmup + duration) × variants × repetitions must be at most 24h per node: shorten the duration or run fewer repetitions"
// +kubebuilder:validation:XValidation:rule="!has(self.objectives) || self.objectives.all(o, self.workload.groups.exists(g, g.name == o.group))",message="every objective must name a group listed in workload.groups"
// +kubebuilder:validation:XValidation:rule="!has(self.sweep) || self.mode == 'Simulate'",message="a sweep runs on the simulator only: set mode: Simulate"
// +kubebuilder:validation:XValidation:rule="!has(self.constraints) || size(self.constraints) == 0 || has(self.sweep)",message="constraints are evaluated over spec.sweep: add a sweep"
// +kubebuilder:validation:XValidation:rule="!has(self.constraints) || self.constraints.all(c, self.workload.groups.exists(g, g.name == c.group))",message="every constraint must name a group listed in workload.groups"
// +kubebuilder:validation:XValidation:rule="!has(self.constraints) || self.constraints.all(c, !c.metric.startsWith('wakeupLatencyUs') || self.workload.groups.exists(g, g.name == c.group && has(g.pattern) && g.pattern.type != 'Hog'))",message="a wakeupLatencyUs constraint needs a group that sleeps and wakes (not a Hog)"
// +kubebuilder:validation:XValidation:rule="!has(self.constraints) || self.constraints.all(c, !(c.metric.startsWith('requestLatencyUs') || c.metric in ['throughput', 'dropped']) || self.workload.groups.exists(g, g.name == c.group && has(g.pattern) && g.pattern.type == 'Server'))",message="requestLatencyUs, throughput and dropped apply to Server groups only"
// +kubebuilder:validation:XValidation:rule="!has(self.constraints) || self.constraints.all(c, c.metric != 'deadlineMissRatio' || self.workload.groups.exists(g, g.name == c.group && has(g.pattern) && g.pattern.type == 'Periodic'))",message="deadlineMissRatio applies to Periodic groups only"
// +kubebuilder:validation:XValidation:rule="!has(self.sweep) || self.sweep.parameters.all(p, !has(p.group) || self.workload.groups.exists(g, g.name == p.group))",message="a sweep parameter's group must name a group listed in workload.groups"
// +kubebuilder:validation:XValidation:rule="!has(self.sweep) || self.sweep.parameters.all(p, p.target != 'Rate' || !has(p.group) || self.workload.groups.exists(g, g.name == p.group && has(g.pattern) && g.pattern.type == 'Server'))",message="a Rate sweep parameter's group must be a Server group"
// +kubebuilder:validation:XValidation:rule="!has(self.sweep) || self.sweep.parameters.all(p, !has(p.variant) || self.variants.exists(v, v.name == p.variant))",message="a sweep parameter's variant must name a variant listed in variants"
// +kubebuilder:validation:XValidation:rule="!has(self.sweep) || size(self.sweep.parameters) < 2 || !(self.sweep.parameters[0].target == self.sweep.parameters[1].target && has(self.sweep.parameters[0].group) == has(self.sweep.parameters[1].group) && (!has(self.sweep.parameters[0].group) || self.sweep.parameters[0].group == self.sweep.parameters[1].group) && has(self.sweep.parameters[0].variant) == has(self.sweep.parameters[1].variant) && (!has(self.sweep.parameters[0].variant) || self.sweep.parameters[0].variant == self.sweep.parameters[1].variant))",message="the two sweep parameters must change different things"
// +kubebuilder:validation:XValidation:rule="!has(self.sweep) || (size(self.sweep.parameters) == 1 ? (has(self.sweep.parameters[0].values) ? size(self.sweep.parameters[0].values) : (self.sweep.parameters[0].range.to - self.sweep.parameters[0].range.from) / (has(self.sweep.parameters[0].range.step) ? self.sweep.parameters[0].range.step : 1) + 1) : (has(self.sweep.parameters[0].values) ? size(self.sweep.parameters[0].values) : (self.sweep.parameters[0].range.to - self.sweep.parameters[0].range.from) / (has(self.sweep.parameters[0].range.step) ? self.sweep.parameters[0].range.step : 1) + 1) * (has(self.sweep.parameters[1].values) ? size(self.sweep.parameters[1].values) : (self.sweep.parameters[1].range.to - self.sweep.parameters[1].range.from) / (has(self.sweep.parameters[1].range.step) ? self.sweep.parameters[1].range.step : 1) + 1)) * size(self.variants) <= 2000",message="the sweep has too many points: grid points × variants must be at most 2000 (widen the step or list fewer values)"
// +kubebuilder:validation:XValidation:rule="!has(self.sweep) || self.sweep.parameters.all(p, !(p.target in ['Replicas', 'Tasks']) || !has(p.group) || self.workload.groups.map(g, g.name != p.group ? (has(g.replicas) ? g.replicas : 1) * (has(g.tasks) ? g.tasks : 1) : (p.target == 'Replicas' ? (has(p.values) ? p.values.max() : p.range.to) * (has(g.tasks) ? g.tasks : 1) : (has(g.replicas) ? g.replicas : 1) * (has(p.values) ? p.values.max() : p.range.to))).sum() <= 512)",message="at the sweep's largest value the workload would have more than 512 tasks (the sum of replicas × tasks over the groups): lower the sweep's upper bound"
// +kubebuilder:validation:XValidation:rule="!has(self.sweep) || !has(self.sweep.answer) || self.sweep.answer != 'Best' || (has(self.objectives) && size(self.objectives) > 0)",message="sweep.answer Best picks by spec.objectives: add an objective, or use Largest or Smallest"
type SchedExperimentSpec struct {
	// mode is Measure (run on nodes, compare with predictions) or Simulate
	// (predictions only, no agents).
	// +optional
	// +kubebuilder:default=Measure
	Mode ExperimentMode `json:"mode,omitempty"`

	// nodeSelector picks the nodes. Measure mode needs it.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`

	// maxNodes caps how many of the selected nodes are used (sorted by name).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxNodes *int32 `json:"maxNodes,omitempty"`

	// duration is the measured window of one variant in one repetition, after
	// warmup. Between 100ms and 1h.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	Duration metav1.Duration `json:"duration"`

	// warmup runs the workload before the window opens; it is not measured.
	// +optional
	// +kubebuilder:default="1s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	Warmup *metav1.Duration `json:"warmup,omitempty"`

	// repetitions of the whole variant list; variants are interleaved
	// (A B A B …) so that drift on the node hits each alike.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	Repetitions int32 `json:"repetitions,omitempty"`

	// variants are the knob settings to compare. The first is the baseline.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(v, self.exists_one(w, w.name == v.name))",message="variant names must be unique"
	Variants []Variant `json:"variants"`

	// workload is the synthetic load run under each variant.
	// +required
	Workload Workload `json:"workload"`

	// objectives say how the best variant is chosen.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Objectives []Objective `json:"objectives,omitempty"`

	// simulation configures the predictions.
	// +optional
	Simulation *Simulation `json:"simulation,omitempty"`

	// sweep varies one or two parameters over a grid and predicts every
	// point (capacity planning). Simulate mode only.
	// +optional
	Sweep *Sweep `json:"sweep,omitempty"`

	// constraints bound metrics at each point of the sweep; the answer is
	// the largest (or best) point that meets them all.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Constraints []Constraint `json:"constraints,omitempty"`
}

// Variant is one setting of the knobs.
type Variant struct {
	// name of the variant, unique in the experiment.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// knobs to set on the node while this variant runs. Knobs left out keep
	// the node's own value.
	// +optional
	Knobs Knobs `json:"knobs,omitempty"`
}

// AutogroupMode is the state of kernel.sched_autogroup_enabled.
// +kubebuilder:validation:Enum=Enabled;Disabled
type AutogroupMode string

const (
	AutogroupEnabled  AutogroupMode = "Enabled"
	AutogroupDisabled AutogroupMode = "Disabled"
)

// PreemptModel is the kernel's preemption model (dynamic preemption).
// +kubebuilder:validation:Enum=None;Voluntary;Full;Lazy
type PreemptModel string

const (
	PreemptNone      PreemptModel = "None"
	PreemptVoluntary PreemptModel = "Voluntary"
	PreemptFull      PreemptModel = "Full"
	PreemptLazy      PreemptModel = "Lazy"
)

// TunableScaling is how the kernel scales its latency tunables with the
// number of CPUs (sched_tunable_scaling).
// +kubebuilder:validation:Enum=None;Log;Linear
type TunableScaling string

const (
	ScalingNone   TunableScaling = "None"
	ScalingLog    TunableScaling = "Log"
	ScalingLinear TunableScaling = "Linear"
)

// AllowedSysctls are the only sysctls a variant may set. Anything else is
// refused by the schema and again by the agent.
var AllowedSysctls = []string{
	"kernel.sched_cfs_bandwidth_slice_us",
	"kernel.sched_rt_runtime_us",
	"kernel.sched_rt_period_us",
	"kernel.sched_rr_timeslice_ms",
	"kernel.sched_energy_aware",
	"kernel.sched_util_clamp_min",
	"kernel.sched_util_clamp_max",
	"kernel.sched_util_clamp_min_rt_default",
	"kernel.sched_schedstats",
	"kernel.numa_balancing",
}

// Knobs are the node-global scheduler settings of a variant. Every field is
// optional; a field left out is not touched.
type Knobs struct {
	// autogroup sets kernel.sched_autogroup_enabled.
	// +optional
	Autogroup AutogroupMode `json:"autogroup,omitempty"`

	// baseSlice is EEVDF's base_slice_ns (kernels 6.6 and later), 100us..100ms.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('100us') && duration(self) <= duration('100ms')",message="baseSlice must be between 100us and 100ms"
	BaseSlice *metav1.Duration `json:"baseSlice,omitempty"`

	// latency is CFS's sched_latency_ns (kernels before 6.6), 100us..1s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('100us') && duration(self) <= duration('1s')",message="latency must be between 100us and 1s"
	Latency *metav1.Duration `json:"latency,omitempty"`

	// minGranularity is CFS's sched_min_granularity_ns, 100us..100ms.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('100us') && duration(self) <= duration('100ms')",message="minGranularity must be between 100us and 100ms"
	MinGranularity *metav1.Duration `json:"minGranularity,omitempty"`

	// wakeupGranularity is CFS's sched_wakeup_granularity_ns, 0..1s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('1s')",message="wakeupGranularity must be at most 1s"
	WakeupGranularity *metav1.Duration `json:"wakeupGranularity,omitempty"`

	// migrationCost is sched_migration_cost_ns, 0..100ms.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('100ms')",message="migrationCost must be at most 100ms"
	MigrationCost *metav1.Duration `json:"migrationCost,omitempty"`

	// nrMigrate is sched_nr_migrate, the most tasks one balance moves.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	NrMigrate *int32 `json:"nrMigrate,omitempty"`

	// tunableScaling is sched_tunable_scaling.
	// +optional
	TunableScaling TunableScaling `json:"tunableScaling,omitempty"`

	// preempt is the dynamic preemption model (/sys/kernel/debug/sched/preempt).
	// +optional
	Preempt PreemptModel `json:"preempt,omitempty"`

	// features turns scheduler features on or off by their kernel names
	// (PLACE_LAG, RUN_TO_PARITY, …). Only names the node's kernel lists are
	// applied; others make the variant Unsupported on that node.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 40 && k.matches('^[A-Z][A-Z0-9_]*$'))",message="feature names are the kernel's upper-case names such as PLACE_LAG (^[A-Z][A-Z0-9_]*$, at most 40 characters)"
	Features map[string]bool `json:"features,omitempty"`

	// sysctls sets scheduler sysctls from an allowlist:
	// kernel.sched_cfs_bandwidth_slice_us, kernel.sched_rt_runtime_us,
	// kernel.sched_rt_period_us, kernel.sched_rr_timeslice_ms,
	// kernel.sched_energy_aware, kernel.sched_util_clamp_min,
	// kernel.sched_util_clamp_max, kernel.sched_util_clamp_min_rt_default,
	// kernel.sched_schedstats, kernel.numa_balancing. Values are integers.
	// +optional
	// +kubebuilder:validation:MaxProperties=10
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['kernel.sched_cfs_bandwidth_slice_us', 'kernel.sched_rt_runtime_us', 'kernel.sched_rt_period_us', 'kernel.sched_rr_timeslice_ms', 'kernel.sched_energy_aware', 'kernel.sched_util_clamp_min', 'kernel.sched_util_clamp_max', 'kernel.sched_util_clamp_min_rt_default', 'kernel.sched_schedstats', 'kernel.numa_balancing'])",message="sysctls may only name kernel.sched_cfs_bandwidth_slice_us, kernel.sched_rt_runtime_us, kernel.sched_rt_period_us, kernel.sched_rr_timeslice_ms, kernel.sched_energy_aware, kernel.sched_util_clamp_min, kernel.sched_util_clamp_max, kernel.sched_util_clamp_min_rt_default, kernel.sched_schedstats or kernel.numa_balancing"
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k].matches('^-?[0-9]{1,12}$'))",message="sysctl values must be integers written as strings, such as \"5000\""
	Sysctls map[string]SysctlValue `json:"sysctls,omitempty"`
}

// SysctlValue is a sysctl's value: an integer written as a string.
// +kubebuilder:validation:MaxLength=16
type SysctlValue string

// Workload is the synthetic load.
type Workload struct {
	// groups of tasks. Each replica of a group is one cgroup (unless the
	// group names a session). At most 512 tasks in all (replicas × tasks).
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(g, self.exists_one(h, h.name == g.name))",message="group names must be unique"
	// +kubebuilder:validation:XValidation:rule="self.map(g, (has(g.replicas) ? g.replicas : 1) * (has(g.tasks) ? g.tasks : 1)).sum() <= 512",message="the workload may have at most 512 tasks in all (the sum of replicas × tasks over the groups)"
	// +kubebuilder:validation:XValidation:rule="self.all(g, !has(g.parent) || self.exists(p, p.name == g.parent))",message="parent must name another group of this workload"
	// +kubebuilder:validation:XValidation:rule="self.all(i, g, !has(g.parent) || self.exists(j, p, j < i && p.name == g.parent))",message="a group's parent must be listed before it"
	// +kubebuilder:validation:XValidation:rule="self.all(g, !has(g.parent) || self.all(p, p.name != g.parent || ((!has(p.replicas) || p.replicas == 1) && !has(p.session))))",message="a parent group must have one replica and no session"
	// +kubebuilder:validation:XValidation:rule="self.all(g, !has(g.parent) || self.filter(p, p.name == g.parent).all(p, !has(p.parent) || self.filter(q, q.name == p.parent).all(q, !has(q.parent) || self.filter(r, r.name == q.parent).all(r, !has(r.parent)))))",message="cgroups may nest at most 4 deep"
	Groups []Group `json:"groups"`
}

// SchedPolicy is a task's scheduling policy in the fair class.
// +kubebuilder:validation:Enum=Other;Batch;Idle
type SchedPolicy string

const (
	PolicyOther SchedPolicy = "Other"
	PolicyBatch SchedPolicy = "Batch"
	PolicyIdle  SchedPolicy = "Idle"
)

// Group is a set of identical tasks: replicas cgroups of tasks tasks each,
// or, with session, tasks outside any cgroup in one setsid session.
//
// +kubebuilder:validation:XValidation:rule="!has(self.session) || ((!has(self.cpuWeight) || self.cpuWeight == 100) && !has(self.cpuMax) && !has(self.cpuIdle))",message="session runs the group's tasks outside any cgroup, so cpuWeight, cpuMax and cpuIdle cannot apply: remove them or remove session"
// +kubebuilder:validation:XValidation:rule="!has(self.session) || !has(self.parent)",message="a group with session runs outside any cgroup and cannot have a parent"
// +kubebuilder:validation:XValidation:rule="!has(self.session) || !has(self.replicas) || self.replicas == 1",message="a group with session is one session: set replicas to 1 (use another group for another session)"
// +kubebuilder:validation:XValidation:rule="(has(self.tasks) && self.tasks == 0) || has(self.pattern)",message="a group with tasks needs a pattern (Hog, Periodic, LatencyProbe, PingPong, Burst or Server)"
// +kubebuilder:validation:XValidation:rule="!has(self.pattern) || self.pattern.type != 'PingPong' || (has(self.tasks) && self.tasks % 2 == 0)",message="PingPong runs tasks in pairs: tasks must be even"
// +kubebuilder:validation:XValidation:rule="!has(self.pattern) || !has(self.pattern.fanout) || self.pattern.fanout <= (has(self.tasks) ? self.tasks : 1)",message="a Server's fanout must be at most the group's tasks (the workers of one replica)"
type Group struct {
	// name of the group, unique in the workload.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// replicas is the number of cgroups of this group.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=512
	Replicas int32 `json:"replicas,omitempty"`

	// tasks per cgroup (or in the session). 0 makes a parent-only cgroup.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=512
	Tasks *int32 `json:"tasks,omitempty"`

	// cpuWeight of each cgroup, cgroup v2 semantics (1..10000, 100 is the
	// default); on cgroup v1 it becomes cpu.shares = weight × 1024 / 100.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	CPUWeight *int32 `json:"cpuWeight,omitempty"`

	// cpuMax caps each cgroup at this many CPUs, as a Kubernetes CPU quantity
	// (500m, 1.5), applied as a bandwidth quota per cpuMaxPeriod.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^([0-9]{1,7}m|[0-9]{1,4}(\.[0-9]{1,3})?)$`
	// +kubebuilder:validation:XValidation:rule="!isQuantity(self) || (quantity(self).compareTo(quantity('1m')) >= 0 && quantity(self).compareTo(quantity('1024')) <= 0)",message="cpuMax must be between 1m and 1024 CPUs"
	CPUMax string `json:"cpuMax,omitempty"`

	// cpuMaxPeriod is the bandwidth period for cpuMax (default 100ms), 1ms..1s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1ms') && duration(self) <= duration('1s')",message="cpuMaxPeriod must be between 1ms and 1s"
	CPUMaxPeriod *metav1.Duration `json:"cpuMaxPeriod,omitempty"`

	// cpuIdle marks each cgroup SCHED_IDLE (cpu.idle = 1).
	// +optional
	CPUIdle *bool `json:"cpuIdle,omitempty"`

	// nice of every task, -20..19.
	// +optional
	// +kubebuilder:validation:Minimum=-20
	// +kubebuilder:validation:Maximum=19
	Nice *int32 `json:"nice,omitempty"`

	// policy of every task: Other (SCHED_OTHER), Batch or Idle.
	// +optional
	Policy SchedPolicy `json:"policy,omitempty"`

	// slice is the EEVDF custom slice of every task (sched_attr.sched_runtime,
	// kernels 6.12 and later), 100us..100ms.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('100us') && duration(self) <= duration('100ms')",message="slice must be between 100us and 100ms"
	Slice *metav1.Duration `json:"slice,omitempty"`

	// timerSlack of every task (prctl PR_SET_TIMERSLACK), 0..100ms: how far
	// past its deadline the kernel may end a timer sleep, to batch wake-ups.
	// Unset keeps the kernel default, 50us for normal tasks; 0 sets the
	// smallest slack a task can have, 1ns (prctl reads 0 as "the default").
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('100ms')",message="timerSlack must be at most 100ms"
	TimerSlack *metav1.Duration `json:"timerSlack,omitempty"`

	// cpus pins every task of the group to these CPUs (sched_setaffinity), a
	// list such as "0", "0-3" or "0,2,4-7" in the kernel's cpulist format:
	// how Kubernetes' static CPU manager confines a Guaranteed pod's
	// containers (through cpusets, which the tasks' affinity follows). The
	// load balancer and wake-up placement then move a task only within its
	// CPUs, and a CPU the node lacks makes the run Unsupported there.
	// Unset: every CPU.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$`
	CPUs string `json:"cpus,omitempty"`

	// session runs the tasks outside any cgroup, in one setsid session of
	// this name: what autogroup groups by. Groups may share a session.
	// +optional
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Session string `json:"session,omitempty"`

	// parent names an earlier group (one replica, no session) whose cgroup
	// this group's cgroups nest under, as Kubernetes nests pods under QoS
	// slices. At most 4 levels.
	// +optional
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Parent string `json:"parent,omitempty"`

	// pattern is what every task of the group does.
	// +optional
	Pattern *Pattern `json:"pattern,omitempty"`
}

// PatternType names a workload pattern.
// +kubebuilder:validation:Enum=Hog;Periodic;LatencyProbe;PingPong;Burst;Server
type PatternType string

const (
	// PatternHog is always runnable.
	PatternHog PatternType = "Hog"
	// PatternPeriodic runs `run` every `period`, like a video frame.
	PatternPeriodic PatternType = "Periodic"
	// PatternLatencyProbe sleeps to an absolute deadline every `interval`
	// and measures how late it runs, like cyclictest.
	PatternLatencyProbe PatternType = "LatencyProbe"
	// PatternPingPong runs pairs of tasks waking each other through a pipe,
	// like hackbench.
	PatternPingPong PatternType = "PingPong"
	// PatternBurst runs and sleeps for exponentially distributed times with
	// the given means, like a compile job.
	PatternBurst PatternType = "Burst"
	// PatternServer is a request-serving replica: requests arrive open-loop
	// at `rate` per second into a queue shared by the replica's `tasks`
	// worker threads, each request needs `service` CPU time, and its latency
	// runs from its scheduled arrival to its completion.
	PatternServer PatternType = "Server"
)

// ArrivalProcess is how a Server's requests arrive.
// +kubebuilder:validation:Enum=Poisson;Periodic
type ArrivalProcess string

const (
	// ArrivalsPoisson: exponentially distributed gaps with mean 1/rate.
	ArrivalsPoisson ArrivalProcess = "Poisson"
	// ArrivalsPeriodic: one request every 1/rate exactly.
	ArrivalsPeriodic ArrivalProcess = "Periodic"
)

// ServiceDistribution is the distribution of a request's CPU time.
// +kubebuilder:validation:Enum=Fixed;Exponential;Lognormal
type ServiceDistribution string

const (
	// ServiceFixed: every request takes mean.
	ServiceFixed ServiceDistribution = "Fixed"
	// ServiceExponential: exponentially distributed with the given mean.
	ServiceExponential ServiceDistribution = "Exponential"
	// ServiceLognormal: lognormal with the given mean and 99th percentile.
	ServiceLognormal ServiceDistribution = "Lognormal"
)

// Limits of a Server pattern.
const (
	MaxServerRate  = 1000000 // requests per second per replica
	MaxServerQueue = 1000000 // queued requests per replica
	// MaxLognormalP99OverMean bounds a lognormal service time's p99/mean:
	// above e^(z99²/2) ≈ 14.96 no lognormal has that mean and p99.
	MaxLognormalP99OverMean = 14
)

// ServiceTime is the CPU time one request needs.
//
// +kubebuilder:validation:XValidation:rule="self.distribution != 'Lognormal' || has(self.p99)",message="a Lognormal service time needs p99 (and mean)"
// +kubebuilder:validation:XValidation:rule="self.distribution == 'Lognormal' || !has(self.p99)",message="p99 applies to a Lognormal service time only"
// +kubebuilder:validation:XValidation:rule="!has(self.p99) || (duration(self.p99) > duration(self.mean) && duration(self.p99) <= duration(self.mean) + duration(self.mean) + duration(self.mean) + duration(self.mean) + duration(self.mean) + duration(self.mean) + duration(self.mean) + duration(self.mean) + duration(self.mean) + duration(self.mean) + duration(self.mean) + duration(self.mean) + duration(self.mean) + duration(self.mean))",message="a Lognormal service time's p99 must be above its mean and at most 14 times the mean"
type ServiceTime struct {
	// distribution of the service time: Fixed (default), Exponential or
	// Lognormal.
	// +optional
	// +kubebuilder:default=Fixed
	Distribution ServiceDistribution `json:"distribution,omitempty"`

	// mean CPU time of a request, 1us..1s.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1us') && duration(self) <= duration('1s')",message="service mean must be between 1us and 1s"
	Mean metav1.Duration `json:"mean"`

	// p99 of a Lognormal service time: above mean, at most 14 × mean.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	P99 *metav1.Duration `json:"p99,omitempty"`
}

// Pattern is the behaviour of each task of a group.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'Periodic' || (has(self.run) && has(self.period))",message="a Periodic pattern needs run and period"
// +kubebuilder:validation:XValidation:rule="self.type != 'Periodic' || !has(self.run) || !has(self.period) || duration(self.run) < duration(self.period)",message="a Periodic pattern's run must be shorter than its period"
// +kubebuilder:validation:XValidation:rule="self.type != 'LatencyProbe' || has(self.interval)",message="a LatencyProbe pattern needs interval"
// +kubebuilder:validation:XValidation:rule="self.type != 'Burst' || (has(self.meanRun) && has(self.meanSleep))",message="a Burst pattern needs meanRun and meanSleep"
// +kubebuilder:validation:XValidation:rule="self.type != 'Server' || (has(self.rate) && has(self.service))",message="a Server pattern needs rate and service"
// +kubebuilder:validation:XValidation:rule="self.type == 'Server' || (!has(self.rate) && !has(self.arrivals) && !has(self.service) && !has(self.fanout) && !has(self.queue))",message="rate, arrivals, service, fanout and queue apply to a Server pattern only"
type Pattern struct {
	// type of the pattern.
	// +required
	Type PatternType `json:"type"`

	// run is the CPU time per period (Periodic) or per wake-up (PingPong,
	// default 0: a bare round trip), 1us..1s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1us') && duration(self) <= duration('1s')",message="run must be between 1us and 1s"
	Run *metav1.Duration `json:"run,omitempty"`

	// period of a Periodic task, 100us..10s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('100us') && duration(self) <= duration('10s')",message="period must be between 100us and 10s"
	Period *metav1.Duration `json:"period,omitempty"`

	// interval between a LatencyProbe's deadlines, 50us..1s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('50us') && duration(self) <= duration('1s')",message="interval must be between 50us and 1s"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// meanRun is a Burst task's mean run time, 10us..10s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10us') && duration(self) <= duration('10s')",message="meanRun must be between 10us and 10s"
	MeanRun *metav1.Duration `json:"meanRun,omitempty"`

	// meanSleep is a Burst task's mean sleep time, 10us..10s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10us') && duration(self) <= duration('10s')",message="meanSleep must be between 10us and 10s"
	MeanSleep *metav1.Duration `json:"meanSleep,omitempty"`

	// rate of a Server's request arrivals, per second per replica,
	// 1..1000000. The arrivals are open-loop: they do not wait for the
	// workers.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	Rate *int32 `json:"rate,omitempty"`

	// arrivals is the Server's arrival process: Poisson (default) or
	// Periodic.
	// +optional
	Arrivals ArrivalProcess `json:"arrivals,omitempty"`

	// service is the CPU time a Server request needs.
	// +optional
	Service *ServiceTime `json:"service,omitempty"`

	// fanout is how many of the replica's workers one request wakes; the
	// request completes when all of them have finished their service time.
	// Default 1; at most the group's tasks.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=512
	Fanout *int32 `json:"fanout,omitempty"`

	// queue is the most requests a Server replica holds waiting for a
	// worker; an arrival that finds it full is dropped (counted in
	// dropped). Default 1000.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	Queue *int32 `json:"queue,omitempty"`
}

// Goal is the direction of an objective.
// +kubebuilder:validation:Enum=Minimize;Maximize
type Goal string

const (
	Minimize Goal = "Minimize"
	Maximize Goal = "Maximize"
)

// MetricName names one metric of the vocabulary shared by the agent, the
// simulator, the status and the CLI.
// +kubebuilder:validation:Enum=cpu;cpuPerTask;share;wakeupLatencyUs.p50;wakeupLatencyUs.p90;wakeupLatencyUs.p99;wakeupLatencyUs.p999;wakeupLatencyUs.max;wakeupLatencyUs.mean;ctxSwitchesPerSec.voluntary;ctxSwitchesPerSec.involuntary;deadlineMissRatio;opsPerSec;lateFraction.over100us;lateFraction.over1ms;lateFraction.over10ms;requestLatencyUs.p50;requestLatencyUs.p90;requestLatencyUs.p95;requestLatencyUs.p99;requestLatencyUs.p999;requestLatencyUs.max;requestLatencyUs.mean;offered;throughput;dropped
type MetricName string

// Objective is one criterion for picking the best variant.
type Objective struct {
	// metric to compare.
	// +required
	Metric MetricName `json:"metric"`

	// group whose metric is compared.
	// +required
	// +kubebuilder:validation:MaxLength=40
	Group string `json:"group"`

	// goal is Minimize or Maximize.
	// +required
	Goal Goal `json:"goal"`
}

// SchedulerFamily is the fair scheduler a kernel runs.
// +kubebuilder:validation:Enum=EEVDF;CFS
type SchedulerFamily string

const (
	SchedulerEEVDF SchedulerFamily = "EEVDF"
	SchedulerCFS   SchedulerFamily = "CFS"
)

// Simulation configures the simulator's predictions.
type Simulation struct {
	// seed of the simulator's random generator; the same seed and input give
	// the same predictions, bit for bit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Seed int64 `json:"seed,omitempty"`

	// nodes are node shapes to predict for. In Simulate mode they replace
	// the shapes of the selected nodes.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Nodes []NodeShape `json:"nodes,omitempty"`

	// features are simulator-only switches, such as SMP_FAIR_GROUPS (on by
	// default: the kernel's per-CPU group shares; off models fixed-weight
	// group entities).
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 40 && k.matches('^[A-Z][A-Z0-9_]*$'))",message="simulator feature names are upper-case, such as SMP_FAIR_GROUPS"
	Features map[string]bool `json:"features,omitempty"`

	// replicas is the number of independent seeds (seed, seed+1, …) each
	// prediction runs with; predicted metrics are their mean, with a 95%
	// interval. Default 5.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32
	Replicas *int32 `json:"replicas,omitempty"`

	// parallelism of the Indexed Job a large sweep (mode Simulate) runs as:
	// how many of its shard pods run at once. Default: the manager's
	// --sweep-job-parallelism.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Parallelism *int32 `json:"parallelism,omitempty"`
}

// NodeShape is what the simulator needs to know about a node.
// +kubebuilder:validation:XValidation:rule="!has(self.topology) || self.cpus % ((has(self.topology.sockets) ? self.topology.sockets : 1) * (has(self.topology.llcsPerSocket) ? self.topology.llcsPerSocket : 1) * (has(self.topology.threadsPerCore) ? self.topology.threadsPerCore : 1)) == 0",message="topology: cpus must be a multiple of sockets × llcsPerSocket × threadsPerCore (every LLC holds the same whole number of cores)"
type NodeShape struct {
	// cpus of the node, 1..1024.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	CPUs int32 `json:"cpus"`

	// scheduler family: EEVDF (6.6 and later) or CFS.
	// +optional
	// +kubebuilder:default=EEVDF
	Scheduler SchedulerFamily `json:"scheduler,omitempty"`

	// kernel is the node's kernel release, e.g. "6.12", "6.18.44" or what
	// uname -r prints ("6.18.44-fc-v1045"). It selects the scheduler code
	// paths that changed between releases and their defaults; empty means
	// the simulator's reference kernel (6.12). Measured nodes report theirs.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[0-9]+\.[0-9]+[-+.~_a-zA-Z0-9]*$`
	Kernel string `json:"kernel,omitempty"`

	// hz is the kernel's tick rate.
	// +optional
	// +kubebuilder:validation:Enum=100;250;300;1000
	HZ int32 `json:"hz,omitempty"`

	// preempt is the preemption model.
	// +optional
	Preempt PreemptModel `json:"preempt,omitempty"`

	// tunableScaling is sched_tunable_scaling.
	// +optional
	TunableScaling TunableScaling `json:"tunableScaling,omitempty"`

	// count of such nodes, for fleet answers.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	Count *int32 `json:"count,omitempty"`

	// constants of the node's wake-up path; unset fields take the
	// simulator's defaults. The agent measures them on each node.
	// +optional
	Constants *NodeConstants `json:"constants,omitempty"`

	// topology of the node's CPUs: sockets, last-level caches per socket
	// and SMT threads per core, from which the simulator builds the
	// kernel's scheduling domains (SMT, MC, PKG, NUMA). Unset means flat:
	// one socket, one LLC, no SMT. Nodes the agent ran on report theirs.
	// +optional
	Topology *NodeTopology `json:"topology,omitempty"`
}

// NodeTopology is how a node's CPUs share cores, caches and sockets. CPUs
// are numbered socket by socket, LLC by LLC, core by core, thread by thread.
type NodeTopology struct {
	// sockets (packages, each its own NUMA node); unset means 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	Sockets int32 `json:"sockets,omitempty"`
	// llcsPerSocket is the number of last-level caches in each socket
	// (e.g. the CCXs of an AMD EPYC); unset means 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	LLCsPerSocket int32 `json:"llcsPerSocket,omitempty"`
	// threadsPerCore is the SMT width (2 with Hyper-Threading); unset means 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=8
	ThreadsPerCore int32 `json:"threadsPerCore,omitempty"`
}

// NodeConstants are what a wake-up costs on a node, beside the scheduler's
// decisions: the latency floor. All in nanoseconds; 0 or unset means the
// simulator's default.
// +kubebuilder:validation:XValidation:rule="has(self.hostPausesPerHour) == has(self.hostPauseQuantilesNs)",message="set hostPausesPerHour and hostPauseQuantilesNs together (the rate and the lengths of the host's pauses), or neither"
type NodeConstants struct {
	// timerExpiryNs: from a timer's expiry to its task's enqueue (the timer
	// interrupt and the wake-up it does).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000000
	TimerExpiryNs int64 `json:"timerExpiryNs,omitempty"`
	// wakeupNs: from a wake-up call (a pipe write) to the wakee's enqueue.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000000
	WakeupNs int64 `json:"wakeupNs,omitempty"`
	// idleExitNs: leaving the idle loop when the wakee's CPU was idle.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000000
	IdleExitNs int64 `json:"idleExitNs,omitempty"`
	// ctxSwitchNs: the context switch to a woken task.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000000
	CtxSwitchNs int64 `json:"ctxSwitchNs,omitempty"`
	// wakeupCPUNs: CPU time a task spends per wake-up outside its work.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000000
	WakeupCPUNs int64 `json:"wakeupCPUNs,omitempty"`
	// timerArmCPUNs: CPU time of arming the timer of a sleep.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000000
	TimerArmCPUNs int64 `json:"timerArmCPUNs,omitempty"`
	// coldWakeNs: what a woken task pays beyond the context switch, in its
	// wake-up latency, per doubling of its sleep past 2 ms (up to 100 ms):
	// the cache and TLB state it lost while it slept. The calibration
	// window measures it from timer sleeps of 2 and 40 ms beside a spinner.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	ColdWakeNs int64 `json:"coldWakeNs,omitempty"`
	// processSwitchNs: what a switch to a task costs more when the CPU last
	// ran another process (another address space: context_switch() loads
	// the task's page tables in switch_mm_irqs_off()), in the task's
	// wake-up latency. The other constants are measured
	// between threads of one process; a workload's tasks are processes. The
	// calibration window measures it from timer sleeps on a busy CPU beside
	// a spinner process and beside a spinner thread.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000000
	ProcessSwitchNs int64 `json:"processSwitchNs,omitempty"`
	// timerExpiryQuantilesNs spreads timerExpiryNs: its values at the
	// levels 5, 25, 50, 75, 90, 95 and 99 % (nondecreasing). The simulator
	// draws a level per wake-up and pays each latency term at that level;
	// without a list a term set here is a fixed cost, and an unset one
	// takes the simulator's default spread. The calibration window sets
	// the four lists from what it measured.
	// +optional
	// +kubebuilder:validation:MinItems=7
	// +kubebuilder:validation:MaxItems=7
	TimerExpiryQuantilesNs []int64 `json:"timerExpiryQuantilesNs,omitempty"`
	// wakeupQuantilesNs spreads wakeupNs (levels as timerExpiryQuantilesNs).
	// +optional
	// +kubebuilder:validation:MinItems=7
	// +kubebuilder:validation:MaxItems=7
	WakeupQuantilesNs []int64 `json:"wakeupQuantilesNs,omitempty"`
	// idleExitQuantilesNs spreads idleExitNs (levels as timerExpiryQuantilesNs).
	// +optional
	// +kubebuilder:validation:MinItems=7
	// +kubebuilder:validation:MaxItems=7
	IdleExitQuantilesNs []int64 `json:"idleExitQuantilesNs,omitempty"`
	// ctxSwitchQuantilesNs spreads ctxSwitchNs (levels as timerExpiryQuantilesNs).
	// +optional
	// +kubebuilder:validation:MinItems=7
	// +kubebuilder:validation:MaxItems=7
	CtxSwitchQuantilesNs []int64 `json:"ctxSwitchQuantilesNs,omitempty"`
	// hostPausesPerHour: how often the node's host stops the whole virtual
	// machine (a Poisson process of pause starts). During a pause nothing
	// runs and no timer fires; the running tasks are charged it as CPU
	// time (no steal accounting). Unset: no pauses.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600000
	HostPausesPerHour int64 `json:"hostPausesPerHour,omitempty"`
	// hostPauseQuantilesNs: the pauses' lengths at the levels of
	// timerExpiryQuantilesNs (nondecreasing, each 1 ns to 1 s).
	// +optional
	// +kubebuilder:validation:MinItems=7
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=1000000000
	HostPauseQuantilesNs []int64 `json:"hostPauseQuantilesNs,omitempty"`
	// vcpuStallsPerHour: how often the host stops one vCPU for 5 ms or more
	// while it runs the others, per CPU (a Poisson process on each CPU).
	// That CPU runs nothing meanwhile (its running task is charged it; its
	// timers and the wake-ups sent to it wait); the others go on. Unset: none.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600000
	VCPUStallsPerHour int64 `json:"vcpuStallsPerHour,omitempty"`
	// vcpuStallQuantilesNs: those stalls' lengths at the levels of
	// timerExpiryQuantilesNs (nondecreasing, each 1 ns to 1 s).
	// +optional
	// +kubebuilder:validation:MinItems=7
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=1000000000
	VCPUStallQuantilesNs []int64 `json:"vcpuStallQuantilesNs,omitempty"`
	// vcpuShortStallsPerHour: the same for the short stalls of one vCPU
	// (1 to 5 ms as the agent measures them), per CPU. Unset: none.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600000
	VCPUShortStallsPerHour int64 `json:"vcpuShortStallsPerHour,omitempty"`
	// vcpuShortStallQuantilesNs: the short stalls' lengths at the levels of
	// timerExpiryQuantilesNs (nondecreasing, each 1 ns to 1 s).
	// +optional
	// +kubebuilder:validation:MinItems=7
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=1000000000
	VCPUShortStallQuantilesNs []int64 `json:"vcpuShortStallQuantilesNs,omitempty"`
}
