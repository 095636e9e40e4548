package experiment

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/simengine"
)

func noiseWindows() []v1alpha1.WindowResult {
	g := []v1alpha1.GroupMeasurement{{Name: "hogs"}}
	kd := v1alpha1.NoiseSource{Name: "kdamond.0", PID: 78, CPU: 0.01, KernelThread: true, Cgroup: "/",
		Threads: []v1alpha1.NoiseThread{{TID: 78, CPU: 0.01, Runs: 30, Wakeups: 20, Policy: "Other", CPUs: "0-1"}}}
	return []v1alpha1.WindowResult{
		{Variant: "on", Repetition: 0, NoiseCPU: 0.05, Groups: g, NoiseSources: []v1alpha1.NoiseSource{
			kd,
			{Name: "bash", PID: 500, CPU: 0.004, Cgroup: "/", Autogroup: 42, Threads: []v1alpha1.NoiseThread{
				{TID: 500, CPU: 0.004, Runs: 50, Wakeups: 40, Policy: "Other", Nice: 5, CPUs: "1"}}},
			{Name: "link", PID: 600, CPU: 0.02, Cgroup: "/devbg/job", CgroupShares: 3, CgroupIdle: true, Autogroup: 7, Threads: []v1alpha1.NoiseThread{
				{TID: 600, CPU: 0.02, Runs: 3, Wakeups: 0, Policy: "Batch", CPUs: "0-1"}}},
			{Name: "migration/0", PID: 20, CPU: 0.003, KernelThread: true, Cgroup: "/", Threads: []v1alpha1.NoiseThread{
				{TID: 20, CPU: 0.003, Runs: 100, Wakeups: 100, Policy: "FIFO", RTPriority: 99, CPUs: "0"}}},
			{Name: "pinned", PID: 700, CPU: 0.002, Cgroup: "/", Threads: []v1alpha1.NoiseThread{
				{TID: 700, CPU: 0.002, Runs: 5, Wakeups: 5, Policy: "Other", CPUs: "7"}}},
		}},
		{Variant: "on", Repetition: 1, NoiseCPU: 0.03, Groups: g, NoiseSources: []v1alpha1.NoiseSource{kd}},
		{Variant: "off", Repetition: 0, NoiseCPU: 0.02, Groups: g}, // an older window: no sources
		{Variant: "x", Unsupported: "no autogroup", NoiseSources: []v1alpha1.NoiseSource{kd}},
	}
}

// The noise threads of a node's windows become Foreign tasks in their
// groups, with their mean CPU, wake-up rate and burst per variant.
func TestForeignTasks(t *testing.T) {
	f := ForeignTasks(2, 10*time.Second, noiseWindows())
	if _, ok := f["off"]; ok || len(f) != 1 {
		t.Fatalf("variants %v, want only on (off has no sources, x was not run)", f)
	}
	fg := func(run, sleep int64) simengine.Pattern {
		return simengine.Pattern{Type: simengine.Foreign, MeanRunNs: run, MeanSleepNs: sleep}
	}
	want := []simengine.Group{
		// Two windows of 10 s: 0.01 CPU in both, 20 wake-ups in each:
		// 5 ms every 500 ms.
		{Name: "foreign:0/kdamond.0/78/78", Tasks: 1, Root: true, KernelThread: true, Policy: "Other", Pattern: fg(5_000_000, 495_000_000)},
		// In one window of two: 40 ms in 40 wake-ups over 20 s.
		{Name: "foreign:0/bash/500/500", Tasks: 1, Nice: 5, Policy: "Other", CPUs: []int32{1}, Session: "foreign:0/autogroup-42",
			AddressSpace: "foreign:0/pid-500", Pattern: fg(1_000_000, 499_000_000)},
		// Never blocked in the window it was seen in: one burst of its
		// 200 ms, runnable all that window (9.8 s of it waiting), asleep
		// in the other.
		{Name: "foreign:0/cgroup/devbg", Replicas: 1, CPUShares: 3, CPUIdle: true, Pattern: fg(1000, 1000)},
		{Name: "foreign:0/link/600/600", Tasks: 1, Policy: "Batch", Parent: "foreign:0/cgroup/devbg", AddressSpace: "foreign:0/pid-600",
			Pattern: fg(200_000_000, 10_000_000_000)},
	}
	if got := f["on"]; !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
	// The background load counts what the tasks do not: (0.05-0.034 +
	// 0.03-0.01 + 0.02) / 3 windows / 2 CPUs.
	cal := WithWindowNoise(nil, noiseWindows(), 2)
	near := func(got, want float64) bool { return got > want-1e-9 && got < want+1e-9 }
	if !near(cal.BackgroundLoad, (0.016+0.02+0.02)/3/2) {
		t.Errorf("background load %v, want %v", cal.BackgroundLoad, (0.016+0.02+0.02)/3/2)
	}
	// link asks for 200 ms in 10.2 s of its own (it got 200 ms in 20 s).
	if n, cpu := ForeignSummary(f); n != 3 || !near(cpu, 0.01+0.002+0.2/10.2) {
		t.Errorf("summary %d tasks %.4f CPUs, want 3 and %.4f", n, cpu, 0.01+0.002+0.2/10.2)
	}
}

// A thread that waited on a run queue (schedstat's run_delay) was
// runnable, not asleep, for that time: its sleeps are what is left. An
// idle-class build beside hogs got 0.003 CPU in 2 bursts over 10 s and
// waited 9.9 s of them: it sleeps 35 ms per burst, not 4.985 s.
func TestForeignTasksWait(t *testing.T) {
	g := []v1alpha1.GroupMeasurement{{Name: "hogs"}}
	ws := []v1alpha1.WindowResult{{Variant: "on", Groups: g, NoiseSources: []v1alpha1.NoiseSource{
		{Name: "compile", PID: 9809, CPU: 0.003, Cgroup: "/devbg", CgroupShares: 3, CgroupIdle: true, Threads: []v1alpha1.NoiseThread{
			{TID: 9812, CPU: 0.003, Runs: 14, Wakeups: 2, Wait: 0.99, Policy: "Idle", Nice: 19, CPUs: "0-1"}}},
		{Name: "kdamond.0", PID: 78, CPU: 0.01, KernelThread: true, Cgroup: "/", Threads: []v1alpha1.NoiseThread{
			{TID: 78, CPU: 0.01, Runs: 30, Wakeups: 20, Policy: "Other", CPUs: "0-1"}}},
	}}}
	got := ForeignTasks(2, 10*time.Second, ws)["on"]
	want := []simengine.Group{
		// No wait measured: 5 ms every 500 ms, as before.
		{Name: "foreign:0/kdamond.0/78/78", Tasks: 1, Root: true, KernelThread: true, Policy: "Other",
			Pattern: simengine.Pattern{Type: simengine.Foreign, MeanRunNs: 5_000_000, MeanSleepNs: 495_000_000}},
		{Name: "foreign:0/cgroup/devbg", Replicas: 1, CPUShares: 3, CPUIdle: true,
			Pattern: simengine.Pattern{Type: simengine.Foreign, MeanRunNs: 1000, MeanSleepNs: 1000}},
		// 15 ms bursts, 5 s of window each, 4.95 s of it waiting.
		{Name: "foreign:0/compile/9809/9812", Tasks: 1, Nice: 19, Policy: "Idle", Parent: "foreign:0/cgroup/devbg",
			AddressSpace: "foreign:0/pid-9809", Pattern: simengine.Pattern{Type: simengine.Foreign, MeanRunNs: 15_000_000, MeanSleepNs: 35_000_000}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
	// An older agent's run has no wait; a thread that never blocked
	// (0 wake-ups) was waiting whenever it was not running: 0.997 of 10 s,
	// so it sleeps the 1 µs floor between its 30 ms bursts.
	th := &ws[0].NoiseSources[0].Threads[0]
	th.Wait, th.Wakeups = 0, 0
	got = ForeignTasks(2, 10*time.Second, ws)["on"]
	want[2].Pattern = simengine.Pattern{Type: simengine.Foreign, MeanRunNs: 30_000_000, MeanSleepNs: 1000}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("never blocked: got\n%+v\nwant\n%+v", got, want)
	}
	// A normal thread that got little CPU without blocking was not
	// runnable all the window (it would have had its fair share): it keeps
	// its sleep, or it would run as a hog beside the workload.
	th.Policy = "Other"
	ws[0].NoiseSources[0].CgroupIdle = false
	found := false
	for _, g := range ForeignTasks(2, 10*time.Second, ws)["on"] {
		if strings.HasSuffix(g.Name, "/9812") {
			found = true
			if g.Pattern.MeanSleepNs < 9_000_000_000 {
				t.Errorf("a normal thread that never blocked sleeps %d ns between its 30 ms bursts, want the rest of the 10 s window", g.Pattern.MeanSleepNs)
			}
		}
	}
	if !found {
		t.Error("the normal thread is not among the foreign tasks")
	}
}

// A window's foreign cgroups run at the root with their weight and idle
// flag, and what they did beyond their listed threads runs in them as
// tasks: two idle spinners starved beside hogs (0.004 CPU, runnable 2.0
// threads, never blocking) are two tasks that are always runnable, not
// nothing, as they were when their threads fell below the noise floors.
func TestForeignTasksCgroups(t *testing.T) {
	g := []v1alpha1.GroupMeasurement{{Name: "hogs"}}
	fg := func(run, sleep int64) simengine.Pattern {
		return simengine.Pattern{Type: simengine.Foreign, MeanRunNs: run, MeanSleepNs: sleep}
	}
	ws := []v1alpha1.WindowResult{
		{Variant: "on", Groups: g, NoiseCPU: 0.01, ForeignCgroups: []v1alpha1.ForeignCgroup{
			{Path: "/spin", Shares: 3, Idle: true, CPU: 0.004, CPUSource: "Threads", Threads: 2, Runnable: 2.0, Wait: 1.996},
			// A service cgroup: 0.003 CPU in 100 wake-ups a second over 3 threads.
			{Path: "/system.slice", Shares: 1024, CPU: 0.003, CPUSource: "Cgroup", Threads: 3, Runnable: 0.0035, Wait: 0.0005, Wakeups: 1000},
		}},
		{Variant: "on", Groups: g, NoiseCPU: 0.01, ForeignCgroups: []v1alpha1.ForeignCgroup{
			{Path: "/spin", Shares: 3, Idle: true, CPU: 0.004, CPUSource: "Threads", Threads: 2, Runnable: 2.0, Wait: 1.996},
		}},
	}
	got := ForeignTasks(2, 10*time.Second, ws)["on"]
	want := []simengine.Group{
		{Name: "foreign:0/cgroup/spin", Replicas: 1, CPUShares: 3, CPUIdle: true, Pattern: fg(1000, 1000)},
		// Two tasks runnable all of the 20 s, one burst of 20 ms per window
		// each (0.004 CPU × 10 s × 2 windows / 2 tasks / 2 bursts), one on
		// each CPU.
		{Name: "foreign:0/cgroup/spin/rest", Tasks: 2, Parent: "foreign:0/cgroup/spin", TaskCPUs: [][]int32{{0}, {1}}, Pattern: fg(20_000_000, 1000)},
		{Name: "foreign:0/cgroup/system.slice", Replicas: 1, CPUShares: 1024, Pattern: fg(1000, 1000)},
		// In one window of two: runnable 0.00175 threads on average, one
		// task, 30 ms in 1000 wake-ups over 20 s: 30 µs bursts, 19.965 ms
		// sleeps, placed as the kernel places its wake-ups.
		{Name: "foreign:0/cgroup/system.slice/rest", Tasks: 1, Parent: "foreign:0/cgroup/system.slice", Pattern: fg(30_000, 19_965_000)},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if c, n := ForeignCgroupSummary(map[string][]simengine.Group{"on": got}); c != 2 || n != 3 {
		t.Errorf("summary %d cgroups %d tasks, want 2 and 3", c, n)
	}
	// Their CPU leaves the background load: (0.01-0.007 + 0.01-0.004) / 2 / 2.
	cal := WithWindowNoise(nil, ws, 2)
	if want := (0.003 + 0.006) / 2 / 2; math.Abs(cal.BackgroundLoad-want) > 1e-9 {
		t.Errorf("background load %v, want %v", cal.BackgroundLoad, want)
	}

	// A listed thread of the cgroup runs on its own and is taken out of
	// its rest: one spinner listed, one left; PSI's some (0.9 of the
	// window) stands for waits its threads' run_delay missed.
	some := 0.9
	one := []v1alpha1.WindowResult{{Variant: "on", Groups: g,
		NoiseSources: []v1alpha1.NoiseSource{{Name: "spin", PID: 42, CPU: 0.002, Cgroup: "/spin/a", CgroupShares: 3, CgroupIdle: true,
			Threads: []v1alpha1.NoiseThread{{TID: 42, CPU: 0.002, Runs: 5, Wait: 0.998, Policy: "Other", CPUs: "0-1"}}}},
		ForeignCgroups: []v1alpha1.ForeignCgroup{
			{Path: "/spin", Shares: 3, Idle: true, CPU: 0.004, CPUSource: "Threads", Threads: 2, Runnable: 2.0, Wait: 1.996},
			{Path: "/gone", Shares: 1024, CPU: 0.05, CPUSource: "Cgroup", Runnable: 0, PressureSome: &some},
		}}}
	got = ForeignTasks(2, 10*time.Second, one)["on"]
	want = []simengine.Group{
		{Name: "foreign:0/cgroup/spin", Replicas: 1, CPUShares: 3, CPUIdle: true, Pattern: fg(1000, 1000)},
		{Name: "foreign:0/spin/42/42", Tasks: 1, Policy: "Other", Parent: "foreign:0/cgroup/spin", AddressSpace: "foreign:0/pid-42", Pattern: fg(20_000_000, 1000)},
		// Its threads ended within the window: 0.95 runnable (0.05 on a
		// CPU, 0.9 waiting), one task with a burst of 500 ms and a sleep
		// of 500 ms.
		{Name: "foreign:0/cgroup/gone", Replicas: 1, CPUShares: 1024, Pattern: fg(1000, 1000)},
		{Name: "foreign:0/cgroup/gone/rest", Tasks: 1, Parent: "foreign:0/cgroup/gone", TaskCPUs: [][]int32{{0}}, Pattern: fg(500_000_000, 500_000_000)},
		{Name: "foreign:0/cgroup/spin/rest", Tasks: 1, Parent: "foreign:0/cgroup/spin", TaskCPUs: [][]int32{{0}}, Pattern: fg(20_000_000, 1000)},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("one listed (-want +got):\n%s", d)
	}
}

// Without noise threads (a run of an older agent, Simulate mode) the
// prediction is as it was: no Foreign tasks, the whole noise as background.
func TestForeignTasksNone(t *testing.T) {
	ws := noiseWindows()
	for i := range ws {
		for j := range ws[i].NoiseSources {
			ws[i].NoiseSources[j].Threads = nil
		}
	}
	if f := ForeignTasks(2, 10*time.Second, ws); f != nil {
		t.Errorf("foreign tasks %v from windows without threads", f)
	}
	if f := ForeignTasks(2, 10*time.Second); f != nil {
		t.Errorf("foreign tasks %v without windows", f)
	}
	cal := WithWindowNoise(nil, ws, 2)
	if want := (0.05 + 0.03 + 0.02) / 3 / 2; cal.BackgroundLoad < want-1e-9 || cal.BackgroundLoad > want+1e-9 {
		t.Errorf("background load %v, want %v", cal.BackgroundLoad, want)
	}
	// And the simulation input is the same as with no options at all.
	spec := &v1alpha1.SchedExperimentSpec{Duration: metav1.Duration{Duration: time.Second}, Variants: []v1alpha1.Variant{{Name: "on"}},
		Workload: v1alpha1.Workload{Groups: []v1alpha1.Group{{Name: "hogs", Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}}}}}
	shape := ShapeForKernel(2, "6.18")
	a, err1 := SimInput(spec, 0, shape, PredictOptions{})
	b, err2 := SimInput(spec, 0, shape, PredictOptions{Foreign: ForeignTasks(2, time.Second, ws)})
	if err1 != nil || err2 != nil || !reflect.DeepEqual(a, b) {
		t.Errorf("inputs differ without noise threads (%v, %v)", err1, err2)
	}
	c, _ := SimInput(spec, 0, shape, PredictOptions{Foreign: ForeignTasks(2, time.Second, noiseWindows())})
	// The four threads' groups, and the agent's cgroup the workload then
	// goes under (TestForeignTasksBesideTheRunsCgroup).
	if len(c.Groups) != len(a.Groups)+5 {
		t.Errorf("%d groups with the noise threads, want %d", len(c.Groups), len(a.Groups)+5)
	}
}

// On the node the run's cgroups are children of the agent's (schedlab/<run>),
// and the other processes' threads compete with that cgroup at the root, not
// with the workload's groups: with Foreign tasks the workload goes under the
// agent's parent, the Foreign groups stay where ForeignTasks put them, and
// the parent is in no prediction. A cpu.idle cgroup's thread beside the
// workload's groups doubled mixed's late burst wake-ups in the replays of the
// ninth session's runs; beside their parent it does not, as on the node
// (docs/latency-tail.md).
func TestForeignTasksBesideTheRunsCgroup(t *testing.T) {
	spec := &v1alpha1.SchedExperimentSpec{Duration: metav1.Duration{Duration: 200 * time.Millisecond}, Variants: []v1alpha1.Variant{{Name: "on"}},
		Workload: v1alpha1.Workload{Groups: []v1alpha1.Group{
			{Name: "hogs", Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}},
			{Name: "pod", Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}},
			{Name: "ctr", Parent: "pod", Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}},
		}}}
	shape := ShapeForKernel(2, "6.18")
	opts := PredictOptions{Foreign: ForeignTasks(2, time.Second, noiseWindows())}
	in, err := SimInput(spec, 0, shape, opts)
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string]string{}
	for i, g := range in.Groups {
		parents[g.Name] = g.Parent
		if i == 0 && (g.Name != agentParent || g.Tasks != 0 || g.CPUWeight != 100) {
			t.Fatalf("first group %+v, want the agent's cgroup (no tasks, weight 100)", g)
		}
		if strings.HasPrefix(g.Name, "foreign:") && g.Parent == agentParent {
			t.Errorf("foreign group %q under the agent's cgroup", g.Name)
		}
	}
	for name, want := range map[string]string{"hogs": agentParent, "pod": agentParent, "ctr": "pod"} {
		if got := parents[name]; got != want {
			t.Errorf("group %q has parent %q, want %q", name, got, want)
		}
	}
	// Without Foreign tasks nothing else is at the root: no parent.
	if in, _ := SimInput(spec, 0, shape, PredictOptions{}); in.Groups[0].Name == agentParent || in.Groups[0].Parent != "" {
		t.Errorf("without foreign tasks the first group is %+v", in.Groups[0])
	}
	preds, err := Predict(spec, []v1alpha1.NodeShape{shape}, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range preds {
		if p.Group == agentParent || strings.HasPrefix(p.Group, "foreign:") {
			t.Errorf("prediction for %q", p.Group)
		}
	}
}

// The autogroup-on probe beside a session of hogs, with a cpu.idle cgroup
// of one spinner per CPU as the window recorded it (starved: 0.004 CPU,
// 2 threads runnable): the idle group entity stays queued at the root,
// avg_vruntime() counts it, and the hogs' session more often keeps the CPU
// past the probe's wake-up to the tick. On the node (2 CPUs, 6.18.44,
// docs/latency-tail.md) the probe's wake-ups beyond 1 ms went from 0.0008
// to 0.0017 beside such a cgroup; before the agent recorded the cgroup the
// prediction did not move at all, nor with the cgroup's tasks all on CPU 0
// (where the simulation's fork put them), away from the probe's queue.
func TestIdleCgroupMovesTheAutogroupTail(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: simulates 2 × 4 seeds of 10 s")
	}
	reps := int32(4)
	spec := &v1alpha1.SchedExperimentSpec{Duration: metav1.Duration{Duration: 10 * time.Second},
		Variants:   []v1alpha1.Variant{{Name: "on", Knobs: v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupEnabled}}},
		Simulation: &v1alpha1.Simulation{Replicas: &reps},
		Workload: v1alpha1.Workload{Groups: []v1alpha1.Group{
			{Name: "hogs", Session: "batch", Tasks: ptr(int32(6)), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}},
			{Name: "probe", Session: "terminal", Tasks: ptr(int32(1)), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternLatencyProbe, Interval: &metav1.Duration{Duration: time.Millisecond}}},
		}}}
	shape := ShapeForKernel(2, "6.18")
	late := func(ws []v1alpha1.WindowResult) float64 {
		preds, err := Predict(spec, []v1alpha1.NodeShape{shape}, PredictOptions{Foreign: ForeignTasks(2, spec.Duration.Duration, ws)})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range preds {
			if p.Group == "probe" && p.Metrics.LateFraction != nil {
				return p.Metrics.LateFraction.Over1ms
			}
		}
		t.Fatal("no late fraction predicted for the probe")
		return 0
	}
	g := []v1alpha1.GroupMeasurement{{Name: "hogs"}, {Name: "probe"}}
	alone := late([]v1alpha1.WindowResult{{Variant: "on", Groups: g}})
	beside := late([]v1alpha1.WindowResult{{Variant: "on", Groups: g, ForeignCgroups: []v1alpha1.ForeignCgroup{
		{Path: "/spin", Shares: 3, Idle: true, CPU: 0.004, CPUSource: "Threads", Threads: 2, Runnable: 2.0, Wait: 1.996}}}})
	t.Logf("probe beyond 1 ms: %.5f alone, %.5f beside the idle cgroup", alone, beside)
	if beside < 1.5*alone || beside <= 0 {
		t.Errorf("beside a starved idle cgroup the probe is late beyond 1 ms %.5f of the time, alone %.5f: want at least 1.5 times as often", beside, alone)
	}
}

// A source's children that ended within the window (a shell's commands)
// run as tasks of their own beside it, in its scheduling group, with its
// policy, nice and CPUs, one child per wake-up of the parent's main
// thread; more than a CPU of them run side by side. Their CPU leaves the
// background load. Children counted in a recorded cgroup's CPU, and a
// kernel thread's, are not added again.
func TestForeignTasksEndedChildren(t *testing.T) {
	g := []v1alpha1.GroupMeasurement{{Name: "hogs"}}
	ws := []v1alpha1.WindowResult{{Variant: "on", NoiseCPU: 2.1, Groups: g, NoiseSources: []v1alpha1.NoiseSource{
		// A shell that ran 6 commands of 0.5 s each in the 10 s window.
		{Name: "bash", PID: 500, CPU: 0.302, ExitedChildrenCPU: 0.3, Cgroup: "/", Autogroup: 42, Threads: []v1alpha1.NoiseThread{
			{TID: 500, CPU: 0.002, Runs: 8, Wakeups: 6, Policy: "Other", Nice: 5, CPUs: "0-1"}}},
		// make -j2: 1.5 CPUs of compilers, 30 of them.
		{Name: "make", PID: 600, CPU: 1.5, ExitedChildrenCPU: 1.5, Cgroup: "/", Autogroup: 43, Threads: []v1alpha1.NoiseThread{
			{TID: 600, CPU: 0, Runs: 31, Wakeups: 30, Policy: "Batch"}}},
		// In a cgroup the window recorded: its CPU has the children's.
		{Name: "runner", PID: 700, CPU: 0.2, ExitedChildrenCPU: 0.2, Cgroup: "/ci/job", Threads: []v1alpha1.NoiseThread{
			{TID: 700, CPU: 0, Runs: 3, Wakeups: 2, Policy: "Other"}}},
		{Name: "kthreadd", PID: 2, CPU: 0.01, ExitedChildrenCPU: 0.01, KernelThread: true, Cgroup: "/"},
	}, ForeignCgroups: []v1alpha1.ForeignCgroup{{Path: "/ci", Shares: 1024, CPU: 0.2}}}}
	got := ForeignTasks(2, 10*time.Second, ws)["on"]
	byName := map[string]simengine.Group{}
	for _, g := range got {
		byName[g.Name] = g
	}
	fg := func(run, sleep int64) simengine.Pattern {
		return simengine.Pattern{Type: simengine.Foreign, MeanRunNs: run, MeanSleepNs: sleep}
	}
	want := map[string]simengine.Group{
		"foreign:0/bash/500/-1": {Name: "foreign:0/bash/500/-1", Tasks: 1, Nice: 5, Policy: "Other",
			Session: "foreign:0/autogroup-42", AddressSpace: "foreign:0/pid-500-children", Pattern: fg(500_000_000, 1_166_666_667)},
		// Two tasks of 0.75 CPU, 15 children each: 0.5 s every 2/3 s.
		"foreign:0/make/600/-1": {Name: "foreign:0/make/600/-1", Tasks: 2, Policy: "Batch",
			Session: "foreign:0/autogroup-43", AddressSpace: "foreign:0/pid-600-children", Pattern: fg(500_000_000, 166_666_667)},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, byName[name]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	for _, g := range got {
		if strings.HasSuffix(g.Name, "/-1") && want[g.Name].Name == "" {
			t.Errorf("ended children of %s run as tasks; they are counted elsewhere", g.Name)
		}
	}
	// The background load is what the tasks do not stand for: 2.1 CPUs of
	// noise less the children's 1.8, bash's own 0.002 and the cgroup's
	// 0.2, over 2 CPUs.
	if cal := WithWindowNoise(nil, ws, 2); math.Abs(cal.BackgroundLoad-0.098/2) > 1e-9 {
		t.Errorf("background load %v, want %v", cal.BackgroundLoad, 0.098/2)
	}
}

// The kernel takes a shell's commands' CPU from the tasks of the CPU they
// run on, not from every task alike: the stored campaign's cgroup-weights
// window beside 0.683 CPUs of a shell's ended children measured the light
// group (weight 100, 8 hogs) at 0.372 CPUs and the heavy one (weight 400,
// one hog) at 0.816; a uniform slowdown predicted 0.571 / 0.619. With the
// children as tasks the heavy group, alone on its CPU, keeps most of it.
func TestEndedChildrenTakeFromTheirCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: simulates 2 × 4 seeds of 10 s")
	}
	reps := int32(4)
	spec := &v1alpha1.SchedExperimentSpec{Duration: metav1.Duration{Duration: 10 * time.Second},
		Variants:   []v1alpha1.Variant{{Name: "stock"}},
		Simulation: &v1alpha1.Simulation{Replicas: &reps},
		Workload: v1alpha1.Workload{Groups: []v1alpha1.Group{
			{Name: "light", Tasks: ptr(int32(8)), CPUWeight: ptr(int32(100)), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}},
			{Name: "heavy", Tasks: ptr(int32(1)), CPUWeight: ptr(int32(400)), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}},
		}}}
	shape := ShapeForKernel(2, "6.18")
	g := []v1alpha1.GroupMeasurement{{Name: "light"}, {Name: "heavy"}}
	ws := []v1alpha1.WindowResult{{Variant: "stock", NoiseCPU: 0.69, Groups: g, NoiseSources: []v1alpha1.NoiseSource{
		{Name: "bash", PID: 500, CPU: 0.685, ExitedChildrenCPU: 0.683, Cgroup: "/", Autogroup: 42, Threads: []v1alpha1.NoiseThread{
			{TID: 500, CPU: 0.002, Runs: 9, Wakeups: 5, Policy: "Other", CPUs: "0-1"}}}}}}
	cpu := func(ws []v1alpha1.WindowResult, uniform bool) (light, heavy float64) {
		cal := WithWindowNoise(nil, ws, 2)
		o := PredictOptions{Foreign: ForeignTasks(2, spec.Duration.Duration, ws)}
		if uniform {
			// As before: the children were left in the background load.
			cal, o.Foreign = &v1alpha1.NodeCalibration{BackgroundLoad: 0.69 / 2}, nil
		}
		s, o := WithNodeCalibration(shape, cal, o)
		preds, err := Predict(spec, []v1alpha1.NodeShape{s}, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range preds {
			switch p.Group {
			case "light":
				light = p.Metrics.CPU
			case "heavy":
				heavy = p.Metrics.CPU
			}
		}
		return light, heavy
	}
	ul, uh := cpu(ws, true)
	l, h := cpu(ws, false)
	t.Logf("uniform slowdown: light %.3f heavy %.3f; children as tasks: light %.3f heavy %.3f (node: 0.372 / 0.816)", ul, uh, l, h)
	if h < 0.8 || l > 0.5 {
		t.Errorf("with the children as tasks light %.3f heavy %.3f, want the heavy group at 0.8 or more and the light one at 0.5 or less (node 0.372 / 0.816)", l, h)
	}
	if uh > 0.7 {
		t.Errorf("the uniform slowdown gives heavy %.3f: the test no longer tells the two apart", uh)
	}
}
