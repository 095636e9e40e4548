package nodeagent

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
)

// startSpinner starts a shell loop that spins on one thread (a process of
// a single thread: the test binary's own runtime threads would be runnable
// too, and starved beside the hogs they would count), in a process group
// of its own that the test's cleanup kills.
func startSpinner(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skipf("no shell to spin: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return cmd
}

// TestRunRecordsIdleCgroup: two spinners in a cpu.idle cgroup beside a
// hog per CPU are starved (a few thousandths of a CPU, below the noise
// sources' floors) but runnable all the window: the window records the
// cgroup at the top of the cpu hierarchy as idle, with about two threads
// runnable, most of it waiting. Before, nothing of it was recorded.
//
// About: schedstat's run_delay grows when a thread gets the CPU
// (sched_info_arrive()), so the wait a starved thread is in at either of
// the agent's readings lands in the window it next runs in: the wait in
// progress at the second reading is missing, the one at the first counted.
// Beside a hog per CPU the idle entity runs about a tick a second per CPU,
// less when other work takes the CPUs (1.59 threads was read in a 6 s
// window beside stress-ng --cpu 2 at normal priority, 19:23 UTC). So the
// test reads each spinner's schedstat around both readings and after each,
// until it next runs: the wait it then lands holds the one in progress at
// the reading, which bounds the figure on either side.
func TestRunRecordsIdleCgroup(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("-short: measures a window on the real kernel")
	}
	caps, err := host.Detect(host.NewFS("/"))
	if err != nil {
		t.Fatal(err)
	}
	if caps.CPUs < 2 {
		t.Skip("needs 2 CPUs: a hog on each starves the spinners")
	}
	name := fmt.Sprintf("schedlab-idletest-%d", os.Getpid())
	dir := testCgroup(t, filepath.Join(caps.CgroupCPUPath, name))
	if err := os.WriteFile(filepath.Join(dir, "cpu.idle"), []byte("1"), 0o644); err != nil {
		t.Skipf("cpu.idle cannot be set here (Linux 5.15+): %v", err)
	}
	var spinners []int
	for range 2 {
		cmd := startSpinner(t)
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
		spinners = append(spinners, cmd.Process.Pid)
	}
	// Around each reading of every process: the spinners' counters before
	// it and after it, then (in the background, every 2 ms) at their next
	// run after it. A spinner that ran during the reading was waiting at
	// the agent's read for at most the reading's length or the waits it
	// landed during it; one that did not, for at most the wait it lands at
	// its next run.
	var (
		readings   [][2][]schedStat // before and after each reading, by spinner
		at         [][2]time.Time
		inProgress [2][]chan time.Duration // the bound on each spinner's wait in progress at each reading
	)
	onWindowStep = func(step string) {
		switch step {
		case "procs start":
			readings, at = append(readings, [2][]schedStat{readSchedStats(t, spinners)}), append(at, [2]time.Time{time.Now()})
		case "procs":
			i := len(readings) - 1
			if i > 1 {
				return // one attempt: two readings
			}
			readings[i][1], at[i][1] = readSchedStats(t, spinners), time.Now()
			for k, pid := range spinners {
				ch := make(chan time.Duration, 1)
				inProgress[i] = append(inProgress[i], ch)
				before, after, reading := readings[i][0][k], readings[i][1][k], at[i][1].Sub(at[i][0])
				if after.runs != before.runs {
					ch <- max(reading, after.wait-before.wait)
					continue
				}
				go func() { ch <- nextWait(pid, after) }()
			}
		}
	}
	defer func() { onWindowStep = nil }()
	spec := &v1alpha1.SchedExperimentSpec{
		Duration: metav1.Duration{Duration: 6 * time.Second},
		Warmup:   &metav1.Duration{Duration: 300 * time.Millisecond},
		Variants: []v1alpha1.Variant{{Name: "base"}},
		Workload: v1alpha1.Workload{Groups: []v1alpha1.Group{{Name: "g", Tasks: ptr(caps.CPUs), Pattern: hog()}}},
	}
	o := opts(t, "idlecgroup")
	o.MaxAttempts = 1
	st, err := Run(context.Background(), spec, o)
	if err != nil {
		t.Fatal(err)
	}
	w := st.Windows[0]
	var c *v1alpha1.ForeignCgroup
	for i := range w.ForeignCgroups {
		if w.ForeignCgroups[i].Path == "/"+name {
			c = &w.ForeignCgroups[i]
		}
	}
	if c == nil {
		t.Fatalf("the idle cgroup /%s is not among the window's foreign cgroups: %s (noise %.3f CPUs: %s)", name,
			FormatForeignCgroups(w.ForeignCgroups), w.NoiseCPU, FormatNoiseSources(w.NoiseSources))
	}
	t.Logf("noise %.3f CPUs; foreign cgroups %s", w.NoiseCPU, FormatForeignCgroups(w.ForeignCgroups))
	if !c.Idle || c.Threads < 2 {
		t.Errorf("recorded as %+v, want idle with at least the 2 spinners' threads", *c)
	}
	if len(readings) != 2 || len(inProgress[1]) != 2 {
		t.Fatalf("%d readings of every process around the window, want 2", len(readings))
	}
	// Each spinner is runnable all the time: its CPU and wait over its own
	// interval between the agent's readings (at least the time between the
	// first's end and the second's start) is that interval, less the wait
	// in progress at the second reading, plus the one at the first.
	span := at[1][0].Sub(at[0][1]).Seconds()
	var missing, extra float64
	for k := range spinners {
		missing += (<-inProgress[1][k]).Seconds() / span
		extra += (<-inProgress[0][k]).Seconds() / span
	}
	lo, hi := 2-missing-0.01, 2+extra+0.01
	t.Logf("runnable %.3f: want %.3f..%.3f (waits in progress at the readings: up to %.3f and %.3f threads of the window)", c.Runnable, lo, hi, extra, missing)
	if c.Runnable < lo || c.Runnable > hi {
		t.Errorf("%.3f threads runnable, want the 2 spinners within %.3f..%.3f (less the waits in progress at the second reading, plus those at the first)", c.Runnable, lo, hi)
	}
	// Their CPU is what their own counters say over the same interval. It
	// is mostly none beside a hog per CPU, but not always: a window at
	// 20:03 UTC gave them 0.138 CPUs with others' work beside (0.28 CPUs),
	// and one on main 0.098; the agent's figure was right, the old bound
	// (at most 0.1) was not. The counters of a thread running at a reading
	// lag by up to a tick (4 ms at HZ 250) at either end: ± 0.005.
	spanMax := at[1][1].Sub(at[0][0]).Seconds()
	var cpuLo, cpuHi float64
	for k := range spinners {
		cpuLo += (readings[1][0][k].cpu - readings[0][1][k].cpu).Seconds() / spanMax
		cpuHi += (readings[1][1][k].cpu - readings[0][0][k].cpu).Seconds() / span
	}
	cpuLo, cpuHi = cpuLo-0.005, cpuHi+0.005
	t.Logf("CPU %.4f: want %.4f..%.4f by the spinners' own counters; wait %.3f", c.CPU, cpuLo, cpuHi, c.Wait)
	if c.CPU < cpuLo || c.CPU > cpuHi || math.Abs(c.Runnable-c.Wait-c.CPU) > 0.01 {
		t.Errorf("CPU %.4f and wait %.3f of %.3f runnable: want the spinners' own CPU over the window, %.4f..%.4f, and the rest waiting", c.CPU, c.Wait, c.Runnable, cpuLo, cpuHi)
	}
}

// schedStat is one thread's /proc/<pid>/schedstat: CPU time, time waiting
// on a run queue (each wait added when the wait ends), and runs.
type schedStat struct {
	cpu, wait time.Duration
	runs      int64
}

func readSchedStat(pid int) (schedStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		return schedStat{}, err
	}
	var s schedStat
	_, err = fmt.Sscan(string(b), &s.cpu, &s.wait, &s.runs)
	return s, err
}

func readSchedStats(t *testing.T, pids []int) []schedStat {
	out := make([]schedStat, len(pids))
	for i, pid := range pids {
		s, err := readSchedStat(pid)
		if err != nil {
			t.Error(err)
		}
		out[i] = s
	}
	return out
}

// nextWait polls a thread's schedstat every 2 ms until it has run since
// from, and returns the wait it landed meanwhile (the whole wait it was in
// at from, and any later ones); a minute if it never runs or ends.
func nextWait(pid int, from schedStat) time.Duration {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		s, err := readSchedStat(pid)
		if err != nil {
			break
		}
		if s.runs != from.runs {
			return s.wait - from.wait
		}
	}
	return time.Minute
}
