package nodeagent

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
)

// procCPU is one process's CPU time (all its threads: utime + stime of
// /proc/PID/stat), identity and threads at one instant.
type procCPU struct {
	name  string
	start uint64 // start time in clock ticks after boot: tells a reused pid
	ppid  int
	cpu   time.Duration
	// children is the CPU time of the children it has waited for (cutime +
	// cstime): a child's whole life lands here when its parent reaps it.
	children time.Duration
	threads  map[int]threadCPU // by tid; nil when the threads could not be read
}

// userHZ is the unit of /proc/PID/stat's times (USER_HZ, 100 on every
// Linux ABI).
const userHZ = 100

// threadCPU is one thread's scheduler counters at one instant.
type threadCPU struct {
	cpu     time.Duration // schedstat: time on a CPU, in ns
	wait    time.Duration // schedstat: time runnable on a run queue, in ns (run_delay)
	runs    int64         // schedstat: timeslices run (sched_info.pcount)
	wakeups int64         // voluntary_ctxt_switches: blocks, each ended by a wake-up
	cpus    string        // Cpus_allowed_list
	// at is when its schedstat was read: on a busy node reading every
	// thread takes a while, and a rate is over the thread's own interval.
	at time.Time
}

// readProcCPU reads every process's CPU time and its threads' counters
// under proc (the host's /proc). A process that ends while it is read is
// left out; a node whose /proc cannot be listed gives none (the noise is
// still measured as a whole, from /proc/stat).
func readProcCPU(pfs procfs.FS, proc string) map[int]procCPU {
	procs, err := pfs.AllProcs()
	if err != nil {
		return nil
	}
	out := make(map[int]procCPU, len(procs))
	for _, p := range procs {
		if c, ok := procCPUOf(p, proc); ok {
			out[p.PID] = c
		}
	}
	return out
}

// procCPUOf reads one process's CPU time and its threads' counters; false
// when it ended while it was read.
func procCPUOf(p procfs.Proc, proc string) (procCPU, bool) {
	st, err := p.Stat()
	if err != nil {
		return procCPU{}, false
	}
	return procCPU{name: st.Comm, start: st.Starttime, ppid: st.PPID, cpu: time.Duration(st.CPUTime() * float64(time.Second)),
		children: time.Duration(st.CUTime+st.CSTime) * time.Second / userHZ,
		threads:  readThreads(filepath.Join(proc, strconv.Itoa(p.PID), "task"))}, true
}

// readThreads reads the counters of the threads under a task directory.
func readThreads(dir string) map[int]threadCPU {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := make(map[int]threadCPU, len(ents))
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		t, ok := readThread(filepath.Join(dir, e.Name()))
		if ok {
			out[tid] = t
		}
	}
	return out
}

// readThread reads /proc/PID/task/TID/schedstat ("run ns, wait ns,
// timeslices": the time on a CPU, the time runnable on a run queue, and
// the switches in) and the voluntary switches and affinity of its status.
func readThread(dir string) (threadCPU, bool) {
	var t threadCPU
	b, err := os.ReadFile(filepath.Join(dir, "schedstat"))
	if err != nil {
		return t, false
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return t, false
	}
	run, err1 := strconv.ParseInt(f[0], 10, 64)
	wait, err2 := strconv.ParseInt(f[1], 10, 64)
	runs, err3 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return t, false
	}
	t.cpu, t.wait, t.runs, t.at = time.Duration(run), time.Duration(wait), runs, time.Now()
	b, err = os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return t, false
	}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		switch string(k) {
		case "voluntary_ctxt_switches":
			t.wakeups, _ = strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		case "Cpus_allowed_list":
			t.cpus = string(bytes.TrimSpace(v))
		}
	}
	return t, true
}

const (
	// maxNoiseSources is how many processes a window names as its noise.
	maxNoiseSources = 16
	// minNoiseSourceCPU is the least CPU a named noise source used.
	minNoiseSourceCPU = 0.002
	// maxNoiseThreads is how many threads a noise source lists.
	maxNoiseThreads = 8
	// minNoiseThreadCPU is the least CPU a listed thread used.
	minNoiseThreadCPU = 0.0005
)

// noiseSources are the processes other than the workers that used the most
// CPU between two samples wall seconds apart: at most maxNoiseSources, each
// at least minNoiseSourceCPU, the most first, each with its busiest threads
// (at most maxNoiseThreads of at least minNoiseThreadCPU) and their runs
// and wake-ups over the interval. A process that began within the window
// counts all its CPU time; so do its threads.
//
// A process that ended within the window is not seen, but its parent
// reaps it: the CPU of the children a process waited for in the window
// (its cutime and cstime grew by their whole lives) is counted in its CPU
// and named as its exitedChildrenCPU, less what those children that were
// alive at the first sample had used by then (and their own children,
// reaped through them). That names the shell, make or test runner whose
// short-lived commands took the CPU. A child reaped by another process
// than its parent (an orphan's subreaper) is charged to its reaper whole,
// and its earlier CPU is taken from its parent, never below zero.
func noiseSources(before, after map[int]procCPU, workers map[int]bool, wall float64) []v1alpha1.NoiseSource {
	if wall <= 0 {
		return nil
	}
	// The CPU the processes that ended had used before the window (with
	// what they had reaped by then), by the ancestor still alive that their
	// reaping reaches: a test binary that ends, reaped by the go command
	// that ends too, reaped by a shell, lands in the shell's cutime whole.
	ended := func(pid int) bool {
		a, ok := after[pid]
		return !ok || a.start != before[pid].start
	}
	earlier := map[int]time.Duration{}
	for pid, b := range before {
		if !ended(pid) {
			continue
		}
		up := b.ppid
		for range len(before) { // a bound: ppid links cannot loop, but a pid may be reused
			p, ok := before[up]
			if !ok || !ended(up) {
				break
			}
			up = p.ppid
		}
		earlier[up] += b.cpu + b.children
	}
	var out []v1alpha1.NoiseSource
	for pid, a := range after {
		if workers[pid] {
			continue
		}
		d, dc := a.cpu, a.children
		b, seen := before[pid]
		seen = seen && b.start == a.start
		if seen {
			d -= b.cpu
			dc -= b.children + earlier[pid]
		}
		dc = max(dc, 0)
		cpu := (d + dc).Seconds() / wall
		if cpu < minNoiseSourceCPU {
			continue
		}
		src := v1alpha1.NoiseSource{Name: a.name, PID: int32(pid), CPU: round3(cpu), ExitedChildrenCPU: round3(dc.Seconds() / wall)}
		for tid, at := range a.threads {
			bt, ok := b.threads[tid]
			if !seen || !ok || bt.cpu > at.cpu || bt.runs > at.runs || bt.wait > at.wait {
				bt = threadCPU{}
			}
			// Over its own interval between its two readings: a reading
			// of every thread on a busy node takes a while, and a thread
			// read late in one and early in the other did less than the
			// readings' midpoints say (as foreignCgroups does).
			dt := wall
			if !bt.at.IsZero() && at.at.After(bt.at) {
				dt = at.at.Sub(bt.at).Seconds()
			}
			tc := (at.cpu - bt.cpu).Seconds() / dt
			if tc < minNoiseThreadCPU {
				continue
			}
			src.Threads = append(src.Threads, v1alpha1.NoiseThread{TID: int32(tid), CPU: math.Round(tc*1e4) / 1e4,
				Runs: at.runs - bt.runs, Wakeups: max(at.wakeups-bt.wakeups, 0), CPUs: at.cpus,
				Wait: math.Round(min((at.wait-bt.wait).Seconds()/dt, 1)*1e4) / 1e4})
		}
		sort.Slice(src.Threads, func(i, j int) bool {
			if src.Threads[i].CPU != src.Threads[j].CPU {
				return src.Threads[i].CPU > src.Threads[j].CPU
			}
			return src.Threads[i].TID < src.Threads[j].TID
		})
		if len(src.Threads) > maxNoiseThreads {
			src.Threads = src.Threads[:maxNoiseThreads]
		}
		out = append(out, src)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CPU != out[j].CPU {
			return out[i].CPU > out[j].CPU
		}
		return out[i].PID < out[j].PID
	})
	if len(out) > maxNoiseSources {
		out = out[:maxNoiseSources]
	}
	return out
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// describeNoise fills in what the scheduler needs to know about each
// source, read after the window under the host's /proc (proc): whether it
// is a kernel thread, its cgroup on the cpu hierarchy (mount, "" when the
// node has no cpu controller) with the top level's weight and idle flag,
// its autogroup, and each thread's name, policy, nice and real-time
// priority. What cannot be read (a process that ended) stays unset.
func describeNoise(fsys host.FS, proc, cgroupVersion, mount string, srcs []v1alpha1.NoiseSource) {
	pfs, err := procfs.NewFS(proc)
	if err != nil {
		return
	}
	for i := range srcs {
		s := &srcs[i]
		pid := int(s.PID)
		if p, err := pfs.Proc(pid); err == nil {
			if st, err := p.Stat(); err == nil {
				s.KernelThread = st.Flags&pfKthread != 0
			}
		}
		if b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "cgroup")); err == nil {
			s.Cgroup = cpuCgroup(string(b), cgroupVersion)
		}
		if s.Cgroup != "" && s.Cgroup != "/" && mount != "" {
			top := "/" + strings.SplitN(strings.TrimPrefix(s.Cgroup, "/"), "/", 2)[0]
			s.CgroupShares, s.CgroupIdle = cgroupWeight(fsys, path.Join(mount, top), cgroupVersion)
		}
		if b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "autogroup")); err == nil {
			s.Autogroup, s.AutogroupNice = parseAutogroup(string(b))
		}
		for j := range s.Threads {
			t := &s.Threads[j]
			tp, err := pfs.Thread(pid, int(t.TID))
			if err != nil {
				continue
			}
			st, err := tp.Stat()
			if err != nil {
				continue
			}
			t.Name, t.Nice, t.Policy = st.Comm, int32(st.Nice), policyName(st.Policy)
			if t.Policy == "FIFO" || t.Policy == "RR" {
				t.RTPriority = int32(st.RTPriority)
			}
		}
	}
}

// pfKthread is PF_KTHREAD of include/linux/sched.h, in /proc/PID/stat's flags.
const pfKthread = 0x00200000

// policyName names a SCHED_* policy number.
func policyName(p uint) string {
	switch p {
	case 0:
		return string(v1alpha1.PolicyOther)
	case 1:
		return "FIFO"
	case 2:
		return "RR"
	case 3:
		return string(v1alpha1.PolicyBatch)
	case 5:
		return string(v1alpha1.PolicyIdle)
	case 6:
		return "Deadline"
	}
	return strconv.FormatUint(uint64(p), 10)
}

// cpuCgroup is the cgroup on the cpu controller's hierarchy in the text
// of /proc/PID/cgroup: the v1 line whose controllers include cpu, or the
// v2 line "0::PATH"; "" when there is none.
func cpuCgroup(s, version string) string {
	for _, line := range strings.Split(s, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if version == host.CgroupV2 {
			if f[0] == "0" && f[1] == "" {
				return f[2]
			}
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "cpu" {
				return f[2]
			}
		}
	}
	return ""
}

// cgroupWeight is a cgroup's weight as the kernel's tg->shares counts it
// (v1 cpu.shares; v2 cpu.weight scaled by sched_weight_from_cgroup(),
// DIV_ROUND_CLOSEST(w × 1024, 100)) and whether its cpu.idle is set (v1 and v2, 5.15+).
func cgroupWeight(fsys host.FS, dir, version string) (int64, bool) {
	var shares int64
	if version == host.CgroupV2 {
		if b, err := fsys.ReadFile(dir + "/cpu.weight"); err == nil {
			if w, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				shares = (w*1024 + 50) / 100
			}
		}
	} else if b, err := fsys.ReadFile(dir + "/cpu.shares"); err == nil {
		shares, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	idle := false
	if b, err := fsys.ReadFile(dir + "/cpu.idle"); err == nil {
		idle = strings.TrimSpace(string(b)) == "1"
	}
	return shares, idle
}

// parseAutogroup reads /proc/PID/autogroup ("/autogroup-123 nice 0"; empty
// for a task in the root's default autogroup, such as a kernel thread).
func parseAutogroup(s string) (int64, int32) {
	var id int64
	var nice int32
	if _, err := fmt.Sscanf(strings.TrimSpace(s), "/autogroup-%d nice %d", &id, &nice); err != nil {
		return 0, 0
	}
	return id, nice
}

// FormatNoiseSources writes a window's first three noise sources as
// "kdamond.0 (pid 78) 0.080, make (pid 1234) 0.050 (0.048 by its ended
// children)", followed by how many more there were and their CPU; "" when
// none.
func FormatNoiseSources(ns []v1alpha1.NoiseSource) string {
	var parts []string
	var rest float64
	for i, n := range ns {
		if i >= 3 {
			rest += n.CPU
			continue
		}
		part := fmt.Sprintf("%s (pid %d) %.3f", n.Name, n.PID, n.CPU)
		if n.ExitedChildrenCPU > 0 {
			part += fmt.Sprintf(" (%.3f by its ended children)", n.ExitedChildrenCPU)
		}
		parts = append(parts, part)
	}
	if len(ns) > 3 {
		parts = append(parts, fmt.Sprintf("%d more %.3f", len(ns)-3, rest))
	}
	return strings.Join(parts, ", ")
}
