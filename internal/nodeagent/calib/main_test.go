package calib

import (
	"os"
	"testing"

	"github.com/schedlab/schedlab/internal/nodeagent/workload"
)

// TestMain lets the test binary be its own worker: the cold wake-up
// measurement's spinner is a Hog worker process (coldWakeLateness).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == workload.WorkerArg {
		os.Exit(workload.WorkerMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}
