package nodeagent

import (
	"context"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// NodeRunner is the node side the in-cluster agent (controllers/agent) drives:
// Recover at start, then Run per generation, with the Options given here.
type NodeRunner struct {
	Options Options
}

// Recover restores what an earlier agent journaled and did not restore.
func (n *NodeRunner) Recover(ctx context.Context) ([]v1alpha1.KnobRecord, error) {
	o := n.Options
	o.RunID = "recover"
	return RestoreOnly(o)
}

// Run runs the spec's plan on the node as run runID.
func (n *NodeRunner) Run(ctx context.Context, spec *v1alpha1.SchedExperimentSpec, runID string, progress func(done, total int, what string)) (*v1alpha1.NodeRunStatus, error) {
	o := n.Options
	o.RunID, o.Progress = runID, progress
	return Run(ctx, spec, o)
}
