package workload

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// TestLatencyProbeReport runs one LatencyProbe (1 ms interval by default) for
// SCHEDLAB_LATENCY_REPORT_SECONDS seconds and prints its wakeup latency
// percentiles on one line that hack/latency-vs-cyclictest.sh reads:
//
//	schedlab-latency interval_us=1000 count=… p50_us=… p90_us=… p99_us=… p999_us=… max_us=… mean_us=…
//
// It is skipped unless that variable is set.
func TestLatencyProbeReport(t *testing.T) {
	secs, err := strconv.ParseFloat(os.Getenv("SCHEDLAB_LATENCY_REPORT_SECONDS"), 64)
	if err != nil || secs <= 0 {
		t.Skip("set SCHEDLAB_LATENCY_REPORT_SECONDS to run (hack/latency-vs-cyclictest.sh does)")
	}
	interval := time.Millisecond
	if us, err := strconv.Atoi(os.Getenv("SCHEDLAB_LATENCY_REPORT_INTERVAL_US")); err == nil && us > 0 {
		interval = time.Duration(us) * time.Microsecond
	}
	s, err := Start(context.Background(), Spec{WorkerBinary: selfBinary(t), Tasks: []Task{
		task("probe", v1alpha1.Pattern{Type: v1alpha1.PatternLatencyProbe, Interval: dur(interval)}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Duration(secs * float64(time.Second)))
	w, err := s.End()
	if err != nil {
		t.Fatal(err)
	}
	l := GroupMetrics(w, "probe").WakeupLatencyUs
	fmt.Printf("schedlab-latency interval_us=%d count=%d p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f mean_us=%.1f\n",
		interval.Microseconds(), l.Count, l.P50, l.P90, l.P99, l.P999, l.Max, l.Mean)
}
