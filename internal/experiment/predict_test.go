package experiment

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/simengine"
)

const weightsYAML = `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: w}
spec:
  mode: Simulate
  duration: 2s
  warmup: 500ms
  variants: [{name: stock}]
  workload:
    groups:
    - {name: w100, cpuWeight: 100, pattern: {type: Hog}}
    - {name: w200, cpuWeight: 200, pattern: {type: Hog}}
    - {name: w400, cpuWeight: 400, pattern: {type: Hog}}
  simulation: {nodes: [{cpus: 1}]}
`

// The translation must carry cgroup weights into the simulator: on one CPU
// three hogs in cgroups of weight 100, 200 and 400 get 1/7, 2/7 and 4/7.
func TestPredictCarriesWeights(t *testing.T) {
	exp := mustParse(t, weightsYAML)
	preds, err := Predict(&exp.Spec, exp.Spec.Simulation.Nodes, PredictOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"w100": 1.0 / 7, "w200": 2.0 / 7, "w400": 4.0 / 7}
	if len(preds) != 3 {
		t.Fatalf("got %d predictions, want 3", len(preds))
	}
	for _, p := range preds {
		if d := p.Metrics.CPU - want[p.Group]; d > 0.01 || d < -0.01 {
			t.Errorf("%s: cpu %.3f, want %.3f", p.Group, p.Metrics.CPU, want[p.Group])
		}
	}
}

// Session groups compete at the root with the agent's parent cgroup, which
// the translation adds and the results never show.
func TestSimInputAddsAgentParentBesideSessions(t *testing.T) {
	exp := mustParse(t, `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: s}
spec:
  mode: Simulate
  duration: 1s
  warmup: 200ms
  variants: [{name: a}]
  workload:
    groups:
    - {name: desk, session: desktop, pattern: {type: Hog}}
    - {name: pods, pattern: {type: Hog}}
  simulation: {nodes: [{cpus: 1}]}
`)
	in, err := SimInput(&exp.Spec, 0, exp.Spec.Simulation.Nodes[0], PredictOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Groups) != 3 || in.Groups[0].Name != agentParent || in.Groups[2].Parent != agentParent {
		t.Fatalf("groups = %+v, want the agent parent first and pods under it", in.Groups)
	}
	if in.Groups[1].CPUWeight != 0 {
		t.Errorf("a session group must carry no cgroup weight, got %d", in.Groups[1].CPUWeight)
	}
	preds, err := Predict(&exp.Spec, exp.Spec.Simulation.Nodes, PredictOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range preds {
		if p.Group == agentParent {
			t.Fatalf("the agent's parent cgroup leaked into the predictions")
		}
	}
}

func TestMigrationCostZeroIsExplicit(t *testing.T) {
	if got := migrationCostNs(&metav1.Duration{}); got != simengine.MigrationCostZero {
		t.Errorf("explicit 0 → %d, want MigrationCostZero", got)
	}
	if got := migrationCostNs(nil); got != 0 {
		t.Errorf("unset → %d, want 0 (kernel default)", got)
	}
	if got := migrationCostNs(&metav1.Duration{Duration: time.Millisecond}); got != 1e6 {
		t.Errorf("1ms → %d", got)
	}
}

// A variant with a knob the shape's scheduler lacks is unsupported on that
// shape, as the agent would report it, and the other variants still run.
func TestPredictUnsupportedKnobPerShape(t *testing.T) {
	exp := mustParse(t, `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: u}
spec:
  mode: Simulate
  duration: 1s
  warmup: 200ms
  variants:
  - {name: stock}
  - {name: short, knobs: {baseSlice: 1ms}}
  workload:
    groups: [{name: h, pattern: {type: Hog}}]
  simulation: {nodes: [{cpus: 1, scheduler: CFS}, {cpus: 1, scheduler: EEVDF}]}
`)
	preds, err := Predict(&exp.Spec, exp.Spec.Simulation.Nodes, PredictOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range preds {
		got[p.Shape+"/"+p.Variant] = p.Unsupported
	}
	if got["1cpu-CFS/short"] == "" || got["1cpu-EEVDF/short"] != "" || got["1cpu-CFS/stock"] != "" {
		t.Fatalf("unsupported per shape/variant = %v", got)
	}
}

func TestPredictDeterministic(t *testing.T) {
	exp := mustParse(t, weightsYAML)
	a, err := Predict(&exp.Spec, exp.Spec.Simulation.Nodes, PredictOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Predict(&exp.Spec, exp.Spec.Simulation.Nodes, PredictOptions{})
	for i := range a {
		if a[i].Metrics.CPU != b[i].Metrics.CPU {
			t.Fatalf("same seed, different cpu: %v vs %v", a[i].Metrics.CPU, b[i].Metrics.CPU)
		}
	}
}

// One translation of capabilities into a shape: family from the kernel
// (or as detected), HZ only when it is a real tick rate, the preemption model.
func TestShapeFromCapabilities(t *testing.T) {
	got := ShapeFromCapabilities(&v1alpha1.NodeCapabilities{CPUs: 8, KernelVersion: "6.1.0-18-amd64", HZ: 250, Preempt: v1alpha1.PreemptFull})
	want := ShapeForKernel(8, "6.1.0-18-amd64")
	want.HZ, want.Preempt = 250, v1alpha1.PreemptFull
	if got != want || got.Scheduler != v1alpha1.SchedulerCFS {
		t.Errorf("6.1 node: %+v, want %+v", got, want)
	}
	got = ShapeFromCapabilities(&v1alpha1.NodeCapabilities{CPUs: 2, KernelVersion: "6.18.44", HZ: 123})
	if got.Scheduler != v1alpha1.SchedulerEEVDF || got.HZ != 0 || ShapeName(got) != "2cpu-EEVDF-k6.18.44" {
		t.Errorf("6.18 node with HZ 123: %+v (%s), want EEVDF, HZ unset, 2cpu-EEVDF-k6.18.44", got, ShapeName(got))
	}
}

// Two nodes whose predictions differ never share a shape name: the name
// the controller, the analysis and run group nodes by comes from the one
// translation (ShapeFromCapabilities) and carries the kernel, the tick rate
// and the preemption model. Here a probe beside hogs is simulated for each
// node; nodes that only differ in what the simulator does not read (the
// release's suffix) share the name and the prediction.
func TestShapeNamesSeparatePredictions(t *testing.T) {
	spec := &v1alpha1.SchedExperimentSpec{Duration: metav1.Duration{Duration: 2 * time.Second}, Variants: []v1alpha1.Variant{{Name: "v"}},
		Workload: v1alpha1.Workload{Groups: []v1alpha1.Group{
			{Name: "hogs", Tasks: ptr(int32(3)), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}},
			{Name: "probe", Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternLatencyProbe, Interval: &metav1.Duration{Duration: time.Millisecond}}},
		}}}
	caps := []v1alpha1.NodeCapabilities{
		{CPUs: 2, KernelVersion: "6.18.44-fc-v1045", HZ: 250, Preempt: v1alpha1.PreemptNone},
		{CPUs: 2, KernelVersion: "6.18.44-generic", HZ: 250, Preempt: v1alpha1.PreemptNone},
		{CPUs: 2, KernelVersion: "6.18.44", HZ: 1000, Preempt: v1alpha1.PreemptNone},
		{CPUs: 2, KernelVersion: "6.18.44", HZ: 250, Preempt: v1alpha1.PreemptLazy},
		{CPUs: 2, KernelVersion: "6.6.50", HZ: 250, Preempt: v1alpha1.PreemptNone},
		{CPUs: 2, KernelVersion: "6.1.100", HZ: 250, Preempt: v1alpha1.PreemptNone},
	}
	byName := map[string]string{}
	for i := range caps {
		sh := ShapeFromCapabilities(&caps[i])
		in, err := SimInput(spec, 0, sh, PredictOptions{})
		if err != nil {
			t.Fatal(err)
		}
		in.Seed = 1
		res, err := simengine.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		got := string(b)
		name := ShapeName(sh)
		if prev, ok := byName[name]; ok && prev != got {
			t.Errorf("%s names two nodes predicted differently (%+v)", name, caps[i])
		}
		byName[name] = got
	}
	if len(byName) != 5 {
		t.Errorf("%d names for 5 distinct nodes", len(byName))
	}
	// The kernels and the tick rate change this workload's prediction (the
	// lazy model only changes cross-CPU wake-ups, which it has few of).
	var preds []string
	for _, p := range byName {
		preds = append(preds, p)
	}
	slices.Sort(preds)
	if n := len(slices.Compact(preds)); n < 4 {
		t.Errorf("%d distinct predictions for the 5 shapes, want at least 4 (the test's nodes should differ)", n)
	}
}

// The topology an agent read from sysfs reaches the shape, its name and
// the simulator's input; an irregular or flat one leaves the shape flat.
func TestShapeFromCapabilitiesTopology(t *testing.T) {
	caps := &v1alpha1.NodeCapabilities{CPUs: 32, KernelVersion: "6.12.0", Topology: &v1alpha1.NodeTopology{Sockets: 2, LLCsPerSocket: 2, ThreadsPerCore: 2}}
	sh := ShapeFromCapabilities(caps)
	if sh.Topology == nil || *sh.Topology != *caps.Topology || ShapeName(sh) != "32cpu-EEVDF-k6.12.0-2s-2llc-smt2" {
		t.Fatalf("32-CPU 2×2×2 node: shape %+v named %s, want its topology and 32cpu-EEVDF-k6.12.0-2s-2llc-smt2", sh, ShapeName(sh))
	}
	spec := &v1alpha1.SchedExperimentSpec{Duration: metav1.Duration{Duration: time.Second}, Variants: []v1alpha1.Variant{{Name: "v"}},
		Workload: v1alpha1.Workload{Groups: []v1alpha1.Group{{Name: "g", Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}}}}}
	in, err := SimInput(spec, 0, sh, PredictOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if in.Node.Topology != (simengine.Topology{Sockets: 2, LLCsPerSocket: 2, ThreadsPerCore: 2}) {
		t.Fatalf("simulator topology %+v, want 2×2×2", in.Node.Topology)
	}
	for _, c := range []*v1alpha1.NodeCapabilities{
		{CPUs: 12, KernelVersion: "6.12.0", Topology: &v1alpha1.NodeTopology{Sockets: 2, LLCsPerSocket: 2, ThreadsPerCore: 2}},
		{CPUs: 8, KernelVersion: "6.12.0", Topology: &v1alpha1.NodeTopology{Sockets: 1, LLCsPerSocket: 1, ThreadsPerCore: 1}},
		{CPUs: 8, KernelVersion: "6.12.0"},
	} {
		sh := ShapeFromCapabilities(c)
		if sh.Topology != nil || ShapeName(sh) != fmt.Sprintf("%dcpu-EEVDF-k6.12.0", c.CPUs) {
			t.Errorf("caps %+v: shape topology %+v named %s, want flat", c, sh.Topology, ShapeName(sh))
		}
		if in, _ := SimInput(spec, 0, sh, PredictOptions{}); !in.Node.Topology.IsZero() {
			t.Errorf("caps %+v: simulator topology %+v, want zero (the flat model)", c, in.Node.Topology)
		}
	}
}
