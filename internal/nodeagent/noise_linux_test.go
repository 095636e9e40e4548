package nodeagent

import (
	"os"
	"os/exec"
	"runtime"
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
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), burstChildEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }()
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
