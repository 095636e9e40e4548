package main

import (
	"os"
	"testing"

	"github.com/schedlab/schedlab/internal/nodeagent/workload"
)

// TestMain lets the test binary be its own workload worker: `schedlab run`
// re-executes os.Executable() as `<binary> __worker <json>`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == workload.WorkerArg {
		os.Exit(workload.WorkerMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}
