package simengine

import "testing"

// A timer expiry shift on one CPU (Node.TimerExpiryShiftNs) delays the
// timer wake-ups there by the shift, and only there: two probes pinned one
// to each CPU beside hogs, CPU 0's timer path 20 µs slower. With no shift
// the two probes' medians agree.
func TestTimerExpiryShiftPerCPU(t *testing.T) {
	const shift = 20_000
	run := func(shifts []int64) (p0, p1 float64) {
		in := Input{
			Node: Node{CPUs: 2, HZ: 250, Kernel: "6.18.44", TimerExpiryShiftNs: shifts,
				Constants: Constants{TimerExpiryNs: 15_000, WakeupNs: 3_000, IdleExitNs: 20_000, CtxSwitchNs: 5_000, WakeupCPUNs: 10_000, TimerArmCPUNs: NoCost}},
			Groups: []Group{
				{Name: "hogs", Tasks: 4},
				{Name: "on0", Tasks: 1, CPUs: []int32{0}, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 2_000_000, PhaseNs: 300_000}},
				{Name: "on1", Tasks: 1, CPUs: []int32{1}, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 2_000_000, PhaseNs: 1_300_000}},
			},
			DurationNs: 2e9, WarmupNs: 2e8, Seed: 1,
		}
		r := mustRun(t, in)
		return group(t, r, "on0").Metrics.WakeupLatencyUs.P50, group(t, r, "on1").Metrics.WakeupLatencyUs.P50
	}
	b0, b1 := run(nil)
	s0, s1 := run([]int64{shift})
	t.Logf("p50 without shifts: CPU 0 %.1f µs, CPU 1 %.1f µs; CPU 0 20 µs slower: %.1f, %.1f", b0, b1, s0, s1)
	if d := b0 - b1; d < -3 || d > 3 {
		t.Errorf("without shifts the probes' p50 differ by %.1f µs, want the same path on both CPUs (±3)", d)
	}
	if d := s0 - b0; d < 17 || d > 23 {
		t.Errorf("CPU 0's probe moved by %.1f µs with a 20 µs shift there, want 20 ± 3", d)
	}
	if d := s1 - b1; d < -3 || d > 3 {
		t.Errorf("CPU 1's probe moved by %.1f µs with a shift on CPU 0 only, want none (±3)", d)
	}
	if _, err := Run(Input{Node: Node{CPUs: 2, TimerExpiryShiftNs: []int64{1, 2, 3}}, Groups: []Group{{Name: "h", Tasks: 1}}, DurationNs: 1e8}); err == nil {
		t.Error("three timer expiry shifts for two CPUs accepted")
	}
}
