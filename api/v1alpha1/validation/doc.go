// Package validation is the one Go validator of a SchedExperiment spec:
// ValidateSpec returns every problem as a field.ErrorList, each naming the
// field and what to change. It enforces the same rules as the CRD's schema
// and CEL, so that the CLI (schedlab run, simulate, plan), the agent (again,
// before it touches a node) and the controller refuse what the API server
// refuses, and the invalid-manifest suite (test/manifests) checks that they
// agree file by file.
//
// It imports apimachinery and api/v1alpha1 only. Start reading at ValidateSpec
// in validation.go; sweep.go holds spec.sweep and spec.constraints.
package validation
