package workload

import (
	"os"
	"testing"
)

// testHelpers are other roles of the test binary, chosen by an environment
// variable (name → role); _linux test files register theirs in init.
var testHelpers = map[string]func() int{}

// TestMain lets the test binary be its own worker: Start re-executes it as
// `<test binary> __worker <json>`. With a helper's variable set it plays that
// helper instead (the parent of TestParentDeathKillsWorkers).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == WorkerArg {
		os.Exit(WorkerMain(os.Args[2:]))
	}
	for env, helper := range testHelpers {
		if os.Getenv(env) != "" {
			os.Exit(helper())
		}
	}
	os.Exit(m.Run())
}
