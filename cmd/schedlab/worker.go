package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/schedlab/schedlab/internal/nodeagent/workload"
)

// The hidden worker mode: every workload task is this binary re-executed as
// `schedlab __worker <json>` by package workload. main calls
// workload.WorkerMain before cobra; this command keeps the name reserved and
// the mode reachable through the command tree (tests run it that way).
func init() { register(workload.WorkerArg, newWorkerCmd) }

func newWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:                workload.WorkerArg,
		Short:              "workload worker process (internal)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := workload.WorkerMain(args); code != 0 {
				return &exitError{code: code, err: errWorkerFailed}
			}
			return nil
		},
	}
}

var errWorkerFailed = errors.New("the worker failed (its error is above)")
