package reference

import (
	"context"
	"fmt"
	"math"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent/workload"
)

// The Server worker has no packaged reference (schbench is not in Debian;
// wrk2 needs a network server), so it is held to what a request queue must
// do: an open loop that counts a stall from each request's scheduled
// arrival, throughput equal to the offered rate below saturation, and, with
// exponential service and Poisson arrivals on a machine nothing else
// uses, the M/M/c mean response time of queueing theory (Erlang C).

// erlangCMeanResponse is the mean response time (queueing + service) of an
// M/M/c queue with arrival rate lambda and mean service time s (seconds):
// W = C(c, a)·s/(c − a) + s with a = λ·s, C the Erlang C probability of
// waiting.
func erlangCMeanResponse(c int, lambda, s float64) float64 {
	a := lambda * s
	if a >= float64(c) {
		return math.Inf(1)
	}
	term, sum := 1.0, 0.0 // a^k/k!
	for k := 0; k < c; k++ {
		sum += term
		term *= a / float64(k+1)
	}
	top := term * float64(c) / (float64(c) - a) // a^c/c! · c/(c−a)
	pw := top / (sum + top)
	return pw*s/(float64(c)-a) + s
}

func TestErlangCFormula(t *testing.T) {
	// M/M/1: W = 1/(μ − λ); M/M/2 at a = 1: C = 1/3, W = s + s/3.
	if w := erlangCMeanResponse(1, 500, 1e-3); math.Abs(w-2e-3) > 1e-12 {
		t.Errorf("M/M/1 λ=500 μ=1000: %g, want 2 ms", w)
	}
	if w := erlangCMeanResponse(2, 1000, 1e-3); math.Abs(w-4e-3/3) > 1e-12 {
		t.Errorf("M/M/2 λ=1000 μ=1000: %g, want 1.333 ms", w)
	}
}

// serverRun starts one Server replica of tasks workers in the group's
// cgroup, measures one window after the warmup, and stops it. mid, when
// set, runs in the middle of the window with the workers' pids.
func serverRun(t *testing.T, n *node, l *layout, tasks int, p v1alpha1.Pattern, seed uint64, mid func(pids []int)) (*workload.Window, float64) {
	t.Helper()
	spec := workload.Spec{WorkerBinary: selfBinary(t)}
	for i := range tasks {
		spec.Tasks = append(spec.Tasks, workload.Task{Group: "web", Index: i, Pattern: p, Peer: -1, CgroupProcs: l.procs["web"], Seed: seed + uint64(i)})
	}
	s, err := workload.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(*warmupLen)
	u0, b0, t0 := n.usage(l)
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	if mid != nil {
		time.Sleep(*windowLen / 3)
		mid(s.PIDs())
		time.Sleep(*windowLen - *windowLen/3)
	} else {
		time.Sleep(*windowLen)
	}
	w, err := s.End()
	if err != nil {
		t.Fatal(err)
	}
	u1, b1, t1 := n.usage(l)
	secs := t1.Sub(t0).Seconds()
	return w, max(0, (b1-b0).Seconds()/secs-(u1["web"]-u0["web"]).Seconds()/secs)
}

func sumTasks(w *workload.Window, f func(workload.TaskStats) int64) int64 {
	var n int64
	for _, ts := range w.Tasks {
		n += f(ts)
	}
	return n
}

func dur(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }

// TestServerOpenLoopUnderAStall stops the whole server (SIGSTOP to every
// worker) for 300 ms at 1000 Periodic requests/s: every request due in the
// stall must count the stall from its scheduled arrival. Counted that way,
// the requests slower than L number (300 ms − L)·rate for L well inside the
// stall; a generator that makes requests only when it runs (coordinated
// omission) would show one or two.
func TestServerOpenLoopUnderAStall(t *testing.T) {
	n := newNode(t)
	l := n.layout([]v1alpha1.Group{{Name: "web", CPUWeight: i32(100), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternServer}}})
	p := v1alpha1.Pattern{Type: v1alpha1.PatternServer, Rate: i32(1000), Arrivals: v1alpha1.ArrivalsPeriodic, Service: &v1alpha1.ServiceTime{Mean: *dur(100 * time.Microsecond)}}
	var stall time.Duration
	w, noise := serverRun(t, n, l, 2, p, 1, func(pids []int) {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGSTOP)
		}
		t0 := time.Now()
		time.Sleep(300 * time.Millisecond)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		stall = time.Since(t0)
	})
	lat := workload.NewHistogram()
	for _, ts := range w.Tasks {
		lat.Merge(ts.Latency)
	}
	arr, done := sumTasks(w, func(ts workload.TaskStats) int64 { return ts.Arrivals }), sumTasks(w, func(ts workload.TaskStats) int64 { return ts.Ops })
	for _, L := range []time.Duration{50 * time.Millisecond, 150 * time.Millisecond, 250 * time.Millisecond} {
		slower := lat.Count() - lat.CountBelow(int64(L))
		want := (stall - L).Seconds() * 1000
		row("Server", "1000/s Periodic, 100 µs, 2 workers, 300 ms SIGSTOP", "schedlab Server", 1, fmt.Sprintf("requests slower than %v", L), float64(slower), fmt.Sprintf("open loop: %.0f (stall %v); noise %.2f CPUs", want, stall.Round(time.Millisecond), noise))
		// The backlog (300 requests of 100 µs on 2 workers) drains in
		// ~15 ms at best, so a few requests more pass each bound: 16-17
		// more at 50 ms in most runs, 31 in one clean-clone CI run on a
		// quiet machine (282 for 251), as the resumed workers wake and
		// get their CPUs back. 60 more is a 60 ms drain, four times the
		// best; a generator that counted the stall twice, or from when it
		// ran (coordinated omission: one or two), is far outside.
		if float64(slower) < 0.9*want-5 || float64(slower) > want+60+100*noise {
			t.Errorf("%d requests slower than %v after a %v stall at 1000/s, want ≈%.0f (every arrival of the stall's first %v)", slower, L, stall, want, stall-L)
		}
	}
	if mx := time.Duration(lat.Max()); mx < stall-10*time.Millisecond || mx > stall+50*time.Millisecond+time.Duration(noise*100)*time.Millisecond {
		t.Errorf("slowest request %v after a %v stall", mx, stall)
	}
	if math.Abs(float64(done-arr)) > 4 {
		t.Errorf("%d requests completed of %d arrivals: the backlog was not served", done, arr)
	}
}

// TestServerThroughputAndErlangC runs M/M/2 servers (Poisson arrivals,
// exponential service of 1 ms, 2 workers) at 500 and 1000 requests/s and a
// Periodic one at 1000/s, one replica each in turn:
//
//   - Periodic arrivals: throughput is the rate (every arrival served) to
//     within the requests in flight at the window's edges;
//   - Poisson: completions equal to arrivals; on a quiet machine arrivals
//     within 4 σ of rate·window and the mean response within 12 % of
//     Erlang C's, for the service time the workers really took (CPU per
//     request, which includes each wake-up's cost). Another process taking
//     CPU stretches service, so on a busy machine the figures are logged.
//     The workers' run delay per request (schedstat run_delay) is logged
//     too. It is no test of quiet: on a busy machine a window whose workers
//     waited 36 µs per request was 25 % above Erlang C (a few long waits
//     hold up every request queued behind them).
func TestServerThroughputAndErlangC(t *testing.T) {
	n := newNode(t)
	l := n.layout([]v1alpha1.Group{{Name: "web", CPUWeight: i32(100), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternServer}}})
	exp := &v1alpha1.ServiceTime{Distribution: v1alpha1.ServiceExponential, Mean: *dur(time.Millisecond)}
	cases := []struct {
		name string
		p    v1alpha1.Pattern
	}{
		{"Periodic 1000/s, 1 ms fixed, 2 workers", v1alpha1.Pattern{Type: v1alpha1.PatternServer, Rate: i32(1000), Arrivals: v1alpha1.ArrivalsPeriodic, Service: &v1alpha1.ServiceTime{Mean: *dur(time.Millisecond)}}},
		{"M/M/2 500/s, 1 ms", v1alpha1.Pattern{Type: v1alpha1.PatternServer, Rate: i32(500), Service: exp}},
		{"M/M/2 1000/s, 1 ms", v1alpha1.Pattern{Type: v1alpha1.PatternServer, Rate: i32(1000), Service: exp}},
	}
	// The mean response of a quiet window must be within 12 % of Erlang
	// C's in at least one round per case: one clean-clone CI run had
	// 1.657 ms for 1.404 ms (18 % above, 0.04 CPUs of noise, 25.8 µs of
	// run delay per request) in one round of two. A server that is wrong
	// (queueing not counted, service misread) is outside in every round.
	erlangOff := map[string][]string{}
	nRounds := max(1, *rounds-1)
	defer func() {
		for _, c := range cases {
			if f := erlangOff[c.name]; len(f) == nRounds {
				t.Errorf("%s: outside Erlang C in every round: %s", c.name, strings.Join(f, " | "))
			}
		}
	}()
	for round := range nRounds {
		for ci, c := range cases {
			w, noise := serverRun(t, n, l, 2, c.p, uint64(100*round+ci+1), nil)
			secs := w.Duration.Seconds()
			rate := float64(*c.p.Rate)
			arr, done := sumTasks(w, func(ts workload.TaskStats) int64 { return ts.Arrivals }), sumTasks(w, func(ts workload.TaskStats) int64 { return ts.Ops })
			cpu := sumTasks(w, func(ts workload.TaskStats) int64 { return ts.CPUNs })
			delay := float64(sumTasks(w, func(ts workload.TaskStats) int64 { return ts.RunDelayNs })) / 1e9 / float64(max(done, 1))
			lat := workload.NewHistogram()
			for _, ts := range w.Tasks {
				lat.Merge(ts.Latency)
			}
			s := float64(cpu) / 1e9 / float64(max(done, 1)) // service really taken, s per request
			mean := lat.Mean() / 1e9
			erl := erlangCMeanResponse(2, rate, s)
			row("Server", c.name, "schedlab Server", round+1, "throughput /s", float64(done)/secs, fmt.Sprintf("offered %.0f/s, %d arrivals in %.2f s; noise %.2f CPUs", rate, arr, secs, noise))
			model := fmt.Sprintf("Erlang C %.3f ms", erl*1e3)
			if c.p.Arrivals == v1alpha1.ArrivalsPeriodic {
				model = "no queueing: the service"
			}
			row("Server", c.name, "schedlab Server", round+1, "mean response ms", mean*1e3,
				fmt.Sprintf("%s for the %.1f µs of CPU per request; p50 %.0f p99 %.0f µs; run delay %.1f µs per request", model, s*1e6, float64(lat.Quantile(0.5))/1e3, float64(lat.Quantile(0.99))/1e3, delay*1e6))
			// Completions trail arrivals by the requests in the system at
			// the window's end, less those at its start. At M/M/2 with
			// utilisation 0.52 (1000/s, 1 ms) seven or more are in the
			// system about 1 % of the time (3017 of 3024 was seen in a
			// clean-clone CI run), thirteen or more about 0.03 %: 12
			// leaves a lost request in 250 to fail. That holds for a
			// quiet machine: another process holding a CPU near the
			// window's end leaves a backlog that the window cannot see
			// served (a dry run with 0.40 CPUs of others' work, 326 µs of
			// run delay per request, ended with 2878 completed of 2905).
			// Completions beyond arrivals are the requests in the system
			// at the window's start, which is the same count: with others'
			// work just before the window that backlog is as large as the
			// one above, and is served inside it. Every one of them
			// completed in the window, within its longest response, so
			// they arrived within that time before it: at most the
			// arrivals in it (+ 3 σ). More is wrong at any load.
			maxResp := float64(lat.Max()) / 1e9
			startBacklog := math.Max(12, rate*maxResp+3*math.Sqrt(rate*maxResp))
			switch {
			case float64(done-arr) > startBacklog:
				t.Errorf("%s: %d completed of %d arrivals: more than the %.0f that could be waiting at the window's start (its longest response %.1f ms)", c.name, done, arr, startBacklog, maxResp*1e3)
			case arr-done > 12 && noise < quiet:
				t.Errorf("%s: %d completed of %d arrivals below saturation", c.name, done, arr)
			case arr-done > 12:
				t.Logf("%s: %d completed of %d arrivals with %.2f CPUs of others' work (run delay %.1f µs per request): not judged", c.name, done, arr, noise, delay*1e6)
			}
			if c.p.Arrivals == v1alpha1.ArrivalsPeriodic {
				// Arrivals are counted when a worker takes them, so requests
				// still queued at the window's edges move across it (3015
				// for 3008 was seen in a CI dry run): within 1 %, which
				// still fails a schedule that runs fast or slow.
				if tol := max(3, 0.01*rate*secs); math.Abs(float64(arr)-rate*secs) > tol {
					t.Errorf("%s: %d arrivals in %.3f s, want %.0f ± %.0f", c.name, arr, secs, rate*secs, tol)
				}
				continue
			}
			if noise < quiet {
				// Arrivals are counted when a worker takes the lock after
				// their time; on a busy machine the window's last ones may
				// still wait for that.
				if sd := math.Sqrt(rate * secs); math.Abs(float64(arr)-rate*secs) > 4*sd {
					t.Errorf("%s: %d Poisson arrivals in %.2f s, want %.0f ± %.0f (4σ)", c.name, arr, secs, rate*secs, 4*sd)
				}
				if math.Abs(mean-erl) > 0.12*erl {
					msg := fmt.Sprintf("round %d: mean response %.3f ms, Erlang C %.3f ms for %.1f µs per request (±12%%, %.2f CPUs of noise, run delay %.1f µs per request)", round+1, mean*1e3, erl*1e3, s*1e6, noise, delay*1e6)
					t.Logf("%s: %s", c.name, msg)
					erlangOff[c.name] = append(erlangOff[c.name], msg)
				}
			} else if mean < 0.85*erl {
				// Other load can only make it slower.
				t.Errorf("%s: mean response %.3f ms is below Erlang C's %.3f ms", c.name, mean*1e3, erl*1e3)
			}
		}
	}
}
