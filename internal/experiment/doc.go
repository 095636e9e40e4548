// Package experiment is the one translation of a SchedExperiment spec: into
// the simulator's input, into the agent's view of the workload, and from
// measurements and predictions into the status' results. It imports the API
// and the simulator, never Kubernetes clients.
//
// Start reading at Load (a manifest into a
// defaulted, validated spec), then Predict in predict.go and Compare in
// compare.go; sweep*.go hold capacity planning, calibrate*.go calibration.
package experiment
