package simengine

import (
	"math"
	"testing"
)

func mustRun(t testing.TB, in Input) *Result {
	t.Helper()
	r, err := Run(in)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return r
}

func group(t testing.TB, r *Result, name string) GroupResult {
	t.Helper()
	for _, g := range r.Groups {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no group %q in result", name)
	return GroupResult{}
}

// near fails unless got is within tol of want.
func near(t testing.TB, what string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.4f, want %.4f ± %.4f", what, got, want, tol)
	}
}

func p99(t testing.TB, r *Result, name string) float64 {
	t.Helper()
	l := group(t, r, name).Metrics.WakeupLatencyUs
	if l == nil || l.Count == 0 {
		t.Fatalf("group %q has no wakeup latency samples", name)
	}
	return l.P99
}

func boolp(b bool) *bool { return &b }

// freeWakeups are node constants of a wake-up path that costs nothing, for
// tests of scheduler rules alone.
var freeWakeups = Constants{TimerExpiryNs: NoCost, WakeupNs: NoCost, IdleExitNs: NoCost, CtxSwitchNs: NoCost, WakeupCPUNs: NoCost, TimerArmCPUNs: NoCost,
	ColdWakeNs: NoCost}
