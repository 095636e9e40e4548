package agent

import (
	"context"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent"
)

// NodeAgentRunner is the production Runner: the node agent of
// internal/nodeagent on the host under Options.Root.
type NodeAgentRunner struct {
	// Options of every run; RunID and Progress are set per run.
	Options nodeagent.Options
}

var _ Runner = NodeAgentRunner{}

// Recover implements Runner: it restores the journal an earlier agent left.
func (n NodeAgentRunner) Recover(context.Context) ([]v1alpha1.KnobRecord, error) {
	o := n.Options
	o.RunID = "recover"
	return nodeagent.RestoreOnly(o)
}

// Run implements Runner.
func (n NodeAgentRunner) Run(ctx context.Context, spec *v1alpha1.SchedExperimentSpec, runID string, report Report) (*v1alpha1.NodeRunStatus, error) {
	o := n.Options
	o.RunID, o.Progress, o.Window = runID, report.Progress, report.Window
	return nodeagent.Run(ctx, spec, o)
}
