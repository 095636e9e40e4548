package controllers

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// The largest sweep the API admits (64 shape × variant curves of 2000
// points, 24 columns with their intervals) is some 20 MiB of status: the
// status is cut within MaxStatusBytes, the answers kept, and an Event says
// so once.
func TestBoundStatusThinsLargeSweeps(t *testing.T) {
	vals := make([]float64, 24)
	for i := range vals {
		vals[i] = 0.123456789 * float64(i+1)
	}
	sw := &v1alpha1.SweepStatus{Parameters: []string{"web.replicas", "cpus"}}
	for c := 0; c < 24; c++ {
		sw.Columns = append(sw.Columns, fmt.Sprintf("group-%d/wakeupLatencyUs.p99", c))
	}
	for i := 0; i < 64; i++ {
		sh := v1alpha1.SweepShapeResult{Shape: fmt.Sprintf("%dcpu-EEVDF", i+1), Variant: fmt.Sprintf("v%d", i%8)}
		for p := 0; p < 2000; p++ {
			sh.Points = append(sh.Points, v1alpha1.SweepPoint{At: []int64{int64(p / 40), int64(p % 40)}, Values: vals, Low: vals, High: vals, OK: p < 1000})
		}
		sh.Answer = &sh.Points[999]
		sw.Shapes = append(sw.Shapes, sh)
	}
	exp := &v1alpha1.SchedExperiment{}
	s := &scope{exp: exp, status: &v1alpha1.SchedExperimentStatus{Sweep: sw}, now: metav1.Now()}
	before := statusBytes(s.status)
	if before <= v1alpha1.MaxStatusBytes {
		t.Fatalf("test status is only %d bytes", before)
	}
	boundStatus(s)
	if n := statusBytes(s.status); n > v1alpha1.MaxStatusBytes {
		t.Fatalf("status is %d bytes after bounding, more than %d", n, v1alpha1.MaxStatusBytes)
	}
	for _, sh := range s.status.Sweep.Shapes {
		if sh.Answer == nil || sh.Answer.At[0] != 24 || sh.Answer.At[1] != 39 {
			t.Fatalf("answer of %s changed: %+v", sh.Shape, sh.Answer)
		}
		if len(sh.Points) < 2 || sh.Points[len(sh.Points)-1].At[0] != 49 {
			t.Fatalf("curve of %s lost its last point (%d points)", sh.Shape, len(sh.Points))
		}
	}
	if !strings.Contains(s.status.Omitted, "sweep curves keep every") {
		t.Errorf("omitted = %q", s.status.Omitted)
	}
	if len(s.events) != 1 || s.events[0].reason != "StatusSummarized" {
		t.Errorf("events %+v, want one StatusSummarized", s.events)
	}
	// The next reconcile reads the cut status back: nothing changes and no
	// second Event.
	exp.Status = *s.status.DeepCopy()
	s2 := &scope{exp: exp, status: s.status.DeepCopy(), now: metav1.Now()}
	boundStatus(s2)
	if len(s2.events) != 0 || s2.status.Omitted != exp.Status.Omitted {
		t.Errorf("second pass: events %+v omitted %q", s2.events, s2.status.Omitted)
	}
}
