package rtapp

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/api/v1alpha1/validation"
)

// rtPhase is one thread's phase as rt-app runs it: what the round trip
// must give back.
type rtPhase struct {
	instance    int32
	policy      string
	priority    int32
	run, period time.Duration // run 0: a timer alone; period 0: a run alone
	loops       int64         // -1: until the experiment ends
}

// back turns converted experiments back into rt-app phases per thread, from
// the manifests as YAML (what a user gets): loops from each experiment's
// duration.
func back(t *testing.T, exps []*v1alpha1.SchedExperiment) map[string][]rtPhase {
	t.Helper()
	out := map[string][]rtPhase{}
	for _, e := range exps {
		b, err := yaml.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var r v1alpha1.SchedExperiment
		if err := yaml.UnmarshalStrict(b, &r); err != nil {
			t.Fatalf("%s does not read back: %v\n%s", e.Name, err, b)
		}
		r.Spec.Default()
		if errs := validation.ValidateLocalSpec(&r.Spec, field.NewPath("spec")); len(errs) > 0 {
			t.Fatalf("%s is not a valid experiment: %v", e.Name, errs.ToAggregate())
		}
		for _, g := range r.Spec.Workload.Groups {
			p := rtPhase{instance: g.TaskCount(), policy: "SCHED_OTHER", loops: -1}
			switch g.Policy {
			case v1alpha1.PolicyBatch:
				p.policy = "SCHED_BATCH"
			case v1alpha1.PolicyIdle:
				p.policy = "SCHED_IDLE"
			}
			if g.Nice != nil {
				p.priority = *g.Nice
			}
			switch g.Pattern.Type {
			case v1alpha1.PatternPeriodic:
				p.run, p.period = g.Pattern.Run.Duration, g.Pattern.Period.Duration
			case v1alpha1.PatternLatencyProbe:
				p.period = g.Pattern.Interval.Duration
			case v1alpha1.PatternHog:
			default:
				t.Fatalf("%s/%s: pattern %s", e.Name, g.Name, g.Pattern.Type)
			}
			if p.period > 0 && len(exps) > 1 {
				p.loops = int64(r.Spec.Duration.Duration / p.period)
			}
			out[g.Name] = append(out[g.Name], p)
		}
	}
	return out
}

func convertFile(t *testing.T, name string) []*v1alpha1.SchedExperiment {
	t.Helper()
	f, err := os.Open("testdata/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	exps, err := Convert(f, name)
	if err != nil {
		t.Fatal(err)
	}
	return exps
}

func eq(t *testing.T, what string, got map[string][]rtPhase, want map[string][]rtPhase) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: threads %v, want %v", what, got, want)
	}
	for k, w := range want {
		g := got[k]
		if len(g) != len(w) {
			t.Errorf("%s: %s has %d phases, want %d", what, k, len(g), len(w))
			continue
		}
		for i := range w {
			if g[i] != w[i] {
				t.Errorf("%s: %s phase %d = %+v, want %+v", what, k, i+1, g[i], w[i])
			}
		}
	}
}

const ms = time.Millisecond

func TestPeriodicRoundTrips(t *testing.T) {
	exps := convertFile(t, "periodic")
	if len(exps) != 1 || exps[0].Name != "periodic" || exps[0].Spec.Duration.Duration != 2*time.Second {
		t.Fatalf("want one 2 s experiment named periodic, got %d (%s, %v)", len(exps), exps[0].Name, exps[0].Spec.Duration)
	}
	eq(t, "periodic", back(t, exps), map[string][]rtPhase{
		"thread0": {{instance: 1, policy: "SCHED_OTHER", run: 10 * ms, period: 100 * ms, loops: -1}},
		"batch":   {{instance: 2, policy: "SCHED_BATCH", priority: 5, loops: -1}},
		"probe":   {{instance: 1, policy: "SCHED_OTHER", period: 2 * ms, loops: -1}},
	})
}

func TestRampRoundTrips(t *testing.T) {
	exps := convertFile(t, "ramp")
	var want []rtPhase
	for i, run := range []time.Duration{1600, 4800, 8000, 11200, 14400} {
		want = append(want, rtPhase{instance: 1, policy: "SCHED_OTHER", run: run * time.Microsecond, period: 16 * ms, loops: 50})
		if exps[i].Name != "ramp-p"+string(rune('1'+i)) || exps[i].Spec.Duration.Duration != 800*ms {
			t.Errorf("step %d: %s lasting %v, want ramp-p%d lasting 800ms", i+1, exps[i].Name, exps[i].Spec.Duration, i+1)
		}
	}
	eq(t, "ramp", back(t, exps), map[string][]rtPhase{"ramp": want})
}

func TestStepRoundTrips(t *testing.T) {
	exps := convertFile(t, "step")
	if len(exps) != 2 {
		t.Fatalf("%d experiments, want 2", len(exps))
	}
	eq(t, "step", back(t, exps), map[string][]rtPhase{
		"step": {{instance: 1, policy: "SCHED_OTHER", run: 3200 * time.Microsecond, period: 16 * ms, loops: 125},
			{instance: 1, policy: "SCHED_OTHER", run: 11200 * time.Microsecond, period: 16 * ms, loops: 125}},
		"steady": {{instance: 2, policy: "SCHED_OTHER", priority: -5, run: 2 * ms, period: 8 * ms, loops: 250},
			{instance: 2, policy: "SCHED_OTHER", priority: -5, run: 2 * ms, period: 8 * ms, loops: 250}},
	})
}

// Every file of rt-app's own examples that schedlab cannot represent is
// refused at the exact path of the first key it cannot represent.
func TestRefusalsNameThePath(t *testing.T) {
	cases := []struct{ name, json, path, msg string }{
		{"sleep", `{"tasks": {"t": {"run": 10, "sleep": 10}}}`, "tasks.t.sleep", "sleep without a timer"},
		{"runtime", `{"tasks": {"t": {"runtime": 10, "timer": {"ref": "unique", "period": 100}}}}`, "tasks.t.runtime", "wall-clock"},
		{"fifo", `{"tasks": {"t": {"policy": "SCHED_FIFO", "run": 10}}}`, "tasks.t.policy", "fair-class"},
		{"deadline default", `{"global": {"default_policy": "SCHED_DEADLINE"}, "tasks": {"t": {"run": 10}}}`, "tasks.t.policy", "SCHED_DEADLINE"},
		{"cpus", `{"tasks": {"t": {"cpus": [0], "run": 10}}}`, "tasks.t.cpus", "no schedlab equivalent"},
		{"phase cpus", `{"tasks": {"t": {"loop": 1, "phases": {"a": {"cpus": [1], "run": 10}}}}}`, "tasks.t.phases.a.cpus", "no schedlab equivalent"},
		{"barrier", `{"tasks": {"t": {"loop": 1, "phases": {"a": {"run": 10}, "b": {"run": 5, "barrier": "x"}}}}}`, "tasks.t.phases.b.barrier", "barrier"},
		{"two runs", `{"tasks": {"t": {"run": 10, "timer": {"ref": "unique", "period": 100}, "run1": 5}}}`, "tasks.t.run1", "second run"},
		{"a repeated key", `{"tasks": {"t": {"run": 10, "timer": {"ref": "unique", "period": 100}, "run": 5,},}}`, "tasks.t.run", "second run"},
		{"shared timer", `{"tasks": {"t": {"instance": 2, "run": 10, "timer": {"ref": "t0", "period": 100}}}}`, "tasks.t.timer.ref", "unique"},
		{"run too long", `{"tasks": {"t": {"run": 200, "timer": {"ref": "unique", "period": 100}}}}`, "tasks.t.run", "shorter"},
		{"nice range", `{"tasks": {"t": {"priority": 30, "run": 10}}}`, "tasks.t.priority", "-20..19"},
		{"bad type", `{"tasks": {"t": {"run": "10"}}}`, "tasks.t.run", "integer"},
		{"unknown global", `{"global": {"durations": 3}, "tasks": {"t": {"run": 10}}}`, "global.durations", "unknown"},
		{"uneven steps", `{"tasks": {"a": {"loop": 1, "phases": {"x": {"loop": 10, "run": 1, "timer": {"ref": "unique", "period": 100}}}},
			"b": {"loop": 1, "phases": {"x": {"loop": 20, "run": 1, "timer": {"ref": "unique", "period": 100}}}}}}`, "tasks.b.phases.x.loop", "as long"},
		{"phases forever", `{"tasks": {"t": {"phases": {"a": {"run": 1, "timer": {"ref": "unique", "period": 100}}, "b": {"run": 1, "timer": {"ref": "unique", "period": 100}}}}}}`, "tasks.t.loop", "loop 1"},
		{"no tasks", `{"global": {"duration": 1}}`, "tasks", "no threads"},
	}
	for _, c := range cases {
		_, err := Convert(strings.NewReader(c.json), "x")
		var pe *PathError
		if !errors.As(err, &pe) || pe.Path != c.path || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s: got %v, want an error at %s saying %q", c.name, err, c.path, c.msg)
		}
	}
	// Not JSON at all: the line of the error.
	_, err := Convert(strings.NewReader("{\n \"tasks\": {\n  \"t\": {\"run\" 10}\n }\n}"), "x")
	if err == nil || !strings.HasPrefix(err.Error(), "line 3:") {
		t.Errorf("malformed JSON: %v, want the error's line (3)", err)
	}
}
