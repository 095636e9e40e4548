package nodeagent

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
)

// The cgroups at the top of the cpu hierarchy other than schedlab's own are
// group entities on the root run queue beside the workload's. What counts
// there is not only the CPU they used but how much of the time they had a
// runnable task: an idle cgroup (cpu.idle 1, weight 3) beside hogs gets a
// fraction of a percent of a CPU, its threads fall below the noise
// sources' floors, and yet its entity stays queued and moves the average
// vruntime the wake-up picks compare against (docs/latency-tail.md,
// twelfth and thirteenth sessions). Each window records, per top-level
// cgroup:
//   - its weight and idle flag (cpu.shares or cpu.weight, cpu.idle);
//   - its CPU: the cgroup's own counter where the hierarchy has one (v2
//     cpu.stat usage_usec; v1 cpuacct.usage when cpuacct is mounted with
//     cpu), else the sum of its threads' schedstat CPU time (a v1 cpu
//     hierarchy of its own, as on the development machine);
//   - its runnable load: the sum of its threads' schedstat time on a CPU
//     and run_delay over the window (v1 and v2; threads that ended within
//     the window are missing), and on v2 the "some" total of its
//     cpu.pressure where PSI is on (it counts ended tasks; v1's cpu
//     hierarchy has no pressure files).

const (
	// maxForeignCgroups is how many top-level cgroups a window lists.
	maxForeignCgroups = 16
	// minForeignCgroupLoad is the least CPU or runnable load (threads) a
	// listed cgroup had.
	minForeignCgroupLoad = 0.001
	// maxCgroupDirs bounds the directories read under one top-level
	// cgroup (a node with thousands of pod cgroups stays cheap to sample).
	maxCgroupDirs = 4096
)

// cgroupSample is one top-level cgroup at one instant.
type cgroupSample struct {
	shares      int64
	idle        bool
	usage       time.Duration // the cgroup's own CPU counter, when hasUsage
	hasUsage    bool
	pressure    time.Duration // cpu.pressure's "some" total, when hasPressure
	hasPressure bool
	tids        []int // its threads and its descendants'
}

// readForeignCgroups samples the direct children of the cpu hierarchy's
// root (mount, cgroup version v1 or v2) except schedlab's own parent, by
// their path ("/system.slice"). nil when the node has no cpu hierarchy.
func readForeignCgroups(fsys host.FS, version, mount string) map[string]cgroupSample {
	if mount == "" || version == "" {
		return nil
	}
	ents, err := fsys.ReadDir(mount)
	if err != nil {
		return nil
	}
	out := map[string]cgroupSample{}
	for _, e := range ents {
		if !e.IsDir() || e.Name() == host.CgroupParent {
			continue
		}
		dir := mount + "/" + e.Name()
		var s cgroupSample
		s.shares, s.idle = cgroupWeight(fsys, dir, version)
		s.usage, s.hasUsage = cgroupUsage(fsys, dir)
		if version == host.CgroupV2 {
			s.pressure, s.hasPressure = cgroupPressureSome(fsys, dir)
		}
		list := "tasks" // v1: the thread ids of the cgroup itself
		if version == host.CgroupV2 {
			list = "cgroup.threads"
		}
		dirs := []string{dir}
		for i := 0; i < len(dirs) && i < maxCgroupDirs; i++ {
			if b, err := fsys.ReadFile(dirs[i] + "/" + list); err == nil {
				for _, f := range strings.Fields(string(b)) {
					if tid, err := strconv.Atoi(f); err == nil {
						s.tids = append(s.tids, tid)
					}
				}
			}
			sub, err := fsys.ReadDir(dirs[i])
			if err != nil {
				continue
			}
			for _, c := range sub {
				if c.IsDir() {
					dirs = append(dirs, dirs[i]+"/"+c.Name())
				}
			}
		}
		out["/"+e.Name()] = s
	}
	return out
}

// cgroupUsage is a cgroup's own CPU counter: v2 cpu.stat usage_usec, or v1
// cpuacct.usage where cpuacct shares the cpu hierarchy; false when it has
// neither (v1 cpu.stat has no usage).
func cgroupUsage(fsys host.FS, dir string) (time.Duration, bool) {
	if b, err := fsys.ReadFile(dir + "/cpu.stat"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				if us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					return time.Duration(us) * time.Microsecond, true
				}
			}
		}
	}
	if b, err := fsys.ReadFile(dir + "/cpuacct.usage"); err == nil {
		if ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			return time.Duration(ns), true
		}
	}
	return 0, false
}

// cgroupPressureSome is the "some" total of a v2 cgroup's cpu.pressure
// ("some avg10=0.00 avg60=0.00 avg300=0.00 total=123", µs); false where
// the file is missing or unreadable (PSI off: psi=0, or a kernel without
// CONFIG_PSI).
func cgroupPressureSome(fsys host.FS, dir string) (time.Duration, bool) {
	b, err := fsys.ReadFile(dir + "/cpu.pressure")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "some ")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(rest) {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				if us, err := strconv.ParseInt(v, 10, 64); err == nil {
					return time.Duration(us) * time.Microsecond, true
				}
			}
		}
	}
	return 0, false
}

// threadIndex is every thread's counters in a sample, by tid.
func threadIndex(procs map[int]procCPU) map[int]threadCPU {
	n := 0
	for _, p := range procs {
		n += len(p.threads)
	}
	out := make(map[int]threadCPU, n)
	for _, p := range procs {
		for tid, t := range p.threads {
			out[tid] = t
		}
	}
	return out
}

// foreignCgroups are the top-level cgroups between two samples wall
// seconds apart (before and after by path; threads' counters by tid at
// each sample), each with its CPU and runnable load over the interval: the
// threads it has at the second sample count what they did since the first,
// each over its own interval between its two readings (all of it, over
// wall, for a thread born in the interval, or whose counters went back: a
// reused tid). At most maxForeignCgroups of at least minForeignCgroupLoad
// CPU or runnable load, the most runnable first.
func foreignCgroups(before, after map[string]cgroupSample, tb, ta map[int]threadCPU, wall float64) []v1alpha1.ForeignCgroup {
	if wall <= 0 {
		return nil
	}
	var out []v1alpha1.ForeignCgroup
	for p, a := range after {
		var cpu, wait float64 // rates: CPUs, threads
		var wakeups int64
		threads := 0
		for _, tid := range a.tids {
			at, ok := ta[tid]
			if !ok {
				continue // ended before it was read
			}
			threads++
			bt, ok := tb[tid]
			if !ok || bt.cpu > at.cpu || bt.wait > at.wait || bt.runs > at.runs {
				bt = threadCPU{}
			}
			dt := wall
			if !bt.at.IsZero() && at.at.After(bt.at) {
				dt = at.at.Sub(bt.at).Seconds()
			}
			cpu += (at.cpu - bt.cpu).Seconds() / dt
			wait += (at.wait - bt.wait).Seconds() / dt
			wakeups += max(at.wakeups-bt.wakeups, 0)
		}
		c := v1alpha1.ForeignCgroup{Path: p, Shares: min(max(a.shares, 0), 262144), Idle: a.idle, Threads: int32(min(threads, math.MaxInt32)),
			CPUSource: "Threads", Wakeups: wakeups}
		c.CPU = cpu
		b, seen := before[p]
		if a.hasUsage && seen && b.hasUsage && a.usage >= b.usage {
			c.CPU, c.CPUSource = (a.usage-b.usage).Seconds()/wall, "Cgroup"
		}
		c.Runnable = cpu + wait
		c.Wait = wait
		if a.hasPressure && seen && b.hasPressure && a.pressure >= b.pressure {
			some := math.Round(min((a.pressure-b.pressure).Seconds()/wall, 1)*1e4) / 1e4
			c.PressureSome = &some
		}
		if c.CPU < minForeignCgroupLoad && c.Runnable < minForeignCgroupLoad && (c.PressureSome == nil || *c.PressureSome < minForeignCgroupLoad) {
			continue
		}
		c.CPU, c.Runnable, c.Wait = math.Round(c.CPU*1e4)/1e4, math.Round(c.Runnable*1e4)/1e4, math.Round(c.Wait*1e4)/1e4
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Runnable != out[j].Runnable {
			return out[i].Runnable > out[j].Runnable
		}
		if out[i].CPU != out[j].CPU {
			return out[i].CPU > out[j].CPU
		}
		return out[i].Path < out[j].Path
	})
	if len(out) > maxForeignCgroups {
		out = out[:maxForeignCgroups]
	}
	return out
}

// FormatForeignCgroups writes a window's foreign cgroups as
// "/builds (cpu.idle) 0.004 CPUs, 2.00 threads runnable (1.99 waiting) of 2,
// pressure 1.00; /system.slice (shares 1024) …"; "" when none.
func FormatForeignCgroups(cs []v1alpha1.ForeignCgroup) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		w := "shares " + strconv.FormatInt(c.Shares, 10)
		if c.Idle {
			w = "cpu.idle"
		}
		part := c.Path + " (" + w + ") " + strconv.FormatFloat(c.CPU, 'f', 4, 64) + " CPUs"
		if c.CPUSource == "Threads" {
			part += " (its threads')"
		}
		part += ", " + strconv.FormatFloat(c.Runnable, 'f', 2, 64) + " threads runnable (" +
			strconv.FormatFloat(c.Wait, 'f', 2, 64) + " waiting) of " + strconv.Itoa(int(c.Threads))
		if c.PressureSome != nil {
			part += ", some waiting " + strconv.FormatFloat(*c.PressureSome, 'f', 3, 64) + " of the time"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}
