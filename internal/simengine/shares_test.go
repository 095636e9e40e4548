package simengine

import "testing"

// A v1 cgroup's cpu.shares as written (Kubernetes BestEffort pods' 2):
// its group entity weighs 2 beside a hog's 1024 on the root queue
// (cpu_shares_write_u64(), v6.18), where cpu.weight 1, the least a v2
// weight can say, is 10 (sched_weight_from_cgroup()).
func TestCPUShares(t *testing.T) {
	run := func(low Group) float64 {
		r := mustRun(t, Input{Node: Node{CPUs: 1}, DurationNs: 20e9, Seed: 1,
			Groups: []Group{{Name: "hog", Tasks: 1}, low}})
		return group(t, r, "low").Metrics.CPU
	}
	two := run(Group{Name: "low", Tasks: 1, CPUShares: 2})
	ten := run(Group{Name: "low", Tasks: 1, CPUWeight: 1})
	near(t, "CPU of shares 2 beside shares 1024", two, 2.0/1026, 0.0006)
	near(t, "CPU of weight 1 (shares 10) beside shares 1024", ten, 10.0/1034, 0.003)
	// CPUShares 1024 is cpu.weight 100.
	if a, b := run(Group{Name: "low", Tasks: 1, CPUShares: 1024}), run(Group{Name: "low", Tasks: 1}); a != b {
		t.Errorf("shares 1024 gave %.4f CPU, weight 100 %.4f: want the same simulation", a, b)
	}
}
