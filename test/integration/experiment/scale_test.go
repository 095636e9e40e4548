package experiment_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

const scaleNodes = 500

// runScale runs a 500-node experiment whose NodeRuns a helper writes (as
// 500 agents would, 32 at a time) and returns the experiment and the
// number of reconciles it took.
func runScale(tb testing.TB) (*v1alpha1.SchedExperiment, *harness, time.Duration) {
	h := newHarness(tb, harnessOptions{Quiet: true})
	nodes := make([]nodeSpec, scaleNodes)
	for i := range nodes {
		nodes[i] = nodeSpec{name: fmt.Sprintf("%s-n%03d", h.prefix, i), cpus: 8}
	}
	createParallel(tb, h, nodes)
	spec := h.experimentSpec()
	spec.Repetitions = 3
	start := time.Now()
	name := h.createExperiment("exp", spec)

	h.eventually(2*time.Minute, "500 NodeRuns", func() (bool, string) {
		n := len(h.nodeRuns(name))
		return n == scaleNodes, fmt.Sprint(n)
	})
	runs := h.nodeRuns(name)
	var wg sync.WaitGroup
	work := make(chan int)
	errs := make(chan error, len(runs))
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				nr := runs[i].DeepCopy()
				nr.Status = scaleStatus(nr.Spec.NodeName, &spec, nr.Spec.ExperimentGeneration)
				if err := k8s.Status().Update(context.Background(), nr); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range runs {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatalf("writing NodeRun status: %v", err)
	}
	e := h.waitCondition(name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 2*time.Minute)
	return e, h, time.Since(start)
}

func createParallel(tb testing.TB, h *harness, nodes []nodeSpec) {
	var wg sync.WaitGroup
	ch := make(chan nodeSpec)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range ch {
				h.createNodes(n)
			}
		}()
	}
	for _, n := range nodes {
		ch <- n
	}
	close(ch)
	wg.Wait()
}

// scaleStatus is a node's completed run: the scripted metrics of every
// variant × repetition.
func scaleStatus(node string, spec *v1alpha1.SchedExperimentSpec, gen int64) v1alpha1.NodeRunStatus {
	now := metav1.Now()
	total := int32(len(spec.Variants)) * spec.Repetitions
	st := v1alpha1.NodeRunStatus{Phase: v1alpha1.NodeRunCompleted, ExperimentGeneration: gen, StepsDone: total, StepsTotal: total,
		Restored: true, StartTime: &now, CompletionTime: &now, LastUpdateTime: &now,
		Capabilities: &v1alpha1.NodeCapabilities{CPUs: 8, KernelVersion: "6.8.0-45-generic", Scheduler: v1alpha1.SchedulerEEVDF},
		Knobs:        knobRecord(true)}
	for rep := 0; rep < int(spec.Repetitions); rep++ {
		for vi, v := range spec.Variants {
			w := v1alpha1.WindowResult{Variant: v.Name, Repetition: int32(rep), Attempts: 1}
			for _, g := range spec.Workload.Groups {
				w.Groups = append(w.Groups, v1alpha1.GroupMeasurement{Name: g.Name, Metrics: scriptedMetrics(node, vi, rep, g.Name)})
			}
			st.Windows = append(st.Windows, w)
		}
	}
	return st
}

// TestScale500Nodes: 500 nodes, 3 repetitions: every row has n = 1500 and
// the mean and standard deviation computed here.
func TestScale500Nodes(t *testing.T) {
	e, h, took := runScale(t)
	t.Logf("500-node experiment: %d reconciles, %s from creation to Completed", h.reconciles.Load(), took.Round(time.Millisecond))
	if e.Status.NodeProgress != "500/500" || len(e.Status.Nodes) != scaleNodes {
		t.Errorf("nodeProgress %q with %d nodes", e.Status.NodeProgress, len(e.Status.Nodes))
	}
	spec := e.Spec
	for _, r := range e.Status.Results {
		if r.Measured == nil {
			t.Errorf("row %s/%s has no measurement", r.Variant, r.Group)
			continue
		}
		vi := map[string]int{"baseline": 0, "no-autogroup": 1}[r.Variant]
		var xs []float64
		for i := 0; i < scaleNodes; i++ {
			for rep := 0; rep < int(spec.Repetitions); rep++ {
				m := scriptedMetrics(fmt.Sprintf("%s-n%03d", h.prefix, i), vi, rep, r.Group)
				if r.Group == "probe" {
					xs = append(xs, m.WakeupLatencyUs.P99)
				} else {
					xs = append(xs, m.CPU)
				}
			}
		}
		got, gotSD := r.Measured.CPU, r.Measured.Stddev.CPU
		if r.Group == "probe" {
			got, gotSD = r.Measured.WakeupLatencyUs.P99, r.Measured.Stddev.WakeupLatencyUs.P99
		}
		if r.Measured.N != int32(len(xs)) || math.Abs(got-mean(xs)) > 1e-6 || math.Abs(gotSD-stddev(xs)) > 1e-6 {
			t.Errorf("row %s/%s: n %d mean %v sd %v, want n %d mean %v sd %v", r.Variant, r.Group, r.Measured.N, got, gotSD, len(xs), mean(xs), stddev(xs))
		}
		if r.Predicted == nil {
			t.Errorf("row %s/%s has no prediction", r.Variant, r.Group)
		}
	}
	if e.Status.BestVariant != "no-autogroup" {
		t.Errorf("bestVariant %q (%s)", e.Status.BestVariant, e.Status.BestVariantReason)
	}
	h.eventually(30*time.Second, "500 locks released", func() (bool, string) { return len(h.leases()) == 0, "" })
}

// BenchmarkExperiment500Nodes records what a 500-node experiment costs the
// controller: reconciles and wall time from creation to Completed.
func BenchmarkExperiment500Nodes(b *testing.B) {
	var reconciles int64
	var total time.Duration
	for i := 0; i < b.N; i++ {
		_, h, took := runScale(b)
		reconciles += h.reconciles.Load()
		total += took
	}
	b.ReportMetric(float64(reconciles)/float64(b.N), "reconciles/op")
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-complete/op")
}

func stddev(xs []float64) float64 {
	m := mean(xs)
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(xs)-1))
}
