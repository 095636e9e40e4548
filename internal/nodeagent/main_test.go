package nodeagent

import (
	"os"
	"testing"

	"github.com/schedlab/schedlab/internal/nodeagent/workload"
)

// TestMain lets the test binary be its own worker and, for the SIGKILL
// test, the agent that gets killed.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == workload.WorkerArg {
		os.Exit(workload.WorkerMain(os.Args[2:]))
	}
	if os.Getenv(killChildEnv) != "" {
		os.Exit(killChild())
	}
	if os.Getenv(burstChildEnv) != "" {
		os.Exit(burstChild())
	}
	if os.Getenv(onceChildEnv) != "" {
		os.Exit(onceChild())
	}
	if os.Getenv(spawnChildEnv) != "" {
		os.Exit(spawnChild())
	}
	if os.Getenv(profileKillChildEnv) != "" {
		os.Exit(profileKillChild())
	}
	os.Exit(m.Run())
}
