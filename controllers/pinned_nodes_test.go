package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A Measure experiment whose group is pinned to CPU 5 runs only on nodes
// with 6 CPUs or more: smaller ones are skipped with a reason before any
// agent is deployed there, and when none is left the condition names them.
func TestPinnedGroupSkipsSmallNodes(t *testing.T) {
	e := testExperiment("x", true)
	e.Spec.Workload.Groups[0].CPUs = "4-5"
	big := readyNode("n2")
	big.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	f := newFixture(t, interceptor.Funcs{}, e, readyNode("n1"), big)
	for range 3 {
		if _, err := f.reconcile(t, "x"); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, n := range f.get(t, "x").Status.Nodes {
		names = append(names, n.Name)
	}
	if strings.Join(names, ",") != "n2" {
		t.Errorf("nodes %v, want n2 alone (n1 has 4 CPUs)", names)
	}
	seen := false
	for len(f.recorder.Events) > 0 {
		if ev := <-f.recorder.Events; strings.Contains(ev, "NodesSkipped") && strings.Contains(ev, `group "g", pinned to CPU 5: n1`) {
			seen = true
		}
	}
	if !seen {
		t.Error("no NodesSkipped event naming n1")
	}

	small := testExperiment("y", true)
	small.Spec.Workload.Groups[0].CPUs = "7"
	f = newFixture(t, interceptor.Funcs{}, small, readyNode("n1"))
	if _, err := f.reconcile(t, "y"); err != nil {
		t.Fatal(err)
	}
	got := f.get(t, "y")
	var msg string
	for _, c := range got.Status.Conditions {
		if strings.Contains(c.Message, "n1 has 4 CPUs") {
			msg = c.Message
		}
	}
	if msg == "" || len(got.Status.Nodes) != 0 {
		t.Errorf("pinned to CPU 7 on a 4-CPU node: nodes %v, conditions %+v", got.Status.Nodes, got.Status.Conditions)
	}
}
