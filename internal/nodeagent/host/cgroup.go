package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// CgroupParent is the directory under the cpu controller's hierarchy that
// holds every run's cgroups: schedlab/<runID>/<group>-<replica>.
const CgroupParent = "schedlab"

// tasksLeaf is, on cgroup v2, the leaf a replica's own tasks run in when the
// replica also has child cgroups (v2 allows processes only in leaves). The
// underscore keeps it apart from group names.
const tasksLeaf = "_tasks"

// defaultCPUMaxPeriod is the bandwidth period when cpuMaxPeriod is left out.
const defaultCPUMaxPeriod = 100 * time.Millisecond

// Cgroups manages the workload's cgroups in the cpu controller's hierarchy,
// cgroup v1 or v2.
type Cgroups struct {
	FS FS
	// Version is CgroupV1 or CgroupV2.
	Version string
	// Mount is the hierarchy's mount point on the host.
	Mount string
	// KillTimeout bounds how long Kill waits for a subtree to empty.
	KillTimeout time.Duration
}

// NewCgroups manages cgroups where caps found the cpu controller.
func NewCgroups(fsys FS, caps *v1alpha1.NodeCapabilities) (*Cgroups, error) {
	if caps.CgroupVersion == "" || caps.CgroupCPUPath == "" {
		return nil, errors.New("no cgroup hierarchy with the cpu controller (neither a v1 cpu mount nor a v2 mount whose cgroup.controllers lists cpu)")
	}
	return &Cgroups{FS: fsys, Version: caps.CgroupVersion, Mount: caps.CgroupCPUPath, KillTimeout: 10 * time.Second}, nil
}

// Replica is one replica's cgroup.
type Replica struct {
	Group string
	Index int
	// Dir is the replica's cgroup directory on the host.
	Dir string
	// TasksDir is where its tasks go: Dir, or Dir/_tasks on v2 when the
	// replica has child cgroups.
	TasksDir string
	// Children are the directories of the replicas nested directly under it.
	Children []string
}

// Procs is the cgroup.procs file the replica's tasks join.
func (r Replica) Procs() string { return r.TasksDir + "/cgroup.procs" }

// RunDir is the directory of a run's cgroups.
func (c *Cgroups) RunDir(runID string) string {
	return c.Mount + "/" + CgroupParent + "/" + runID
}

// RootProcs is the root cgroup's cgroup.procs: session tasks join it, so
// they run outside any cgroup and autogroup groups them by session.
func (c *Cgroups) RootProcs() string { return c.Mount + "/cgroup.procs" }

// Create makes schedlab/<runID>/<group>-<replica> for every replica of every
// group without a session (a group with parent p nests under p-0), with its
// weight, bandwidth and idle setting, journalling each directory before it is
// made. It returns the replicas in the order of the groups.
func (c *Cgroups) Create(ch *Changes, runID string, groups []v1alpha1.Group) ([]Replica, error) {
	if err := CheckRunID(runID); err != nil {
		return nil, err
	}
	top := c.Mount + "/" + CgroupParent
	runDir := c.RunDir(runID)
	if exists(c.FS, runDir) {
		return nil, fmt.Errorf("cgroup %s already exists: another run with this id, or one not cleaned up", runDir)
	}
	hasChildren := map[string]bool{}
	for i := range groups {
		if groups[i].Parent != "" {
			hasChildren[groups[i].Parent] = true
		}
	}

	// Plan every directory, then journal them all at once, then create.
	var dirs []string
	if !exists(c.FS, top) {
		dirs = append(dirs, top)
	}
	dirs = append(dirs, runDir)
	var reps []Replica
	first := map[string]*Replica{} // group → replica 0
	for i := range groups {
		g := &groups[i]
		if g.Session != "" {
			continue
		}
		parent := runDir
		if g.Parent != "" {
			p, ok := first[g.Parent]
			if !ok {
				return nil, fmt.Errorf("group %s: parent %s has no cgroup", g.Name, g.Parent)
			}
			parent = p.Dir
		}
		for r := 0; r < int(g.ReplicaCount()); r++ {
			d := fmt.Sprintf("%s/%s-%d", parent, g.Name, r)
			rep := Replica{Group: g.Name, Index: r, Dir: d, TasksDir: d}
			if c.Version == CgroupV2 && hasChildren[g.Name] && g.TaskCount() > 0 {
				rep.TasksDir = d + "/" + tasksLeaf
			}
			reps = append(reps, rep)
			dirs = append(dirs, d)
			if rep.TasksDir != d {
				dirs = append(dirs, rep.TasksDir)
			}
		}
		first[g.Name] = &reps[len(reps)-int(g.ReplicaCount())]
	}
	// Children, now that every Replica has its place in reps.
	idx := map[string]int{}
	for i := range reps {
		idx[reps[i].Dir] = i
	}
	for i := range reps {
		if p, ok := idx[path.Dir(reps[i].Dir)]; ok {
			reps[p].Children = append(reps[p].Children, reps[i].Dir)
		}
	}

	var entries []JournalEntry
	if c.Version == CgroupV2 {
		e, need, err := c.subtreeEntry(c.Mount)
		if err != nil {
			return nil, err
		}
		if need {
			entries = append(entries, e)
		}
		if exists(c.FS, top) {
			e, need, err := c.subtreeEntry(top)
			if err != nil {
				return nil, err
			}
			if need {
				entries = append(entries, e)
			}
		}
	}
	for _, d := range dirs {
		entries = append(entries, JournalEntry{Kind: EntryCgroup, Name: "cgroup " + strings.TrimPrefix(d, c.Mount+"/"), Path: d, CgroupVersion: c.Version, Mount: c.Mount})
	}
	if err := ch.Journal.Record(entries...); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	for _, e := range entries {
		if e.Kind == EntrySubtree {
			if err := c.enableCPU(path.Dir(e.Path)); err != nil {
				return nil, err
			}
			ch.noteSet(e, "+cpu")
		}
	}

	groupOf := map[string]*v1alpha1.Group{}
	for i := range groups {
		groupOf[groups[i].Name] = &groups[i]
	}
	repOf := map[string]*Replica{}
	for i := range reps {
		repOf[reps[i].Dir] = &reps[i]
	}
	for _, d := range dirs {
		if err := c.FS.Mkdir(d); err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", d, err)
		}
		ch.noteSet(JournalEntry{Kind: EntryCgroup, Name: "cgroup " + strings.TrimPrefix(d, c.Mount+"/"), Path: d}, "created")
		rep, isReplica := repOf[d]
		if c.Version == CgroupV2 && (!isReplica || len(rep.Children) > 0 || rep.TasksDir != rep.Dir) {
			// An inner cgroup: its children need the cpu controller.
			if err := c.enableCPU(d); err != nil {
				return nil, err
			}
		}
		if isReplica {
			if err := c.configure(d, groupOf[rep.Group]); err != nil {
				return nil, err
			}
		}
	}
	return reps, nil
}

// CheckRunID refuses a run id that cannot name one cgroup directory
// schedlab/<id>: callers check it before anything touches the node.
func CheckRunID(runID string) error {
	if !validRunID(runID) {
		return fmt.Errorf("run id %q: use 1 to 100 letters, digits, '-', '_' or '.' (not . or ..)", runID)
	}
	return nil
}

func validRunID(s string) bool {
	if s == "" || len(s) > 100 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// subtreeEntry is the journal entry for enabling cpu in dir's children, and
// whether it is needed (cpu not yet enabled there).
func (c *Cgroups) subtreeEntry(dir string) (JournalEntry, bool, error) {
	p := dir + "/cgroup.subtree_control"
	b, err := c.FS.ReadFile(p)
	if err != nil {
		return JournalEntry{}, false, fmt.Errorf("cgroup v2: %w", err)
	}
	cur := strings.TrimSpace(string(b))
	for _, f := range strings.Fields(cur) {
		if f == "cpu" {
			return JournalEntry{}, false, nil
		}
	}
	return JournalEntry{Kind: EntrySubtree, Name: "cgroup.subtree_control " + dir, Path: p, Original: cur, CgroupVersion: CgroupV2, Mount: c.Mount}, true, nil
}

// enableCPU writes +cpu to dir's cgroup.subtree_control unless it is there.
func (c *Cgroups) enableCPU(dir string) error {
	p := dir + "/cgroup.subtree_control"
	b, err := c.FS.ReadFile(p)
	if err != nil {
		return fmt.Errorf("cgroup v2: %w", err)
	}
	for _, f := range strings.Fields(string(b)) {
		if f == "cpu" {
			return nil
		}
	}
	if err := c.FS.WriteFile(p, []byte("+cpu")); err != nil {
		return fmt.Errorf("cgroup v2: enable cpu in %s: %w", p, err)
	}
	return nil
}

// V1Shares maps a cgroup v2 weight (1..10000) to v1 cpu.shares, the way
// DESIGN.md states it: round(weight × 1024 / 100), at least 2.
func V1Shares(weight int32) int64 {
	s := int64(math.Round(float64(weight) * 1024 / 100))
	if s < 2 {
		s = 2
	}
	return s
}

// configure writes a replica's weight, bandwidth and idle setting.
func (c *Cgroups) configure(dir string, g *v1alpha1.Group) error {
	weight := int32(100)
	if g.CPUWeight != nil {
		weight = *g.CPUWeight
	}
	set := func(file, value string) error {
		p := dir + "/" + file
		if !exists(c.FS, p) {
			return &UnsupportedError{Reason: fmt.Sprintf("group %s: %s does not exist on this node (cgroup %s)", g.Name, p, c.Version)}
		}
		if err := c.FS.WriteFile(p, []byte(value)); err != nil {
			return fmt.Errorf("group %s: write %q to %s: %w", g.Name, value, p, err)
		}
		return nil
	}
	var period time.Duration = defaultCPUMaxPeriod
	if g.CPUMaxPeriod != nil {
		period = g.CPUMaxPeriod.Duration
	}
	periodUs := period.Microseconds()
	var quotaUs int64 = -1
	if g.CPUMax != "" {
		m, err := CPUMaxMillis(g.CPUMax)
		if err != nil {
			return err
		}
		quotaUs = max(m*periodUs/1000, 1000)
	}
	switch c.Version {
	case CgroupV1:
		if err := set("cpu.shares", strconv.FormatInt(V1Shares(weight), 10)); err != nil {
			return err
		}
		if g.CPUMax != "" {
			if err := set("cpu.cfs_period_us", strconv.FormatInt(periodUs, 10)); err != nil {
				return err
			}
			if err := set("cpu.cfs_quota_us", strconv.FormatInt(quotaUs, 10)); err != nil {
				return err
			}
		}
	case CgroupV2:
		if err := set("cpu.weight", strconv.Itoa(int(weight))); err != nil {
			return err
		}
		if g.CPUMax != "" {
			if err := set("cpu.max", fmt.Sprintf("%d %d", quotaUs, periodUs)); err != nil {
				return err
			}
		}
	}
	if g.CPUIdle != nil && *g.CPUIdle {
		if err := set("cpu.idle", "1"); err != nil {
			return err
		}
	}
	return nil
}

// under reports whether dir is a cgroup schedlab made: strictly inside
// <mount>/schedlab/. Kill and Remove refuse anything else.
func (c *Cgroups) under(dir string) bool {
	return strings.HasPrefix(path.Clean(dir), c.Mount+"/"+CgroupParent+"/") || path.Clean(dir) == c.Mount+"/"+CgroupParent
}

// subtree lists dir and every cgroup below it, deepest first.
func (c *Cgroups) subtree(dir string) ([]string, error) {
	var out []string
	var walk func(d string) error
	walk = func(d string) error {
		ents, err := c.FS.ReadDir(d)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if e.IsDir() {
				if err := walk(d + "/" + e.Name()); err != nil {
					return err
				}
			}
		}
		out = append(out, d)
		return nil
	}
	if err := walk(dir); err != nil {
		return nil, err
	}
	return out, nil
}

// Pids lists the processes in dir and below.
func (c *Cgroups) Pids(dir string) ([]int, error) {
	dirs, err := c.subtree(dir)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, d := range dirs {
		b, err := c.FS.ReadFile(d + "/cgroup.procs")
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, err
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids, nil
}

// Kill kills every process in dir and below and waits until none is left:
// cgroup.kill where the kernel has it (v2, 5.14+), else SIGKILL to each pid
// in cgroup.procs until they are empty.
func (c *Cgroups) Kill(dir string) error {
	if !c.under(dir) {
		return fmt.Errorf("refusing to kill cgroup %s: not under %s/%s", dir, c.Mount, CgroupParent)
	}
	if !exists(c.FS, dir) {
		return nil
	}
	if c.Version == CgroupV2 && exists(c.FS, dir+"/cgroup.kill") {
		_ = c.FS.WriteFile(dir+"/cgroup.kill", []byte("1"))
	}
	timeout := c.KillTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	var pids []int
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var err error
		if pids, err = c.Pids(dir); err != nil {
			return false, fmt.Errorf("kill cgroup %s: %w", dir, err)
		}
		for _, p := range pids {
			if p > 1 && p != unix.Getpid() {
				_ = unix.Kill(p, unix.SIGKILL)
			}
		}
		return len(pids) == 0, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("kill cgroup %s: %d processes still there after %s: %v", dir, len(pids), timeout, pids)
	}
	return err
}

// Remove kills every process in dir and below, then removes the cgroups
// bottom-up. A cgroup already gone is fine.
func (c *Cgroups) Remove(dir string) error {
	if err := c.Kill(dir); err != nil {
		return err
	}
	if !exists(c.FS, dir) {
		return nil
	}
	dirs, err := c.subtree(dir)
	if err != nil {
		return err
	}
	// An emptied cgroup stays busy until its killed processes are reaped
	// (by their parent, or by init once the agent is gone): wait for that.
	for _, d := range dirs {
		var rerr error
		for try := 0; try < 500; try++ {
			rerr = c.FS.Rmdir(d)
			if rerr == nil || errors.Is(rerr, fs.ErrNotExist) {
				rerr = nil
				break
			}
			if !errors.Is(rerr, unix.EBUSY) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if rerr != nil {
			return fmt.Errorf("remove cgroup %s: %w", d, rerr)
		}
	}
	return nil
}

// Usage is the CPU time used by dir and everything below it, and where it
// was read: cpu.stat usage_usec (v2, and v1 kernels that have it),
// cpuacct.usage where cpuacct is mounted with cpu, else the sum of
// /proc/<tid>/schedstat over the threads of the subtree (v1 with a separate
// cpuacct hierarchy, as on this development machine) — the last counts only
// threads alive when read.
func (c *Cgroups) Usage(dir string) (time.Duration, string, error) {
	if b, err := c.FS.ReadFile(dir + "/cpu.stat"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					return 0, "", fmt.Errorf("%s/cpu.stat: %w", dir, err)
				}
				return time.Duration(us) * time.Microsecond, "cpu.stat", nil
			}
		}
	}
	if b, err := c.FS.ReadFile(dir + "/cpuacct.usage"); err == nil {
		ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, "", fmt.Errorf("%s/cpuacct.usage: %w", dir, err)
		}
		return time.Duration(ns), "cpuacct.usage", nil
	}
	dirs, err := c.subtree(dir)
	if err != nil {
		return 0, "", err
	}
	var total time.Duration
	for _, d := range dirs {
		b, err := c.FS.ReadFile(d + "/tasks")
		if err != nil {
			return 0, "", fmt.Errorf("cgroup usage of %s: %w", d, err)
		}
		for _, f := range strings.Fields(string(b)) {
			s, err := c.FS.ReadFile("/proc/" + f + "/schedstat")
			if err != nil {
				continue // the thread exited
			}
			fields := strings.Fields(string(s))
			if len(fields) > 0 {
				ns, _ := strconv.ParseInt(fields[0], 10, 64)
				total += time.Duration(ns)
			}
		}
	}
	return total, "schedstat of the cgroup's threads", nil
}

// restoreCgroup undoes a cgroup entry: kills what is inside and removes it.
func restoreCgroup(fsys FS, e JournalEntry) error {
	if e.Mount == "" || !strings.HasPrefix(e.Path, e.Mount+"/"+CgroupParent) {
		return fmt.Errorf("journal: cgroup %q is not under %s/%s; not touching it", e.Path, e.Mount, CgroupParent)
	}
	c := &Cgroups{FS: fsys, Version: e.CgroupVersion, Mount: e.Mount, KillTimeout: 10 * time.Second}
	if path.Clean(e.Path) == e.Mount+"/"+CgroupParent {
		// The shared parent of every run: removed when empty, never
		// emptied by force (it may hold another run's or tool's cgroups).
		if err := fsys.Rmdir(e.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EBUSY) {
				return errKeptParent
			}
			return fmt.Errorf("remove cgroup %s: %w", e.Path, err)
		}
		return nil
	}
	return c.Remove(e.Path)
}

// errKeptParent says the shared schedlab parent cgroup was left in place
// because something else lives in it.
var errKeptParent = errors.New("kept: it holds other cgroups")

// restoreSubtree disables the cpu controller again where the run enabled it.
func restoreSubtree(fsys FS, e JournalEntry) (string, error) {
	if path.Base(e.Path) != "cgroup.subtree_control" || !strings.HasPrefix(e.Path, e.Mount) {
		return "", fmt.Errorf("journal: %q is not a cgroup.subtree_control of %s; not touching it", e.Path, e.Mount)
	}
	b, err := fsys.ReadFile(e.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	cur := strings.Fields(string(b))
	hadCPU := false
	for _, f := range strings.Fields(e.Original) {
		if f == "cpu" {
			hadCPU = true
		}
	}
	if !hadCPU && containsStr(cur, "cpu") {
		if err := fsys.WriteFile(e.Path, []byte("-cpu")); err != nil {
			return strings.Join(cur, " "), fmt.Errorf("disable cpu in %s: %w", e.Path, err)
		}
	}
	b, err = fsys.ReadFile(e.Path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
