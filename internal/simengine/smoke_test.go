package simengine

import (
	"testing"
)

func logRun(t *testing.T, name string, in Input) *Result {
	r, err := Run(in)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("== %s events=%d util=%.3v", name, r.Events, r.CPUUtilization)
	for _, g := range r.Groups {
		s := ""
		if g.Metrics.WakeupLatencyUs != nil {
			l := g.Metrics.WakeupLatencyUs
			s = " lat p50=" + ff(l.P50) + " p99=" + ff(l.P99) + " max=" + ff(l.Max) + " n=" + ff(float64(l.Count))
		}
		if g.Metrics.OpsPerSec != nil {
			s += " ops=" + ff(*g.Metrics.OpsPerSec)
		}
		pt := ""
		for i, m := range g.PerTask {
			if i < 10 {
				pt += " " + ff(m.CPU)
			}
		}
		t.Logf("  %-8s cpu=%.4f share=%.4f vol=%.0f inv=%.0f%s  per:%s", g.Name, g.Metrics.CPU, g.Metrics.Share, g.Metrics.CtxSwitchesPerSec.Voluntary, g.Metrics.CtxSwitchesPerSec.Involuntary, s, pt)
	}
	return r
}

func ff(f float64) string { return fmtF(f) }

func TestSmoke(t *testing.T) {
	logRun(t, "weights", Input{Node: Node{CPUs: 1}, Groups: []Group{
		{Name: "a", Tasks: 1, CPUWeight: 100}, {Name: "b", Tasks: 1, CPUWeight: 200}, {Name: "c", Tasks: 1, CPUWeight: 400},
	}, DurationNs: 2e9, WarmupNs: 1e8})
	logRun(t, "9groups-1cpu", Input{Node: Node{CPUs: 1}, Groups: []Group{
		{Name: "big", Tasks: 8}, {Name: "s", Replicas: 8, Tasks: 1},
	}, DurationNs: 2e9, WarmupNs: 1e8})
	for _, on := range []bool{true, false} {
		logRun(t, "9groups-8cpu", Input{Node: Node{CPUs: 8, HZ: 1000}, Knobs: Knobs{Features: map[string]bool{"SMP_FAIR_GROUPS": on}}, Groups: []Group{
			{Name: "big", Tasks: 8}, {Name: "s", Replicas: 8, Tasks: 1},
		}, DurationNs: 5e9, WarmupNs: 1e9})
	}
	logRun(t, "2cpu", Input{Node: Node{CPUs: 2}, Groups: []Group{
		{Name: "a", Tasks: 2, CPUWeight: 100}, {Name: "b", Tasks: 1, CPUWeight: 400}, {Name: "c", Tasks: 1, CPUWeight: 100},
	}, DurationNs: 5e9, WarmupNs: 1e9})
	for _, sch := range []Scheduler{EEVDF, CFS} {
		logRun(t, "sleeper "+string(sch), Input{Node: Node{CPUs: 1, HZ: 1000, Scheduler: sch}, Groups: []Group{
			{Name: "hog", Tasks: 1, Session: "s"}, {Name: "half", Tasks: 1, Session: "s", Pattern: Pattern{Type: Burst, MeanRunNs: 1e6, MeanSleepNs: 1e6}},
		}, DurationNs: 10e9, WarmupNs: 1e9})
	}
	logRun(t, "autogroup", Input{Node: Node{CPUs: 1}, Groups: []Group{
		{Name: "sess", Tasks: 2, Session: "x"}, {Name: "pod", Tasks: 0}, {Name: "kids", Replicas: 9, Tasks: 1, Parent: "pod"}, {Name: "vip", Tasks: 1, Nice: -19, Parent: "pod"},
	}, DurationNs: 5e9, WarmupNs: 1e9})
	for _, bs := range []int64{700_000, 3_000_000, 30_000_000} {
		logRun(t, "probe slice "+ff(float64(bs)), Input{Node: Node{CPUs: 1, HZ: 1000}, Knobs: Knobs{BaseSliceNs: bs}, Groups: []Group{
			{Name: "hogs", Tasks: 4, Session: "s"}, {Name: "probe", Tasks: 1, Session: "s", Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1e6}},
		}, DurationNs: 5e9, WarmupNs: 1e9})
	}
	for _, sess := range []string{"s", "other"} {
		logRun(t, "cfs probe sess "+sess, Input{Node: Node{CPUs: 1, HZ: 250, Scheduler: CFS}, Groups: []Group{
			{Name: "hogs", Tasks: 8, Session: "s"}, {Name: "probe", Tasks: 1, Session: sess, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1e6}},
		}, DurationNs: 5e9, WarmupNs: 1e9})
	}
	logRun(t, "pingpong", Input{Node: Node{CPUs: 2}, Groups: []Group{
		{Name: "pp", Tasks: 8, Pattern: Pattern{Type: PingPong}},
	}, DurationNs: 1e9, WarmupNs: 1e8})
	logRun(t, "quota", Input{Node: Node{CPUs: 2}, Groups: []Group{
		{Name: "q", Tasks: 2, CPUMaxQuotaNs: 50e6}, {Name: "free", Tasks: 1},
	}, DurationNs: 5e9, WarmupNs: 1e9})
	logRun(t, "periodic", Input{Node: Node{CPUs: 1}, Groups: []Group{
		{Name: "video", Tasks: 1, Pattern: Pattern{Type: Periodic, RunNs: 5e6, PeriodNs: 16e6}}, {Name: "hog", Tasks: 2},
	}, DurationNs: 5e9, WarmupNs: 1e9})
}
