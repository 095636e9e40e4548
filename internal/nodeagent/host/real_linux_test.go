package host

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// realHost returns the real host's FS and capabilities, or skips naming
// what is missing.
func realHost(t *testing.T) (FS, *v1alpha1.NodeCapabilities) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: writes a real sysctl and real cgroups")
	}
	fsys := NewFS("/")
	// Other tests on this machine may run the agent: take the node lock.
	l, err := AcquireLock(fsys, t.TempDir(), t.Name(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Release() })
	caps, err := Detect(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return fsys, caps
}

func TestRealDetect(t *testing.T) {
	fsys := NewFS("/")
	caps, err := Detect(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var u unix.Utsname
	_ = unix.Uname(&u)
	if caps.KernelVersion != unix.ByteSliceToString(u.Release[:]) {
		t.Errorf("kernel %q, uname says %q", caps.KernelVersion, unix.ByteSliceToString(u.Release[:]))
	}
	if int(caps.CPUs) < runtime.NumCPU() {
		t.Errorf("CPUs = %d, runtime sees %d", caps.CPUs, runtime.NumCPU())
	}
	if caps.AllowedCPUs == "" || caps.CgroupVersion == "" {
		t.Errorf("capabilities incomplete: %+v", caps)
	}
	kc, ok := Capability(caps, KnobAutogroup)
	if !ok || !kc.Exists || !kc.Readable {
		t.Errorf("autogroup: %+v", kc)
	}
	t.Logf("kernel %s %s, %d CPUs (%s), HZ %d, preempt %q, cgroup %s at %s, features: %s",
		caps.KernelVersion, caps.Scheduler, caps.CPUs, caps.AllowedCPUs, caps.HZ, caps.Preempt, caps.CgroupVersion, caps.CgroupCPUPath, caps.FeaturesSource)
	for _, k := range caps.Knobs {
		t.Logf("  %-40s exists=%v r=%v w=%v value=%q %s", k.Name, k.Exists, k.Readable, k.Writable, k.Value, k.Reason)
	}
}

// TestRealAutogroupRoundTrip flips kernel.sched_autogroup_enabled and
// restores it.
func TestRealAutogroupRoundTrip(t *testing.T) {
	fsys, caps := realHost(t)
	kc, _ := Capability(caps, KnobAutogroup)
	if !kc.Writable {
		t.Skipf("autogroup is not writable here: %s", kc.Reason)
	}
	orig := kc.Value
	flip := v1alpha1.AutogroupDisabled
	if orig == "0" {
		flip = v1alpha1.AutogroupEnabled
	}
	settings, err := Plan(caps, &v1alpha1.Knobs{Autogroup: flip})
	if err != nil {
		t.Fatal(err)
	}
	ch := NewChanges(fsys, NewJournal(t.TempDir(), "realtest"), logr.Discard())
	t.Cleanup(func() { _ = ch.Restore() })
	if err := ch.Apply(settings); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, fsys, autogroupPath); got == orig {
		t.Fatalf("autogroup still %s after Apply", got)
	}
	if err := ch.Restore(); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, fsys, autogroupPath); got != orig {
		t.Fatalf("autogroup %s after Restore, want %s", got, orig)
	}
	recs := ch.Records()
	if len(recs) != 1 || !recs[0].OK || recs[0].Original != orig || recs[0].Restored != orig || recs[0].Set == orig {
		t.Errorf("records = %+v", recs)
	}
}

func cgroupState(t *testing.T, fsys FS, mount string) string {
	t.Helper()
	ents, err := fsys.ReadDir(mount)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	return strings.Join(dirs, ",")
}

// TestRealCgroupWeights makes three cgroups with weights 100, 200, 400 on
// this machine's cpu controller, checks the v1 shares (or v2 weights), puts
// a process in one, and removes them all: the process dies, the cgroups go.
func TestRealCgroupWeights(t *testing.T) {
	fsys, caps := realHost(t)
	cg, err := NewCgroups(fsys, caps)
	if err != nil {
		t.Skipf("no cgroup cpu controller: %v", err)
	}
	before := cgroupState(t, fsys, cg.Mount)
	runID := fmt.Sprintf("hosttest-%d", os.Getpid())
	ch := NewChanges(fsys, NewJournal(t.TempDir(), runID), logr.Discard())
	t.Cleanup(func() { _ = ch.Restore() })
	w := func(n int32) *int32 { return &n }
	reps, err := cg.Create(ch, runID, []v1alpha1.Group{
		{Name: "a", CPUWeight: w(100)}, {Name: "b", CPUWeight: w(200)}, {Name: "c", CPUWeight: w(400), CPUMax: "500m"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "1024", "b": "2048", "c": "4096"}
	file := "cpu.shares"
	if cg.Version == CgroupV2 {
		want, file = map[string]string{"a": "100", "b": "200", "c": "400"}, "cpu.weight"
	}
	for _, r := range reps {
		if got := readTree(t, fsys, r.Dir+"/"+file); got != want[r.Group] {
			t.Errorf("%s/%s = %s, want %s", r.Dir, file, got, want[r.Group])
		}
	}
	if cg.Version == CgroupV1 {
		if got := readTree(t, fsys, reps[2].Dir+"/cpu.cfs_quota_us"); got != "50000" {
			t.Errorf("c quota = %s, want 50000", got)
		}
	}
	// A process inside: Restore must kill it.
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if err := fsys.WriteFile(reps[1].Procs(), []byte(fmt.Sprint(cmd.Process.Pid))); err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	if err := ch.Restore(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatal("process in the cgroup survived Restore")
	}
	if after := cgroupState(t, fsys, cg.Mount); after != before {
		t.Errorf("cgroups at %s: %q before, %q after", cg.Mount, before, after)
	}
	if exists(fsys, cg.RunDir(runID)) {
		t.Errorf("%s still exists", cg.RunDir(runID))
	}
	for _, r := range ch.Records() {
		if !r.OK {
			t.Errorf("not OK: %+v", r)
		}
	}
}

// TestRealJournalRecovery applies a knob and cgroups, "crashes" (never
// restores), and lets RecoverJournal put everything back.
func TestRealJournalRecovery(t *testing.T) {
	fsys, caps := realHost(t)
	kc, _ := Capability(caps, KnobAutogroup)
	cg, err := NewCgroups(fsys, caps)
	if !kc.Writable || err != nil {
		t.Skipf("needs a writable autogroup sysctl (%s) and a cgroup cpu controller (%v)", kc.Reason, err)
	}
	state := t.TempDir()
	orig := kc.Value
	beforeCg := cgroupState(t, fsys, cg.Mount)
	flip := map[string]v1alpha1.AutogroupMode{"0": v1alpha1.AutogroupEnabled, "1": v1alpha1.AutogroupDisabled}[orig]
	runID := fmt.Sprintf("crashtest-%d", os.Getpid())
	ch := NewChanges(fsys, NewJournal(state, runID), logr.Discard())
	t.Cleanup(func() { _ = ch.Restore() })
	settings, err := Plan(caps, &v1alpha1.Knobs{Autogroup: flip})
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Apply(settings); err != nil {
		t.Fatal(err)
	}
	if _, err := cg.Create(ch, runID, []v1alpha1.Group{{Name: "x", Replicas: 2}}); err != nil {
		t.Fatal(err)
	}
	// Crash: a new agent starts with only the state directory.
	recs, err := RecoverJournal(NewFS("/"), state, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, fsys, autogroupPath); got != orig {
		t.Errorf("autogroup = %s after recovery, want %s", got, orig)
	}
	if got := cgroupState(t, fsys, cg.Mount); got != beforeCg {
		t.Errorf("cgroups %q after recovery, want %q", got, beforeCg)
	}
	if len(recs) < 3 {
		t.Errorf("records = %+v", recs)
	}
	for _, r := range recs {
		if !r.OK {
			t.Errorf("not OK: %+v", r)
		}
	}
}

// TestRealLockdown mounts debugfs in a private mount namespace (the host's
// mounts are untouched) and checks that this kernel's lockdown is reported
// as such and makes a baseSlice variant Unsupported with that reason.
func TestRealLockdown(t *testing.T) {
	if os.Getenv("SCHEDLAB_LOCKDOWN_CHILD") == "1" {
		lockdownChild(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts debugfs in a private mount namespace")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare(1) from util-linux")
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", os.Args[0], "-test.run", "^TestRealLockdown$", "-test.v")
	cmd.Env = append(os.Environ(), "SCHEDLAB_LOCKDOWN_CHILD=1")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Skip("child skipped")
	}
}

func lockdownChild(t *testing.T) {
	if err := unix.Mount("none", debugfsDir, "debugfs", 0, ""); err != nil && err != unix.EBUSY {
		t.Skipf("cannot mount debugfs in a private namespace: %v", err)
	}
	fsys := NewFS("/")
	if _, err := fsys.ReadFile(debugSchedDir + "/base_slice_ns"); err == nil {
		t.Skip("this kernel is not locked down: base_slice_ns is readable")
	}
	before, _ := fsys.ReadFile(autogroupPath)
	caps, err := Detect(fsys)
	if err != nil {
		t.Fatal(err)
	}
	kc, _ := Capability(caps, KnobBaseSlice)
	if kc.Reason != ReasonLockedDown || !kc.Exists || kc.Writable {
		t.Fatalf("baseSlice = %+v, want exists and %q", kc, ReasonLockedDown)
	}
	t.Logf("features: %s", caps.FeaturesSource)
	_, err = Plan(caps, &v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupDisabled, BaseSlice: dur(time.Millisecond)})
	want := "baseSlice: /sys/kernel/debug/sched/base_slice_ns is locked down (kernel lockdown forbids debugfs)"
	if err == nil || err.Error() != want {
		t.Fatalf("Plan = %v, want %q", err, want)
	}
	if after, _ := fsys.ReadFile(autogroupPath); string(after) != string(before) {
		t.Fatalf("autogroup changed: %q → %q", before, after)
	}
}
