// Package agent is the node side of schedlab's controller loop: on one node,
// it finds the node's NodeRun of one experiment, runs the generation the
// NodeRun asks for with the node agent code, and writes the NodeRun's status
// (progress, windows, knob records, the restore). It watches only its own
// NodeRun and experiment.
//
// The node is touched only through Runner, so tests run the real agent loop
// against an API server with a runner over a temporary filesystem root or a
// stand-in.
//
// It may import the API (api, api/names, api/v1alpha1), internal/nodeagent and
// Kubernetes client libraries; never controllers/. Start reading at New and
// (*Agent).Start in agent.go; nodeagent.go is the production Runner.
package agent
