package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a SchedExperiment.
const (
	ConditionReady       = "Ready"
	ConditionNodesLocked = "NodesLocked"
	ConditionRunning     = "Running"
	ConditionCompleted   = "Completed"
	ConditionDegraded    = "Degraded"
	ConditionFailed      = "Failed"
	// ConditionNodesNotRestored is True while nodes whose agent started
	// changing them have not reported their restore after the restore
	// timeout: they stay locked and a restore-only Pod runs on each.
	ConditionNodesNotRestored = "NodesNotRestored"
)

// Condition reasons.
const (
	ReasonWaitingForNodes = "WaitingForNodes"
	ReasonNodesLocked     = "Locked"
	ReasonNoNodes         = "NoMatchingNodes"
	ReasonInvalidSpec     = "InvalidSpec"
	ReasonRunning         = "Running"
	ReasonSucceeded       = "Succeeded"
	ReasonNodesFailed     = "NodesFailed"
	ReasonTimedOut        = "TimedOut"
	ReasonSpecChanged     = "SpecChanged"
	ReasonDeleting        = "Deleting"
	ReasonSimulated       = "Simulated"
)

// Well-known names.
const (
	// Finalizer holds a SchedExperiment until every node it touched is
	// restored and unlocked.
	Finalizer = "schedlab.io/restore-nodes"
	// ForceCleanupAnnotation on a SchedExperiment being deleted makes the
	// controller stop waiting for nodes that will never report their
	// restore (a node gone for good) and release everything.
	ForceCleanupAnnotation = "schedlab.io/force-cleanup"
	// ExperimentLabel names the experiment on its NodeRuns and DaemonSet.
	ExperimentLabel = "schedlab.io/experiment"
	// NodeLabel names the node on a NodeRun.
	NodeLabel = "schedlab.io/node"
	// NoSignificantDifference is bestVariant when the objectives cannot
	// tell the variants apart beyond the noise.
	NoSignificantDifference = "no significant difference"
)

// NodeRunPhase is where one node is in an experiment.
// +kubebuilder:validation:Enum=Pending;Running;Completed;Failed;Unsupported;TimedOut;Aborted
type NodeRunPhase string

const (
	NodeRunPending     NodeRunPhase = "Pending"
	NodeRunRunning     NodeRunPhase = "Running"
	NodeRunCompleted   NodeRunPhase = "Completed"
	NodeRunFailed      NodeRunPhase = "Failed"
	NodeRunUnsupported NodeRunPhase = "Unsupported"
	NodeRunTimedOut    NodeRunPhase = "TimedOut"
	NodeRunAborted     NodeRunPhase = "Aborted"
)

// Finished reports whether the phase is final.
func (p NodeRunPhase) Finished() bool {
	switch p {
	case NodeRunCompleted, NodeRunFailed, NodeRunUnsupported, NodeRunTimedOut, NodeRunAborted:
		return true
	}
	return false
}

// NodeProgress is one node's progress as the experiment sees it.
type NodeProgress struct {
	// name of the node.
	Name string `json:"name"`
	// phase of the node's run.
	// +optional
	Phase NodeRunPhase `json:"phase,omitempty"`
	// shape of the node as the simulator sees it, e.g. "8cpu-EEVDF".
	// +optional
	Shape string `json:"shape,omitempty"`
	// stepsDone of stepsTotal (variant × repetition windows).
	// +optional
	StepsDone int32 `json:"stepsDone,omitempty"`
	// stepsTotal is the number of windows the node runs: variants × repetitions.
	// +optional
	StepsTotal int32 `json:"stepsTotal,omitempty"`
	// message explains a failure, an unsupported knob or a timeout.
	// +optional
	Message string `json:"message,omitempty"`
	// restored says, once the run is over, whether the node's agent
	// reported every knob it changed restored: false keeps the node locked
	// while a restore-only Pod replays the journal there.
	// +optional
	Restored *bool `json:"restored,omitempty"`
}

// GroupResult is one variant × group (× node shape) row of the results.
type GroupResult struct {
	// variant name.
	Variant string `json:"variant"`
	// group name.
	Group string `json:"group"`
	// shape of the nodes the row is for; empty when it covers all nodes.
	// +optional
	Shape string `json:"shape,omitempty"`
	// measured means, standard deviations and sample count.
	// +optional
	Measured *MeasuredMetrics `json:"measured,omitempty"`
	// predicted by the simulator.
	// +optional
	Predicted *Metrics `json:"predicted,omitempty"`
	// predictedLow and predictedHigh bound the 95% interval of each
	// predicted metric over the simulation's replicas (independent seeds);
	// predicted is their mean.
	// +optional
	PredictedLow *Metrics `json:"predictedLow,omitempty"`
	// +optional
	PredictedHigh *Metrics `json:"predictedHigh,omitempty"`
	// relativeError is (predicted − measured) / measured, metric by metric.
	// +optional
	RelativeError *Metrics `json:"relativeError,omitempty"`
	// unsupported says why this variant could not run, where it could not.
	// +optional
	Unsupported string `json:"unsupported,omitempty"`
}

// Recommendation is a significantly better variant, ready to promote.
type Recommendation struct {
	// variant recommended.
	// +required
	// +kubebuilder:validation:MaxLength=40
	Variant string `json:"variant"`
	// baseline it was compared with.
	// +optional
	// +kubebuilder:validation:MaxLength=40
	Baseline string `json:"baseline,omitempty"`
	// knobs of the variant, as a SchedProfile's spec.knobs.
	// +optional
	Knobs Knobs `json:"knobs,omitempty"`
	// effects measured against the baseline, one per objective.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Effects []Effect `json:"effects,omitempty"`
	// resultsGeneration the recommendation belongs to.
	// +optional
	Generation int64 `json:"generation,omitempty"`
}

// SchedExperimentStatus is what the controller observed.
type SchedExperimentStatus struct {
	// observedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, NodesLocked, Running, Completed, Degraded, Failed.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// nodes chosen for the experiment, with their progress.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	Nodes []NodeProgress `json:"nodes,omitempty"`

	// nodeProgress is "done/total", for kubectl get.
	// +optional
	NodeProgress string `json:"nodeProgress,omitempty"`

	// resultsGeneration is the spec generation the results belong to.
	// +optional
	ResultsGeneration int64 `json:"resultsGeneration,omitempty"`

	// results per variant × group: measured next to predicted.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	Results []GroupResult `json:"results,omitempty"`

	// bestVariant by the objectives, or "no significant difference".
	// +optional
	BestVariant string `json:"bestVariant,omitempty"`

	// bestVariantReason explains the choice.
	// +optional
	BestVariantReason string `json:"bestVariantReason,omitempty"`

	// recommendation is the best variant as a profile would carry it: its
	// knobs and measured effect, for `schedlab promote` and GitOps bots. It
	// is set only when a variant won with significance.
	// +optional
	Recommendation *Recommendation `json:"recommendation,omitempty"`

	// predictionError is the mean absolute relative error of the predicted
	// cpu over the rows with measurements, e.g. "4.2%".
	// +optional
	PredictionError string `json:"predictionError,omitempty"`

	// startTime of the current generation's run.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime of the current generation's run.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// sweep is the curve and the answer of spec.sweep.
	// +optional
	Sweep *SweepStatus `json:"sweep,omitempty"`

	// calibration fitted per node shape from measurements and used by the
	// predictions, with the prediction error before and after.
	// +optional
	// +listType=map
	// +listMapKey=shape
	// +kubebuilder:validation:MaxItems=64
	Calibration []ShapeCalibration `json:"calibration,omitempty"`

	// omitted says what the status leaves out to stay within
	// MaxStatusBytes (sweep points between the ones kept, result rows),
	// empty when nothing is. The answers are always kept; the whole of
	// results and sweep is in the ConfigMaps fullResults names.
	// +optional
	Omitted string `json:"omitted,omitempty"`

	// fullResults names the ConfigMaps that hold the whole of results and
	// sweep when the status leaves part of them out (omitted); absent
	// otherwise.
	// +optional
	FullResults *FullResultsRef `json:"fullResults,omitempty"`
}

// FullResultsRef names the ConfigMaps holding a status's whole results and
// sweep, written by the controller and owned by the experiment: the
// concatenation of their binaryData[FullResultsKey], in order, is gzipped
// JSON of {"results": [...], "sweep": {...}} (GroupResult and SweepStatus).
type FullResultsRef struct {
	// namespace of the ConfigMaps (the operator's).
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// configMaps in the order of their parts.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	ConfigMaps []string `json:"configMaps"`

	// generation of the experiment whose results they hold.
	Generation int64 `json:"generation"`

	// sha256 of the gzipped JSON, hex.
	// +kubebuilder:validation:MaxLength=64
	SHA256 string `json:"sha256"`

	// bytes of the gzipped JSON.
	Bytes int64 `json:"bytes"`
}

// FullResultsKey is the binaryData key of a full-results ConfigMap.
const FullResultsKey = "results.json.gz"

// MaxStatusBytes bounds the JSON of a SchedExperiment's status: far below
// etcd's request limit (1.5 MiB by default) with the spec beside it.
const MaxStatusBytes = 256 << 10

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=sx;schedexp,categories=schedlab
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="where the experiment is: WaitingForNodes, Running, Succeeded, Simulated, NodesFailed, TimedOut, …"
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Nodes",type=string,JSONPath=`.status.nodeProgress`,description="nodes done/total"
// +kubebuilder:printcolumn:name="Best",type=string,JSONPath=`.status.bestVariant`
// +kubebuilder:printcolumn:name="Pred-Error",type=string,JSONPath=`.status.predictionError`,description="mean relative error of predicted cpu"
// +kubebuilder:printcolumn:name="Fleet-Answer",type=integer,JSONPath=`.status.sweep.fleet[0].total`,description="the sweep's answer summed over the fleet, for the first variant",priority=10
// +kubebuilder:printcolumn:name="Completed",type=string,JSONPath=`.status.conditions[?(@.type=="Completed")].status`,priority=10
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// SchedExperiment compares scheduler knob settings on real nodes and in the
// simulator.
type SchedExperiment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec SchedExperimentSpec `json:"spec"`
	// +optional
	Status SchedExperimentStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SchedExperimentList is a list of SchedExperiments.
type SchedExperimentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SchedExperiment `json:"items"`
}
