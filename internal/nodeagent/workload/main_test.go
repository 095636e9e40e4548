package workload

import (
	"os"
	"testing"
)

// TestMain lets the test binary be its own worker: Start re-executes it as
// `<test binary> __worker <json>`. With SCHEDLAB_TEST_HELPER_PARENT set it is
// instead the helper parent of TestParentDeathKillsWorkers.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == WorkerArg {
		os.Exit(WorkerMain(os.Args[2:]))
	}
	if os.Getenv(helperParentEnv) != "" {
		os.Exit(helperParent())
	}
	os.Exit(m.Run())
}
