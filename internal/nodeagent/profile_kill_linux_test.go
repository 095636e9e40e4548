package nodeagent

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
)

const profileKillChildEnv = "SCHEDLAB_PROFILE_KILLTEST_STATE" // the state directory

// profileKnobs are the profile the SIGKILL test applies and removes over and
// over: two knobs, so that a kill between the writes leaves a mix.
var profileKnobs = &v1alpha1.Knobs{
	Autogroup: v1alpha1.AutogroupDisabled,
	Sysctls:   map[string]v1alpha1.SysctlValue{"kernel.sched_rr_timeslice_ms": "50"},
}

var profileFiles = []string{"/proc/sys/kernel/sched_autogroup_enabled", "/proc/sys/kernel/sched_rr_timeslice_ms"}

// profileKillChild is the profile agent of the SIGKILL test: it applies and
// removes the profile in a loop, 20 ms between two knob writes.
func profileKillChild() int {
	k := &host.ProfileKeeper{FS: host.NewFS("/"), StateDir: os.Getenv(profileKillChildEnv), Log: logr.Discard(),
		BetweenWrites: func() { time.Sleep(20 * time.Millisecond) }}
	fmt.Println("started")
	for gen := int64(1); ; gen++ {
		want := &host.DesiredProfile{Profile: "kill-test", Generation: gen, Knobs: profileKnobs}
		if gen%2 == 0 {
			want = nil
		}
		if _, err := k.Keep(want); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Println("committed", gen%2 == 1)
	}
}

func readProfileFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, f := range profileFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.TrimSpace(string(b)))
	}
	return out
}

// TestSIGKILLProfileOldOrNew kills a profile keeper with SIGKILL at random
// points while it applies and removes a two-knob profile, and checks that
// after the next keeper's recovery the node holds either the old state or
// the new one — exactly what the committed state says — never a mix.
// SCHEDLAB_KILL_TRIALS sets the number of trials (default 20).
func TestSIGKILLProfileOldOrNew(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("-short: the SIGKILL test takes a while")
	}
	trials := 20
	if n, err := strconv.Atoi(os.Getenv("SCHEDLAB_KILL_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	boot := readProfileFiles(t)
	applied := []string{"0", "50"}
	if boot[0] == applied[0] || boot[1] == applied[1] {
		t.Fatalf("this machine has %v already; the test needs values different from the profile's %v", boot, applied)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	mixes, olds, news := 0, 0, 0
	for i := 0; i < trials; i++ {
		state := t.TempDir()
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), profileKillChildEnv+"="+state)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Int64N(int64(time.Second)))
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		last := "nothing"
		sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
		for sc.Scan() {
			last = sc.Text()
		}
		if strings.HasPrefix(last, "error") {
			t.Fatalf("trial %d: the keeper failed: %s", i, out.String())
		}
		killed := readProfileFiles(t)
		mixed := (killed[0] == applied[0]) != (killed[1] == applied[1])
		if mixed {
			mixes++
		}

		// The next keeper recovers: the node must be what is committed.
		k := &host.ProfileKeeper{FS: host.NewFS("/"), StateDir: state, Log: logr.Discard()}
		st, err := k.Recover(time.Minute)
		if err != nil {
			t.Fatalf("trial %d: recover: %v", i, err)
		}
		got := readProfileFiles(t)
		want, name := boot, "old (boot)"
		if len(st.Values) > 0 {
			want, name = applied, "new (profile)"
			news++
		} else {
			olds++
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("trial %d (killed after %s at %q, node was %v): after recovery %v, want the committed %s state %v",
				i, delay.Round(time.Millisecond), last, killed, got, name, want)
		}
		t.Logf("trial %2d: SIGKILL after %4s at %-16q node %v (mix: %v) → recovered to %s %v", i, delay.Round(time.Millisecond), last, killed, mixed, name, got)

		// Back to the boot values for the next trial.
		if _, err := k.Keep(nil); err != nil {
			t.Fatal(err)
		}
		if got := readProfileFiles(t); fmt.Sprint(got) != fmt.Sprint(boot) {
			t.Fatalf("trial %d: removing the profile left %v, want %v", i, got, boot)
		}
	}
	t.Logf("%d trials: %d kills left a mix on the node; after recovery %d old, %d new, never a mix", trials, mixes, olds, news)
	if mixes == 0 {
		t.Errorf("no kill landed between two writes in %d trials: the test did not exercise a mix", trials)
	}
}
