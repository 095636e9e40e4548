package simengine

import "testing"

// A LatencyProbe that preempts a SCHED_IDLE hog on one CPU pays the timer
// interrupt, the context switch and, when the hog is another process, the
// switch of address space (switch_mm_irqs_off() loading the probe's page
// tables): fixed costs, so every wake-up costs exactly their sum. A hog
// that is a thread of the probe's process, or a kernel thread (which runs
// in the mm it finds), leaves the CPU holding the probe's mm.
func TestProcessSwitchBesideHog(t *testing.T) {
	k := Constants{TimerExpiryNs: 4_000, IdleExitNs: 7_000, CtxSwitchNs: 2_000, WakeupCPUNs: NoCost, TimerArmCPUNs: NoCost,
		ColdWakeNs: NoCost, ProcessSwitchNs: 3_000}
	for _, tc := range []struct {
		name   string
		hog    Group
		probe  string // the probe's AddressSpace
		mm     int64  // ProcessSwitchNs, 0: k's
		wantUs float64
	}{
		{"hog in another process", Group{}, "", 0, 4 + 2 + 3},
		{"hog a thread of the probe's process", Group{AddressSpace: "p"}, "p", 0, 4 + 2},
		{"hog a kernel thread", Group{KernelThread: true, Root: true}, "", 0, 4 + 2},
		{"hog in another process, no process switch cost", Group{}, "", NoCost, 4 + 2},
		{"hog in another named process", Group{AddressSpace: "q"}, "p", 0, 4 + 2 + 3},
	} {
		kc := k
		if tc.mm != 0 {
			kc.ProcessSwitchNs = tc.mm
		}
		hog := tc.hog
		hog.Name, hog.Tasks, hog.Policy = "hog", 1, "Idle"
		r := mustRun(t, Input{Node: Node{CPUs: 1, Constants: kc},
			Groups: []Group{hog, {Name: "probe", Tasks: 1, TimerSlackNs: 1, AddressSpace: tc.probe,
				Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_000_000}}},
			DurationNs: 2e9, WarmupNs: 1e8, Seed: 1})
		l := group(t, r, "probe").Metrics.WakeupLatencyUs
		near(t, tc.name+" p50", l.P50, tc.wantUs, tc.wantUs*0.03)
		near(t, tc.name+" max", l.Max, tc.wantUs, 0.01)
	}
}

// A probe alone on its CPU wakes from idle with its own mm still loaded
// (the idle task borrowed it): no process switch.
func TestProcessSwitchNotAfterIdle(t *testing.T) {
	k := Constants{TimerExpiryNs: 4_000, IdleExitNs: 7_000, CtxSwitchNs: 2_000, WakeupCPUNs: NoCost, TimerArmCPUNs: NoCost,
		ColdWakeNs: NoCost, ProcessSwitchNs: 3_000}
	r := mustRun(t, Input{Node: Node{CPUs: 1, Constants: k},
		Groups: []Group{{Name: "probe", Tasks: 1, TimerSlackNs: 1,
			Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_000_000}}},
		DurationNs: 2e9, WarmupNs: 1e8, Seed: 1})
	near(t, "alone: max", group(t, r, "probe").Metrics.WakeupLatencyUs.Max, 4+7+2, 0.01)
}

// The process switch is paid in the woken task's latency only (as the
// cold wake-up): a PingPong pair on one CPU whose tasks are processes of
// their own passes as many messages as two threads of one process, and
// each wake-up of a partner is ProcessSwitchNs later.
func TestProcessSwitchInLatencyOnly(t *testing.T) {
	k := Constants{TimerExpiryNs: 4_000, WakeupNs: 3_000, IdleExitNs: 7_000, CtxSwitchNs: 2_000, WakeupCPUNs: NoCost,
		TimerArmCPUNs: NoCost, ColdWakeNs: NoCost, ProcessSwitchNs: 5_000}
	run := func(space string) Metrics {
		r := mustRun(t, Input{Node: Node{CPUs: 1, Constants: k},
			Groups: []Group{{Name: "pair", Tasks: 2, AddressSpace: space,
				Pattern: Pattern{Type: PingPong, RunNs: 20_000}}},
			DurationNs: 2e9, WarmupNs: 1e8, Seed: 1})
		m := group(t, r, "pair").Metrics
		if m.OpsPerSec == nil || m.WakeupLatencyUs == nil {
			t.Fatalf("no opsPerSec or wake-up latency for the pair")
		}
		return m
	}
	procs, threads := run(""), run("pair")
	if *procs.OpsPerSec != *threads.OpsPerSec || procs.CPU != threads.CPU {
		t.Errorf("processes passed %.0f messages a second on %.4f CPU, threads %.0f on %.4f: want the same (no CPU charged)",
			*procs.OpsPerSec, procs.CPU, *threads.OpsPerSec, threads.CPU)
	}
	p, th := procs.WakeupLatencyUs.P50, threads.WakeupLatencyUs.P50
	near(t, "wake-up p50, processes over threads", p-th, 5, 0.03*p+0.1)
}

func TestKernelThreadHasNoAddressSpace(t *testing.T) {
	_, err := Run(Input{Node: Node{CPUs: 1},
		Groups:     []Group{{Name: "k", Tasks: 1, Root: true, KernelThread: true, AddressSpace: "x"}},
		DurationNs: 1e8, Seed: 1})
	if err == nil {
		t.Fatal("a kernel thread group with an address space was accepted")
	}
}
