package simengine

import (
	"math"
	"testing"
)

// erlangC is the probability that an arrival waits in an M/M/c queue with
// offered load a = λ/μ.
func erlangC(c int, a float64) float64 {
	sum, term := 0.0, 1.0
	for k := 0; k < c; k++ {
		if k > 0 {
			term *= a / float64(k)
		}
		sum += term
	}
	top := term * a / float64(c) * float64(c) / (float64(c) - a)
	return top / (sum + top)
}

func serverInput(cpus, workers int, rate float64, svc string, meanNs int64) Input {
	nc := Constants{TimerExpiryNs: NoCost, WakeupNs: NoCost, IdleExitNs: NoCost, CtxSwitchNs: NoCost, WakeupCPUNs: NoCost, TimerArmCPUNs: NoCost,
		ColdWakeNs: NoCost}
	return Input{
		Node: Node{CPUs: cpus, Constants: nc},
		Groups: []Group{{Name: "web", Tasks: workers, Pattern: Pattern{Type: Server,
			Server: &ServerPattern{RatePerSec: rate, Service: svc, ServiceMeanNs: meanNs}}}},
		WarmupNs: 1e9, DurationNs: 20e9, Seed: 7,
	}
}

// On an uncontended node (a CPU per worker, no wake-up costs) the pool is an
// M/M/c queue: throughput is the offered rate and the mean latency is
// 1/μ + C(c, a)/(cμ − λ).
//
// One 20 s window's mean is a single draw with a wide spread: per seed it
// was 3.7 % (σ) at M/M/1 ρ=0.5, 6.2 % at ρ=0.8, 1.4 % at M/M/2 ρ=0.5 and
// 5.0 % at ρ=0.8 over 24 seeds, and seed 7 alone was 5.1 % and 7.9 % above
// Erlang C at M/M/1 ρ=0.5 and M/M/2 ρ=0.8, the gaps once noted as
// unexplained. So the check pools 12 seeds (σ of the pooled mean ≤ 1.8 %)
// and holds every case to 5 %; pooled over 24 seeds the simulator was
// within 1.7 % of Erlang C in every case.
func TestServerMMcMatchesErlangC(t *testing.T) {
	const seeds = 12
	for _, tc := range []struct {
		c    int
		rate float64
	}{{1, 500}, {1, 800}, {2, 1000}, {2, 1600}} {
		var sum, n, offered, done float64
		for seed := uint64(1); seed <= seeds; seed++ {
			in := serverInput(4, tc.c, tc.rate, ServiceExponential, 1_000_000)
			in.Seed = seed
			res, err := Run(in)
			if err != nil {
				t.Fatal(err)
			}
			m := res.Groups[0].Metrics
			sum += m.RequestLatencyUs.Mean * float64(m.RequestLatencyUs.Count)
			n += float64(m.RequestLatencyUs.Count)
			offered += *m.Offered
			done += *m.Throughput
			if *m.Dropped != 0 {
				t.Errorf("M/M/%d λ=%.0f seed %d: dropped %.1f/s below saturation", tc.c, tc.rate, seed, *m.Dropped)
			}
			// Requests in flight at the window's edges: a few.
			if d := math.Abs(*m.Throughput-*m.Offered) * 20; d > 20 {
				t.Errorf("M/M/%d λ=%.0f seed %d: %.0f completed against %.0f arrivals in the window", tc.c, tc.rate, seed, *m.Throughput*20, *m.Offered*20)
			}
		}
		mu := 1000.0
		a := tc.rate / mu
		want := 1/mu + erlangC(tc.c, a)/(float64(tc.c)*mu-tc.rate)
		got := sum / n / 1e6
		t.Logf("M/M/%d λ=%.0f over %d seeds: offered %.1f/s, throughput %.1f/s, mean latency %.4f ms (Erlang C %.4f ms, %+.1f%%)",
			tc.c, tc.rate, seeds, offered/seeds, done/seeds, got*1e3, want*1e3, (got/want-1)*100)
		// 12 × 20 s × λ arrivals: the offered count spreads by ≤ 0.3 %.
		if math.Abs(offered/seeds-tc.rate)/tc.rate > 0.01 {
			t.Errorf("M/M/%d λ=%.0f: %.1f arrivals/s drawn, want within 1%% of the rate", tc.c, tc.rate, offered/seeds)
		}
		if math.Abs(got-want)/want > 0.05 {
			t.Errorf("M/M/%d λ=%.0f: mean latency %.4f ms over %d seeds, Erlang C gives %.4f ms", tc.c, tc.rate, got*1e3, seeds, want*1e3)
		}
	}
}

// Above capacity the throughput plateaus at c/service and the excess is
// dropped once the queue is full.
func TestServerSaturationPlateau(t *testing.T) {
	in := serverInput(4, 2, 2400, ServiceFixed, 1_000_000)
	in.Groups[0].Pattern.Server.Queue = 50
	res, err := Run(in)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Groups[0].Metrics
	t.Logf("rate 2400, capacity 2000: throughput %.1f, dropped %.1f, p99 %.1f ms", *m.Throughput, *m.Dropped, m.RequestLatencyUs.P99/1e3)
	if math.Abs(*m.Throughput-2000)/2000 > 0.02 {
		t.Errorf("throughput %.1f, want the capacity 2000 ±2%%", *m.Throughput)
	}
	if math.Abs(*m.Dropped-400)/400 > 0.05 {
		t.Errorf("dropped %.1f/s, want the excess 400/s ±5%%", *m.Dropped)
	}
	// A full queue of 50 ahead of 2 workers at 1 ms: about 25 ms of wait.
	if p50 := m.RequestLatencyUs.P50; p50 < 20_000 || p50 > 27_000 {
		t.Errorf("p50 %.0f us, want about 26 ms (a full queue)", p50)
	}
}

// Periodic arrivals with a fixed service time and no contention: every
// request takes exactly its service time; fanout 2 needs both workers.
func TestServerPeriodicFixedAndFanout(t *testing.T) {
	in := serverInput(4, 2, 100, ServiceFixed, 2_000_000)
	in.Groups[0].Pattern.Server.Arrivals = ArrivalsPeriodic
	in.Groups[0].Pattern.Server.Fanout = 2
	res, err := Run(in)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Groups[0].Metrics
	if l := m.RequestLatencyUs; math.Abs(l.P50-2000) > 2 || math.Abs(l.Max-2000) > 2 || l.Count != 2000 {
		t.Errorf("latency p50 %.1f max %.1f count %d, want 2000 us each and 2000 requests", l.P50, l.Max, l.Count)
	}
	if math.Abs(*m.Throughput-100) > 0.01 {
		t.Errorf("throughput %.2f, want 100", *m.Throughput)
	}
	if v := m.CtxSwitchesPerSec.Voluntary; math.Abs(v-200) > 1 {
		t.Errorf("voluntary switches %.1f/s, want 200 (each worker blocks once per request)", v)
	}
}

func TestLognormalParams(t *testing.T) {
	mu, sig, ok := LognormalParams(1e6, 5e6)
	if !ok {
		t.Fatal("no lognormal for mean 1ms p99 5ms")
	}
	if m := math.Exp(mu + sig*sig/2); math.Abs(m-1e6) > 1 {
		t.Errorf("mean %.1f", m)
	}
	if q := math.Exp(mu + z99*sig); math.Abs(q-5e6) > 1 {
		t.Errorf("p99 %.1f", q)
	}
	if _, _, ok := LognormalParams(1e6, 20e6); ok {
		t.Error("p99/mean 20 accepted")
	}
}

// BenchmarkServer reports the simulator's cost per simulated request: two
// Server replicas of 4 workers at 70% load beside 2 hogs on 4 CPUs.
func BenchmarkServer(b *testing.B) {
	in := serverInput(4, 4, 2000, ServiceExponential, 1_000_000)
	in.Groups[0].Replicas = 2
	in.Groups = append(in.Groups, Group{Name: "batch", Tasks: 2, Pattern: Pattern{Type: Hog}})
	in.WarmupNs, in.DurationNs = 0, 5e9
	var reqs float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := Run(in)
		if err != nil {
			b.Fatal(err)
		}
		reqs += *res.Groups[0].Metrics.Throughput * 5
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/reqs, "ns/request")
}

// A Server worker runs its service reading its CPU clock in a loop, and
// each read runs update_curr() on its cfs_rq, so two workers of a replica
// sharing a CPU take turns at every end of an EEVDF request (base slice
// 0.75 ms on one CPU), not at the tick: with fanout 2 and 4 ms of service
// each, both are runnable for 8 ms per request and switch about every
// 0.75 ms — about 10 involuntary switches per request, 500/s at 50
// requests/s. Seen only at the tick (HZ 100), they would be at most one per
// 10 ms of contention: under 50/s.
func TestServerWorkersSeeTheirSliceEnd(t *testing.T) {
	in := serverInput(1, 2, 50, ServiceFixed, 4_000_000)
	in.Node.HZ = 100
	in.Groups[0].Pattern.Server.Arrivals = ArrivalsPeriodic
	in.Groups[0].Pattern.Server.Fanout = 2
	res, err := Run(in)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Groups[0].Metrics
	inv := m.CtxSwitchesPerSec.Involuntary
	t.Logf("2 workers, fanout 2, 4 ms each, 50/s on 1 CPU at HZ 100: %.1f involuntary switches/s, p50 %.0f µs", inv, m.RequestLatencyUs.P50)
	if inv < 350 || inv > 600 {
		t.Errorf("%.1f involuntary switches/s, want about 500 (a switch at every 0.75 ms request's end)", inv)
	}
	if *m.Throughput != 50 {
		t.Errorf("throughput %.2f, want 50", *m.Throughput)
	}
}
