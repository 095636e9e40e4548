package workload

import (
	"os"
	"testing"
)

// TestMain lets the test binary be its own worker: Start re-executes it as
// `<test binary> __worker <json>`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == WorkerArg {
		os.Exit(WorkerMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}
