package nodeagent

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
)

// The top-level cgroups of a v1 and a v2 hierarchy: weight and idle flag,
// their own CPU counter where there is one, PSI where there is one, and
// the threads of the whole subtree; schedlab's own parent is left out.
func TestReadForeignCgroups(t *testing.T) {
	root := t.TempDir()
	v1 := root + "/sys/fs/cgroup/cpu"
	writeFile(t, v1+"/cpu.shares", "1024\n")
	writeFile(t, v1+"/tasks", "1\n2\n")
	writeFile(t, v1+"/schedlab/tasks", "900\n")
	// An idle cgroup reads shares 3 once cpu.idle is set
	// (sched_group_set_idle()); its job's threads are counted in it.
	writeFile(t, v1+"/builds/cpu.shares", "3\n")
	writeFile(t, v1+"/builds/cpu.idle", "1\n")
	writeFile(t, v1+"/builds/cpu.stat", "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n")
	writeFile(t, v1+"/builds/tasks", "101\n102\n")
	writeFile(t, v1+"/builds/job1/tasks", "103\n")
	writeFile(t, v1+"/builds/job1/cpu.shares", "1024\n")
	// cpuacct mounted with cpu: its counter.
	writeFile(t, v1+"/kubepods/cpu.shares", "2048\n")
	writeFile(t, v1+"/kubepods/cpu.idle", "0\n")
	writeFile(t, v1+"/kubepods/cpuacct.usage", "5000000\n")
	writeFile(t, v1+"/kubepods/tasks", "")
	writeFile(t, v1+"/kubepods/besteffort/tasks", "300\n")
	fsys := host.NewFS(root)
	got := readForeignCgroups(fsys, host.CgroupV1, "/sys/fs/cgroup/cpu")
	want := map[string]cgroupSample{
		"/builds":   {shares: 3, idle: true, tids: []int{101, 102, 103}},
		"/kubepods": {shares: 2048, usage: 5 * time.Millisecond, hasUsage: true, tids: []int{300}},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(cgroupSample{})); d != "" {
		t.Errorf("v1 (-want +got):\n%s", d)
	}

	v2 := root + "/sys/fs/cgroup/unified"
	writeFile(t, v2+"/cgroup.threads", "1\n")
	writeFile(t, v2+"/best/cpu.weight", "1\n")
	writeFile(t, v2+"/best/cpu.idle", "1\n")
	writeFile(t, v2+"/best/cpu.stat", "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n")
	writeFile(t, v2+"/best/cpu.pressure", "some avg10=1.00 avg60=0.50 avg300=0.10 total=2500000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
	writeFile(t, v2+"/best/cgroup.threads", "")
	writeFile(t, v2+"/best/pod/cgroup.threads", "400\n401\n")
	// No PSI (psi=0): no pressure.
	writeFile(t, v2+"/system.slice/cpu.weight", "100\n")
	writeFile(t, v2+"/system.slice/cpu.stat", "usage_usec 7\n")
	writeFile(t, v2+"/system.slice/cgroup.threads", "500\n")
	got = readForeignCgroups(fsys, host.CgroupV2, "/sys/fs/cgroup/unified")
	want = map[string]cgroupSample{
		// cpu.weight 1 is 10 shares (DIV_ROUND_CLOSEST(1 × 1024, 100)).
		"/best":         {shares: 10, idle: true, usage: 1500 * time.Microsecond, hasUsage: true, pressure: 2500 * time.Millisecond, hasPressure: true, tids: []int{400, 401}},
		"/system.slice": {shares: 1024, usage: 7 * time.Microsecond, hasUsage: true, tids: []int{500}},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(cgroupSample{})); d != "" {
		t.Errorf("v2 (-want +got):\n%s", d)
	}
	if got := readForeignCgroups(fsys, "", ""); got != nil {
		t.Errorf("no cpu hierarchy: %v, want nil", got)
	}
}

// A window's foreign cgroups: two idle spinners starved beside hogs are
// two threads runnable all the window though they used 0.004 CPU; a
// cgroup's own counter takes the place of its threads' CPU; PSI's some
// is kept where the hierarchy has it; a cgroup with next to nothing
// runnable is left out.
func TestForeignCgroups(t *testing.T) {
	ms := time.Millisecond
	before := map[string]cgroupSample{
		"/builds":       {shares: 3, idle: true, tids: []int{101, 102, 103}},
		"/kubepods":     {shares: 2048, usage: 5 * ms, hasUsage: true, pressure: time.Second, hasPressure: true, tids: []int{300}},
		"/system.slice": {shares: 1024, tids: []int{500}},
	}
	after := map[string]cgroupSample{
		// 103 ended; 104 was born in the window; 105's tid was reused
		// (its counters went back).
		"/builds":       {shares: 3, idle: true, tids: []int{101, 102, 103, 104, 105}},
		"/kubepods":     {shares: 2048, usage: 405 * ms, hasUsage: true, pressure: 2 * time.Second, hasPressure: true, tids: []int{300}},
		"/system.slice": {shares: 1024, tids: []int{500}},
		"/new":          {shares: 1024, usage: 50 * ms, hasUsage: true}, // no before: its threads' CPU (none)
	}
	tb := map[int]threadCPU{
		101: {cpu: 10 * ms, wait: 1000 * ms, runs: 5},
		102: {cpu: 10 * ms, wait: 1000 * ms, runs: 5},
		103: {cpu: 10 * ms, wait: 1000 * ms, runs: 5},
		105: {cpu: 900 * ms, wait: 9000 * ms, runs: 500, wakeups: 400},
		300: {cpu: 5 * ms, wait: 0, runs: 10, wakeups: 10},
		500: {cpu: 100 * ms, wait: 1 * ms, runs: 100, wakeups: 100},
	}
	ta := map[int]threadCPU{
		// 2 s: each spinner ran 4 ms and waited 1.996 s more.
		101: {cpu: 14 * ms, wait: 2996 * ms, runs: 7},
		102: {cpu: 14 * ms, wait: 2996 * ms, runs: 7},
		104: {cpu: 2 * ms, wait: 998 * ms, runs: 2, wakeups: 1},
		105: {cpu: 1 * ms, wait: 499 * ms, runs: 1},
		300: {cpu: 405 * ms, wait: 100 * ms, runs: 30, wakeups: 30},
		// 1 µs more in the window: below the floor.
		500: {cpu: 100*ms + 1000, wait: 1 * ms, runs: 101, wakeups: 101},
	}
	// A thread read 0.5 s later at the second sample than at the first
	// (a busy node's reading): 2.5 s runnable over its own 2.5 s, one
	// thread, not 1.25 over the 2 s of the samples.
	t0 := time.Unix(1000, 0)
	before["/late"] = cgroupSample{shares: 1024, tids: []int{600}}
	after["/late"] = cgroupSample{shares: 1024, tids: []int{600}}
	tb[600] = threadCPU{cpu: time.Second, runs: 1, at: t0}
	ta[600] = threadCPU{cpu: 1500 * ms, wait: 2000 * ms, runs: 2, at: t0.Add(2500 * ms)}
	got := foreignCgroups(before, after, tb, ta, 2)
	some := 0.5
	want := []v1alpha1.ForeignCgroup{
		// (4+4+2+1 ms on a CPU, 1996+1996+998+499 ms waiting) / 2 s.
		{Path: "/builds", Shares: 3, Idle: true, CPU: 0.0055, CPUSource: "Threads", Threads: 4, Runnable: 2.75, Wait: 2.7445, Wakeups: 1},
		{Path: "/late", Shares: 1024, CPU: 0.2, CPUSource: "Threads", Threads: 1, Runnable: 1, Wait: 0.8},
		{Path: "/kubepods", Shares: 2048, CPU: 0.2, CPUSource: "Cgroup", Threads: 1, Runnable: 0.25, Wait: 0.05, Wakeups: 20, PressureSome: &some},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if s := FormatForeignCgroups(got[:1]); s != "/builds (cpu.idle) 0.0055 CPUs (its threads'), 2.75 threads runnable (2.74 waiting) of 4" {
		t.Errorf("formatted %q", s)
	}
	if got := foreignCgroups(before, after, tb, ta, 0); got != nil {
		t.Errorf("no interval: %v, want nil", got)
	}
}
