package nodeagent

import (
	"context"
	"fmt"
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
// the window's readings lands in the window it next runs in. Beside a hog
// per CPU the idle entity runs about a tick a second per CPU (3 s windows
// at 13:47-14:05 read 1.62-2.15 threads for the two): 6 s windows and
// ± 0.4.
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
	for range 2 {
		cmd := startSpinner(t)
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
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
	if c.Runnable < 1.6 || c.Runnable > 2.4 {
		t.Errorf("%.3f threads runnable, want the 2 spinners ± 0.4", c.Runnable)
	}
	if c.CPU > 0.1 || c.Wait < c.Runnable-0.1 {
		t.Errorf("CPU %.4f and wait %.3f of %.3f runnable: want them starved beside a hog per CPU", c.CPU, c.Wait, c.Runnable)
	}
}
