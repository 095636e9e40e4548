package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
)

func TestNoiseSources(t *testing.T) {
	ms := time.Millisecond
	before := map[int]procCPU{
		10: {name: "kdamond.0", start: 5, cpu: 100 * ms, threads: map[int]threadCPU{10: {cpu: 100 * ms, runs: 40, wakeups: 38}}},
		11: {name: "worker", start: 7, cpu: 0},
		12: {name: "go", start: 9, cpu: 500 * ms, threads: map[int]threadCPU{12: {cpu: 500 * ms, runs: 900}}}, // ended; pid 12 reused below
		13: {name: "idle-ish", start: 9, cpu: 1 * ms},                                                         // too little to name
		14: {name: "sshd", start: 3, cpu: 0},
		15: {name: "compile", start: 20, cpu: 0, threads: map[int]threadCPU{15: {}, 16: {cpu: 5 * ms, runs: 3}}},
		// A shell whose child cc1 ends within the window after 60 ms before
		// it: the shell reaps it, and of its children's CPU 400-100 ms,
		// 240 ms are the window's.
		50: {name: "sh", start: 30, cpu: 10 * ms, children: 100 * ms},
		51: {name: "cc1", start: 31, ppid: 50, cpu: 60 * ms},
		// A shell whose go command ends within the window after its test
		// binary, which had run 50 s before it: the shell's cutime grows by
		// both lives whole, 51.3 s, of which 0.3 s are the window's.
		60: {name: "bash", start: 2},
		61: {name: "go", start: 32, ppid: 60, cpu: time.Second},
		62: {name: "pkg.test", start: 33, ppid: 61, cpu: 50 * time.Second},
	}
	after := map[int]procCPU{
		// 0.2 s in 2 s: 0.1 CPU, in 50 runs after 40 wake-ups: 4 ms a wake-up.
		10: {name: "kdamond.0", start: 5, cpu: 300 * ms, threads: map[int]threadCPU{10: {cpu: 300 * ms, runs: 90, wakeups: 78, cpus: "0-1"}}},
		11: {name: "worker", start: 7, cpu: 1900 * ms}, // a worker: never named
		// Born in the window: all of it, 0.06; its thread too.
		12: {name: "link", start: 40, cpu: 120 * ms, threads: map[int]threadCPU{12: {cpu: 120 * ms, runs: 30, wakeups: 29}}},
		13: {name: "idle-ish", start: 9, cpu: 3 * ms}, // 0.001: below the floor
		14: {name: "sshd", start: 3, cpu: 40 * ms},    // 0.02, threads unread
		// 0.04: a busy thread, one below the thread floor, one gone.
		// Its busy thread waited 1.5 s of the 2 s on a run queue: 0.75.
		15: {name: "compile", start: 20, cpu: 80 * ms, threads: map[int]threadCPU{15: {cpu: 75 * ms, wait: 1500 * ms, runs: 10, wakeups: 9}, 16: {cpu: 5*ms + 500*time.Microsecond, runs: 4, wakeups: 1}}},
	}
	after[50] = procCPU{name: "sh", start: 30, cpu: 12 * ms, children: 400 * ms} // 0.121, 0.120 of it by cc1
	after[60] = procCPU{name: "bash", start: 2, children: 51300 * ms}            // 0.150, not 25
	for pid := 20; pid < 40; pid++ {                                             // 0.0025 each: past the count
		after[pid] = procCPU{name: "kworker", start: 1, cpu: 5 * ms}
	}
	got := noiseSources(before, after, map[int]bool{11: true}, 2)
	if len(got) != maxNoiseSources {
		t.Fatalf("%d sources, want %d: %+v", len(got), maxNoiseSources, got)
	}
	want := []v1alpha1.NoiseSource{
		{Name: "bash", PID: 60, CPU: 0.15, ExitedChildrenCPU: 0.15},
		{Name: "sh", PID: 50, CPU: 0.121, ExitedChildrenCPU: 0.12},
		{Name: "kdamond.0", PID: 10, CPU: 0.1, Threads: []v1alpha1.NoiseThread{{TID: 10, CPU: 0.1, Runs: 50, Wakeups: 40, CPUs: "0-1"}}},
		{Name: "link", PID: 12, CPU: 0.06, Threads: []v1alpha1.NoiseThread{{TID: 12, CPU: 0.06, Runs: 30, Wakeups: 29}}},
		{Name: "compile", PID: 15, CPU: 0.04, Threads: []v1alpha1.NoiseThread{{TID: 15, CPU: 0.0375, Runs: 10, Wakeups: 9, Wait: 0.75}}},
		{Name: "sshd", PID: 14, CPU: 0.02},
		{Name: "kworker", PID: 20, CPU: 0.003},
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("source %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if got[len(got)-1].PID != 29 {
		t.Errorf("last source %+v, want the kworker of pid 29 (ties by pid)", got[len(got)-1])
	}
	if s := FormatNoiseSources(got); s != "bash (pid 60) 0.150 (0.150 by its ended children), sh (pid 50) 0.121 (0.120 by its ended children), kdamond.0 (pid 10) 0.100, 13 more 0.150" {
		t.Errorf("FormatNoiseSources = %q", s)
	}
	if got := noiseSources(before, after, nil, 0); got != nil {
		t.Errorf("a window of no length named %+v", got)
	}
}

// statLine is a /proc/PID/stat line with the given flags, nice, real-time
// priority and policy.
func statLine(pid int, comm string, flags uint, nice int, rtprio, policy uint) string {
	f := make([]string, 52)
	for i := range f {
		f[i] = "0"
	}
	f[0], f[1], f[2] = fmt.Sprint(pid), "("+comm+")", "S"
	f[8], f[18], f[39], f[40] = fmt.Sprint(flags), fmt.Sprint(nice), fmt.Sprint(rtprio), fmt.Sprint(policy)
	return strings.Join(f, " ") + "\n"
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A fake host: the counters of a thread, and what describeNoise reads of a
// kernel thread, a FIFO thread in an idle cgroup (v1 and v2), and a nice
// thread in an autogroup.
func TestReadAndDescribeNoise(t *testing.T) {
	root := t.TempDir()
	proc := filepath.Join(root, "proc")
	writeFile(t, proc+"/78/task/78/schedstat", "81234567 2000 42\n")
	writeFile(t, proc+"/78/task/78/status", "Name:\tkdamond.0\nvoluntary_ctxt_switches:\t40\nnonvoluntary_ctxt_switches:\t2\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n")
	t0 := time.Now()
	th, ok := readThread(proc + "/78/task/78")
	if th.at.Before(t0) || th.at.After(time.Now()) {
		t.Errorf("read at %v, not while it was read", th.at)
	}
	th.at = time.Time{}
	if want := (threadCPU{cpu: 81234567, wait: 2000, runs: 42, wakeups: 40, cpus: "0-1"}); !ok || th != want {
		t.Errorf("readThread = %+v %v, want %+v", th, ok, want)
	}
	if _, ok := readThread(proc + "/99/task/99"); ok {
		t.Error("a thread that is gone was read")
	}
	writeFile(t, proc+"/78/stat", statLine(78, "kdamond.0", 0x208040, 0, 0, 0))
	writeFile(t, proc+"/78/task/78/stat", statLine(78, "kdamond.0", 0x208040, 0, 0, 0))
	writeFile(t, proc+"/78/cgroup", "2:cpuacct:/\n1:cpu:/\n0::/\n")
	writeFile(t, proc+"/78/autogroup", "")

	writeFile(t, proc+"/500/stat", statLine(500, "svc", 0x400000, 0, 0, 0))
	writeFile(t, proc+"/500/task/501/stat", statLine(501, "svc-rt", 0x400040, 0, 50, 1))
	writeFile(t, proc+"/500/cgroup", "4:memory:/x\n3:cpu,cpuacct:/bg/job1\n0::/\n")
	writeFile(t, proc+"/500/autogroup", "/autogroup-7 nice 0\n")
	writeFile(t, root+"/sys/fs/cgroup/cpu/bg/cpu.shares", "3\n")
	writeFile(t, root+"/sys/fs/cgroup/cpu/bg/cpu.idle", "1\n")

	writeFile(t, proc+"/600/stat", statLine(600, "make", 0x400000, 5, 0, 3))
	writeFile(t, proc+"/600/task/600/stat", statLine(600, "make", 0x400000, 5, 0, 3))
	writeFile(t, proc+"/600/cgroup", "1:cpu:/\n")
	writeFile(t, proc+"/600/autogroup", "/autogroup-4210 nice -3\n")

	srcs := []v1alpha1.NoiseSource{
		{Name: "kdamond.0", PID: 78, Threads: []v1alpha1.NoiseThread{{TID: 78}}},
		{Name: "svc", PID: 500, Threads: []v1alpha1.NoiseThread{{TID: 501}}},
		{Name: "make", PID: 600, Threads: []v1alpha1.NoiseThread{{TID: 600}}},
		{Name: "gone", PID: 700, Threads: []v1alpha1.NoiseThread{{TID: 700}}},
	}
	describeNoise(host.NewFS(root), proc, host.CgroupV1, "/sys/fs/cgroup/cpu", srcs)
	want := []v1alpha1.NoiseSource{
		{Name: "kdamond.0", PID: 78, KernelThread: true, Cgroup: "/", Threads: []v1alpha1.NoiseThread{{TID: 78, Name: "kdamond.0", Policy: "Other"}}},
		{Name: "svc", PID: 500, Cgroup: "/bg/job1", CgroupShares: 3, CgroupIdle: true, Autogroup: 7, Threads: []v1alpha1.NoiseThread{{TID: 501, Name: "svc-rt", Policy: "FIFO", RTPriority: 50}}},
		{Name: "make", PID: 600, Cgroup: "/", Autogroup: 4210, AutogroupNice: -3, Threads: []v1alpha1.NoiseThread{{TID: 600, Name: "make", Policy: "Batch", Nice: 5}}},
		{Name: "gone", PID: 700, Threads: []v1alpha1.NoiseThread{{TID: 700}}},
	}
	for i := range want {
		if !reflect.DeepEqual(srcs[i], want[i]) {
			t.Errorf("source %d:\n got %+v\nwant %+v", i, srcs[i], want[i])
		}
	}

	// cgroup v2: the unified line, cpu.weight scaled to shares.
	writeFile(t, proc+"/500/cgroup", "0::/bg/job1\n")
	writeFile(t, root+"/sys/fs/cgroup/bg/cpu.weight", "50\n")
	writeFile(t, root+"/sys/fs/cgroup/bg/cpu.idle", "0\n")
	v2 := []v1alpha1.NoiseSource{{Name: "svc", PID: 500}}
	describeNoise(host.NewFS(root), proc, host.CgroupV2, "/sys/fs/cgroup", v2)
	if s := v2[0]; s.Cgroup != "/bg/job1" || s.CgroupShares != 512 || s.CgroupIdle {
		t.Errorf("v2: %+v, want cgroup /bg/job1, shares 512, not idle", s)
	}
}

// TestCountsOverWindow: counts read between the readings around a window
// are scaled to the window; rates stay.
func TestCountsOverWindow(t *testing.T) {
	srcs := []v1alpha1.NoiseSource{{CPU: 0.075, Threads: []v1alpha1.NoiseThread{{CPU: 0.075, Runs: 110, Wakeups: 83}}}}
	cgs := []v1alpha1.ForeignCgroup{{CPU: 0.5, Wakeups: 330}}
	countsOverWindow(srcs, cgs, 3.0/3.3)
	th := srcs[0].Threads[0]
	if th.Runs != 100 || th.Wakeups != 75 || cgs[0].Wakeups != 300 {
		t.Errorf("runs %d, wake-ups %d, cgroup wake-ups %d over a 3 s window read over 3.3 s: want 100, 75, 300", th.Runs, th.Wakeups, cgs[0].Wakeups)
	}
	if th.CPU != 0.075 || srcs[0].CPU != 0.075 || cgs[0].CPU != 0.5 {
		t.Errorf("rates changed: %+v %+v", srcs[0], cgs[0])
	}
	countsOverWindow(srcs, cgs, 1.2) // a window longer than the readings' interval: left alone
	if srcs[0].Threads[0].Wakeups != 75 {
		t.Errorf("wake-ups %d after a factor over 1, want 75", srcs[0].Threads[0].Wakeups)
	}
}
