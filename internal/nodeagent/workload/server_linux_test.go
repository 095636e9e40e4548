package workload

import (
	"fmt"
	"math"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func i32(v int32) *int32 { return &v }

// serverTasks is one replica of n workers.
func serverTasks(group string, n int, p v1alpha1.Pattern, seed uint64) []Task {
	var out []Task
	for i := 0; i < n; i++ {
		out = append(out, Task{Group: group, Index: i, Pattern: p, Peer: -1, Seed: seed + uint64(i)})
	}
	return out
}

func TestServerDrawsNosplit(t *testing.T) {
	for _, x := range []float64{-20, -3.3, -0.2, 0, 0.1, 1, 2.5, 13.8, 40} {
		if got, want := expNosplit(x), math.Exp(x); math.Abs(got-want) > 1e-13*want {
			t.Errorf("expNosplit(%g) = %g, want %g", x, got, want)
		}
	}
	// Lognormal service times with mean 1 ms and p99 5 ms, as the worker
	// draws them.
	mu, sigma, ok := lognormalParams(1e6, 5e6)
	if !ok {
		t.Fatal("no lognormal for mean 1ms, p99 5ms")
	}
	w := srvWorker{kind: svcLognormal, mu: mu, sigma: sigma, rng: 7}
	const n = 200000
	d := make([]float64, n)
	var sum float64
	for i := range d {
		d[i] = float64(w.draw())
		sum += d[i]
	}
	sort.Float64s(d)
	if mean := sum / n; math.Abs(mean-1e6) > 0.02e6 {
		t.Errorf("lognormal mean %.0f ns, want 1ms ± 2%%", mean)
	}
	if p99 := d[n*99/100]; math.Abs(p99-5e6) > 0.15e6 {
		t.Errorf("lognormal p99 %.0f ns, want 5ms ± 3%%", p99)
	}
	e := srvWorker{kind: svcExponential, meanNs: 1e6, rng: 9}
	sum = 0
	for i := 0; i < n; i++ {
		sum += float64(e.draw())
	}
	if mean := sum / n; math.Abs(mean-1e6) > 0.01e6 {
		t.Errorf("exponential mean %.0f ns, want 1ms ± 1%%", mean)
	}
}

// TestServerPoissonArrivals checks the replica's arrival schedule: 200,000
// Poisson gaps at 500/s have mean 2 ms and a coefficient of variation of 1,
// and Periodic arrivals are exactly 1/rate apart.
func TestServerPoissonArrivals(t *testing.T) {
	for _, periodic := range []bool{false, true} {
		fd, size, err := newSrvState(srvParams{rate: 500, periodic: periodic, fanout: 1, queue: 10, tasks: 1, seed: 42})
		if err != nil {
			t.Fatal(err)
		}
		h, err := mapSrv(fd, size)
		syscall.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		h.origin, h.lastT = 1e9, 1e9
		const n = 200000
		var s, s2 float64
		prev := int64(1e9)
		for i := 0; i < n; i++ {
			h.gen()
			h.procSeq++ // consumed: look holds a few
			at := *h.i64(h.offLook, (h.genSeq-1)%h.lookLen)
			g := float64(at - prev)
			if periodic && i > 0 && g != 2e6 {
				t.Fatalf("Periodic gap %v, want exactly 2 ms", g)
			}
			prev = at
			s += g
			s2 += g * g
		}
		if periodic {
			continue
		}
		mean := s / n
		cv := math.Sqrt(s2/n-mean*mean) / mean
		if math.Abs(mean-2e6) > 0.01*2e6 || math.Abs(cv-1) > 0.02 {
			t.Errorf("Poisson gaps: mean %.0f ns (want 2 ms ± 1%%), CV %.3f (want 1 ± 0.02)", mean, cv)
		}
	}
}

// TestServerQueueBookkeeping drives one replica's shared state by hand:
// admission in order, the queue bound, fanout, and arming.
func TestServerQueueBookkeeping(t *testing.T) {
	fd, size, err := newSrvState(srvParams{rate: 1000, periodic: true, fanout: 2, queue: 2, tasks: 3, seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	h, err := mapSrv(fd, size)
	if err != nil {
		t.Fatal(err)
	}
	var s slot
	h.origin = 1e9 // arrival k at 1 s + k ms
	h.lastT = h.origin
	a0 := h.origin
	// Idle: the first sleeper waits for sub-request 0 (arrival 0), the next
	// for sub-request 1 (the same arrival: fanout 2), the third for arrival 1.
	for i, want := range []int64{a0, a0, a0 + 1e6} {
		if got := h.arm(); got != want {
			t.Fatalf("sleeper %d armed for %d, want %d", i, got, want)
		}
	}
	// At arrival 4's time, nobody having taken anything: arrivals 0 and 1
	// are admitted, 2..4 dropped (queue 2).
	h.advance(&s, a0+4e6)
	if s[slotArrivals] != 5 || s[slotDropped] != 3 || h.qLen != 2 {
		t.Fatalf("arrivals %d dropped %d queued %d, want 5 3 2", s[slotArrivals], s[slotDropped], h.qLen)
	}
	r1, r2, r3 := h.claim(), h.claim(), h.claim()
	if r1 != r2 || r1 == r3 || h.qLen != 1 {
		t.Fatalf("claims %d %d %d (queue %d): the head's two sub-requests first", r1, r2, r3, h.qLen)
	}
	h.complete(&s, r1, a0+5e6)
	if s[slotOps] != 0 {
		t.Fatal("a request with a sub-request in service counted as completed")
	}
	h.complete(&s, r2, a0+5e6)
	if s[slotOps] != 1 || readSlot(&s).hist[shmIndex(5e6)] != 1 {
		t.Fatal("the request's last sub-request did not record a 5 ms latency")
	}
	// Arming resumes after the arrivals already due.
	if got := h.arm(); got != a0+5e6 {
		t.Fatalf("armed for %d after the backlog, want arrival 5 at %d", got, a0+5e6)
	}
}

// TestServerOpenLoop runs 4 workers at 500 Poisson requests/s of 1 ms: every
// arrival is served, each takes at least its service time, and the workers
// sleep only on their pattern's timers and lock.
func TestServerOpenLoop(t *testing.T) {
	p := v1alpha1.Pattern{Type: v1alpha1.PatternServer, Rate: i32(500), Service: &v1alpha1.ServiceTime{Mean: *dur(time.Millisecond)}}
	s := startSet(t, Spec{Tasks: serverTasks("web", 4, p, 11)})
	w, noise := window(t, s, 300*time.Millisecond, 3*time.Second, 2)
	m := GroupMetrics(w, "web")
	var arr, drop, vol, blocks int64
	for _, ts := range w.Tasks {
		arr += ts.Arrivals
		drop += ts.Dropped
		vol += ts.Voluntary
		blocks += ts.Blocks
	}
	l := m.RequestLatencyUs
	t.Logf("500/s × 1ms on 4 workers: arrivals %d, throughput %.1f/s, dropped %d, latency p50 %.0f p99 %.0f max %.0f µs, cpu %.3f, vol %d (blocks %d) invol %.1f/s, noise %.2f",
		arr, *m.Throughput, drop, l.P50, l.P99, l.Max, m.CPU, vol, blocks, m.CtxSwitchesPerSec.Involuntary, noise)
	secs := w.Duration.Seconds()
	if n := 500 * secs; math.Abs(float64(arr)-n) > 5*math.Sqrt(n) {
		t.Errorf("%d arrivals in %.2f s, want 500/s (Poisson: ±5σ = %.0f)", arr, secs, 5*math.Sqrt(n))
	}
	// Completions trail arrivals by the requests in flight at the edges.
	if done := int64(math.Round(*m.Throughput * secs)); math.Abs(float64(done-arr)) > 8 {
		t.Errorf("%d requests completed for %d arrivals", done, arr)
	}
	if drop != 0 || *m.Dropped != 0 {
		t.Errorf("%d dropped below saturation", drop)
	}
	if l.P50 < 1000 || (noise < quietNoise && l.P50 > 1500) {
		t.Errorf("p50 request latency %.0f µs for a 1 ms service time at 12%% load per worker", l.P50)
	}
	// A window's edge reads a slot's count and histogram one after the
	// other: a completion between the two shifts them by one.
	if math.Abs(float64(l.Count)-*m.Throughput*secs) > 2.5 {
		t.Errorf("%d latencies for %.0f completed requests", l.Count, *m.Throughput*secs)
	}
	// CPU: 1 ms per request, plus a wake-up's worth.
	if perReq := m.CPU * secs / (*m.Throughput * secs); perReq < 0.00099 || perReq > 0.0013 {
		t.Errorf("%.0f µs of CPU per request, want 1000..1300", perReq*1e6)
	}
	if vol > blocks+int64(len(w.Tasks)) {
		t.Errorf("work threads slept %d times for %d pattern blocks", vol, blocks)
	}
	if why := Perturbed(GroupInvariants(w, "web"), 4, secs); why != "" {
		t.Errorf("perturbed: %s", why)
	}
}

// TestServerStallCountsFromScheduledArrival stops the whole server for
// 200 ms (SIGSTOP to every worker) at 1000 Periodic requests/s: the ~200
// requests due in the stall all count it, from their scheduled arrival. A
// generator that made requests only when it ran (coordinated omission)
// would show one or two slow requests, not ~150 over 50 ms.
func TestServerStallCountsFromScheduledArrival(t *testing.T) {
	p := v1alpha1.Pattern{Type: v1alpha1.PatternServer, Rate: i32(1000), Arrivals: v1alpha1.ArrivalsPeriodic,
		Service: &v1alpha1.ServiceTime{Mean: *dur(100 * time.Microsecond)}}
	s := startSet(t, Spec{Tasks: serverTasks("web", 2, p, 3)})
	time.Sleep(300 * time.Millisecond)
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	pids := s.PIDs()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	stopped := time.Now()
	time.Sleep(200 * time.Millisecond)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	stall := time.Since(stopped)
	time.Sleep(800 * time.Millisecond)
	w, err := s.End()
	if err != nil {
		t.Fatal(err)
	}
	lat := NewHistogram()
	var arr, done int64
	for _, ts := range w.Tasks {
		lat.Merge(ts.Latency)
		arr += ts.Arrivals
		done += ts.Ops
	}
	over50 := lat.Count() - lat.CountBelow(50e6)
	t.Logf("stall %v: arrivals %d, completed %d, ≥50ms %d, max %.1f ms, p50 %.0f µs", stall, arr, done, over50, float64(lat.Max())/1e6, float64(lat.Quantile(0.5))/1e3)
	// Arrivals in the first stall-50ms of the stall waited at least 50 ms;
	// a few more wait for the backlog (200 × 100 µs on 2 workers) to drain,
	// longer when other processes take the CPUs.
	want := (stall - 50*time.Millisecond).Seconds() * 1000
	if float64(over50) < 0.85*want || float64(over50) > stall.Seconds()*1000+10 {
		t.Errorf("%d requests took ≥ 50 ms, want ≈%.0f (every arrival of the stall's first %v)", over50, want, stall-50*time.Millisecond)
	}
	if mx := time.Duration(lat.Max()); mx < stall-10*time.Millisecond || mx > stall+60*time.Millisecond {
		t.Errorf("max latency %v for a %v stall", mx, stall)
	}
	if math.Abs(float64(done-arr)) > 4 {
		t.Errorf("%d completed for %d arrivals: the backlog was not served", done, arr)
	}
}

// TestServerSaturation offers 1.2 × capacity (2 workers of 1 ms, 2400/s)
// with a queue of 50: throughput plateaus at the CPU the workers get, the
// excess is dropped, and queueing shows in the latency.
//
// A window out of bounds is measured once more, and the second decides:
// one clean-clone CI run saw 1898 requests/s for 1.993 CPUs (5 % under,
// with -0.07 CPUs of "noise": the cgroup was charged more than the machine
// was busy, as when the host pauses the VM during a spin), where runs
// before and after it held within 3 %. A worker that does not spend 1 ms
// of CPU per request, or drops or queues wrongly, is out in both.
func TestServerSaturation(t *testing.T) {
	p := v1alpha1.Pattern{Type: v1alpha1.PatternServer, Rate: i32(2400), Queue: i32(50),
		Service: &v1alpha1.ServiceTime{Mean: *dur(time.Millisecond)}}
	s := startSet(t, Spec{Tasks: serverTasks("web", 2, p, 5)})
	warmup := 300 * time.Millisecond
	var failed []string
	for attempt := 1; attempt <= 2; attempt++ {
		w, noise := window(t, s, warmup, 2*time.Second, 2)
		warmup = 0
		if failed = saturationFailures(t, w, noise); len(failed) == 0 {
			return
		}
		if attempt == 1 {
			for _, f := range failed {
				t.Logf("window %d, measured again: %s", attempt, f)
			}
		}
	}
	for _, f := range failed {
		t.Error(f)
	}
}

// saturationFailures judges one window of TestServerSaturation.
func saturationFailures(t *testing.T, w *Window, noise float64) []string {
	t.Helper()
	m := GroupMetrics(w, "web")
	var arr, drop int64
	for _, ts := range w.Tasks {
		arr += ts.Arrivals
		drop += ts.Dropped
	}
	secs := w.Duration.Seconds()
	t.Logf("2400/s × 1ms on 2 workers, queue 50: cpu %.3f, throughput %.1f/s, dropped %.1f/s (%d of %d), p99 %.1f ms, noise %.2f",
		m.CPU, *m.Throughput, *m.Dropped, drop, arr, m.RequestLatencyUs.P99/1e3, noise)
	var failed []string
	// Throughput is the CPU the workers got, at 1 ms per request.
	if capacity := m.CPU * 1000; math.Abs(*m.Throughput-capacity) > 0.03*capacity {
		failed = append(failed, fmt.Sprintf("throughput %.1f/s with %.3f CPUs of 1 ms requests (%.0f/s)", *m.Throughput, m.CPU, capacity))
	}
	if got := float64(arr-drop) / secs; math.Abs(got-*m.Throughput) > 0.02**m.Throughput+25/secs {
		failed = append(failed, fmt.Sprintf("%.1f admitted/s but %.1f completed/s", got, *m.Throughput))
	}
	if *m.Dropped < 0.8*(2400-m.CPU*1000) {
		failed = append(failed, fmt.Sprintf("dropped %.1f/s, want about the excess %.1f/s", *m.Dropped, 2400-m.CPU*1000))
	}
	// A full queue of 50 at 2000/s is 25 ms of waiting.
	if p99 := m.RequestLatencyUs.P99; p99 < 20e3 {
		failed = append(failed, fmt.Sprintf("p99 %.1f ms: a full queue of 50 should wait ≈25 ms", p99/1e3))
	}
	return failed
}
