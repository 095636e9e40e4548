package nodeagent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// burstChildEnv makes the test binary a burst process: one thread that
// spins burstChildRun of its own CPU time every burstChildPeriod.
const burstChildEnv = "SCHEDLAB_NOISETEST_BURST"

const (
	burstChildRun    = 3 * time.Millisecond
	burstChildPeriod = 40 * time.Millisecond
)

func ownThreadCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

// startSelf starts the test binary as the child that env selects, in a
// process group of its own that the test's cleanup kills.
func startSelf(t *testing.T, env string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return cmd
}

// burstChild spins 3 ms of CPU every 40 ms on one OS thread, for a minute at
// most (its parent kills it sooner).
func burstChild() int {
	runtime.LockOSThread()
	end := time.Now().Add(time.Minute)
	next := time.Now()
	for time.Now().Before(end) {
		t0 := ownThreadCPU()
		for ownThreadCPU()-t0 < burstChildRun {
		}
		next = next.Add(burstChildPeriod)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		} else {
			next = time.Now()
		}
	}
	return 0
}

// TestRunMeasuresNoiseBursts: a process beside the workload that runs 3 ms
// bursts 25 times a second is named as a noise source with its thread's
// CPU (0.075), wake-ups and mean burst, and with its policy and group.
func TestRunMeasuresNoiseBursts(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("-short: measures a window on the real kernel")
	}
	cmd := startSelf(t, burstChildEnv)
	const length = 3 * time.Second
	w := oneHogWindow(t, "noiseburst", length, 300*time.Millisecond, 1).Windows[0]
	var src *v1alpha1.NoiseSource
	for i := range w.NoiseSources {
		if int(w.NoiseSources[i].PID) == cmd.Process.Pid {
			src = &w.NoiseSources[i]
		}
	}
	if src == nil {
		t.Fatalf("the burst process (pid %d) is not among the noise sources %+v (noise %.3f CPUs)", cmd.Process.Pid, w.NoiseSources, w.NoiseCPU)
	}
	t.Logf("noise %.3f CPUs; burst process %+v", w.NoiseCPU, *src)
	if len(src.Threads) == 0 {
		t.Fatalf("no threads for %+v", *src)
	}
	th := src.Threads[0] // the busiest: the spinning thread
	want := burstChildRun.Seconds() / burstChildPeriod.Seconds()
	if th.CPU < 0.8*want || th.CPU > 1.2*want {
		t.Errorf("its busiest thread used %.4f CPUs, want %.4f ± 20%%", th.CPU, want)
	}
	// One wake-up a period (a hog beside it may delay a period, not add one).
	perSec := float64(th.Wakeups) / length.Seconds()
	if perSec < 0.8/burstChildPeriod.Seconds() || perSec > 1.2/burstChildPeriod.Seconds() {
		t.Errorf("its busiest thread woke %.1f times a second, want %.1f ± 20%%", perSec, 1/burstChildPeriod.Seconds())
	}
	if th.Wakeups > 0 {
		burst := time.Duration(th.CPU * length.Seconds() / float64(th.Wakeups) * 1e9)
		if burst < burstChildRun*8/10 || burst > burstChildRun*12/10 {
			t.Errorf("its mean burst per wake-up is %v, want %v ± 20%%", burst, burstChildRun)
		}
	}
	if th.Runs < th.Wakeups {
		t.Errorf("%d runs for %d wake-ups: every wake-up runs", th.Runs, th.Wakeups)
	}
	if src.KernelThread || th.Policy != "Other" || th.Nice != 0 || src.Cgroup == "" {
		t.Errorf("a normal user process of nice 0 in a cgroup was described as %+v", *src)
	}
}

// spawnChildEnv makes the test binary a spawner: every spawnPeriod it runs
// the test binary once more as a onceChild and waits for it, so that the
// CPU is used by processes that live a few milliseconds each.
const (
	spawnChildEnv = "SCHEDLAB_NOISETEST_SPAWN"
	onceChildEnv  = "SCHEDLAB_NOISETEST_ONCE"
	spawnPeriod   = 50 * time.Millisecond
	onceRun       = 4 * time.Millisecond
)

// spawnChild runs a onceChild every spawnPeriod, each waited for, for a
// minute at most (its parent kills it sooner).
func spawnChild() int {
	exe, err := os.Executable()
	if err != nil {
		return 1
	}
	env := []string{onceChildEnv + "=1"}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, spawnChildEnv+"=") {
			env = append(env, e)
		}
	}
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(spawnPeriod) {
		c := exec.Command(exe)
		c.Env = env
		_ = c.Run()
	}
	return 0
}

// onceChild spins onceRun of its own CPU time and ends.
func onceChild() int {
	runtime.LockOSThread()
	for t0 := ownThreadCPU(); ownThreadCPU()-t0 < onceRun; {
	}
	return 0
}

// testCgroup makes the cgroup directory dir (it may exist) and removes it
// when the test ends, retrying while its last tasks leave.
func testCgroup(t *testing.T, dir string) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("could not remove the test cgroup %s", dir)
	})
	return dir
}

// cpuUsageCgroup makes a cgroup whose CPU usage the kernel counts for
// everything in it, ended processes included (v1 cpuacct, or cgroup v2's
// cpu.stat), and returns its directory and a reader of that usage.
func cpuUsageCgroup(t *testing.T, name string) (string, func() time.Duration) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	var root, file string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		if f[2] == "cgroup" && slices.Contains(strings.Split(f[3], ","), "cpuacct") {
			root, file = f[1], "cpuacct.usage"
			break
		}
		if f[2] == "cgroup2" && root == "" {
			root, file = f[1], "cpu.stat"
		}
	}
	if root == "" {
		t.Fatal("no cpuacct or cgroup2 hierarchy mounted: cannot count the CPU of ended processes")
	}
	dir := testCgroup(t, filepath.Join(root, name))
	return dir, func() time.Duration {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.TrimSpace(string(b))
		if file == "cpu.stat" {
			for _, line := range strings.Split(s, "\n") {
				if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
					us, _ := strconv.ParseInt(v, 10, 64)
					return time.Duration(us) * time.Microsecond
				}
			}
			t.Fatalf("no usage_usec in %s/cpu.stat", dir)
		}
		ns, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(ns)
	}
}

// TestRunNamesEndedChildren: a process whose CPU is all in children that
// live a few milliseconds (a shell's commands, a build's compilers) is
// named as a noise source with that CPU, counted from the children it
// reaped within the window. Before, such CPU was noise no source named.
// The reference is the kernel's count for the process's cgroup, which
// keeps the CPU of ended processes, over the run.
func TestRunNamesEndedChildren(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("-short: measures a window on the real kernel")
	}
	dir, usage := cpuUsageCgroup(t, fmt.Sprintf("schedlab-noisetest-%d", os.Getpid()))
	cmd := startSelf(t, spawnChildEnv)
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // children forked from here on are in the cgroup
	u0, t0 := usage(), time.Now()
	w := oneHogWindow(t, "noisechildren", 3*time.Second, 300*time.Millisecond, 1).Windows[0]
	ref := (usage() - u0).Seconds() / time.Since(t0).Seconds()
	var src *v1alpha1.NoiseSource
	for i := range w.NoiseSources {
		if int(w.NoiseSources[i].PID) == cmd.Process.Pid {
			src = &w.NoiseSources[i]
		}
	}
	if src == nil {
		t.Fatalf("the spawner (pid %d), whose cgroup used %.3f CPUs, is not among the noise sources %s (noise %.3f CPUs)", cmd.Process.Pid, ref, FormatNoiseSources(w.NoiseSources), w.NoiseCPU)
	}
	t.Logf("noise %.3f CPUs; the spawner's cgroup %.3f CPUs over the run; named %s", w.NoiseCPU, ref, FormatNoiseSources(w.NoiseSources))
	if src.CPU < 0.75*ref || src.CPU > 1.25*ref {
		t.Errorf("the spawner was named with %.3f CPUs, its cgroup used %.3f over the run: not within 25 %%", src.CPU, ref)
	}
	if src.ExitedChildrenCPU < 0.75*src.CPU {
		t.Errorf("of the spawner's %.3f CPUs %.3f were named its ended children's, want most (its own are fork, exec and wait)", src.CPU, src.ExitedChildrenCPU)
	}
}
