package simengine

import (
	"math"
	"testing"
)

// byteSource turns fuzz bytes into small choices; it yields zeros when the
// bytes run out.
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) next() int {
	if s.i >= len(s.b) {
		return 0
	}
	v := int(s.b[s.i])
	s.i++
	return v
}

func (s *byteSource) pick(n int) int { return s.next() % n }

// fuzzInput builds a small, usually valid Input from fuzz bytes.
func fuzzInput(data []byte) Input {
	s := &byteSource{b: data}
	sch := []Scheduler{EEVDF, CFS}[s.pick(2)]
	in := Input{
		Node: Node{
			CPUs:           1 + s.pick(8),
			Scheduler:      sch,
			HZ:             []int{0, 100, 250, 300, 1000}[s.pick(5)],
			Preempt:        []string{"", "None", "Voluntary", "Full", "Lazy"}[s.pick(5)],
			TunableScaling: []string{"", "None", "Log", "Linear"}[s.pick(4)],
			LegacySlice:    s.pick(2) == 1,
			Calibration: Calibration{
				TimerOverheadNs:  int64(s.pick(4)) * 1000,
				WakeupOverheadNs: int64(s.pick(4)) * 1000,
				CtxSwitchNs:      int64(s.pick(4)) * 1000,
				BackgroundLoad:   float64(s.pick(4)) * 0.05,
			},
		},
		DurationNs: int64(20+s.pick(100)) * 1e6,
		WarmupNs:   int64(s.pick(50)) * 1e6,
		Seed:       uint64(s.next()),
	}
	if s.pick(3) == 0 {
		in.Knobs.Autogroup = boolp(s.pick(2) == 1)
	}
	if s.pick(2) == 1 {
		names := FeatureNames(sch)
		in.Knobs.Features = map[string]bool{}
		for k := 0; k < 3; k++ {
			in.Knobs.Features[names[s.pick(len(names))]] = s.pick(2) == 1
		}
	}
	if sch == EEVDF && s.pick(2) == 1 {
		in.Knobs.BaseSliceNs = int64(1+s.pick(30)) * 100_000
	}
	if sch == CFS && s.pick(2) == 1 {
		in.Knobs.LatencyNs = int64(1+s.pick(30)) * 1e6
		in.Knobs.MinGranularityNs = int64(1+s.pick(10)) * 100_000
		in.Knobs.WakeupGranularityNs = int64(1+s.pick(10)) * 200_000
	}
	in.Knobs.MigrationCostNs = []int64{0, -1, MigrationCostZero, 100_000, 5e6}[s.pick(5)]
	in.Knobs.NrMigrate = s.pick(4)
	ng := 1 + s.pick(5)
	for g := 0; g < ng; g++ {
		grp := Group{
			Name:     string(rune('a' + g)),
			Replicas: s.pick(3),
			Tasks:    s.pick(5),
			Nice:     s.pick(40) - 20,
			Policy:   []string{"", "Other", "Batch", "Idle"}[s.pick(4)],
		}
		switch s.pick(4) {
		case 0:
			grp.Session = []string{"x", "y"}[s.pick(2)]
			grp.Replicas = 0
		case 1:
			grp.CPUWeight = 1 + s.pick(10000)
			if s.pick(2) == 1 {
				grp.CPUMaxQuotaNs = int64(1+s.pick(100)) * 1e6
				grp.CPUMaxPeriodNs = int64(s.pick(3)) * 50e6
			}
			grp.CPUIdle = s.pick(4) == 0
		case 2:
			if g > 0 && in.Groups[0].Session == "" && in.Groups[0].Replicas <= 1 {
				grp.Parent = in.Groups[0].Name
			}
		}
		if sch == EEVDF && s.pick(3) == 0 {
			grp.SliceNs = int64(1+s.pick(50)) * 100_000
		}
		switch s.pick(5) {
		case 0:
			grp.Pattern = Pattern{Type: Hog}
		case 1:
			grp.Pattern = Pattern{Type: Periodic, RunNs: int64(1+s.pick(20)) * 500_000, PeriodNs: int64(1+s.pick(20)) * 1e6}
		case 2:
			grp.Pattern = Pattern{Type: LatencyProbe, IntervalNs: int64(1+s.pick(20)) * 100_000}
		case 3:
			grp.Pattern = Pattern{Type: PingPong, RunNs: int64(s.pick(50)) * 1000}
			grp.Tasks &^= 1
		case 4:
			grp.Pattern = Pattern{Type: Burst, MeanRunNs: int64(1+s.pick(50)) * 100_000, MeanSleepNs: int64(1+s.pick(50)) * 100_000}
		}
		in.Groups = append(in.Groups, grp)
	}
	return in
}

func finite(t *testing.T, what string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		t.Fatalf("%s = %v, want a finite non-negative number", what, v)
	}
}

func checkMetrics(t *testing.T, what string, m Metrics) {
	finite(t, what+".cpu", m.CPU)
	finite(t, what+".cpuPerTask", m.CPUPerTask)
	finite(t, what+".share", m.Share)
	finite(t, what+".ctx.voluntary", m.CtxSwitchesPerSec.Voluntary)
	finite(t, what+".ctx.involuntary", m.CtxSwitchesPerSec.Involuntary)
	if l := m.WakeupLatencyUs; l != nil {
		for _, v := range []float64{l.P50, l.P90, l.P99, l.P999, l.Max, l.Mean} {
			finite(t, what+".latency", v)
		}
		if l.P50 > l.P99+1e-9 || l.P99 > l.Max*1.0001+1e-9 {
			t.Fatalf("%s latency not ordered: %+v", what, *l)
		}
	}
	if m.DeadlineMissRatio != nil && (*m.DeadlineMissRatio < 0 || *m.DeadlineMissRatio > 1) {
		t.Fatalf("%s deadlineMissRatio = %v", what, *m.DeadlineMissRatio)
	}
	if m.OpsPerSec != nil {
		finite(t, what+".opsPerSec", *m.OpsPerSec)
	}
}

// FuzzRun: no panic, no NaN, CPU time within the machine, shares summing to 1.
func FuzzRun(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add([]byte{1, 7, 4, 4, 3, 1, 2, 3, 3, 3, 1, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6})
	f.Add([]byte("schedlab fuzz seed with some more bytes to drive groups and patterns"))
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(data)
		r, err := Run(in)
		if err != nil {
			return // an input the validator rejects is fine; Run must not panic
		}
		const eps = 1e-6
		total, shares := 0.0, 0.0
		for _, g := range r.Groups {
			checkMetrics(t, g.Name, g.Metrics)
			total += g.Metrics.CPU
			shares += g.Metrics.Share
			for i, m := range g.PerTask {
				checkMetrics(t, g.Name+"[task]", m)
				if m.CPU > 1+eps {
					t.Fatalf("%s task %d cpu = %v > 1", g.Name, i, m.CPU)
				}
			}
		}
		if total > float64(in.Node.CPUs)+eps {
			t.Fatalf("total cpu %v > %d CPUs", total, in.Node.CPUs)
		}
		if total > 0 && math.Abs(shares-1) > 1e-6 {
			t.Fatalf("shares sum to %v, want 1", shares)
		}
		for c, u := range r.CPUUtilization {
			if math.IsNaN(u) || u < 0 || u > 1+eps {
				t.Fatalf("cpu %d utilization %v", c, u)
			}
		}
	})
}
