package simengine

import (
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestCPUTime reports thread CPU time per run (set SIMENGINE_CPUTIME=1).
func TestCPUTime(t *testing.T) {
	if os.Getenv("SIMENGINE_CPUTIME") == "" {
		t.Skip("set SIMENGINE_CPUTIME=1")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, c := range []struct {
		name string
		in   Input
		n    int
	}{{"a-hogs8", benchHogs8(), 5}, {"b-mixed64", benchMixed64(), 3}, {"c-pingpong2", benchPingPong2(), 3},
		{"d-hogs8-topology", benchHogs8Topo(), 5}, {"e-mixed64-topology", benchMixed64Topo(), 3},
		{"f-mixed64-issue", benchMixed64Issue(), 3}} {
		mustRun(t, c.in)
		best := time.Duration(1 << 62)
		var ev uint64
		var sim int64
		for i := 0; i < c.n; i++ {
			t0 := threadCPU()
			r := mustRun(t, c.in)
			d := threadCPU() - t0
			best = min(best, d)
			ev, sim = r.Events, r.SimulatedNs
		}
		t.Logf("%-12s cpu %v  events %d  %.0f events/s  %.1f× real time", c.name, best, ev, float64(ev)/best.Seconds(), float64(sim)/float64(best.Nanoseconds()))
	}
}
