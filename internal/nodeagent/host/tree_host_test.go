package host

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func ptr[T any](v T) *T { return &v }

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func TestDetectLayouts(t *testing.T) {
	cases := []struct {
		name string
		l    layout
		want map[string]string // knob → "exists readable writable | reason"
		cg   [2]string
		feat string
	}{
		{
			name: "eevdf cgroup v2 debugfs",
			l:    layout{kernel: "6.12.3", cgroup: "v2", debugfs: true},
			want: map[string]string{
				KnobAutogroup: "erw", KnobBaseSlice: "erw", KnobPreempt: "erw", KnobFeatures: "erw", KnobNrMigrate: "erw",
				KnobLatency:                         "not in kernel 6.12: EEVDF (6.6+) replaced latency_ns; use baseSlice",
				"sysctls.kernel.numa_balancing":     "erw",
				"sysctls.kernel.sched_energy_aware": "not in this kernel (no /proc/sys/kernel/sched_energy_aware)",
			},
			cg:   [2]string{CgroupV2, "/sys/fs/cgroup"},
			feat: featuresPath,
		},
		{
			name: "cfs 6.1 cgroup v1 debugfs",
			l:    layout{kernel: "6.1.0-18-amd64", cgroup: "v1", debugfs: true},
			want: map[string]string{
				KnobLatency: "erw", KnobMinGranularity: "erw", KnobWakeupGranularity: "erw",
				KnobBaseSlice: "not in kernel 6.1: base_slice_ns is EEVDF's (6.6+); use latency/minGranularity",
			},
			cg:   [2]string{CgroupV1, "/sys/fs/cgroup/cpu,cpuacct"},
			feat: featuresPath,
		},
		{
			name: "lockdown",
			l:    layout{kernel: "6.18.44", cgroup: "v1", debugfs: true, lockdown: true},
			want: map[string]string{
				KnobAutogroup: "erw", KnobBaseSlice: "e | " + ReasonLockedDown, KnobPreempt: "e | " + ReasonLockedDown,
				KnobFeatures: "e | " + ReasonLockedDown,
			},
			cg:   [2]string{CgroupV1, "/sys/fs/cgroup/cpu,cpuacct"},
			feat: "no verified feature name table for kernel 6.18",
		},
		{
			name: "debugfs not mounted",
			l:    layout{kernel: "6.18.44", cgroup: "v2"},
			want: map[string]string{
				KnobBaseSlice: "debugfs is not mounted at /sys/kernel/debug",
				KnobAutogroup: "erw",
			},
			cg:   [2]string{CgroupV2, "/sys/fs/cgroup"},
			feat: "/sys/kernel/debug/sched/debug not readable",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newTree(t, tc.l)
			before := snapshot(t, fsys)
			caps, err := Detect(fsys)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, snapshot(t, fsys)); diff != "" {
				t.Errorf("Detect changed the tree (-before +after):\n%s", diff)
			}
			if caps.CPUs != 8 || caps.HZ != 0 {
				t.Errorf("CPUs = %d, HZ = %d; want 8, 0 (no config.gz)", caps.CPUs, caps.HZ)
			}
			if got := [2]string{caps.CgroupVersion, caps.CgroupCPUPath}; got != tc.cg {
				t.Errorf("cgroup = %v, want %v", got, tc.cg)
			}
			for name, want := range tc.want {
				kc, ok := Capability(caps, name)
				if !ok {
					t.Errorf("%s: not reported", name)
					continue
				}
				got := ""
				if kc.Exists {
					got += "e"
				}
				if kc.Readable {
					got += "r"
				}
				if kc.Writable {
					got += "w"
				}
				if kc.Reason != "" {
					if got != "" {
						got += " | "
					}
					got += kc.Reason
				}
				if got != want {
					t.Errorf("%s: got %q, want %q", name, got, want)
				}
			}
			if !strings.Contains(caps.FeaturesSource, tc.feat) {
				t.Errorf("FeaturesSource = %q, want it to contain %q", caps.FeaturesSource, tc.feat)
			}
			if tc.l.debugfs && !tc.l.lockdown {
				want := map[string]bool{"PLACE_LAG": true, "PLACE_DEADLINE_INITIAL": true, "RUN_TO_PARITY": true, "NEXT_BUDDY": false, "WAKEUP_PREEMPTION": true}
				if diff := cmp.Diff(want, caps.Features); diff != "" {
					t.Errorf("features (-want +got):\n%s", diff)
				}
				if caps.Preempt != v1alpha1.PreemptFull {
					t.Errorf("preempt = %q, want Full", caps.Preempt)
				}
			}
		})
	}
}

func TestDecodeFeatureBitmask(t *testing.T) {
	mask, ok := sysctlSchedFeatures("sysctl_sched\n  .sysctl_sched_features                   : 11\n")
	if !ok || mask != 11 {
		t.Fatalf("mask = %d, %v", mask, ok)
	}
	got := decodeFeatures(mask, []string{"A", "B", "C", "D"})
	if diff := cmp.Diff(map[string]bool{"A": true, "B": true, "C": false, "D": true}, got); diff != "" {
		t.Error(diff)
	}
}

// TestApplyRestoreLayouts applies every kind of knob and cgroups on v2 and
// v1 test trees with debugfs, restores, and checks the tree is as before.
func TestApplyRestoreLayouts(t *testing.T) {
	for _, l := range []layout{
		{kernel: "6.12.3", cgroup: "v2", debugfs: true},
		{kernel: "6.1.0", cgroup: "v1", debugfs: true},
	} {
		t.Run(l.cgroup+"-"+l.kernel, func(t *testing.T) {
			fsys := newTree(t, l)
			state := t.TempDir()
			caps, err := Detect(fsys)
			if err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, fsys)
			knobs := v1alpha1.Knobs{
				Autogroup:      v1alpha1.AutogroupDisabled,
				MigrationCost:  dur(100 * time.Microsecond),
				NrMigrate:      ptr(int32(8)),
				TunableScaling: v1alpha1.ScalingNone,
				Preempt:        v1alpha1.PreemptVoluntary,
				Features:       map[string]bool{"NEXT_BUDDY": true, "PLACE_LAG": false},
				Sysctls:        map[string]v1alpha1.SysctlValue{"kernel.sched_rr_timeslice_ms": "30"},
			}
			wantSet := map[string]string{
				autogroupPath:                            "0",
				debugSchedDir + "/migration_cost_ns":     "100000",
				debugSchedDir + "/nr_migrate":            "8",
				debugSchedDir + "/tunable_scaling":       "0",
				preemptPath:                              "none (voluntary) full lazy",
				featuresPath:                             "NO_PLACE_LAG PLACE_DEADLINE_INITIAL RUN_TO_PARITY NEXT_BUDDY WAKEUP_PREEMPTION",
				"/proc/sys/kernel/sched_rr_timeslice_ms": "30",
			}
			if l.kernel == "6.12.3" {
				knobs.BaseSlice = dur(700 * time.Microsecond)
				wantSet[debugSchedDir+"/base_slice_ns"] = "700000"
			} else {
				knobs.Latency = dur(12 * time.Millisecond)
				wantSet[debugSchedDir+"/latency_ns"] = "12000000"
			}
			settings, err := Plan(caps, &knobs)
			if err != nil {
				t.Fatal(err)
			}
			ch := NewChanges(fsys, NewJournal(state, "t1"), logr.Discard())
			if err := ch.Apply(settings); err != nil {
				t.Fatal(err)
			}
			for p, want := range wantSet {
				if got := readTree(t, fsys, p); got != want {
					t.Errorf("%s = %q, want %q", p, got, want)
				}
			}
			cg, err := NewCgroups(fsys, caps)
			if err != nil {
				t.Fatal(err)
			}
			groups := []v1alpha1.Group{
				{Name: "burstable", Tasks: ptr(int32(0)), CPUWeight: ptr(int32(50))},
				{Name: "pod", Replicas: 2, Parent: "burstable", CPUWeight: ptr(int32(400)), CPUMax: "1500m", CPUIdle: ptr(true)},
				{Name: "shell", Session: "s1"},
			}
			reps, err := cg.Create(ch, "t1", groups)
			if err != nil {
				t.Fatal(err)
			}
			run := cg.RunDir("t1")
			var dirs []string
			for _, r := range reps {
				dirs = append(dirs, strings.TrimPrefix(r.Dir, run+"/"))
			}
			if diff := cmp.Diff([]string{"burstable-0", "burstable-0/pod-0", "burstable-0/pod-1"}, dirs); diff != "" {
				t.Errorf("replica dirs (-want +got):\n%s", diff)
			}
			pod := reps[1].Dir
			if l.cgroup == "v2" {
				for p, want := range map[string]string{pod + "/cpu.weight": "400", pod + "/cpu.max": "150000 100000", pod + "/cpu.idle": "1", reps[0].Dir + "/cpu.weight": "50"} {
					if got := readTree(t, fsys, p); got != want {
						t.Errorf("%s = %q, want %q", p, got, want)
					}
				}
				for _, d := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/schedlab", run, reps[0].Dir} {
					if got := readTree(t, fsys, d+"/cgroup.subtree_control"); !strings.Contains(got, "cpu") {
						t.Errorf("%s/cgroup.subtree_control = %q, want cpu enabled", d, got)
					}
				}
			} else {
				for p, want := range map[string]string{pod + "/cpu.shares": "4096", pod + "/cpu.cfs_quota_us": "150000", pod + "/cpu.cfs_period_us": "100000", pod + "/cpu.idle": "1", reps[0].Dir + "/cpu.shares": "512"} {
					if got := readTree(t, fsys, p); got != want {
						t.Errorf("%s = %q, want %q", p, got, want)
					}
				}
			}
			if err := ch.Restore(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, snapshot(t, fsys)); diff != "" {
				t.Errorf("tree not restored (-before +after):\n%s", diff)
			}
			for _, r := range ch.Records() {
				if !r.OK {
					t.Errorf("record not OK: %+v", r)
				}
			}
			// Idempotent: a second restore changes nothing and is fine.
			if err := ch.Restore(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, snapshot(t, fsys)); diff != "" {
				t.Errorf("second restore changed the tree:\n%s", diff)
			}
		})
	}
}

func TestPlanUnsupported(t *testing.T) {
	cases := []struct {
		name  string
		l     layout
		knobs v1alpha1.Knobs
		want  string
	}{
		{"locked down", layout{kernel: "6.18.44", cgroup: "v1", debugfs: true, lockdown: true},
			v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupDisabled, BaseSlice: dur(time.Millisecond)},
			"baseSlice: /sys/kernel/debug/sched/base_slice_ns is locked down (kernel lockdown forbids debugfs)"},
		{"cfs knob on eevdf", layout{kernel: "6.12.1", cgroup: "v2", debugfs: true},
			v1alpha1.Knobs{Latency: dur(time.Millisecond)},
			"latency: /sys/kernel/debug/sched/latency_ns does not exist: not in kernel 6.12: EEVDF (6.6+) replaced latency_ns; use baseSlice"},
		{"unknown feature", layout{kernel: "6.12.1", cgroup: "v2", debugfs: true},
			v1alpha1.Knobs{Features: map[string]bool{"NO_SUCH_THING": true}},
			"features.NO_SUCH_THING: kernel 6.12.1 does not list NO_SUCH_THING in /sys/kernel/debug/sched/features"},
		{"no debugfs", layout{kernel: "6.18.44", cgroup: "v2"},
			v1alpha1.Knobs{Preempt: v1alpha1.PreemptLazy},
			"preempt: /sys/kernel/debug/sched/preempt does not exist: debugfs is not mounted at /sys/kernel/debug"},
		{"missing sysctl", layout{kernel: "6.18.44", cgroup: "v2"},
			v1alpha1.Knobs{Sysctls: map[string]v1alpha1.SysctlValue{"kernel.sched_energy_aware": "0"}},
			"sysctls.kernel.sched_energy_aware: /proc/sys/kernel/sched_energy_aware does not exist: not in this kernel (no /proc/sys/kernel/sched_energy_aware)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newTree(t, tc.l)
			caps, err := Detect(fsys)
			if err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, fsys)
			_, err = Plan(caps, &tc.knobs)
			var ue *UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("Plan = %v, want UnsupportedError", err)
			}
			if ue.Reason != tc.want {
				t.Errorf("reason:\n got %q\nwant %q", ue.Reason, tc.want)
			}
			if diff := cmp.Diff(before, snapshot(t, fsys)); diff != "" {
				t.Errorf("tree changed:\n%s", diff)
			}
		})
	}
}

func TestJournalRecoveryTree(t *testing.T) {
	fsys := newTree(t, layout{kernel: "6.12.3", cgroup: "v2", debugfs: true})
	state := t.TempDir()
	caps, err := Detect(fsys)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, fsys)
	settings, err := Plan(caps, &v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupDisabled, BaseSlice: dur(time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	ch := NewChanges(fsys, NewJournal(state, "crashy"), logr.Discard())
	if err := ch.Apply(settings); err != nil {
		t.Fatal(err)
	}
	cg, _ := NewCgroups(fsys, caps)
	if _, err := cg.Create(ch, "crashy", []v1alpha1.Group{{Name: "a", Replicas: 2}}); err != nil {
		t.Fatal(err)
	}
	// The agent "crashes" here: no Restore. A new agent starts:
	recs, err := RecoverJournal(fsys, state, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, snapshot(t, fsys)); diff != "" {
		t.Errorf("not restored (-before +after):\n%s", diff)
	}
	names := map[string]bool{}
	for _, r := range recs {
		names[r.Name] = r.OK
	}
	for _, n := range []string{"autogroup", "baseSlice", "cgroup schedlab/crashy/a-0", "cgroup schedlab/crashy/a-1", "cgroup schedlab", "cgroup.subtree_control /sys/fs/cgroup"} {
		if ok, seen := names[n]; !seen || !ok {
			t.Errorf("record %q: seen %v ok %v (records %+v)", n, seen, ok, recs)
		}
	}
	if _, err := ReadJournal(state); err == nil {
		t.Error("journal still there after recovery")
	}
	// Nothing to recover the second time.
	if recs, err := RecoverJournal(fsys, state, logr.Discard()); err != nil || recs != nil {
		t.Errorf("second recovery = %v, %v", recs, err)
	}
}

func TestJournalRejectsForeignPaths(t *testing.T) {
	fsys := newTree(t, layout{kernel: "6.12.3", cgroup: "v2", debugfs: true})
	state := t.TempDir()
	j := NewJournal(state, "evil")
	if err := j.Record(
		JournalEntry{Kind: EntryKnob, Name: "autogroup", Path: "/etc/passwd", Original: "x"},
		JournalEntry{Kind: EntryCgroup, Name: "cgroup system.slice", Path: "/sys/fs/cgroup/system.slice", Mount: "/sys/fs/cgroup", CgroupVersion: "v2"},
	); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, fsys)
	_, err := RecoverJournal(fsys, state, logr.Discard())
	if err == nil || !strings.Contains(err.Error(), "not in the catalogue") || !strings.Contains(err.Error(), "not touching it") {
		t.Errorf("RecoverJournal = %v, want refusals", err)
	}
	if diff := cmp.Diff(before, snapshot(t, fsys)); diff != "" {
		t.Errorf("tree changed:\n%s", diff)
	}
}

func TestLock(t *testing.T) {
	fsys := newTree(t, layout{kernel: "6.12.3", cgroup: "v2"})
	dir := t.TempDir()
	l1, err := AcquireLock(fsys, dir, "first-run", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = AcquireLock(fsys, dir, "second-run", 0)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), `run "first-run" (pid `) {
		t.Fatalf("second AcquireLock = %v, want busy naming first-run", err)
	}
	// Another state directory on the same node: the node lock says no.
	_, err = AcquireLock(fsys, t.TempDir(), "third-run", 200*time.Millisecond)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "holds the node lock on /sys/fs/cgroup") {
		t.Fatalf("AcquireLock with another state dir = %v, want busy on the node lock", err)
	}
	// Released while a second run waits: it gets the lock.
	go func() {
		time.Sleep(200 * time.Millisecond)
		l1.Release()
	}()
	l2, err := AcquireLock(fsys, dir, "second-run", 5*time.Second)
	if err != nil {
		t.Fatalf("waiting for the lock: %v", err)
	}
	l2.Release()
}

// TestCgroupV2ParentWithTasks: on cgroup v2 a replica with child cgroups
// cannot hold processes itself, so its own tasks go into a _tasks leaf.
func TestCgroupV2ParentWithTasks(t *testing.T) {
	for _, l := range []layout{{kernel: "6.12.3", cgroup: "v2"}, {kernel: "6.12.3", cgroup: "v1"}} {
		t.Run(l.cgroup, func(t *testing.T) {
			fsys := newTree(t, l)
			caps, err := Detect(fsys)
			if err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, fsys)
			cg, _ := NewCgroups(fsys, caps)
			ch := NewChanges(fsys, NewJournal(t.TempDir(), "p"), logr.Discard())
			reps, err := cg.Create(ch, "p", []v1alpha1.Group{{Name: "qos", CPUWeight: ptr(int32(300))}, {Name: "pod", Parent: "qos"}})
			if err != nil {
				t.Fatal(err)
			}
			run := cg.RunDir("p")
			got := []string{strings.TrimPrefix(reps[0].TasksDir, run), strings.TrimPrefix(reps[1].TasksDir, run)}
			want := []string{"/qos-0", "/qos-0/pod-0"}
			if l.cgroup == "v2" {
				want[0] = "/qos-0/_tasks"
				if w := readTree(t, fsys, reps[0].Dir+"/cpu.weight"); w != "300" {
					t.Errorf("qos-0 weight %s", w)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tasks dirs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{reps[1].Dir}, reps[0].Children); diff != "" {
				t.Errorf("children (-want +got):\n%s", diff)
			}
			if err := ch.Restore(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, snapshot(t, fsys)); diff != "" {
				t.Errorf("not restored:\n%s", diff)
			}
		})
	}
}

// TestApplyPreemptNotOffered: a preemption model the kernel was not built
// with is refused by the kernel (EINVAL): the variant is Unsupported.
func TestApplyPreemptNotOffered(t *testing.T) {
	fsys := newTree(t, layout{kernel: "6.12.3", cgroup: "v2", debugfs: true})
	if err := os.WriteFile(fsys.Abs(preemptPath), []byte("none voluntary (full)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	caps, err := Detect(fsys)
	if err != nil {
		t.Fatal(err)
	}
	settings, err := Plan(caps, &v1alpha1.Knobs{Preempt: v1alpha1.PreemptLazy})
	if err != nil {
		t.Fatal(err)
	}
	fsys.(*fakeHost).choices = []string{"none", "voluntary", "full"}
	ch := NewChanges(fsys, NewJournal(t.TempDir(), "p"), logr.Discard())
	err = ch.Apply(settings)
	var ue *UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(ue.Reason, `preempt: the kernel refused "lazy"`) {
		t.Fatalf("Apply = %v, want Unsupported", err)
	}
	if err := ch.Restore(); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, fsys, preemptPath); got != "none voluntary (full)" {
		t.Errorf("preempt = %q", got)
	}
}
