package simengine

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time of the whole process so far (every thread:
// the simulation's, the garbage collector's, the runtime's), as
// getrusage(RUSAGE_SELF) reports it.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// wakeups is the number of simulated wake-ups in the measured window: one
// per voluntary context switch (every sleep ends in a wake-up).
func wakeups(in *Input, r *Result) float64 {
	var n float64
	for _, g := range r.Groups {
		n += g.Metrics.CtxSwitchesPerSec.Voluntary
	}
	return n * float64(in.DurationNs) / 1e9
}

// benchRun runs in b.N times. Besides the wall clock (ns/op) it reports the
// CPU time of the whole process per run (cpu-ns/op, which counts the
// garbage collector's threads too), simulated seconds per second of that
// CPU time (simsec/cpu-s: the "× real time" of the speed goals), events per
// CPU second, and, for inputs without a warmup, process CPU per simulated wake-up
// (cpu-ns/wakeup).
func benchRun(b *testing.B, in Input) {
	b.ReportAllocs()
	var events uint64
	var simNs int64
	var wakes float64
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		r, err := Run(in)
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
		simNs += r.SimulatedNs
		wakes += wakeups(&in, r)
	}
	cpu := (processCPU() - cpu0).Seconds()
	b.ReportMetric(cpu*1e9/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(simNs)/1e9/cpu, "simsec/cpu-s")
	b.ReportMetric(float64(events)/cpu, "events/cpu-s")
	if wakes > 0 && in.WarmupNs == 0 {
		// Without a warmup every simulated wake-up is counted.
		b.ReportMetric(cpu*1e9/wakes, "cpu-ns/wakeup")
	}
}

// benchHogs8 is benchmark (a): 8 CPUs, 16 hogs in 9 groups (one group of 8
// and 8 groups of 1), HZ 1000, 60 s simulated. Goal: ≥1000× real time.
func benchHogs8() Input {
	return Input{
		Node:       Node{CPUs: 8, HZ: 1000},
		Groups:     []Group{{Name: "eight", Tasks: 8}, {Name: "single", Replicas: 8, Tasks: 1}},
		DurationNs: 60e9,
		Seed:       1,
	}
}

// benchMixed64 is benchmark (b): 64 CPUs, 512 tasks of mixed patterns in
// pods (batch hogs, bursty web workers, video frames, request/response pairs,
// latency probes, and a login session running cron-like bursts), 2 s measured
// after 0.5 s of warmup. Goal: ≥10× real time.
func benchMixed64() Input {
	return Input{
		Node: Node{CPUs: 64, HZ: 250},
		Groups: []Group{
			{Name: "batch", Replicas: 22, Tasks: 8, CPUWeight: 50, Pattern: Pattern{Type: Hog}},
			{Name: "web", Replicas: 32, Tasks: 4, Pattern: Pattern{Type: Burst, MeanRunNs: 2e6, MeanSleepNs: 6e6}},
			{Name: "video", Replicas: 16, Tasks: 4, Pattern: Pattern{Type: Periodic, RunNs: 4e6, PeriodNs: 16e6}},
			{Name: "rpc", Replicas: 4, Tasks: 4, Pattern: Pattern{Type: PingPong, RunNs: 50e3}},
			{Name: "probe", Replicas: 32, Tasks: 2, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1e6}},
			{Name: "cron", Session: "ssh", Tasks: 64, Pattern: Pattern{Type: Burst, MeanRunNs: 5e6, MeanSleepNs: 50e6}},
		},
		DurationNs: 2e9,
		WarmupNs:   5e8,
		Seed:       1,
	}
}

// benchMixed64Issue is benchmark (f), the mix: (b) at HZ 1000 with
// the request/response pairs exchanging 20 µs messages. Goal: ≥10× real
// time for the whole process.
func benchMixed64Issue() Input {
	in := benchMixed64()
	in.Node.HZ = 1000
	in.Groups = append([]Group(nil), in.Groups...)
	for i := range in.Groups {
		if in.Groups[i].Pattern.Type == PingPong {
			in.Groups[i].Pattern.RunNs = 20e3
		}
	}
	return in
}

// benchPingPong2 is benchmark (c): 2 CPUs, 4 PingPong pairs.
func benchPingPong2() Input {
	return Input{
		Node:       Node{CPUs: 2, HZ: 1000},
		Groups:     []Group{{Name: "pp", Tasks: 8, Pattern: Pattern{Type: PingPong, RunNs: 5e3}}},
		DurationNs: 1e9,
		Seed:       1,
	}
}

func BenchmarkHogs8CPU60s(b *testing.B)        { benchRun(b, benchHogs8()) }
func BenchmarkMixed64CPU512(b *testing.B)      { benchRun(b, benchMixed64()) }
func BenchmarkPingPong2CPU4Pairs(b *testing.B) { benchRun(b, benchPingPong2()) }

// benchHogs8Topo is (a) on a topology: 2 sockets × 2 cores × SMT2, so
// every tick balances per level (SMT, MC, NUMA).
func benchHogs8Topo() Input {
	in := benchHogs8()
	in.Node.Topology = Topology{Sockets: 2, ThreadsPerCore: 2}
	return in
}

// benchMixed64Topo is (b) on 2 sockets × 4 LLCs × 4 cores × SMT2: every
// wake-up goes through wake_wide, wake_affine and select_idle_sibling's
// scans, and balancing runs at SMT, MC, PKG and NUMA.
func benchMixed64Topo() Input {
	in := benchMixed64()
	in.Node.Topology = Topology{Sockets: 2, LLCsPerSocket: 4, ThreadsPerCore: 2}
	return in
}

func BenchmarkHogs8CPU60sTopology(b *testing.B)   { benchRun(b, benchHogs8Topo()) }
func BenchmarkMixed64CPU512Topology(b *testing.B) { benchRun(b, benchMixed64Topo()) }
func BenchmarkMixed64CPU512HZ1000PingPong20us(b *testing.B) {
	benchRun(b, benchMixed64Issue())
}
