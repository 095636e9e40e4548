package simengine

import (
	"math"
	"testing"
)

// stalls20ms are stalls of one vCPU of 20 ms each (every level), at rate r
// a second on each CPU.
func stalls20ms(perSec int64) Constants {
	return Constants{VCPUStallsPerHour: perSec * 3600,
		VCPUStallQuantilesNs: []int64{20e6, 20e6, 20e6, 20e6, 20e6, 20e6, 20e6}}
}

// A LatencyProbe pinned to CPU 0 of two: a stall of its vCPU holds its
// timer (the hrtimer interrupt is not taken), so about one wake-up per
// stall of CPU 0 comes beyond 10 ms and the longest is about the stall's
// length; CPU 1's stalls do not touch it.
func TestVCPUStallsDelayPinnedProbe(t *testing.T) {
	const durS, perSec = 60, 3
	for _, on := range []bool{false, true} {
		var k Constants
		if on {
			k = stalls20ms(perSec)
		}
		r := mustRun(t, Input{Node: Node{CPUs: 2, Constants: k},
			Groups: []Group{{Name: "probe", Tasks: 1, CPUs: []int32{0},
				Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_000_000}}},
			DurationNs: durS * 1e9, WarmupNs: 1e8, Seed: 5})
		l := group(t, r, "probe").Metrics.WakeupLatencyUs
		beyond := math.Round(l.Over10ms * float64(l.Count))
		if !on {
			if beyond != 0 || l.Max > 1000 {
				t.Errorf("no stalls: %v wake-ups beyond 10 ms, max %.0f µs; want none beyond 1 ms", beyond, l.Max)
			}
			continue
		}
		want := float64(perSec * durS) // CPU 0's stalls only
		if math.Abs(beyond-want) > 4*math.Sqrt(want) {
			t.Errorf("%.0f wake-ups beyond 10 ms in %d s, want about %.0f (one per stall of CPU 0; %.0f if CPU 1's counted too)", beyond, durS, want, 2*want)
		}
		if l.Max < 19_000 || l.Max > 21_000 {
			t.Errorf("longest wake-up %.0f µs, want about the stall (20 ms)", l.Max)
		}
	}
}

// stallOneCPU runs in with CPU 0 alone stalled over [at, at+d) (no other
// stall), and returns the result.
func stallOneCPU(t *testing.T, in Input, at, d int64) *Result {
	t.Helper()
	if err := validate(&in); err != nil {
		t.Fatal(err)
	}
	s, err := newSim(&in)
	if err != nil {
		t.Fatal(err)
	}
	s.vs = vcpuStalls{on: true, cpu: make([]cpuStall, s.nCPU)}
	for c := range s.vs.cpu {
		s.vs.cpu[c].start = [2]int64{never, never}
	}
	s.vs.cpu[0].start[0], s.vs.cpu[0].length[0] = at, d
	s.vcpuStallDue()
	s.start()
	s.loop()
	return s.result()
}

// One stall of 200 ms on CPU 0: the probe pinned there waits it out (one
// wake-up of about 200 ms), the probe pinned to CPU 1 goes on as without
// it, and both pinned hogs keep their whole CPU (the stalled one is
// charged the stall). A whole-machine pause would delay both probes; a
// stall that charged nothing would take a fifth of a second from hog 0.
func TestVCPUStallStopsOneCPUOnly(t *testing.T) {
	in := Input{Node: Node{CPUs: 2},
		Groups: []Group{
			{Name: "hog0", Tasks: 1, CPUs: []int32{0}},
			{Name: "hog1", Tasks: 1, CPUs: []int32{1}},
			{Name: "probe0", Tasks: 1, CPUs: []int32{0}, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_000_000}},
			{Name: "probe1", Tasks: 1, CPUs: []int32{1}, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_000_000}},
		},
		DurationNs: 1e9, WarmupNs: 1e8, Seed: 9}
	base := mustRun(t, in)
	r := stallOneCPU(t, in, 500_000_000, 200_000_000)
	p0, p1 := group(t, r, "probe0").Metrics.WakeupLatencyUs, group(t, r, "probe1").Metrics.WakeupLatencyUs
	if p0.Max < 195_000 || p0.Max > 205_000 {
		t.Errorf("probe on the stalled CPU: longest wake-up %.0f µs, want about the stall (200 ms)", p0.Max)
	}
	if b := group(t, base, "probe0").Metrics.WakeupLatencyUs; b.Max > 20_000 {
		t.Errorf("probe 0 without the stall: longest wake-up %.0f µs; the test needs it short", b.Max)
	}
	if b := group(t, base, "probe1").Metrics.WakeupLatencyUs; p1.Max > 2*b.Max+1000 || p1.Over10ms != 0 {
		t.Errorf("probe on the other CPU: longest wake-up %.0f µs (%.0f without the stall), %.4f beyond 10 ms; want it untouched", p1.Max, b.Max, p1.Over10ms)
	}
	for _, g := range []string{"hog0", "hog1"} {
		want := group(t, base, g).Metrics.CPU
		near(t, g+" CPU with CPU 0 stalled 200 ms", group(t, r, g).Metrics.CPU, want, 0.01)
	}
}

// While a vCPU is stalled nothing runs on it, and the other CPU's balancer
// may take the tasks queued there (sched_balance_rq() and newidle balance
// detach queued tasks, never the current one). Stalls of 20 ms, 5 a second
// on each of 2 CPUs, under unpinned hogs and Periodic workers: no task is
// switched in on a CPU during its stall, and some queued task leaves a
// stalled CPU for the other. A model in which a stalled CPU's queue could
// not be balanced takes none; one that ran the stalled CPU's scheduler
// switches tasks in there.
func TestVCPUStallRunsNothingAndIsBalanced(t *testing.T) {
	k := stalls20ms(5)
	in := Input{Node: Node{CPUs: 2, Constants: k},
		Groups: []Group{{Name: "hog", Tasks: 3},
			{Name: "work", Tasks: 2, Pattern: Pattern{Type: Periodic, PeriodNs: 10_000_000, RunNs: 2_000_000}},
			{Name: "probe", Tasks: 1, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_000_000}}},
		DurationNs: 20e9, WarmupNs: 1e8, Seed: 3}
	if err := validate(&in); err != nil {
		t.Fatal(err)
	}
	s, err := newSim(&in)
	if err != nil {
		t.Fatal(err)
	}
	var until [2]int64 // each CPU's stall end
	stalls, ranStalled, pulled := 0, 0, 0
	s.trace = func(format string, a ...any) {
		switch format {
		case "cpu%d stalled for %d ns":
			until[a[0].(int32)] = s.now + a[1].(int64)
			stalls++
		case "cpu%d run task%d":
			if c := a[0].(int32); s.now < until[c] {
				ranStalled++
			}
		case "migrate task%d cpu%d->cpu%d":
			if src := a[1].(int32); s.now < until[src] && s.tasks[a[0].(int32)].state == tsQueued {
				pulled++
			}
		}
	}
	s.start()
	s.loop()
	t.Logf("%d stalls; %d queued tasks taken off a stalled CPU; %d switched in on one", stalls, pulled, ranStalled)
	if stalls < 100 {
		t.Fatalf("%d stalls in 20 s on 2 CPUs at 5 a second each; the test needs about 200", stalls)
	}
	if ranStalled > 0 {
		t.Errorf("%d tasks switched in on a CPU during its stall", ranStalled)
	}
	if pulled == 0 {
		t.Error("no queued task taken off a stalled CPU by the other")
	}
}

// The stalls are a Poisson process on each CPU at the rate given, with
// lengths at the quantiles: counted over 2 CPUs for 100 s, within 4
// standard deviations of the rate; the lengths' median is the quantiles'.
func TestVCPUStallsRate(t *testing.T) {
	const durS = 100
	in := Input{Node: Node{CPUs: 2, Constants: Constants{VCPUShortStallsPerHour: 1800 * 2, // 1 a second per CPU
		VCPUShortStallQuantilesNs: []int64{1.0e6, 1.1e6, 1.2e6, 1.3e6, 1.5e6, 2e6, 4e6}}},
		Groups:     []Group{{Name: "hog", Tasks: 2}},
		DurationNs: durS * 1e9, Seed: 11}
	if err := validate(&in); err != nil {
		t.Fatal(err)
	}
	s, err := newSim(&in)
	if err != nil {
		t.Fatal(err)
	}
	var n [2]int
	var lens []int64
	s.trace = func(format string, a ...any) {
		if format == "cpu%d stalled for %d ns" {
			n[a[0].(int32)]++
			lens = append(lens, a[1].(int64))
		}
	}
	s.start()
	s.loop()
	for c, got := range n {
		want := 1.0 * durS
		if math.Abs(float64(got)-want) > 4*math.Sqrt(want) {
			t.Errorf("CPU %d: %d stalls in %d s, want about %.0f", c, got, durS, want)
		}
	}
	below := 0
	for _, l := range lens {
		if l <= 1.2e6 {
			below++
		}
	}
	if f := float64(below) / float64(len(lens)); math.Abs(f-0.5) > 0.1 {
		t.Errorf("%.2f of the stalls at or below the median length 1.2 ms, want about 0.5", f)
	}
}

// A run with stalls is a function of its seed; a node with none runs as
// before (the goldens check that bit for bit).
func TestVCPUStallsRepeat(t *testing.T) {
	k := stalls20ms(3)
	k.VCPUShortStallsPerHour, k.VCPUShortStallQuantilesNs = 3600*20, []int64{1e6, 1e6, 1.2e6, 1.2e6, 1.5e6, 2e6, 3e6}
	in := Input{Node: Node{CPUs: 2, Constants: k},
		Groups: []Group{{Name: "hog", Tasks: 3}, {Name: "probe", Tasks: 1,
			Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_000_000}}},
		DurationNs: 5e9, WarmupNs: 1e8, Seed: 7}
	a, b := mustRun(t, in), mustRun(t, in)
	if a.Events != b.Events || group(t, a, "probe").Metrics.WakeupLatencyUs.P99 != group(t, b, "probe").Metrics.WakeupLatencyUs.P99 {
		t.Errorf("two runs of one seed differ: %d and %d events", a.Events, b.Events)
	}
}

func TestVCPUStallsValidated(t *testing.T) {
	q := []int64{1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6}
	for _, k := range []Constants{
		{VCPUStallsPerHour: -1},
		{VCPUStallsPerHour: 10},
		{VCPUStallQuantilesNs: q},
		{VCPUShortStallsPerHour: 10, VCPUShortStallQuantilesNs: []int64{2e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6}},
		{VCPUShortStallsPerHour: 10, VCPUShortStallQuantilesNs: []int64{0, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6}},
	} {
		in := Input{Node: Node{CPUs: 2, Constants: k}, Groups: []Group{{Name: "hog", Tasks: 1}}, DurationNs: 1e9}
		if err := validate(&in); err == nil {
			t.Errorf("constants %+v accepted", k)
		}
	}
	in := Input{Node: Node{CPUs: 2, Constants: Constants{VCPUShortStallsPerHour: 10, VCPUShortStallQuantilesNs: q}}, Groups: []Group{{Name: "hog", Tasks: 1}}, DurationNs: 1e9}
	if err := validate(&in); err != nil {
		t.Error(err)
	}
}
