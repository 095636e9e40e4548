package main

import "github.com/schedlab/schedlab/internal/nodeagent/workload"

// The hidden worker mode: every workload task is this binary re-executed as
// `schedlab __worker <json>` by package workload.
func init() {
	register(command{name: workload.WorkerArg, summary: "workload worker process (internal)", hidden: true, run: workload.WorkerMain})
}
