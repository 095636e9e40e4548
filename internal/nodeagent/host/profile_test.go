package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func readKnob(t *testing.T, fsys FS, path string) string {
	t.Helper()
	b, err := fsys.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func writeKnob(t *testing.T, fsys FS, path, v string) {
	t.Helper()
	if err := os.WriteFile(fsys.Abs(path), []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A profile is applied with its originals journalled, drift is set back and
// counted, a changed profile restores the knobs it no longer sets, and no
// profile restores every original and leaves no journal.
func TestProfileKeeperLifecycle(t *testing.T) {
	fsys := newTree(t, layout{kernel: "6.12.0", cgroup: "v2", debugfs: true})
	state := t.TempDir()
	k := &ProfileKeeper{FS: fsys, StateDir: state, Log: logr.Discard()}
	const ag, rr, bs = "/proc/sys/kernel/sched_autogroup_enabled", "/proc/sys/kernel/sched_rr_timeslice_ms", "/sys/kernel/debug/sched/base_slice_ns"

	p1 := &DesiredProfile{Profile: "p", Generation: 1, Knobs: &v1alpha1.Knobs{
		Autogroup: v1alpha1.AutogroupDisabled,
		Sysctls:   map[string]v1alpha1.SysctlValue{"kernel.sched_rr_timeslice_ms": "50"},
	}}
	res, err := k.Keep(p1)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || res.Busy != "" || res.Unsupported != "" {
		t.Fatalf("first pass: %+v", res)
	}
	if diff := cmp.Diff(map[string]string{"autogroup": "0", "sysctls.kernel.sched_rr_timeslice_ms": "50"}, res.State.Values); diff != "" {
		t.Fatalf("applied (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"autogroup": "1", "sysctls.kernel.sched_rr_timeslice_ms": "100"}, res.Original); diff != "" {
		t.Fatalf("originals (-want +got):\n%s", diff)
	}
	if readKnob(t, fsys, ag) != "0" || readKnob(t, fsys, rr) != "50" {
		t.Fatal("knobs not written")
	}

	// Steady state: nothing to do.
	if res, err = k.Keep(p1); err != nil || res.Changed || len(res.Repaired) != 0 {
		t.Fatalf("steady pass: %+v %v", res, err)
	}
	// Drift: someone writes autogroup back to 1.
	writeKnob(t, fsys, ag, "1")
	if res, err = k.Keep(p1); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Drift{{Knob: "autogroup", Found: "1", Want: "0"}}, res.Repaired); diff != "" {
		t.Fatalf("repairs (-want +got):\n%s", diff)
	}
	if readKnob(t, fsys, ag) != "0" {
		t.Fatal("drift not repaired")
	}

	// A new generation drops the sysctl and sets baseSlice: the sysctl gets
	// its original back, the original of autogroup stays the first seen.
	p2 := &DesiredProfile{Profile: "p", Generation: 2, Knobs: &v1alpha1.Knobs{
		Autogroup: v1alpha1.AutogroupDisabled, BaseSlice: &metav1.Duration{Duration: time.Millisecond},
	}}
	if res, err = k.Keep(p2); err != nil || !res.Changed {
		t.Fatalf("change: %+v %v", res, err)
	}
	if readKnob(t, fsys, rr) != "100" || readKnob(t, fsys, bs) != "1000000" || readKnob(t, fsys, ag) != "0" {
		t.Fatalf("after change: rr=%s bs=%s ag=%s", readKnob(t, fsys, rr), readKnob(t, fsys, bs), readKnob(t, fsys, ag))
	}
	if diff := cmp.Diff(map[string]string{"autogroup": "1", "baseSlice": "3000000"}, res.Original); diff != "" {
		t.Fatalf("originals after change (-want +got):\n%s", diff)
	}
	// A generation bump with the same knobs writes nothing and is recorded.
	if res, err = k.Keep(&DesiredProfile{Profile: "p", Generation: 3, Knobs: p2.Knobs}); err != nil || res.Changed || res.State.Generation != 3 {
		t.Fatalf("generation bump: %+v %v", res, err)
	}

	// Unsupported: a feature the kernel does not list. Nothing changes.
	res, err = k.Keep(&DesiredProfile{Profile: "q", Generation: 1, Knobs: &v1alpha1.Knobs{Features: map[string]bool{"NOT_A_FEATURE": true}}})
	if err != nil || !strings.Contains(res.Unsupported, "NOT_A_FEATURE") || res.State.Profile != "p" {
		t.Fatalf("unsupported: %+v %v", res, err)
	}

	// No profile: every original back, no journal, no state.
	if res, err = k.Keep(nil); err != nil || !res.Changed || len(res.State.Values) != 0 {
		t.Fatalf("restore: %+v %v", res, err)
	}
	if readKnob(t, fsys, ag) != "1" || readKnob(t, fsys, bs) != "3000000" || readKnob(t, fsys, rr) != "100" {
		t.Fatal("originals not restored")
	}
	for _, f := range []string{JournalFile, ProfileStateFile} {
		if _, err := os.Stat(filepath.Join(state, ProfileDir, f)); !os.IsNotExist(err) {
			t.Fatalf("%s left behind: %v", f, err)
		}
	}
}

// A keeper killed between two writes leaves a mix; Recover returns the node
// to the committed state.
func TestProfileKeeperRecoversAMix(t *testing.T) {
	fsys := newTree(t, layout{kernel: "6.12.0", cgroup: "v2", debugfs: true})
	state := t.TempDir()
	k := &ProfileKeeper{FS: fsys, StateDir: state, Log: logr.Discard()}
	const ag, rr = "/proc/sys/kernel/sched_autogroup_enabled", "/proc/sys/kernel/sched_rr_timeslice_ms"
	// A journal with both originals, nothing committed, and only the first
	// knob written: what a kill between the writes of the first apply leaves.
	j := NewJournal(filepath.Join(state, ProfileDir), ProfileRunID)
	if err := j.Record(
		JournalEntry{Kind: EntryKnob, Name: "autogroup", Path: ag, Original: "1"},
		JournalEntry{Kind: EntryKnob, Name: "sysctls.kernel.sched_rr_timeslice_ms", Path: rr, Original: "100"},
	); err != nil {
		t.Fatal(err)
	}
	writeKnob(t, fsys, ag, "0")
	st, err := k.Recover(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Values) != 0 || readKnob(t, fsys, ag) != "1" || readKnob(t, fsys, rr) != "100" {
		t.Fatalf("not back to the old state: %+v ag=%s rr=%s", st, readKnob(t, fsys, ag), readKnob(t, fsys, rr))
	}
	if _, err := os.Stat(filepath.Join(state, ProfileDir, JournalFile)); !os.IsNotExist(err) {
		t.Fatalf("journal left behind: %v", err)
	}
}

// An experiment holding the node makes a pass return Busy untouched.
func TestProfileKeeperBusy(t *testing.T) {
	fsys := newTree(t, layout{kernel: "6.12.0", cgroup: "v2", debugfs: true})
	state := t.TempDir()
	l, err := AcquireLock(fsys, state, "some-experiment", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	k := &ProfileKeeper{FS: fsys, StateDir: state, Log: logr.Discard()}
	res, err := k.Keep(&DesiredProfile{Profile: "p", Generation: 1, Knobs: &v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupDisabled}})
	if err != nil || !strings.Contains(res.Busy, "some-experiment") {
		t.Fatalf("want busy naming the holder: %+v %v", res, err)
	}
	if readKnob(t, fsys, "/proc/sys/kernel/sched_autogroup_enabled") != "1" {
		t.Fatal("a busy pass wrote a knob")
	}
}
