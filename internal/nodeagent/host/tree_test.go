package host

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// layout describes a fake host tree.
type layout struct {
	kernel  string // osrelease
	cgroup  string // "v1" or "v2"
	debugfs bool   // mounted
	// lockdown makes debugfs sched files (except debug) fail with EPERM.
	lockdown bool
}

const testFeatures = "PLACE_LAG PLACE_DEADLINE_INITIAL RUN_TO_PARITY NO_NEXT_BUDDY WAKEUP_PREEMPTION\n"

// newTree builds a host tree under t.TempDir() and returns its FS.
func newTree(t *testing.T, l layout) FS {
	t.Helper()
	root := t.TempDir()
	w := func(p, content string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mounts := "22 1 0:20 / /proc rw - proc proc rw\n"
	if l.cgroup == "v2" {
		mounts += "31 23 0:28 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
		w("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
		w("/sys/fs/cgroup/cgroup.subtree_control", "memory pids\n")
		w("/sys/fs/cgroup/cgroup.procs", "")
	} else {
		mounts += "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
		mounts += "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
		mounts += "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
		w("/sys/fs/cgroup/unified/cgroup.controllers", "")
		w("/sys/fs/cgroup/cpu,cpuacct/cgroup.procs", "")
		w("/sys/fs/cgroup/cpu,cpuacct/cpu.shares", "1024\n")
	}
	if l.debugfs {
		mounts += "50 23 0:12 / /sys/kernel/debug rw,relatime - debugfs debugfs rw\n"
		d := "/sys/kernel/debug/sched/"
		kv, _ := ParseKernelVersion(l.kernel)
		if kv.AtLeast(6, 6) {
			w(d+"base_slice_ns", "3000000\n")
		} else {
			w(d+"latency_ns", "24000000\n")
			w(d+"min_granularity_ns", "3000000\n")
			w(d+"wakeup_granularity_ns", "4000000\n")
		}
		w(d+"migration_cost_ns", "500000\n")
		w(d+"nr_migrate", "32\n")
		w(d+"tunable_scaling", "1\n")
		w(d+"preempt", "none voluntary (full) lazy\n")
		w(d+"features", testFeatures)
		w(d+"debug", "Sched Debug Version: v0.11\nsysctl_sched\n  .sysctl_sched_base_slice                 : 3.000000\n  .sysctl_sched_features                   : 11\n")
	} else {
		if err := os.MkdirAll(filepath.Join(root, "/sys/kernel/debug"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w("/proc/self/mountinfo", mounts)
	w("/proc/sys/kernel/osrelease", l.kernel+"\n")
	w("/proc/sys/kernel/sched_autogroup_enabled", "1\n")
	w("/proc/sys/kernel/numa_balancing", "0\n")
	w("/proc/sys/kernel/sched_rr_timeslice_ms", "100\n")
	w("/proc/sys/kernel/sched_cfs_bandwidth_slice_us", "5000\n")
	w("/proc/cmdline", "root=/dev/vda ro\n")
	w("/sys/devices/system/cpu/online", "0-7\n")
	return &fakeHost{FS: NewFS(root), l: l}
}

// fakeHost behaves like the kernel's special file systems where a plain
// tree cannot: cgroup directories come with their control files and can be
// removed while those exist; debugfs sched files fail with EPERM under
// lockdown; the features and preempt files take a choice, not a new content.
type fakeHost struct {
	FS
	l layout
	// choices the fake preempt file offers (default all four).
	choices []string
}

func (f *fakeHost) cgroupMount() string {
	if f.l.cgroup == "v2" {
		return "/sys/fs/cgroup"
	}
	return "/sys/fs/cgroup/cpu,cpuacct"
}

func (f *fakeHost) locked(p string) bool {
	return f.l.lockdown && strings.HasPrefix(p, "/sys/kernel/debug/sched/") && p != "/sys/kernel/debug/sched/debug"
}

func permErr(p string) error { return &fs.PathError{Op: "open", Path: p, Err: unix.EPERM} }

func (f *fakeHost) ReadFile(p string) ([]byte, error) {
	if f.locked(p) {
		return nil, permErr(p)
	}
	return f.FS.ReadFile(p)
}

func (f *fakeHost) ProbeWrite(p string) error {
	if f.locked(p) {
		return permErr(p)
	}
	return f.FS.ProbeWrite(p)
}

func (f *fakeHost) WriteFile(p string, data []byte) error {
	if f.locked(p) {
		return permErr(p)
	}
	switch {
	case p == "/sys/kernel/debug/sched/features":
		b, err := f.FS.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimSpace(string(data))
		base := strings.TrimPrefix(name, "NO_")
		var out []string
		found := false
		for _, x := range strings.Fields(string(b)) {
			if strings.TrimPrefix(x, "NO_") == base {
				x, found = name, true
			}
			out = append(out, x)
		}
		if !found {
			return &fs.PathError{Op: "write", Path: p, Err: unix.EINVAL}
		}
		return f.FS.WriteFile(p, []byte(strings.Join(out, " ")+"\n"))
	case p == "/sys/kernel/debug/sched/preempt":
		choice := strings.TrimSpace(string(data))
		var out []string
		found := false
		all := f.choices
		if all == nil {
			all = []string{"none", "voluntary", "full", "lazy"}
		}
		for _, x := range all {
			if x == choice {
				x, found = "("+x+")", true
			}
			out = append(out, x)
		}
		if !found {
			return &fs.PathError{Op: "write", Path: p, Err: unix.EINVAL}
		}
		return f.FS.WriteFile(p, []byte(strings.Join(out, " ")+"\n"))
	case strings.HasSuffix(p, "/cgroup.subtree_control"):
		b, err := f.FS.ReadFile(p)
		if err != nil {
			return err
		}
		cur := strings.Fields(string(b))
		for _, op := range strings.Fields(string(data)) {
			name := op[1:]
			var next []string
			for _, c := range cur {
				if c != name {
					next = append(next, c)
				}
			}
			if op[0] == '+' {
				next = append(next, name)
			}
			cur = next
		}
		return f.FS.WriteFile(p, []byte(strings.Join(cur, " ")+"\n"))
	}
	// The kernel shows a written value followed by a newline.
	return f.FS.WriteFile(p, []byte(strings.TrimSpace(string(data))+"\n"))
}

func (f *fakeHost) Mkdir(p string) error {
	if err := f.FS.Mkdir(p); err != nil {
		return err
	}
	if !strings.HasPrefix(p, f.cgroupMount()+"/") {
		return nil
	}
	files := map[string]string{"cgroup.procs": "", "tasks": ""}
	if f.l.cgroup == "v2" {
		files = map[string]string{"cgroup.procs": "", "cgroup.controllers": "cpu memory pids\n", "cgroup.subtree_control": "\n",
			"cpu.weight": "100\n", "cpu.max": "max 100000\n", "cpu.idle": "0\n", "cpu.stat": "usage_usec 0\n", "cgroup.kill": ""}
	} else {
		files["cpu.shares"] = "1024\n"
		files["cpu.cfs_quota_us"] = "-1\n"
		files["cpu.cfs_period_us"] = "100000\n"
		files["cpu.idle"] = "0\n"
		files["cpuacct.usage"] = "0\n"
	}
	for n, c := range files {
		if err := os.WriteFile(f.Abs(p+"/"+n), []byte(c), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeHost) Rmdir(p string) error {
	if strings.HasPrefix(p, f.cgroupMount()+"/") {
		ents, err := os.ReadDir(f.Abs(p))
		if err != nil {
			return err
		}
		for _, e := range ents {
			if e.IsDir() {
				return &fs.PathError{Op: "rmdir", Path: p, Err: unix.EBUSY}
			}
		}
		return os.RemoveAll(f.Abs(p))
	}
	return f.FS.Rmdir(p)
}

// snapshot maps every file of the tree to its content, to show a tree
// unchanged.
func snapshot(t *testing.T, fsys FS) map[string]string {
	t.Helper()
	m := map[string]string{}
	root := fsys.Root()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, root)
		if d.IsDir() {
			m[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		m[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func readTree(t *testing.T, fsys FS, p string) string {
	t.Helper()
	b, err := os.ReadFile(fsys.Abs(p))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
