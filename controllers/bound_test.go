package controllers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

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

// TestFullResultsInParts: what boundStatus cut is stored gzipped across as
// many owned ConfigMaps as it needs (values that do not compress: more
// than one part), read back whole with its sum checked, not written again
// when unchanged, and deleted with the reference once the status fits.
func TestFullResultsInParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sw := &v1alpha1.SweepStatus{Parameters: []string{"web.replicas"}}
	for i := 0; i < 64; i++ {
		sh := v1alpha1.SweepShapeResult{Shape: fmt.Sprintf("%dcpu-EEVDF", i+1), Variant: fmt.Sprintf("v%d", i%8)}
		for p := 0; p < 2000; p++ {
			v := []float64{rng.Float64(), rng.Float64(), rng.Float64()}
			sh.Points = append(sh.Points, v1alpha1.SweepPoint{At: []int64{int64(p)}, Values: v, Low: v, High: v})
		}
		sw.Shapes = append(sw.Shapes, sh)
	}
	exp := &v1alpha1.SchedExperiment{ObjectMeta: metav1.ObjectMeta{Name: "big", UID: "uid-1", Generation: 3}}
	f := newFixture(t, interceptor.Funcs{}, exp)
	f.r.Config.Namespace = "schedlab-system"
	ctx := context.Background()
	s := &scope{exp: exp, status: &v1alpha1.SchedExperimentStatus{Sweep: sw.DeepCopy()}, now: metav1.Now()}
	full := boundStatus(s)
	if full == nil {
		t.Fatal("boundStatus cut nothing")
	}
	if err := f.r.storeFullResults(ctx, s, full); err != nil {
		t.Fatal(err)
	}
	ref := s.status.FullResults
	if ref == nil || len(ref.ConfigMaps) < 2 || ref.Generation != 3 || ref.Namespace != "schedlab-system" {
		t.Fatalf("fullResults %+v, want 2 or more ConfigMaps of generation 3", ref)
	}
	if n := statusBytes(s.status); n > v1alpha1.MaxStatusBytes {
		t.Errorf("status with its reference is %d bytes, above %d", n, v1alpha1.MaxStatusBytes)
	}
	_, got, err := ReadFullResults(ctx, f.c, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sw) {
		t.Errorf("the sweep read back from %v differs from the one cut", ref.ConfigMaps)
	}
	for _, name := range ref.ConfigMaps {
		cm := &corev1.ConfigMap{}
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		if !metav1.IsControlledBy(cm, exp) || len(cm.BinaryData[v1alpha1.FullResultsKey]) > fullResultsPart {
			t.Errorf("ConfigMap %s: owners %+v, %d bytes", name, cm.OwnerReferences, len(cm.BinaryData[v1alpha1.FullResultsKey]))
		}
	}
	// Unchanged: no write.
	exp.Status = *s.status.DeepCopy()
	writes := f.calls["create ConfigMap"] + f.calls["update ConfigMap"]
	if writes != len(ref.ConfigMaps) {
		t.Fatalf("%d ConfigMap writes counted for %d parts (calls %v)", writes, len(ref.ConfigMaps), f.calls)
	}
	s2 := &scope{exp: exp, status: &v1alpha1.SchedExperimentStatus{Sweep: sw.DeepCopy(), FullResults: ref.DeepCopy()}, now: metav1.Now()}
	if err := f.r.storeFullResults(ctx, s2, boundStatus(s2)); err != nil {
		t.Fatal(err)
	}
	if w := f.calls["create ConfigMap"] + f.calls["update ConfigMap"]; w != writes || !reflect.DeepEqual(s2.status.FullResults, ref) {
		t.Errorf("an unchanged result was written again (%d writes, then %d) or its reference changed", writes, w)
	}
	// A status that fits and omits nothing: the ConfigMaps and the reference go.
	s3 := &scope{exp: exp, status: &v1alpha1.SchedExperimentStatus{FullResults: ref.DeepCopy()}, now: metav1.Now()}
	if err := f.r.storeFullResults(ctx, s3, boundStatus(s3)); err != nil {
		t.Fatal(err)
	}
	var cms corev1.ConfigMapList
	if err := f.c.List(ctx, &cms); err != nil {
		t.Fatal(err)
	}
	if s3.status.FullResults != nil || len(cms.Items) != 0 {
		t.Errorf("after a status that fits: fullResults %+v, %d ConfigMaps left", s3.status.FullResults, len(cms.Items))
	}
}
