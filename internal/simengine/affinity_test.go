package simengine

import (
	"math"
	"strings"
	"testing"
)

// Two hogs pinned to CPU 0 of two share it; unpinned they take a CPU each.
// A balancer or a wake-up path that ignored the affinity would give the
// pinned pair the idle CPU.
func TestAffinityKeepsTasksOnTheirCPUs(t *testing.T) {
	for _, topo := range []bool{false, true} {
		for _, cpus := range [][]int32{nil, {0}, {1}} {
			in := Input{Node: Node{CPUs: 2}, DurationNs: 1e9, WarmupNs: 2e8, Seed: 1,
				Groups: []Group{{Name: "hogs", Tasks: 2, CPUs: cpus}, {Name: "probe", Tasks: 1, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1e6}}}}
			if topo {
				in.Node.Topology = Topology{Sockets: 1, LLCsPerSocket: 1, ThreadsPerCore: 1}
			}
			r, err := Run(in)
			if err != nil {
				t.Fatal(err)
			}
			want := 2.0
			if cpus != nil {
				want = 1.0
			}
			if got := r.Groups[0].Metrics.CPU; math.Abs(got-want) > 0.05 {
				t.Errorf("topology %v, hogs pinned to %v: %.3f CPU, want %.1f", topo, cpus, got, want)
			}
		}
	}
}

// A wake-up that would land off a pinned task's CPUs goes to them: a
// PingPong pair pinned to CPU 1 beside an idle CPU 0 stays on CPU 1 (a
// pair's partner would otherwise be woken onto the idle CPU by
// select_idle_sibling()).
func TestAffinityWakeups(t *testing.T) {
	in := Input{Node: Node{CPUs: 2}, DurationNs: 5e8, Seed: 1,
		Groups: []Group{{Name: "pp", Tasks: 2, CPUs: []int32{1}, Pattern: Pattern{Type: PingPong, RunNs: 20_000}}}}
	s := startedSim(t, in)
	s.end = in.DurationNs
	s.loop()
	for i := range s.tasks {
		if c := s.tasks[i].cpu; c != 1 {
			t.Errorf("task %d of a pair pinned to CPU 1 ended on CPU %d", i, c)
		}
	}
	if s.cpus[0].curr >= 0 {
		t.Errorf("CPU 0 runs task %d; nothing may run there", s.cpus[0].curr)
	}
}

// load_balance()'s redo: when every task of the busiest CPU is pinned away
// from the balancing CPU (LBF_ALL_PINNED), the busiest is left out and the
// next one balanced. Three CPUs: two hogs pinned to CPU 0, two movable
// hogs on CPU 1, CPU 2 idle; CPU 0 and CPU 1 tie, and CPU 0 is found first.
func TestAllPinnedBusiestIsLeftOut(t *testing.T) {
	for _, topo := range []bool{false, true} {
		in := Input{Node: Node{CPUs: 3}, DurationNs: 1e9, Seed: 1,
			Groups: []Group{{Name: "pinned", Tasks: 2, CPUs: []int32{0}}, {Name: "movable", Tasks: 2, CPUs: []int32{1}}}}
		if topo {
			in.Node.Topology = Topology{Sockets: 1, LLCsPerSocket: 1, ThreadsPerCore: 1}
		}
		s := startedSim(t, in)
		for i := range s.tasks {
			if want := int32(i / 2); s.tasks[i].cpu != want {
				t.Fatalf("task %d forked onto CPU %d, want %d", i, s.tasks[i].cpu, want)
			}
		}
		// The movable group may now run anywhere; both its tasks are cold.
		s.tasks[2].aff, s.tasks[3].aff = -1, -1
		s.now = 10e6
		var moved bool
		if topo {
			moved, _ = s.findAndPull(2, 0, cpuIdleBal, s.topo.state(2, 0))
		} else {
			moved = s.loadBalance(2, true, false)
		}
		if !moved {
			t.Fatalf("topology %v: CPU 2 pulled nothing: the busiest CPU's tasks are all pinned to CPU 0, and CPU 1's movable ones were not looked at", topo)
		}
		on2 := 0
		for i := range s.tasks {
			if s.tasks[i].cpu == 2 {
				on2++
				if i < 2 {
					t.Errorf("topology %v: pinned task %d moved to CPU 2", topo, i)
				}
			}
		}
		if on2 != 1 {
			t.Errorf("topology %v: %d tasks on CPU 2 after one balance, want 1", topo, on2)
		}
	}
}

func TestAffinityValidation(t *testing.T) {
	in := Input{Node: Node{CPUs: 2}, DurationNs: 1e8, Seed: 1, Groups: []Group{{Name: "hogs", Tasks: 1, CPUs: []int32{2}}}}
	_, err := Run(in)
	if err == nil || !strings.Contains(err.Error(), "cpus names CPU 2, but the node has 2 CPUs") {
		t.Errorf("a group pinned to CPU 2 of 2: %v", err)
	}
}
