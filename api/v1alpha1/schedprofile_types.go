package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Limits of a SchedProfile.
const (
	MaxProfileNodes  = 1000
	MaxCanaryNodes   = 100
	MinProfilePrio   = -1000
	MaxProfilePrio   = 1000
	MaxProfileEffect = 8
)

// SchedProfileSpec is a winning variant made the lasting state of the nodes it
// selects: the knobs, where they apply, how they roll out and the evidence
// that justified them.
//
// +kubebuilder:validation:XValidation:rule="has(self.knobs.autogroup) || has(self.knobs.baseSlice) || has(self.knobs.latency) || has(self.knobs.minGranularity) || has(self.knobs.wakeupGranularity) || has(self.knobs.migrationCost) || has(self.knobs.nrMigrate) || has(self.knobs.tunableScaling) || has(self.knobs.preempt) || (has(self.knobs.features) && size(self.knobs.features) > 0) || (has(self.knobs.sysctls) && size(self.knobs.sysctls) > 0)",message="knobs sets nothing: a profile must set at least one knob"
type SchedProfileSpec struct {
	// nodeSelector picks the nodes the profile applies to. It must select
	// something: an empty selector ({}) would tune every node and is
	// refused.
	// +required
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="nodeSelector is empty: name at least one label (matchLabels or matchExpressions); a profile never applies to every node by default"
	NodeSelector metav1.LabelSelector `json:"nodeSelector"`

	// priority decides between profiles that select the same node: the
	// higher wins; on a tie the name that sorts first wins and the tie is
	// reported. -1000..1000.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=-1000
	// +kubebuilder:validation:Maximum=1000
	Priority int32 `json:"priority"`

	// knobs are the settings the nodes keep: the same catalogue and rules as
	// an experiment variant's knobs.
	// +required
	Knobs Knobs `json:"knobs"`

	// rollout says how a new or changed profile reaches the nodes.
	// +optional
	Rollout *ProfileRollout `json:"rollout,omitempty"`

	// provenance is the evidence behind the profile, as `schedlab promote`
	// writes it.
	// +optional
	Provenance *Provenance `json:"provenance,omitempty"`
}

// ProfileRollout bounds how many nodes change at once and can verify the
// profile on canary nodes first.
type ProfileRollout struct {
	// maxUnavailable is how many nodes may be changing at once: a count
	// (1 or more) or a percentage of the selected nodes ("25%"). Default 1.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 && self <= 1000 : self.matches('^(100|[1-9][0-9]?)%$')",message="maxUnavailable must be a count from 1 to 1000 or a percentage from 1% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// canary applies the profile to a few nodes first and verifies it there
	// with a measurement before the rest follow.
	// +optional
	Canary *Canary `json:"canary,omitempty"`
}

// Canary is the verification of a profile on a few nodes.
type Canary struct {
	// nodes is how many of the selected nodes (sorted by name) are canaries.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Nodes int32 `json:"nodes"`

	// verify is the measurement run on the canaries: "previous" against
	// "profile", as a Measure-mode SchedExperiment owned by the profile.
	// +required
	Verify CanaryVerify `json:"verify"`
}

// CanaryVerify is the verification experiment's measurement.
//
// +kubebuilder:validation:XValidation:rule="self.objectives.all(o, self.workload.groups.exists(g, g.name == o.group))",message="every verify objective must name a group listed in verify.workload.groups"
// +kubebuilder:validation:XValidation:rule="(duration(self.duration).getSeconds() + 1) * 2 * (has(self.repetitions) ? self.repetitions : 3) <= 7200",message="verify takes too long: (duration + 1s) × 2 variants × repetitions must be at most 2h"
type CanaryVerify struct {
	// duration of one measured window, 100ms..10m.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('100ms') && duration(self) <= duration('10m')",message="verify.duration must be between 100ms and 10m"
	Duration metav1.Duration `json:"duration"`

	// repetitions of previous and profile, interleaved. 2..20; default 3
	// (significance needs more than one window per side).
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=20
	Repetitions int32 `json:"repetitions,omitempty"`

	// workload run under both settings.
	// +required
	Workload Workload `json:"workload"`

	// objectives the profile must win on, with significance, for the
	// rollout to go on.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Objectives []Objective `json:"objectives"`
}

// Provenance is where a profile's knobs come from.
type Provenance struct {
	// experiment whose result the profile is.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Experiment string `json:"experiment"`

	// generation of the experiment's spec the result belongs to.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Generation int64 `json:"generation,omitempty"`

	// variant promoted.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	Variant string `json:"variant"`

	// baseline variant the effect is measured against.
	// +optional
	// +kubebuilder:validation:MaxLength=40
	Baseline string `json:"baseline,omitempty"`

	// effects measured, one per objective.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Effects []Effect `json:"effects,omitempty"`

	// forced says the variant was promoted with --force although it was
	// not significantly better; the reason says why not.
	// +optional
	Forced bool `json:"forced,omitempty"`

	// reason is the experiment's reason for its best variant.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// Effect is one measured difference between the promoted variant and the
// baseline.
type Effect struct {
	// metric compared.
	// +required
	Metric MetricName `json:"metric"`
	// group whose metric it is.
	// +required
	// +kubebuilder:validation:MaxLength=40
	Group string `json:"group"`
	// goal of the objective.
	// +optional
	Goal Goal `json:"goal,omitempty"`
	// baseline's mean, written as a decimal.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Baseline string `json:"baseline,omitempty"`
	// variant's mean, written as a decimal.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Variant string `json:"variant,omitempty"`
	// change is (variant − baseline) / baseline, e.g. "-38.2%".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Change string `json:"change,omitempty"`
	// interval is the 95% interval of variant − baseline, e.g. "[-61.0, -41.3]".
	// +optional
	// +kubebuilder:validation:MaxLength=80
	Interval string `json:"interval,omitempty"`
	// significant says whether the interval excludes no difference in the
	// goal's direction.
	// +optional
	Significant bool `json:"significant,omitempty"`
}

// ProfileNodePhase is where one node is under a profile.
// +kubebuilder:validation:Enum=Pending;Applied;Drifted;Unsupported;Failed;RolledBack;Paused
type ProfileNodePhase string

const (
	// ProfileNodePending: selected, not applied yet (waiting for its turn).
	ProfileNodePending ProfileNodePhase = "Pending"
	// ProfileNodeApplied: every knob has the profile's value.
	ProfileNodeApplied ProfileNodePhase = "Applied"
	// ProfileNodeDrifted: a knob was found changed and was set back.
	ProfileNodeDrifted ProfileNodePhase = "Drifted"
	// ProfileNodeUnsupported: the node lacks a knob; nothing was changed.
	ProfileNodeUnsupported ProfileNodePhase = "Unsupported"
	// ProfileNodeFailed: applying or repairing failed; see reason.
	ProfileNodeFailed ProfileNodePhase = "Failed"
	// ProfileNodeRolledBack: the canary verification failed and the node
	// is back to its previous state.
	ProfileNodeRolledBack ProfileNodePhase = "RolledBack"
	// ProfileNodePaused: an experiment holds the node; the profile agent
	// neither repairs nor changes anything until it ends.
	ProfileNodePaused ProfileNodePhase = "Paused"
)

// ProfileNodeStatus is one node under a profile, as its agent reports it.
type ProfileNodeStatus struct {
	// node name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node"`
	// phase of the node.
	// +optional
	Phase ProfileNodePhase `json:"phase,omitempty"`
	// generation of the profile the node has applied (0: none).
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// applied knob values as the node shows them ("autogroup": "0").
	// +optional
	// +kubebuilder:validation:MaxProperties=96
	Applied map[string]string `json:"applied,omitempty"`
	// original values the node had before the first profile changed them;
	// they come back on deletion, un-selection or rollback.
	// +optional
	// +kubebuilder:validation:MaxProperties=96
	Original map[string]string `json:"original,omitempty"`
	// driftRepairs counts knobs found changed by someone else and set back.
	// +optional
	DriftRepairs int64 `json:"driftRepairs,omitempty"`
	// lastDrift is when a drift was last repaired.
	// +optional
	LastDrift *metav1.Time `json:"lastDrift,omitempty"`
	// lastCheck is when the agent last read the knobs.
	// +optional
	LastCheck *metav1.Time `json:"lastCheck,omitempty"`
	// reason explains the phase.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// RolloutPhase is where a profile's rollout is.
// +kubebuilder:validation:Enum=Canary;Verifying;RollingOut;Complete;RolledBack
type RolloutPhase string

const (
	RolloutCanary     RolloutPhase = "Canary"
	RolloutVerifying  RolloutPhase = "Verifying"
	RolloutRollingOut RolloutPhase = "RollingOut"
	RolloutComplete   RolloutPhase = "Complete"
	RolloutRolledBack RolloutPhase = "RolledBack"
)

// RolloutStatus is the controller's rollout state: which nodes may apply
// the current generation. Agents read it; only the controller writes it.
type RolloutStatus struct {
	// generation of the spec being rolled out.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// phase of the rollout.
	// +optional
	Phase RolloutPhase `json:"phase,omitempty"`
	// nodes allowed to apply the generation (canaries first).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=253
	Nodes []string `json:"nodes,omitempty"`
	// canaries of this generation.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=253
	Canaries []string `json:"canaries,omitempty"`
	// verification is the SchedExperiment verifying the canaries.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Verification string `json:"verification,omitempty"`
	// message says what the rollout waits for or why it stopped.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// SchedProfileStatus is what the controller and the profile agents observed.
// The controller writes everything but nodes; each node's agent writes its
// own entry of nodes (server-side apply, one field manager per node).
type SchedProfileStatus struct {
	// observedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, Reconciling, Stalled (kstatus conventions).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// nodes under the profile, one entry per node, written by its agent.
	// +optional
	// +listType=map
	// +listMapKey=node
	// +kubebuilder:validation:MaxItems=1000
	Nodes []ProfileNodeStatus `json:"nodes,omitempty"`

	// selected is how many nodes the profile selects and wins on.
	// +optional
	Selected int32 `json:"selected"`
	// applied is how many of them have the current generation applied.
	// +optional
	Applied int32 `json:"applied"`
	// drifted is how many nodes have had drift repaired.
	// +optional
	Drifted int32 `json:"drifted"`
	// driftRepairs sums the repairs over the nodes.
	// +optional
	DriftRepairs int64 `json:"driftRepairs"`

	// rollout of the current generation.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`

	// lastGoodGeneration is the last generation rolled out to every node;
	// lastGoodKnobs are its knobs, which nodes keep while a newer
	// generation waits for its turn or was rolled back.
	// +optional
	LastGoodGeneration int64 `json:"lastGoodGeneration,omitempty"`
	// +optional
	LastGoodKnobs *Knobs `json:"lastGoodKnobs,omitempty"`
}

// Condition types and reasons of a SchedProfile (kstatus: Reconciling and
// Stalled are abnormal-true; Ready is normal-true).
const (
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"

	ReasonRollingOut           = "RollingOut"
	ReasonVerifying            = "Verifying"
	ReasonRolledOut            = "RolledOut"
	ReasonVerificationFailed   = "VerificationFailed"
	ReasonNodesNotApplied      = "NodesNotApplied"
	ReasonPriorityTie          = "PriorityTie"
	ReasonNoSelectedNodes      = "NoSelectedNodes"
	ReasonWaitingForExperiment = "WaitingForExperiment"
)

// Well-known names of profiles.
const (
	// ProfileFinalizer holds a SchedProfile until every node it changed has
	// its original values back.
	ProfileFinalizer = "schedlab.io/restore-profile"
	// ProfileLabel names the profile on its verification experiment.
	ProfileLabel = "schedlab.io/profile"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=sp,categories=schedlab
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.selected`,description="nodes the profile selects and wins on"
// +kubebuilder:printcolumn:name="Applied",type=integer,JSONPath=`.status.applied`,description="nodes with the current generation applied"
// +kubebuilder:printcolumn:name="Drifted",type=integer,JSONPath=`.status.drifted`,description="nodes where drift was repaired"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Rollout",type=string,JSONPath=`.status.rollout.phase`,priority=10
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`,priority=10
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=10
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// SchedProfile keeps scheduler knobs set on the nodes it selects, repairs
// drift, and restores the nodes when it no longer applies.
type SchedProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec SchedProfileSpec `json:"spec"`
	// +optional
	Status SchedProfileStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SchedProfileList is a list of SchedProfiles.
type SchedProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SchedProfile `json:"items"`
}
