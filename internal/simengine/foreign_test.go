package simengine

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// A Foreign task takes its CPU from the workload but is in no result: not
// a group, not in the shares, not in the CPU utilization.
func TestForeignTasksLeftOut(t *testing.T) {
	in := func(foreign bool) Input {
		in := Input{Node: Node{CPUs: 2}, DurationNs: 4e9, WarmupNs: 5e8, Seed: 1,
			Groups: []Group{{Name: "w", Tasks: 2, Pattern: Pattern{Type: Hog}}}}
		if foreign {
			// 2 ms every 20 ms: 0.1 CPU.
			in.Groups = append(in.Groups, Group{Name: "other", Tasks: 1, Root: true,
				Pattern: Pattern{Type: Foreign, MeanRunNs: 2_000_000, MeanSleepNs: 18_000_000}})
		}
		return in
	}
	alone, with := mustRun(t, in(false)), mustRun(t, in(true))
	if len(with.Groups) != 1 || with.Groups[0].Name != "w" {
		t.Fatalf("groups %+v, want only w", with.Groups)
	}
	w := with.Groups[0].Metrics
	near(t, "hogs' CPU alone", alone.Groups[0].Metrics.CPU, 2, 0.01)
	near(t, "hogs' CPU beside the foreign task", w.CPU, 1.9, 0.03)
	near(t, "hogs' share", w.Share, 1, 1e-9)
	var util float64
	for _, u := range with.CPUUtilization {
		util += u
	}
	near(t, "CPU utilization (the workload's)", util, w.CPU, 0.01)
}

// foreignRun draws Erlang-4 bursts: the mean asked for, a coefficient of
// variation of 0.5.
func TestForeignRunDistribution(t *testing.T) {
	s := &sim{}
	tk := &task{pat: taskPattern{MeanRunNs: 1_500_000}, rng: rand.New(rand.NewPCG(3, 4))}
	const n = 40000
	var sum, sq float64
	for range n {
		x := float64(s.foreignRun(tk))
		sum += x
		sq += x * x
	}
	mean := sum / n
	cv := math.Sqrt(sq/n-mean*mean) / mean
	near(t, "mean burst (ms)", mean/1e6, 1.5, 0.02)
	near(t, "coefficient of variation", cv, 0.5, 0.02)
}

// Foreign tasks schedule in their group: two of them that would each
// take a whole CPU share one CPU with a Hog in an autogroup of its own. In
// the root task group (kernel threads) they are two entities beside the
// hog's group entity, so the hog gets a third; in one session of their
// own, one group entity against one, so the hog gets half; in a cgroup
// with cpu.idle, an idle entity, which a non-idle one beats (weight 3
// against 1024: sched_group_set_idle(), v6.12), so the hog gets almost all.
func TestForeignGroups(t *testing.T) {
	hog := func(f Group, parent *Group) float64 {
		in := Input{Node: Node{CPUs: 1}, DurationNs: 4e9, WarmupNs: 5e8, Seed: 1,
			Groups: []Group{{Name: "hog", Session: "batch", Tasks: 1, Pattern: Pattern{Type: Hog}}}}
		if parent != nil {
			in.Groups = append(in.Groups, *parent)
		}
		f.Tasks = 2
		f.Pattern = Pattern{Type: Foreign, MeanRunNs: 500_000_000, MeanSleepNs: 1000}
		in.Groups = append(in.Groups, f)
		r := mustRun(t, in)
		if len(r.Groups) != 1 {
			t.Fatalf("groups %+v, want only the hog", r.Groups)
		}
		return r.Groups[0].Metrics.CPU
	}
	near(t, "the hog's CPU beside two root tasks", hog(Group{Name: "f", Root: true}, nil), 1.0/3, 0.03)
	near(t, "the hog's CPU beside two tasks of one session", hog(Group{Name: "f", Session: "other"}, nil), 0.5, 0.03)
	idle := Group{Name: "bg", Replicas: 1, CPUIdle: true, Pattern: Pattern{Type: Foreign, MeanRunNs: 1000, MeanSleepNs: 1000}}
	near(t, "the hog's CPU beside two tasks of an idle cgroup", hog(Group{Name: "f", Parent: "bg"}, &idle), 0.997, 0.01)
}

func TestForeignValidation(t *testing.T) {
	for _, g := range []Group{
		{Name: "x", Tasks: 1, Root: true, Session: "s", Pattern: Pattern{Type: Foreign, MeanRunNs: 1000, MeanSleepNs: 1000}},
		{Name: "x", Tasks: 1, Root: true, CPUWeight: 50, Pattern: Pattern{Type: Hog}},
		{Name: "x", Tasks: 1, Pattern: Pattern{Type: Foreign, MeanRunNs: 10, MeanSleepNs: 1000}},
	} {
		_, err := Run(Input{Node: Node{CPUs: 2}, DurationNs: 1e8, Groups: []Group{g}})
		if err == nil || !strings.Contains(err.Error(), "groups[0]") && !strings.Contains(err.Error(), "x") {
			t.Errorf("%+v: error %v, want one naming the group", g, err)
		}
	}
}
