package simengine

import (
	"math"
	"testing"
)

// pauses20ms are host pauses of 20 ms each (every level), at rate r a second.
func pauses20ms(perSec int64) Constants {
	return Constants{HostPausesPerHour: perSec * 3600,
		HostPauseQuantilesNs: []int64{20e6, 20e6, 20e6, 20e6, 20e6, 20e6, 20e6}}
}

// A LatencyProbe alone on a CPU: its sleeps end on time (a few µs late),
// except where a host pause holds its timer. With 20 ms pauses at rate r,
// about r wake-ups a second come beyond 10 ms (a 1 ms sleep whose deadline
// falls within the pause's first 10 ms waits past it); without pauses none.
func TestHostPausesDelayProbe(t *testing.T) {
	const durS = 60
	for _, tc := range []struct {
		name   string
		perSec int64
	}{{"none", 0}, {"2/s", 2}, {"5/s", 5}} {
		var k Constants
		if tc.perSec > 0 {
			k = pauses20ms(tc.perSec)
		}
		r := mustRun(t, Input{Node: Node{CPUs: 1, Constants: k},
			Groups: []Group{{Name: "probe", Tasks: 1,
				Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_000_000}}},
			DurationNs: durS * 1e9, WarmupNs: 1e8, Seed: 3})
		m := group(t, r, "probe").Metrics
		l := m.WakeupLatencyUs
		beyond := math.Round(l.Over10ms * float64(l.Count))
		if tc.perSec == 0 {
			if beyond != 0 || l.Max > 1000 {
				t.Errorf("%s: %v wake-ups beyond 10 ms, max %.0f µs; want none beyond 1 ms", tc.name, beyond, l.Max)
			}
			continue
		}
		// Poisson: the count of pauses in the window has sd sqrt(r*dur).
		want := float64(tc.perSec * durS)
		if math.Abs(beyond-want) > 4*math.Sqrt(want) {
			t.Errorf("%s: %.0f wake-ups beyond 10 ms in %d s, want about %.0f (one per pause)", tc.name, beyond, durS, want)
		}
		if l.Max < 19_000 || l.Max > 21_000 {
			t.Errorf("%s: longest wake-up %.0f µs, want about the pause (20 ms)", tc.name, l.Max)
		}
	}
}

// A Hog running through a pause is charged it (no steal accounting): its
// CPU stays the whole window. If the pause were not charged it would lose
// the pauses' share (10 % here).
func TestHostPausesChargeRunningTask(t *testing.T) {
	for _, perSec := range []int64{0, 5} {
		var k Constants
		if perSec > 0 {
			k = pauses20ms(perSec)
		}
		r := mustRun(t, Input{Node: Node{CPUs: 1, Constants: k},
			Groups:     []Group{{Name: "hog", Tasks: 1}},
			DurationNs: 20e9, WarmupNs: 1e8, Seed: 1})
		near(t, "hog CPU", group(t, r, "hog").Metrics.CPU, 1, 0.005)
	}
}

// A pause freezes the running task's work: one pause of 20 ms, 2 ms into a
// 5 ms burst of a Periodic worker (100 ms period), charges it the pause and
// ends the burst 3 ms after the pause, so the worker's CPU over 1 s is
// 10 bursts of 5 ms plus the 20 ms pause. Had the pause counted as work, the
// burst would end with the pause (2 ms of work plus the pause: 3 ms less).
func TestHostPausesFreezeWork(t *testing.T) {
	in := Input{Node: Node{CPUs: 1, Constants: freeWakeups},
		Groups: []Group{{Name: "p", Tasks: 1,
			Pattern: Pattern{Type: Periodic, PeriodNs: 100_000_000, RunNs: 5_000_000}}},
		DurationNs: 1e9, WarmupNs: 1e8, Seed: 2}
	if err := validate(&in); err != nil {
		t.Fatal(err)
	}
	// A run without pauses finds a burst's start after the warm-up; the
	// same seed runs the same up to the pause.
	var rel int64 = -1
	s, err := newSim(&in)
	if err != nil {
		t.Fatal(err)
	}
	s.trace = func(format string, a ...any) {
		if rel < 0 && s.now >= in.WarmupNs+200_000_000 && format == "cpu%d run task%d" {
			rel = s.now
		}
	}
	s.start()
	s.loop()
	if rel < 0 {
		t.Fatal("no burst after the warm-up")
	}
	if s, err = newSim(&in); err != nil {
		t.Fatal(err)
	}
	s.hp = hostPauses{on: true, perNs: 1e-18, start: rel + 2_000_000, end: rel + 22_000_000}
	s.start()
	s.loop()
	near(t, "worker CPU", group(t, s.result(), "p").Metrics.CPU, (10*5+20)/1000.0, 0.0005)
}

// The tick keeps its grid across a pause (hrtimer_forward()), and a run
// with pauses is a function of its seed.
func TestHostPausesRepeat(t *testing.T) {
	in := Input{Node: Node{CPUs: 2, Constants: pauses20ms(3)},
		Groups: []Group{{Name: "hog", Tasks: 3}, {Name: "probe", Tasks: 1,
			Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_000_000}}},
		DurationNs: 5e9, WarmupNs: 1e8, Seed: 7}
	a, b := mustRun(t, in), mustRun(t, in)
	if a.Events != b.Events || group(t, a, "probe").Metrics.WakeupLatencyUs.P99 != group(t, b, "probe").Metrics.WakeupLatencyUs.P99 {
		t.Errorf("two runs of one seed differ: %d and %d events", a.Events, b.Events)
	}
}

// The bandwidth period timer keeps its grid across pauses too
// (hrtimer_forward_now() in sched_cfs_period_timer()): a hog limited to 30 ms
// every 100 ms gets 0.3 of a CPU with pauses as without (a pause it runs
// through is charged to it, and the debt carries over). Were the next
// period counted from the pause's end, each period timer falling in a pause
// would lengthen that period and the hog would get less.
func TestHostPausesKeepPeriodGrid(t *testing.T) {
	for _, perSec := range []int64{0, 10} {
		var k Constants
		if perSec > 0 {
			k = pauses20ms(perSec)
		}
		r := mustRun(t, Input{Node: Node{CPUs: 1, Constants: k},
			Groups:     []Group{{Name: "hog", Tasks: 1, CPUMaxQuotaNs: 30_000_000}},
			DurationNs: 60e9, WarmupNs: 1e8, Seed: 4})
		near(t, "limited hog CPU", group(t, r, "hog").Metrics.CPU, 0.3, 0.002)
	}
}
