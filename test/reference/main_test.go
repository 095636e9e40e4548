// Package reference compares schedlab's workload workers with reference
// tools (plain spinners, stress-ng, cyclictest, perf bench sched pipe) in the
// same cgroup and session layout on this machine, interleaved or at the same
// time. `make test` runs it with short windows; `make reference` runs longer
// windows and prints the table (lines starting "REF |").
package reference

import (
	"os"
	"testing"

	"github.com/schedlab/schedlab/internal/nodeagent/workload"
)

// TestMain lets the test binary be its own worker.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == workload.WorkerArg {
		os.Exit(workload.WorkerMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}
