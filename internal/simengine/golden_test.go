package simengine

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// goldenInput exercises most of the model at once: groups, nesting, an
// autogroup session, bandwidth, idle groups and policies, custom slices and
// every pattern, on 4 CPUs.
func goldenInput(sch Scheduler) Input {
	in := Input{
		Node: Node{CPUs: 4, Scheduler: sch, HZ: 250,
			Calibration: Calibration{TimerOverheadNs: 2000, WakeupOverheadNs: 1000, CtxSwitchNs: 1500, BackgroundLoad: 0.02}},
		Groups: []Group{
			{Name: "batch", Replicas: 2, Tasks: 3, CPUWeight: 50, Policy: "Batch"},
			{Name: "pod", Tasks: 0, CPUWeight: 200},
			{Name: "web", Replicas: 2, Tasks: 2, Parent: "pod", Pattern: Pattern{Type: Burst, MeanRunNs: 1e6, MeanSleepNs: 3e6}},
			{Name: "video", Tasks: 1, Parent: "pod", Pattern: Pattern{Type: Periodic, RunNs: 3e6, PeriodNs: 16e6}},
			{Name: "capped", Tasks: 2, CPUMaxQuotaNs: 20e6, CPUMaxPeriodNs: 100e6},
			{Name: "idle", Tasks: 2, CPUIdle: true},
			{Name: "rpc", Tasks: 4, Pattern: Pattern{Type: PingPong, RunNs: 10e3}},
			{Name: "probe", Tasks: 1, Session: "ssh", Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1e6}},
			{Name: "shell", Tasks: 1, Session: "ssh", Nice: 5},
		},
		DurationNs: 1e9, WarmupNs: 2e8, Seed: 42,
	}
	if sch == EEVDF {
		in.Groups[3].SliceNs = 1e6
	}
	return in
}

func marshal(t testing.TB, r *Result) []byte {
	t.Helper()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// The same input and seed give byte-identical JSON, run after run, in
// parallel goroutines, and as recorded in testdata.
func TestGoldenDeterminism(t *testing.T) {
	for _, sch := range bothSchedulers {
		t.Run(string(sch), func(t *testing.T) {
			in := goldenInput(sch)
			first := marshal(t, mustRun(t, in))
			if again := marshal(t, mustRun(t, in)); !bytes.Equal(first, again) {
				t.Fatal("two runs of the same input differ")
			}
			var wg sync.WaitGroup
			outs := make([][]byte, 4)
			for i := range outs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := Run(in)
					if err != nil {
						t.Error(err)
						return
					}
					b, _ := json.MarshalIndent(r, "", "  ")
					outs[i] = append(b, '\n')
				}()
			}
			wg.Wait()
			for i, o := range outs {
				if !bytes.Equal(first, o) {
					t.Fatalf("concurrent run %d differs from the sequential one", i)
				}
			}
			path := filepath.Join("testdata", "golden_"+string(sch)+".json")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, first, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(first, want) {
				t.Errorf("output differs from %s; if the change is intended, run go test -run Golden -update", path)
			}
			// A different seed gives a different run.
			in.Seed++
			if bytes.Equal(first, marshal(t, mustRun(t, in))) {
				t.Error("a different seed gave the same output")
			}
		})
	}
}
