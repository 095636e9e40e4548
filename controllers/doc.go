// Package controllers holds the schedlab reconcilers: the SchedExperiment
// lifecycle (select and lock nodes, run the agents, aggregate their NodeRuns,
// restore and unlock).
//
// It may import the API, internal/experiment (through Analyzer) and Kubernetes
// client libraries; never agent/ or internal/nodeagent. Start reading at
// Reconcile in schedexperiment_controller.go, then the phase list in
// phases.go.
package controllers
