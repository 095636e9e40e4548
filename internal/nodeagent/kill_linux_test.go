package nodeagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
)

const killChildEnv = "SCHEDLAB_KILLTEST_CHILD" // JSON of killChildConfig

type killChildConfig struct {
	StateDir, RunID string
	Spec            v1alpha1.SchedExperimentSpec
}

// killChild is the agent of the SIGKILL test: it runs the spec and prints
// what it is doing, so the test can tell where it was killed.
func killChild() int {
	var c killChildConfig
	if err := json.Unmarshal([]byte(os.Getenv(killChildEnv)), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	exe, _ := os.Executable()
	fmt.Println("started")
	_, err := Run(context.Background(), &c.Spec, Options{StateDir: c.StateDir, RunID: c.RunID, WorkerBinary: exe, MaxAttempts: 1, LockWait: time.Minute,
		Progress: func(done, total int, what string) { fmt.Printf("%d/%d %s\n", done, total, what) }})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("finished")
	return 0
}

// markedWorkers lists live processes whose SCHEDLAB_WORKER starts with
// prefix.
func markedWorkers(prefix string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), []byte("\x00"+host.WorkerMarkerVar+"="+prefix)) {
			continue
		}
		st, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// TestSIGKILLRestores kills the agent with SIGKILL at random points of a
// run (autogroup flipped, nested cgroups, a session group) and checks, after
// a new agent has started (RestoreOnly: lock, journal), that every knob and
// cgroup is as before and no worker survives. SCHEDLAB_KILL_TRIALS sets the
// number of trials (default 20).
func TestSIGKILLRestores(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("-short: the SIGKILL test takes a minute")
	}
	trials := 20
	if n, err := strconv.Atoi(os.Getenv("SCHEDLAB_KILL_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	spec := v1alpha1.SchedExperimentSpec{
		Duration:    metav1.Duration{Duration: 250 * time.Millisecond},
		Warmup:      &metav1.Duration{Duration: 100 * time.Millisecond},
		Repetitions: 2,
		Variants: []v1alpha1.Variant{
			{Name: "off", Knobs: v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupDisabled, Sysctls: map[string]v1alpha1.SysctlValue{"kernel.sched_rr_timeslice_ms": "50"}}},
			{Name: "on", Knobs: v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupEnabled}},
		},
		Workload: v1alpha1.Workload{Groups: []v1alpha1.Group{
			{Name: "pods", Tasks: ptr(int32(0)), CPUWeight: ptr(int32(50))},
			{Name: "hog", Replicas: 2, Tasks: ptr(int32(2)), Parent: "pods", CPUWeight: ptr(int32(200)), Pattern: hog()},
			{Name: "shell", Session: "s1", Pattern: hog()},
		}},
	}
	before := nodeState(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	where := map[string]int{}
	for i := 0; i < trials; i++ {
		state := t.TempDir()
		runID := fmt.Sprintf("kill-%d-%d", os.Getpid(), i)
		cfg, _ := json.Marshal(killChildConfig{StateDir: state, RunID: runID, Spec: spec})
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), killChildEnv+"="+string(cfg))
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Int64N(int64(3 * time.Second)))
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		last := "before it printed anything"
		sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
		for sc.Scan() {
			last = sc.Text()
		}
		where[last]++
		journal := "no journal"
		if _, err := os.Stat(state + "/" + host.JournalFile); err == nil {
			journal = "journal left"
		}

		// A new agent starts: lock, restore the journal.
		recs, err := RestoreOnly(Options{StateDir: state, RunID: "next-agent", LockWait: time.Minute})
		if err != nil {
			t.Errorf("trial %d (killed after %s, at %q): restore: %v", i, delay.Round(time.Millisecond), last, err)
		}
		for _, r := range recs {
			if !r.OK {
				t.Errorf("trial %d: %+v not restored", i, r)
			}
		}
		if after := nodeState(t); after != before {
			t.Errorf("trial %d (killed after %s, at %q): node changed:\nbefore:\n%s\nafter:\n%s", i, delay.Round(time.Millisecond), last, before, after)
		}
		if left := markedWorkers(runID + "."); len(left) > 0 {
			t.Errorf("trial %d (killed at %q): workers survive: %v", i, last, left)
			for _, p := range left {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
		if _, err := os.Stat(state + "/" + host.JournalFile); err == nil {
			t.Errorf("trial %d: journal still there after restore", i)
		}
		t.Logf("trial %2d: SIGKILL after %5s at %-45q %s, %d changes restored", i, delay.Round(time.Millisecond), last, journal, len(recs))
	}
	var ws []string
	for k, n := range where {
		ws = append(ws, fmt.Sprintf("%d× %q", n, k))
	}
	t.Logf("%d trials; killed at: %s", trials, strings.Join(ws, ", "))
}
