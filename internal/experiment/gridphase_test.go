package experiment

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// The windows' recorded phases, per variant and window; windows without
// any, and unsupported ones, are left out.
func TestWindowGridPhases(t *testing.T) {
	ws := []v1alpha1.WindowResult{
		{Variant: "a", Groups: []v1alpha1.GroupMeasurement{{Name: "hogs"}, {Name: "probe", GridPhasesNs: []int64{5, 7}}}},
		{Variant: "b", Unsupported: "no knob", Groups: []v1alpha1.GroupMeasurement{{Name: "probe", GridPhasesNs: []int64{1, 2}}}},
		{Variant: "a", Groups: []v1alpha1.GroupMeasurement{{Name: "hogs"}}},
		{Variant: "b", Groups: []v1alpha1.GroupMeasurement{{Name: "probe", GridPhasesNs: []int64{3, 4}}, {Name: "frame", GridPhasesNs: []int64{9}}}},
	}
	other := []v1alpha1.WindowResult{{Variant: "a", Groups: []v1alpha1.GroupMeasurement{{Name: "probe", GridPhasesNs: []int64{11, 13}}}}}
	want := map[string][]map[string][]int64{
		"a": {{"probe": {5, 7}}, {"probe": {11, 13}}},
		"b": {{"probe": {3, 4}, "frame": {9}}},
	}
	if d := cmp.Diff(want, WindowGridPhases(ws, other)); d != "" {
		t.Errorf("grid phases (-want +got):\n%s", d)
	}
	if got := WindowGridPhases(ws[2:3]); got != nil {
		t.Errorf("windows without phases gave %v, want nil", got)
	}
}

// The recorded phases reach every seed of a prediction: two 2 ms probes
// pinned to one CPU beside four hogs, the short-slice probe's grid 20 µs
// before the plain one's in every window, share one timer interrupt and
// the short-slice probe, woken first, waits behind the other (as the node
// did, docs/latency-tail.md); with the grids 1 ms apart in every window
// neither waits for the other.
func TestPredictUsesWindowGridPhases(t *testing.T) {
	exp := mustParse(t, `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: g}
spec:
  mode: Simulate
  duration: 2s
  warmup: 200ms
  variants: [{name: stock}]
  workload:
    groups:
    - {name: hogs, tasks: 4, pattern: {type: Hog}}
    - {name: plain, cpus: "1", pattern: {type: LatencyProbe, interval: 2ms}}
    - {name: short, cpus: "1", slice: 500us, pattern: {type: LatencyProbe, interval: 2ms}}
  simulation: {replicas: 4, nodes: [{cpus: 2, hz: 250, kernel: "6.18.44"}]}
`)
	p50 := func(plain, short int64) map[string]float64 {
		phases := []map[string][]int64{{"plain": {plain}, "short": {short}}, {"plain": {plain + 2}, "short": {short + 2}}}
		preds, err := Predict(&exp.Spec, exp.Spec.Simulation.Nodes, PredictOptions{GridPhases: map[string][]map[string][]int64{"stock": phases}})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, p := range preds {
			if p.Metrics.WakeupLatencyUs != nil {
				out[p.Group] = p.Metrics.WakeupLatencyUs.P50
			}
		}
		return out
	}
	near := p50(500_000, 480_000)
	apart := p50(500_000, 1_500_000)
	t.Logf("p50 (µs), short-slice grid 20 µs first: %v; 1 ms apart: %v", near, apart)
	if near["short"]-near["plain"] < 10 {
		t.Errorf("short-slice grid 20 µs before the plain one's: p50 %.1f µs against %.1f, want the short-slice probe at least 10 µs later (it waits)", near["short"], near["plain"])
	}
	if d := apart["short"] - apart["plain"]; d > 5 || d < -5 {
		t.Errorf("grids 1 ms apart: p50 %.1f µs against %.1f, want within 5 µs", apart["short"], apart["plain"])
	}
}
