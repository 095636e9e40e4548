package simengine

import (
	"math"
	"testing"
)

// wakeupHeavyCase is one configuration of the wake-up-heavy group against a
// group of hogs, measured on a 2-CPU node running Linux 6.18.44 (EEVDF,
// HZ 250, cgroup v1, base slice 1.4 ms) with plain processes: pairs of
// processes that pass a byte through two pipes and spin work µs of thread
// CPU time per message in cgroup A, hogs spinning in cgroup B, a 1 s warm-up
// and a 4 s window read from /proc/PID/schedstat (1 December 2026, 11:48 to
// 12:08 UTC; load average 8 to 54 from other work in an idle-class cgroup,
// which took 0.00 to 0.06 CPU of each window; docs/wakeup-heavy-groups.md).
type wakeupHeavyCase struct {
	name             string
	cpus             int
	pairs, hogs      int
	workNs           int64
	weightA, weightB int // cgroup v2 cpu.weight; v1 cpu.shares = weight * 1024 / 100
	measA, measB     float64
	// sessions: the groups are sessions outside any cgroup (autogroup
	// makes each one a task group); autogroupOff turns autogroup off.
	sessions, autogroupOff bool
}

var wakeupHeavyCases = []wakeupHeavyCase{
	{"3 pairs 20µs vs 4 hogs, 1:1", 2, 3, 4, 20_000, 100, 100, 1.975, 0.000, false, false},
	{"2 pairs 20µs vs 4 hogs, 1:1", 2, 2, 4, 20_000, 100, 100, 1.943, 0.000, false, false},
	{"3 pairs 0µs vs 4 hogs, 1:1", 2, 3, 4, 0, 100, 100, 1.998, 0.000, false, false},
	{"3 pairs 20µs vs 4 hogs, 2:1", 2, 3, 4, 20_000, 200, 100, 1.962, 0.011, false, false},
	{"3 pairs 20µs vs 1 hog, 1:1", 2, 3, 1, 20_000, 100, 100, 1.957, 0.015, false, false},
	{"3 pairs 20µs vs 8 hogs, 1:1", 2, 3, 8, 20_000, 100, 100, 1.969, 0.006, false, false},
	// One pair: it runs alone on one CPU and the four hogs share the other
	// (18:14 UTC, load average 14-24: 0.943/1.027 and 0.927/0.993, the
	// pair on one CPU with no migration, every hog on the other at the end).
	{"1 pair 20µs vs 4 hogs, 1:1", 2, 1, 4, 20_000, 100, 100, 0.935, 1.010, false, false},
	{"one CPU: 1 pair 20µs vs 2 hogs, 1:1", 1, 1, 2, 20_000, 100, 100, 0.469, 0.469, false, false},
	{"one CPU: 1 pair 20µs vs 2 hogs, 1:4", 1, 1, 2, 20_000, 25, 100, 0.196, 0.783, false, false},
	{"one CPU: 1 pair 20µs vs 2 hogs, 1:2", 1, 1, 2, 20_000, 50, 100, 0.332, 0.662, false, false},
	// Two windows each (12:45 UTC): 1.963/0.008 and 1.901/0.078 with
	// autogroup on, 0.830/1.145 and 0.901/1.072 with it off.
	{"sessions, autogroup on: 3 pairs vs 4 hogs", 2, 3, 4, 20_000, 100, 100, 1.932, 0.043, true, false},
	{"sessions, autogroup off: 3 pairs vs 4 hogs", 2, 3, 4, 20_000, 100, 100, 0.866, 1.109, true, true},
}

func wakeupHeavyInput(c wakeupHeavyCase, kernel string) Input {
	// A message with no work still costs its pipe write, read and wake-up
	// (a few µs of system time per message): PingPong's 2 µs default
	// (RunNs 0) stands for it.
	run := c.workNs
	// The node's default wake-up constants apply, with their spread (each
	// wake-up draws its context switch). With every cost fixed, two pairs
	// of one group on one CPU lock into a single interleaving in which each
	// blocking task is left delayed (DELAY_DEQUEUE) and woken before it is
	// picked, so the group is never reweighted there: the three-pair cases
	// then predicted 1.76/0.24 (docs/wakeup-heavy-groups.md).
	in := Input{Node: Node{CPUs: c.cpus, Kernel: kernel}, DurationNs: 2e9, WarmupNs: 1e9, Seed: 1,
		Groups: []Group{
			{Name: "A", Tasks: 2 * c.pairs, CPUWeight: c.weightA, Pattern: Pattern{Type: PingPong, RunNs: run}},
			{Name: "B", Tasks: c.hogs, CPUWeight: c.weightB},
		}}
	if c.sessions {
		in.Groups[0].Session, in.Groups[1].Session = "a", "b"
		in.Groups[0].CPUWeight, in.Groups[1].CPUWeight = 0, 0
	}
	if c.autogroupOff {
		off := false
		in.Knobs.Autogroup = &off
	}
	return in
}

// TestWakeupHeavyGroupVsHogs holds the prediction for the node's kernel to
// the measured CPU of each group, within 0.15 CPU, and checks that a kernel
// without the v6.13 reweight placement (6.18.45, where it is reverted)
// predicts the weight split instead, so the match comes from the modelled
// kernel path and not from the workload.
func TestWakeupHeavyGroupVsHogs(t *testing.T) {
	// Three seeds each: the prediction must not hang on one interleaving.
	for _, c := range wakeupHeavyCases {
		for seed := uint64(1); seed <= 3; seed++ {
			in := wakeupHeavyInput(c, "6.18.44")
			in.Seed = seed
			r, err := Run(in)
			if err != nil {
				t.Fatal(err)
			}
			a, b := r.Groups[0].Metrics.CPU, r.Groups[1].Metrics.CPU
			t.Logf("%-40s seed %d measured %.3f / %.3f  predicted %.3f / %.3f", c.name, seed, c.measA, c.measB, a, b)
			if math.Abs(a-c.measA) > 0.15 || math.Abs(b-c.measB) > 0.15 {
				t.Errorf("%s, seed %d: predicted A/B %.3f/%.3f, measured %.3f/%.3f (tolerance 0.15 CPU)", c.name, seed, a, b, c.measA, c.measB)
			}
		}
	}
	// The same two-CPU case on a kernel with the reweight placement reverted.
	fixed, err := Run(wakeupHeavyInput(wakeupHeavyCases[0], "6.18.45"))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := fixed.Groups[0].Metrics.CPU, fixed.Groups[1].Metrics.CPU; math.Abs(a-1) > 0.1 || math.Abs(b-1) > 0.1 {
		t.Errorf("6.18.45: predicted A/B %.3f/%.3f, want the 1:1 split 1.0/1.0 ± 0.1", a, b)
	}
}

func TestParseKernel(t *testing.T) {
	for _, c := range []struct {
		in   string
		want kernelVersion
		ok   bool
	}{
		{"6.18.44-fc-v1045", kernelVersion{6, 18, 44}, true},
		{"6.12", kernelVersion{6, 12, 0}, true},
		{"6.6.0", kernelVersion{6, 6, 0}, true},
		{"7.0-rc1", kernelVersion{7, 0, 0}, true},
		{"", kernelVersion{}, false},
		{"6", kernelVersion{}, false},
		{"linux", kernelVersion{}, false},
	} {
		got, err := parseKernel(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("parseKernel(%q) = %v, %v; want %v ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
	for _, c := range []struct {
		k     string
		place bool
	}{{"6.12", false}, {"6.13", true}, {"6.18.44", true}, {"6.18.45", false}, {"6.19.3", true}, {"7.0", false}} {
		v, _ := parseKernel(c.k)
		if got := rulesFor(v).reweightPlaceCurr; got != c.place {
			t.Errorf("%s: reweightPlaceCurr = %v, want %v", c.k, got, c.place)
		}
	}
}

// TestSyncWakeupPreemptsWaker: WF_SYNC does not spare the waker the wake-up
// preemption check (ttwu_do_activate() calls wakeup_preempt() for every
// wake-up, v6.1..v6.18), so a ping-pong partner often preempts the writer on
// its way back from write(). schedlab run of config/samples/wakeup-heavy-vs-hogs.yaml
// (autogroup on, 1 December 2026 18:41 UTC, load average 17-25) measured
// the pairs' group at 20 501 involuntary and 36 721 voluntary switches a
// second; without the check the simulator predicted 2 involuntary a second.
// A second layout, i11's mixed scenario (2 Hogs, a 4 ms / 40 ms Periodic, a
// pair with 20 µs messages and a 2 ms / 6 ms Burst, each in its own cgroup,
// internal/simengine/VALIDATION.md, 14:55-15:03 UTC), measured the pair at
// 0.727 ± 0.026 CPU and the hogs at 0.931 ± 0.021; without the check the
// pair was predicted at 0.896 and the hogs at 0.797.
func TestSyncWakeupPreemptsWaker(t *testing.T) {
	in := wakeupHeavyInput(wakeupHeavyCases[len(wakeupHeavyCases)-2], "6.18.44") // sessions, autogroup on
	r, err := Run(in)
	if err != nil {
		t.Fatal(err)
	}
	inv := r.Groups[0].Metrics.CtxSwitchesPerSec.Involuntary
	t.Logf("pairs: involuntary %.0f/s, voluntary %.0f/s (measured 20501 / 36721)", inv, r.Groups[0].Metrics.CtxSwitchesPerSec.Voluntary)
	if inv < 20501/2 || inv > 20501*2 {
		t.Errorf("pairs' involuntary switches %.0f/s, want within 2x of the measured 20501/s", inv)
	}
	// The mixed scenario's split moves with the seed (the pair's share
	// 0.70-0.82 over 8 s): the mean of four seeds is compared.
	var hogs, pair float64
	const seeds = 4
	for seed := uint64(1); seed <= seeds; seed++ {
		m, err := Run(Input{Node: Node{CPUs: 2, Kernel: "6.18.44"}, DurationNs: 8e9, WarmupNs: 1e9, Seed: seed,
			Groups: []Group{
				{Name: "hogs", Tasks: 2},
				{Name: "frames", Tasks: 1, Pattern: Pattern{Type: Periodic, RunNs: 4e6, PeriodNs: 40e6}},
				{Name: "pingpong", Tasks: 2, Pattern: Pattern{Type: PingPong, RunNs: 20_000}},
				{Name: "burst", Tasks: 1, Pattern: Pattern{Type: Burst, MeanRunNs: 2e6, MeanSleepNs: 6e6}},
			}})
		if err != nil {
			t.Fatal(err)
		}
		hogs += m.Groups[0].Metrics.CPU / seeds
		pair += m.Groups[2].Metrics.CPU / seeds
	}
	t.Logf("mixed: hogs %.3f (measured 0.931), pingpong %.3f (measured 0.727)", hogs, pair)
	if math.Abs(hogs-0.931) > 0.05 || math.Abs(pair-0.727) > 0.05 {
		t.Errorf("mixed: predicted hogs/pingpong %.3f/%.3f CPU, measured 0.931/0.727 (tolerance 0.05)", hogs, pair)
	}
}
