// Package v1alpha1 holds the schedlab.io/v1alpha1 API: SchedExperiment, the
// user's description of a scheduler-tuning experiment, and NodeRun, one
// node's part of it, written by that node's agent.
//
// The package imports apimachinery only, so that clients of the API pull in
// nothing of the operator.
//
// Start reading at schedexperiment_types.go (the spec), then status_types.go
// and noderun_types.go; defaults.go holds the schema's defaults for specs
// that never saw an API server, and the validation subpackage the Go copy of
// the schema's rules.
//
// +kubebuilder:object:generate=true
// +groupName=schedlab.io
package v1alpha1
