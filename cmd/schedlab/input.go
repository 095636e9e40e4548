package main

import (
	"fmt"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

// loadExperiment checks the flags every reading subcommand shares (-f, -o)
// and loads, defaults and validates the manifest. what completes "name the
// SchedExperiment manifest to …" in the error for a missing -f.
func loadExperiment(file, out, what string) (*v1alpha1.SchedExperiment, error) {
	if file == "" {
		return nil, fmt.Errorf("-f is required: name the SchedExperiment manifest %s", what)
	}
	if out != "table" && out != "json" {
		return nil, fmt.Errorf("-o %q: use table or json", out)
	}
	// Local commands: this machine (or the flags) is the node, so the
	// fields that pick a cluster's nodes are not needed.
	return experiment.LoadLocal(file)
}
