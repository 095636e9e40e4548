package experiment

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// benchSweepSpec is the capacity-plan sample's question on a 1,000-point
// grid: latency-sensitive pods (Periodic 500us every 5ms) swept 1..100
// beside 64 BestEffort hogs whose cpuWeight is swept over 10 values.
func benchSweepSpec(b *testing.B) *v1alpha1.SchedExperiment {
	exp, err := Parse([]byte(`
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: sweep-bench}
spec:
  mode: Simulate
  duration: 10s
  variants: [{name: stock}]
  workload:
    groups:
    - {name: batch, replicas: 16, tasks: 4, cpuWeight: 1, pattern: {type: Hog}}
    - {name: web, pattern: {type: Periodic, run: 500us, period: 5ms}}
  sweep:
    parameters:
    - {target: Replicas, group: web, range: {from: 1, to: 100}}
    - {target: CPUWeight, group: batch, values: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]}
  constraints:
  - {metric: wakeupLatencyUs.p99, group: web, max: 2000}
  - {metric: deadlineMissRatio, group: web, max: 0.01}
  simulation:
    seed: 1
    nodes: [{cpus: 8, count: 40}, {cpus: 64, count: 10}]
`))
	if err != nil {
		b.Fatal(err)
	}
	return exp
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSweep1000 runs the 1,000-point grid on each shape, on all cores
// (GOMAXPROCS workers), with the default 2s simulated window per point. It
// reports points/s (wall; a point is one grid point on one shape), the wall
// seconds and the CPU seconds of one sweep. Goal: the 1,000-point grid on
// the 8- and 64-CPU shapes within 60 s wall on this 2-core machine.
// Run: go test -run '^$' -bench Sweep1000 -benchtime 1x ./internal/experiment
func BenchmarkSweep1000(b *testing.B) {
	exp := benchSweepSpec(b)
	for _, shape := range exp.Spec.Simulation.Nodes {
		b.Run(fmt.Sprintf("%dcpu", shape.CPUs), func(b *testing.B) {
			benchSweep(b, &exp.Spec, []v1alpha1.NodeShape{shape})
		})
	}
	// Both shapes in one sweep: 2,000 simulations.
	b.Run("8+64cpu", func(b *testing.B) { benchSweep(b, &exp.Spec, exp.Spec.Simulation.Nodes) })
}

func benchSweep(b *testing.B, spec *v1alpha1.SchedExperimentSpec, shapes []v1alpha1.NodeShape) {
	points := int(spec.Sweep.PointCount()) * len(shapes)
	var wall, cpu time.Duration
	for i := 0; i < b.N; i++ {
		c0, t0 := cpuTime(), time.Now()
		st, err := Plan(context.Background(), spec, shapes, SweepOptions{})
		if err != nil {
			b.Fatal(err)
		}
		wall += time.Since(t0)
		cpu += cpuTime() - c0
		if len(st.Shapes) != len(shapes) {
			b.Fatalf("%d shape results", len(st.Shapes))
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(points)*n/wall.Seconds(), "points/s")
	b.ReportMetric(wall.Seconds()/n, "wall-s/sweep")
	b.ReportMetric(cpu.Seconds()/n, "cpu-s/sweep")
}
