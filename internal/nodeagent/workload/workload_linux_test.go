package workload

import (
	"context"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func selfBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// measure runs spec for a warmup and a window and stops it.
func measure(t *testing.T, spec Spec, warmup, window time.Duration) *Window {
	t.Helper()
	if spec.WorkerBinary == "" {
		spec.WorkerBinary = selfBinary(t)
	}
	s, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	time.Sleep(warmup)
	if err := s.Begin(); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	time.Sleep(window)
	w, err := s.End()
	if err != nil {
		t.Fatalf("End: %v", err)
	}
	return w
}

func task(group string, p v1alpha1.Pattern) Task {
	return Task{Group: group, Pattern: p, Peer: -1}
}

func TestPatternsSanity(t *testing.T) {
	spec := Spec{Tasks: []Task{
		task("hog", v1alpha1.Pattern{Type: v1alpha1.PatternHog}),
	}}
	w := measure(t, spec, 300*time.Millisecond, 2*time.Second)
	m := GroupMetrics(w, "hog")
	t.Logf("hog: %+v ctx %+v", m, *m.CtxSwitchesPerSec)
}
