// Package nodeagent runs an experiment's plan on this node: it takes the
// node's lock, restores whatever an earlier run left (the journal), detects
// the node's capabilities, validates the spec again, and then, for each
// repetition and each variant in turn (A B A B …), applies the variant's
// knobs, creates the workload's cgroups, starts the workload, measures one
// window after the warmup, and puts everything back. The node is restored on
// every ending: success, error, panic, context cancellation (SIGTERM: the
// caller cancels the context) and — through the journal, by the next agent —
// SIGKILL.
//
// It may import the API, internal/nodeagent/host and
// internal/nodeagent/workload; never Kubernetes clients or the simulator.
// Start reading at Run in run.go, then window.go.
package nodeagent
