package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func mustParse(t *testing.T, y string) *v1alpha1.SchedExperiment {
	t.Helper()
	exp, err := Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

// hogsOn2 asks how many single-hog pods fit on 2 CPUs while each still gets
// at least half a CPU: 4 (4 hogs share 2 CPUs at 0.5 each; 5 get 0.4).
const hogsOn2 = `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: hogs-on-2}
spec:
  mode: Simulate
  duration: 2s
  variants: [{name: stock}]
  workload:
    groups:
    - {name: hogs, pattern: {type: Hog}}
  sweep:
    parameters: [{target: Replicas, group: hogs, range: {from: 1, to: 8}}]
  constraints: [{metric: cpuPerTask, group: hogs, min: 0.5}]
  simulation:
    seed: 1
    nodes: [{cpus: 2, count: 3}, {cpus: 4, count: 2}]
`

func TestSweepGrid(t *testing.T) {
	sw := &v1alpha1.Sweep{Parameters: []v1alpha1.SweepParameter{
		{Target: v1alpha1.SweepReplicas, Group: "web", Range: &v1alpha1.SweepRange{From: 2, To: 9, Step: 3}},
		{Target: v1alpha1.SweepBaseSlice, Variant: "short", Values: []int64{700, 3000}},
	}}
	axes := SweepAxes(sw)
	if diff := cmp.Diff([]string{"web.replicas", "short.baseSliceUs"}, axisNames(axes)); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	want := [][]int64{{2, 700}, {2, 3000}, {5, 700}, {5, 3000}, {8, 700}, {8, 3000}}
	if diff := cmp.Diff(want, SweepGrid(axes)); diff != "" {
		t.Errorf("grid (-want +got):\n%s", diff)
	}
	if n := sw.PointCount(); n != 6 {
		t.Errorf("SweepPointCount = %d, want 6", n)
	}
	if diff := cmp.Diff([][]int64{{}}, SweepGrid(nil)); diff != "" {
		t.Errorf("no sweep is one empty point (-want +got):\n%s", diff)
	}
}

func TestApplySweepPoint(t *testing.T) {
	exp := mustParse(t, `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: apply}
spec:
  mode: Simulate
  duration: 2s
  variants: [{name: a}, {name: b}]
  workload:
    groups:
    - {name: web, pattern: {type: Hog}}
  simulation: {nodes: [{cpus: 8, count: 5}]}
`)
	axes := []SweepAxis{
		{Param: v1alpha1.SweepParameter{Target: v1alpha1.SweepTasks, Group: "web"}},
		{Param: v1alpha1.SweepParameter{Target: v1alpha1.SweepBaseSlice, Variant: "b"}},
	}
	s, shape := ApplySweepPoint(&exp.Spec, exp.Spec.Simulation.Nodes[0], axes, []int64{7, 1500})
	if got := s.Workload.Groups[0].TaskCount(); got != 7 {
		t.Errorf("tasks = %d, want 7", got)
	}
	if s.Variants[0].Knobs.BaseSlice != nil {
		t.Errorf("variant a got a base slice: only b is swept")
	}
	if d := s.Variants[1].Knobs.BaseSlice; d == nil || d.Duration.Microseconds() != 1500 {
		t.Errorf("variant b baseSlice = %v, want 1.5ms", d)
	}
	if exp.Spec.Workload.Groups[0].TaskCount() != 1 || exp.Spec.Variants[1].Knobs.BaseSlice != nil {
		t.Errorf("ApplySweepPoint changed the spec it was given")
	}
	_, shape = ApplySweepPoint(&exp.Spec, shape, []SweepAxis{{Param: v1alpha1.SweepParameter{Target: v1alpha1.SweepCPUs}}}, []int64{64})
	if shape.CPUs != 64 || *shape.Count != 5 {
		t.Errorf("shape = %d CPUs × %d, want 64 × 5", shape.CPUs, *shape.Count)
	}
}

// The answer where it is known: 4 hogs per 2 CPUs, 8 per 4 CPUs (the grid
// stops at 8, so the reason says to extend it); the fleet is 4×3 + 8×2.
func TestPlanKnownAnswer(t *testing.T) {
	exp := mustParse(t, hogsOn2)
	st, err := Plan(context.Background(), &exp.Spec, exp.Spec.Simulation.Nodes, SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Shapes) != 2 {
		t.Fatalf("%d shape results, want 2", len(st.Shapes))
	}
	two, four := st.Shapes[0], st.Shapes[1]
	if two.Answer == nil || two.Answer.At[0] != 4 {
		t.Fatalf("2 CPUs: answer %+v, want replicas 4; curve %+v", two.Answer, two.Points)
	}
	if !strings.Contains(two.Reason, "hogs.replicas=5 breaks hogs/cpuPerTask") {
		t.Errorf("2 CPUs: reason %q should name the point and constraint that fail", two.Reason)
	}
	if four.Answer == nil || four.Answer.At[0] != 8 || !strings.Contains(four.Reason, "extend the range") {
		t.Errorf("4 CPUs: answer %+v (%s), want 8 at the sweep's end", four.Answer, four.Reason)
	}
	for i, p := range two.Points {
		want := 1.0
		if r := float64(i + 1); r > 2 {
			want = 2 / r
		}
		if got := p.Values[0]; got < want-0.02 || got > want+0.02 {
			t.Errorf("2 CPUs, %d hogs: cpuPerTask %.3f, want %.3f", i+1, got, want)
		}
	}
	want := []v1alpha1.FleetAnswer{{Variant: "stock", Parameter: "hogs.replicas", Nodes: 5, Total: 4*3 + 8*2, TotalHigh: 4*3 + 8*2,
		PerShape: []string{"2cpu-EEVDF: 4 × 3", "4cpu-EEVDF: 8 × 2"}}}
	if diff := cmp.Diff(want, st.Fleet); diff != "" {
		t.Errorf("fleet (-want +got):\n%s", diff)
	}
}

// Smallest over CPUs with a second parameter: each value of the second
// parameter is its own walk (down from 8 CPUs); 4 hogs need 2 CPUs for half
// a CPU each, 6 need 3, and the answer is the walk that got furthest.
func TestPlanSmallestTwoParameters(t *testing.T) {
	exp := mustParse(t, `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: fewest-cpus}
spec:
  mode: Simulate
  duration: 1s
  warmup: 200ms
  variants: [{name: stock}]
  workload:
    groups:
    - {name: hogs, pattern: {type: Hog}}
  sweep:
    answer: Smallest
    parameters:
    - {target: CPUs, values: [1, 2, 3, 4, 6, 8]}
    - {target: Replicas, group: hogs, values: [4, 6]}
  constraints: [{metric: cpuPerTask, group: hogs, min: 0.5}]
  simulation: {seed: 3, nodes: [{cpus: 1}]}
`)
	st, err := Plan(context.Background(), &exp.Spec, exp.Spec.Simulation.Nodes, SweepOptions{PredictOptions: PredictOptions{Duration: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	var ok []string
	for _, p := range st.Shapes[0].Points {
		if p.OK {
			ok = append(ok, fmt.Sprint(p.At))
		}
	}
	want := []string{"[2 4]", "[3 4]", "[3 6]", "[4 4]", "[4 6]", "[6 4]", "[6 6]", "[8 4]", "[8 6]"}
	if diff := cmp.Diff(want, ok); diff != "" {
		t.Errorf("points meeting cpuPerTask >= 0.5 (-want +got):\n%s", diff)
	}
	if a := st.Shapes[0].Answer; a == nil || a.At[0] != 2 || a.At[1] != 4 {
		t.Errorf("answer %+v, want cpus=2 with 4 hogs", a)
	}
	if st.Fleet != nil {
		t.Errorf("fleet %+v: CPUs do not add up over nodes, want none", st.Fleet)
	}
}

// Walking up stops at the first failure even if a later point passes by
// chance; no passing point gives no answer and the reason.
func TestAnswerShapeWalk(t *testing.T) {
	spec := &v1alpha1.SchedExperimentSpec{
		Variants:    []v1alpha1.Variant{{Name: "v"}},
		Sweep:       &v1alpha1.Sweep{Answer: v1alpha1.SweepLargest},
		Constraints: []v1alpha1.Constraint{{Metric: "wakeupLatencyUs.p99", Group: "web", Max: ptr(2000.0)}},
	}
	axes := []SweepAxis{{Name: "web.replicas", Values: []int64{1, 2, 3, 4}}}
	cols := SweepColumns(spec)
	mk := func(vals ...float64) *v1alpha1.SweepShapeResult {
		r := &v1alpha1.SweepShapeResult{}
		for i, v := range vals {
			r.Points = append(r.Points, v1alpha1.SweepPoint{At: []int64{int64(i + 1)}, Values: []float64{v},
				OK: meetsConstraints(spec.Constraints, cols, v1alpha1.SweepPoint{Values: []float64{v}}, true) == ""})
		}
		return r
	}
	r := mk(100, 1500, 2500, 1900)
	answerShape(spec, axes, cols, r)
	if r.Answer == nil || r.Answer.At[0] != 2 {
		t.Errorf("answer %+v, want 2 (3 breaks the bound; 4 passing again is not trusted)", r.Answer)
	}
	if want := "web.replicas=3 breaks web/wakeupLatencyUs.p99 = 2500 > 2000"; r.Reason != want {
		t.Errorf("reason %q, want %q", r.Reason, want)
	}
	r = mk(2100, 100, 100, 100)
	answerShape(spec, axes, cols, r)
	if r.Answer != nil || !strings.HasPrefix(r.Reason, "no point meets every constraint") {
		t.Errorf("answer %+v (%s), want none", r.Answer, r.Reason)
	}
	spec.Sweep.Answer = v1alpha1.SweepSmallest
	r = mk(2100, 1000, 2100, 100)
	answerShape(spec, axes, cols, r)
	if r.Answer == nil || r.Answer.At[0] != 4 {
		t.Errorf("smallest: answer %+v, want 4 (3 breaks the bound walking down)", r.Answer)
	}
	spec.Sweep.Answer = v1alpha1.SweepBest
	spec.Objectives = []v1alpha1.Objective{{Metric: "wakeupLatencyUs.p99", Group: "web", Goal: v1alpha1.Minimize}}
	r = mk(900, 300, 2500, 300)
	answerShape(spec, axes, cols, r)
	if r.Answer == nil || r.Answer.At[0] != 2 {
		t.Errorf("best: answer %+v, want 2 (lowest p99, the earlier of a tie)", r.Answer)
	}
}

// The same spec and seed give the same JSON, whatever the workers and
// however the jobs are sharded.
func TestSweepDeterministic(t *testing.T) {
	exp := mustParse(t, strings.Replace(hogsOn2, "{type: Hog}", "{type: Burst, meanRun: 2ms, meanSleep: 3ms}", 1))
	run := func(opts SweepOptions) string {
		st, err := Plan(context.Background(), &exp.Spec, exp.Spec.Simulation.Nodes, opts)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(st)
		return string(b)
	}
	one := run(SweepOptions{Workers: 1})
	if four := run(SweepOptions{Workers: 4}); four != one {
		t.Errorf("4 workers differ from 1:\n%s\n%s", four, one)
	}
	var shards []*SweepShard
	for i := 2; i >= 0; i-- {
		sh, err := RunSweep(context.Background(), &exp.Spec, exp.Spec.Simulation.Nodes, SweepOptions{Shard: i, Shards: 3})
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, sh)
	}
	st, err := MergeSweep(&exp.Spec, exp.Spec.Simulation.Nodes, shards)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(st); string(b) != one {
		t.Errorf("merged shards differ from one run:\n%s\n%s", b, one)
	}
	if _, err := MergeSweep(&exp.Spec, exp.Spec.Simulation.Nodes, shards[:2]); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("merging 2 of 3 shards: err %v, want jobs missing", err)
	}
	seed := uint64(99)
	if other := run(SweepOptions{PredictOptions: PredictOptions{Seed: &seed}}); other == one {
		t.Errorf("another seed gave the same Burst curve: the seed is not used")
	}
}

func TestSweepValidation(t *testing.T) {
	base := func(extra string) string {
		return `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: v}
spec:
  mode: Simulate
  duration: 2s
  variants: [{name: stock}]
  workload:
    groups:
    - {name: batch, replicas: 4, tasks: 4, pattern: {type: Hog}}
    - {name: web, pattern: {type: Periodic, run: 1ms, period: 10ms}}
    - {name: pp, tasks: 2, pattern: {type: PingPong}}
    - {name: qos, tasks: 0}
    - {name: pod, parent: qos, pattern: {type: Hog}}
  simulation: {nodes: [{cpus: 8}]}
` + extra
	}
	for _, tc := range []struct{ name, extra, want string }{
		{"ok", "  sweep: {parameters: [{target: Replicas, group: web, range: {from: 1, to: 100}}]}\n  constraints: [{metric: deadlineMissRatio, group: web, max: 0.01}]", ""},
		{"two params product", "  sweep: {parameters: [{target: Replicas, group: web, range: {from: 1, to: 100}}, {target: CPUs, range: {from: 1, to: 21}}]}", "grid points × variants must be at most 2000"},
		{"joint tasks at the corner", "  sweep: {parameters: [{target: Replicas, group: web, range: {from: 1, to: 300}}, {target: Tasks, group: batch, values: [1, 60]}]}", "would have 543"},
		{"pingpong odd", "  sweep: {parameters: [{target: Tasks, group: pp, values: [2, 3]}]}", "every swept tasks value must be even"},
		{"parent replicas", "  sweep: {parameters: [{target: Replicas, group: qos, values: [1, 2]}]}", "session or a parent group"},
		{"duplicate values", "  sweep: {parameters: [{target: CPUs, values: [2, 2]}]}", "increasing order, each once"},
		{"same twice", "  sweep: {parameters: [{target: CPUs, values: [2]}, {target: CPUs, values: [4]}]}", "must change different things"},
		{"variant on group target", "  sweep: {parameters: [{target: CPUWeight, group: web, variant: stock, values: [2]}]}", "variant applies only to knob targets"},
		{"unknown variant", "  sweep: {parameters: [{target: BaseSlice, variant: nope, values: [200]}]}", "must name a variant listed in variants"},
		{"miss ratio of a hog", "  sweep: {parameters: [{target: CPUs, values: [2]}]}\n  constraints: [{metric: deadlineMissRatio, group: batch, max: 0.01}]", "deadlineMissRatio applies to Periodic groups only"},
		{"min above max", "  sweep: {parameters: [{target: CPUs, values: [2]}]}\n  constraints: [{metric: cpu, group: batch, max: 1, min: 2}]", "min must not be above its max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(base(tc.extra)))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted; want an error containing %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestGroupShapes(t *testing.T) {
	eevdf8 := v1alpha1.NodeShape{CPUs: 8, Scheduler: v1alpha1.SchedulerEEVDF}
	cfs8 := v1alpha1.NodeShape{CPUs: 8, Scheduler: v1alpha1.SchedulerCFS}
	got := GroupShapes([]v1alpha1.NodeShape{eevdf8, cfs8, eevdf8, {CPUs: 8}, cfs8})
	if len(got) != 2 || *got[0].Count != 3 || *got[1].Count != 2 || got[1].Scheduler != v1alpha1.SchedulerCFS {
		t.Errorf("GroupShapes = %+v, want 8cpu-EEVDF × 3 and 8cpu-CFS × 2", got)
	}
}

// A point whose interval straddles a constraint's limit runs more seeds
// (up to MaxSweepReplicas) until the interval clears it or the seeds run
// out; a point far from the limit keeps the spec's replicas.
func TestSweepMoreSeedsAtTheLimit(t *testing.T) {
	exp := mustParse(t, `
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: knee}
spec:
  mode: Simulate
  duration: 2s
  warmup: 200ms
  variants: [{name: stock}]
  workload:
    groups:
    - {name: hogs, tasks: 2, pattern: {type: Hog}}
    - {name: web, replicas: 1, tasks: 1, pattern: {type: Periodic, run: 500us, period: 5ms}}
  sweep:
    parameters: [{target: Replicas, group: web, values: [1, 2]}]
    answer: Largest
  constraints:
  - {metric: wakeupLatencyUs.p99, group: web, max: 1e9}
  simulation:
    seed: 1
    nodes: [{cpus: 1}]
`)
	sh, err := RunSweep(context.Background(), &exp.Spec, exp.Spec.Simulation.Nodes, SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := sh.Results[1]
	if first.Replicas != DefaultReplicas || first.High[0] <= first.Low[0] {
		t.Fatalf("far from the limit: %d seeds, interval [%v, %v]; want %d seeds and a non-empty interval", first.Replicas, first.Low[0], first.High[0], DefaultReplicas)
	}
	// The limit at the point's own mean: inside its interval.
	limit := first.Values[0]
	exp.Spec.Constraints[0].Max = &limit
	sh, err = RunSweep(context.Background(), &exp.Spec, exp.Spec.Simulation.Nodes, SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := sh.Results[1]
	if p.Replicas <= DefaultReplicas {
		t.Fatalf("limit %v inside [%v, %v]: %d seeds, want more than %d", limit, first.Low[0], first.High[0], p.Replicas, DefaultReplicas)
	}
	if p.Replicas < MaxSweepReplicas && p.Low[0] <= limit && p.High[0] > limit {
		t.Errorf("stopped at %d seeds with the limit %v still inside [%v, %v]", p.Replicas, limit, p.Low[0], p.High[0])
	}
	if p.Replicas > MaxSweepReplicas {
		t.Errorf("%d seeds, more than MaxSweepReplicas (%d)", p.Replicas, MaxSweepReplicas)
	}
	t.Logf("p99 %v [%v, %v] with %d seeds; %v [%v, %v] with %d", first.Values[0], first.Low[0], first.High[0], first.Replicas, p.Values[0], p.Low[0], p.High[0], p.Replicas)
	// The limit 5 % above the interval's upper end: met, but within
	// NearLimitMargin, so the point runs more seeds as well.
	near := first.High[0] * 1.05
	exp.Spec.Constraints[0].Max = &near
	sh, err = RunSweep(context.Background(), &exp.Spec, exp.Spec.Simulation.Nodes, SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := sh.Results[1]; p.Replicas <= DefaultReplicas {
		t.Errorf("limit %v, 5 %% above the interval [%v, %v]: %d seeds, want more than %d", near, first.Low[0], first.High[0], p.Replicas, DefaultReplicas)
	}
}

// nearLimit: an interval across a limit, or ending within NearLimitMargin
// of a limit it meets, on either kind of constraint.
func TestNearLimit(t *testing.T) {
	cols := []SweepColumn{{Group: "web", Metric: "wakeupLatencyUs.p99"}}
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		lo, hi   float64
		max, min *float64
		want     bool
	}{
		{1000, 2100, f(2000), nil, true},  // straddles
		{1000, 1834, f(2000), nil, true},  // met, 8 % below the limit
		{1000, 1790, f(2000), nil, false}, // met, 10.5 % below
		{2001, 2500, f(2000), nil, false}, // broken at both ends
		{900, 1500, nil, f(1000), true},   // straddles a minimum
		{1050, 1500, nil, f(1000), true},  // met, 5 % above the minimum
		{1150, 1500, nil, f(1000), false}, // met, 15 % above
		{500, 990, nil, f(1000), false},   // broken
	} {
		cs := []v1alpha1.Constraint{{Group: "web", Metric: "wakeupLatencyUs.p99", Max: c.max, Min: c.min}}
		res := SweepJobResult{Values: []float64{(c.lo + c.hi) / 2}, Low: []float64{c.lo}, High: []float64{c.hi}}
		if got := nearLimit(cs, cols, &res); got != c.want {
			t.Errorf("[%v, %v] against max %v min %v: nearLimit = %v, want %v", c.lo, c.hi, c.max, c.min, got, c.want)
		}
	}
}
