package experiment

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/simengine"
)

// The node's other processes, as its windows measured them (the noise
// sources' threads: CPU, wake-ups, policy, group), run beside the
// experiment in the prediction shown next to those windows: a uniform
// background load slows every task alike and can never make a probe wait
// behind another task's 3 ms burst, which is what the node's long waits
// were (kdamond.0 and other processes on the probe's CPU). The CPU the
// modelled threads stand for is taken out of the windows' background load
// (WithWindowNoise); what is left (interrupts, processes below the
// sources' floor, real-time threads) stays a uniform slowdown, as before.
// Processes that ended within the window run as tasks beside their parent
// (endedChildren).

// foreignThread says whether a noise thread runs as a Foreign task on a
// shape of cpus CPUs, and on which of them (nil: all): a fair-class
// thread (Other, Batch, Idle) that used CPU, pinned to none but CPUs the
// shape has. Real-time and deadline threads are left in the background
// load: the simulator has no real-time class, and like interrupts they
// take the CPU from every fair task alike.
func foreignThread(t *v1alpha1.NoiseThread, cpus int32) (pin []int32, ok bool) {
	if t.CPU <= 0 {
		return nil, false
	}
	switch v1alpha1.SchedPolicy(t.Policy) {
	case v1alpha1.PolicyOther, v1alpha1.PolicyBatch, v1alpha1.PolicyIdle:
	default:
		return nil, false
	}
	if t.CPUs == "" {
		return nil, true
	}
	list, err := v1alpha1.ParseCPUList(t.CPUs)
	if err != nil || len(list) == 0 || list[len(list)-1] >= cpus {
		return nil, false
	}
	if len(list) < int(cpus) {
		pin = list
	}
	return pin, true
}

// endedChildren is the thread that stands for a noise source's children
// that ended within the window (NoiseSource.ExitedChildrenCPU: a shell's
// or make's commands, which the agent never saw as processes of their own),
// and the CPUs they may run on (nil: all): false when none did, when they
// are a kernel thread's (kthreadd's workers are kernel threads the windows
// list themselves), when their CPU is already counted in a recorded foreign
// cgroup's (cgroupRests: the cgroup's CPU includes its ended processes'),
// or when their parent's thread is not one foreignThread runs. They run
// as their parent's main thread does: its policy, nice and CPUs (a child
// inherits them at fork, sched_fork() v6.18, unless reset on fork), in its
// scheduling group (the same cgroup and autogroup). How many children
// there were the agent does not count: a parent that waits for each child
// wakes once when it ends (wait4() returns on the child's exit), so the
// parent's main thread's wake-ups, at least one, stand for the children;
// the bursts are their CPU over that count.
//
// The kernel takes their CPU from the tasks of the CPU they run on, not
// from every task alike: the stored campaign 2026-12-07-2150's cgroup-weights
// window beside a shell's commands (0.683 CPUs of ended children) measured
// the light group (weight 100, 8 hogs) at 0.372 CPUs and the heavy one
// (weight 400, 1 hog) at 0.816, where a uniform slowdown predicts
// 0.571 / 0.619: the children ran on the light group's CPU, the less
// loaded one (find_idlest_cpu() at fork, and wake-ups stay near where
// they ran).
func endedChildren(w *v1alpha1.WindowResult, s *v1alpha1.NoiseSource, cpus int32) (v1alpha1.NoiseThread, []int32, bool) {
	if s.ExitedChildrenCPU <= 0 || s.KernelThread {
		return v1alpha1.NoiseThread{}, nil, false
	}
	if s.Cgroup != "" && s.Cgroup != "/" {
		top := topCgroup(s.Cgroup)
		for i := range w.ForeignCgroups {
			if w.ForeignCgroups[i].Path == top {
				return v1alpha1.NoiseThread{}, nil, false
			}
		}
	}
	th := v1alpha1.NoiseThread{TID: -1, Name: s.Name + " (ended children)", CPU: s.ExitedChildrenCPU, Wakeups: 1}
	for i := range s.Threads {
		t := &s.Threads[i]
		if i == 0 || t.TID == s.PID {
			th.Policy, th.Nice, th.RTPriority, th.CPUs = t.Policy, t.Nice, t.RTPriority, t.CPUs
			th.Wakeups = max(t.Wakeups, 1)
		}
	}
	pin, ok := foreignThread(&th, cpus)
	return th, pin, ok
}

// foreignCPU is the CPUs of a window's noise that ForeignTasks runs as
// tasks on a shape of cpus CPUs: its noise threads', its sources' ended
// children's and what its foreign cgroups used beyond them.
func foreignCPU(w *v1alpha1.WindowResult, cpus int32) float64 {
	var sum float64
	for i := range w.NoiseSources {
		for j := range w.NoiseSources[i].Threads {
			if _, ok := foreignThread(&w.NoiseSources[i].Threads[j], cpus); ok {
				t := &w.NoiseSources[i].Threads[j]
				sum += t.CPU
			}
		}
		if th, _, ok := endedChildren(w, &w.NoiseSources[i], cpus); ok {
			sum += th.CPU
		}
	}
	for _, r := range cgroupRests(w) {
		sum += r.cpu
	}
	return sum
}

// threadWait is the fraction of the window a noise thread waited on a run
// queue: NoiseThread.Wait as the agent measured it; for a run of an older
// agent, all its time off a CPU when it is idle-class (SCHED_IDLE, or in a
// cpu.idle cgroup) and never blocked in the window.
func threadWait(s *v1alpha1.NoiseSource, t *v1alpha1.NoiseThread) float64 {
	if t.Wait == 0 && t.Wakeups == 0 && (t.Policy == "Idle" || s.CgroupIdle) {
		// An idle-class thread that never blocked in the window: off a CPU
		// it was waiting on a run queue all of it (a run of an agent that
		// did not measure the wait). Only the idle class can be kept
		// waiting that long beside a workload: a normal thread runnable
		// all the window would have had its fair share, so one that got
		// little CPU without blocking was not runnable (or its blocks were
		// not counted) and keeps its sleep.
		return max(1-t.CPU, 0)
	}
	return t.Wait
}

// cgroupRest is what one of a window's foreign cgroups did beyond the
// noise threads the window lists in it: its CPU and time waiting on a run
// queue (in CPUs and threads over the window), wake-ups and threads.
type cgroupRest struct {
	cg      *v1alpha1.ForeignCgroup
	cpu     float64
	wait    float64
	wakeups int64
	threads int32 // 0: not known
}

// cgroupRests are a window's foreign cgroups, less the noise threads it
// lists in them (which ForeignTasks runs on their own, or leaves in the
// background load), in the window's order. The wait is the larger of the
// threads' run_delay and the cgroup's PSI "some" fraction where the node
// has it: run_delay misses threads that ended within the window, and
// "some" is a lower bound on the mean number waiting.
func cgroupRests(w *v1alpha1.WindowResult) []cgroupRest {
	if len(w.ForeignCgroups) == 0 {
		return nil
	}
	out := make([]cgroupRest, 0, len(w.ForeignCgroups))
	for i := range w.ForeignCgroups {
		c := &w.ForeignCgroups[i]
		r := cgroupRest{cg: c, cpu: c.CPU, wait: c.Wait, wakeups: c.Wakeups, threads: c.Threads}
		if c.PressureSome != nil {
			r.wait = max(r.wait, *c.PressureSome)
		}
		for si := range w.NoiseSources {
			s := &w.NoiseSources[si]
			if s.KernelThread || s.Cgroup == "" || s.Cgroup == "/" || topCgroup(s.Cgroup) != c.Path {
				continue
			}
			for ti := range s.Threads {
				t := &s.Threads[ti]
				r.cpu -= t.CPU
				r.wait -= threadWait(s, t)
				r.wakeups -= t.Wakeups
				if r.threads > 0 {
					r.threads--
				}
			}
		}
		r.cpu, r.wait, r.wakeups = max(r.cpu, 0), max(r.wait, 0), max(r.wakeups, 0)
		out = append(out, r)
	}
	return out
}

// foreignKey identifies a thread across one node's windows.
type foreignKey struct {
	node     int
	pid, tid int32
	name     string
}

type foreignAcc struct {
	src     v1alpha1.NoiseSource // the last window's description
	th      v1alpha1.NoiseThread
	cpuNs   float64 // CPU time over the variant's windows
	waitNs  float64 // time runnable without a CPU over the variant's windows
	wakeups int64
}

// ForeignTasks are the simulator groups (pattern Foreign) that stand for
// the other processes' threads in the measured windows of one or more
// nodes (nodes[i] is node i's windows), per variant name: each thread of
// the windows' noise sources that foreignThread accepts is one task whose
// CPU and wake-up rate are its means over the variant's measured windows
// (a window it is absent from counts as none), each window taken to last
// duration (the spec's: the agent's sampling interval is that long to
// within its sampling). Its bursts have the mean CPU time per wake-up;
// a thread that never blocked has one burst per window. Its sleeps are
// the rest of the window less the time it waited runnable on a run queue
// (NoiseThread.Wait when the agent measured it; for an idle-class thread,
// SCHED_IDLE or in a cpu.idle cgroup, all of its time off a CPU in a
// window it never blocked in, when not): an idle-class build
// that hogs keep waiting is queued nearly all the time, and its group
// entity sits on the root run queue, where it moves the average vruntime
// the wake-up picks compare against (docs/latency-tail.md, twelfth
// session). It runs in its scheduling group:
//   - a kernel thread, or a process of the root cgroup without an
//     autogroup, in the root task group (Root);
//   - a process of the root cgroup with an autogroup, in a session of its
//     own per autogroup, which the variant's autogroup knob turns into a
//     task group or not, as the kernel does (autogroup_task_group(),
//     v6.12); the autogroup's nice is not modelled (0);
//   - a process of another cgroup, in a child cgroup of one per top-level
//     cgroup with that cgroup's weight and cpu.idle, as it competes on
//     the root run queue;
//
// on the CPUs it may run on (a thread pinned to CPUs the shape lacks is
// left out, in the background load), in its process's address space (a
// kernel thread in none: simengine.Group.KernelThread), so that a
// workload task switched in after it pays the process switch.
//
// Each top-level cgroup the windows recorded (WindowResult.ForeignCgroups)
// is that group at the root, with its shares and idle flag, whether or not
// a thread of it was listed, and what it did beyond its listed threads
// (cgroupRests) runs in it as k tasks "…/rest", each a process of its own:
// its mean runnable load R (threads on a CPU or waiting) over the variant's
// windows, rounded, at least 1, at most its unlisted threads and
// maxRestTasks, each runnable R/k of the time (at most all of it), with the
// rest's CPU and wake-ups shared among them (at least one burst per window
// each). An idle cgroup's spinners starved beside hogs are k tasks that are
// always runnable: the group entity stays queued at the root with weight 3,
// as on the node (sched_group_set_idle(), v6.18: tg->shares =
// scale_load(WEIGHT_IDLEPRIO) and cfs_rq->idle, so se_is_idle() holds for
// its entity), where avg_vruntime() counts it, check_preempt_wakeup_fair()
// lets a non-idle wakee preempt it and never the reverse, and pick_eevdf()
// picks it when it is eligible with the earliest deadline — the
// simulator's rules, unchanged.
//
// A source's children that ended within the window run as tasks of
// their own beside it (endedChildren), named ".../PID/-1".
//
// Windows of unsupported variants are skipped. nil when no window has
// threads or cgroups (older runs; Simulate mode): the prediction is as
// before.
func ForeignTasks(cpus int32, duration time.Duration, nodes ...[]v1alpha1.WindowResult) map[string][]simengine.Group {
	if duration <= 0 || cpus <= 0 {
		return nil
	}
	secs := duration.Seconds()
	windows := map[string]int{}
	acc := map[string]map[foreignKey]*foreignAcc{}
	cgAcc := map[string]map[cgroupKey]*cgroupAcc{}
	var order []string
	for ni, ws := range nodes {
		for i := range ws {
			w := &ws[i]
			if w.Unsupported != "" || len(w.Groups) == 0 {
				continue
			}
			if _, ok := windows[w.Variant]; !ok {
				order = append(order, w.Variant)
				acc[w.Variant] = map[foreignKey]*foreignAcc{}
				cgAcc[w.Variant] = map[cgroupKey]*cgroupAcc{}
			}
			windows[w.Variant]++
			for _, r := range cgroupRests(w) {
				k := cgroupKey{node: ni, path: r.cg.Path}
				a := cgAcc[w.Variant][k]
				if a == nil {
					a = &cgroupAcc{}
					cgAcc[w.Variant][k] = a
				}
				a.cg = *r.cg
				a.cpuNs += r.cpu * secs * 1e9
				a.waitNs += r.wait * secs * 1e9
				a.wakeups += r.wakeups
				a.threads = max(a.threads, r.threads)
			}
			// add counts one window of thread t of source s (wait: its
			// share of the window runnable without a CPU).
			add := func(s *v1alpha1.NoiseSource, t v1alpha1.NoiseThread, wait float64) {
				k := foreignKey{node: ni, pid: s.PID, tid: t.TID, name: s.Name}
				a := acc[w.Variant][k]
				if a == nil {
					a = &foreignAcc{}
					acc[w.Variant][k] = a
				}
				a.src, a.th = *s, t
				a.cpuNs += t.CPU * secs * 1e9
				a.waitNs += wait * secs * 1e9
				a.wakeups += max(t.Wakeups, 1)
			}
			for si := range w.NoiseSources {
				s := &w.NoiseSources[si]
				for ti := range s.Threads {
					t := &s.Threads[ti]
					if _, ok := foreignThread(t, cpus); ok {
						add(s, *t, threadWait(s, t))
					}
				}
				if th, _, ok := endedChildren(w, s, cpus); ok {
					// Their time waiting on a run queue is not known
					// (a process's run_delay ends with it): none.
					add(s, th, 0)
				}
			}
		}
	}
	out := map[string][]simengine.Group{}
	for _, v := range order {
		keys := make([]foreignKey, 0, len(acc[v]))
		for k := range acc[v] {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			a, b := keys[i], keys[j]
			if a.node != b.node {
				return a.node < b.node
			}
			if a.pid != b.pid {
				return a.pid < b.pid
			}
			return a.tid < b.tid
		})
		n := float64(windows[v])
		parents := map[string]bool{}
		var gs []simengine.Group
		parent := func(node int, top string, shares int64, idle bool) string {
			p := fmt.Sprintf("foreign:%d/cgroup%s", node, top)
			if !parents[p] {
				parents[p] = true
				g := simengine.Group{Name: p, Replicas: 1, CPUIdle: idle,
					Pattern: simengine.Pattern{Type: simengine.Foreign, MeanRunNs: 1000, MeanSleepNs: 1000}}
				if shares > 0 {
					g.CPUShares = min(max(shares, 2), 262144)
				}
				gs = append(gs, g)
			}
			return p
		}
		for _, k := range keys {
			a := acc[v][k]
			pin, _ := foreignThread(&a.th, cpus)
			// Ended children that used more than a CPU ran side by side
			// (make -j): as many tasks as CPUs they used, rounded up,
			// each with its part of the CPU and of the children.
			tasks := 1
			if children := k.tid < 0; children {
				tasks = max(int(math.Ceil(a.cpuNs/(n*secs*1e9)-1e-9)), 1)
			}
			wakes := max(float64(a.wakeups)/float64(tasks), 1)
			run := a.cpuNs / float64(tasks) / wakes
			period := n * secs * 1e9 / wakes // wall time per wake-up
			// Off a CPU it either sleeps or waits on a run queue; only the
			// sleep is the pattern's, the wait comes back in the
			// simulation as the simulated CPUs keep it waiting.
			wait := a.waitNs / float64(tasks) / wakes
			g := simengine.Group{
				Name:   fmt.Sprintf("foreign:%d/%s/%d/%d", k.node, k.name, k.pid, k.tid),
				Tasks:  tasks,
				Nice:   int(a.th.Nice),
				Policy: a.th.Policy,
				CPUs:   pin,
				Pattern: simengine.Pattern{Type: simengine.Foreign,
					MeanRunNs:   max(int64(math.Round(run)), 1000),
					MeanSleepNs: max(int64(math.Round(period-run-wait)), 1000)},
			}
			// Its address space: a kernel thread has none, a process's
			// threads share their process's.
			switch {
			case a.src.KernelThread:
				g.KernelThread = true
			case k.tid < 0:
				// The children are processes of their own: none shares
				// its parent's address space (nor, as one group's tasks
				// are, each other's: a child switched in after another
				// pays the process switch too, which one address space
				// for the group leaves out; their CPU is the larger part).
				g.AddressSpace = fmt.Sprintf("foreign:%d/pid-%d-children", k.node, k.pid)
			default:
				g.AddressSpace = fmt.Sprintf("foreign:%d/pid-%d", k.node, k.pid)
			}
			switch {
			case a.src.KernelThread || ((a.src.Cgroup == "/" || a.src.Cgroup == "") && a.src.Autogroup == 0):
				g.Root = true
			case a.src.Cgroup == "/" || a.src.Cgroup == "":
				g.Session = fmt.Sprintf("foreign:%d/autogroup-%d", k.node, a.src.Autogroup)
			default:
				top := topCgroup(a.src.Cgroup)
				shares, idle := a.src.CgroupShares, a.src.CgroupIdle
				if c := cgAcc[v][cgroupKey{node: k.node, path: top}]; c != nil {
					shares, idle = c.cg.Shares, c.cg.Idle // read at the same time
				}
				g.Parent = parent(k.node, top, shares, idle)
			}
			gs = append(gs, g)
		}
		ckeys := make([]cgroupKey, 0, len(cgAcc[v]))
		for k := range cgAcc[v] {
			ckeys = append(ckeys, k)
		}
		sort.Slice(ckeys, func(i, j int) bool {
			if ckeys[i].node != ckeys[j].node {
				return ckeys[i].node < ckeys[j].node
			}
			return ckeys[i].path < ckeys[j].path
		})
		for _, k := range ckeys {
			if g, ok := cgAcc[v][k].rest(n*secs*1e9, n, cpus); ok {
				g.Name = fmt.Sprintf("foreign:%d/cgroup%s/rest", k.node, k.path)
				g.Parent = parent(k.node, k.path, cgAcc[v][k].cg.Shares, cgAcc[v][k].cg.Idle)
				gs = append(gs, g)
			}
		}
		if len(gs) > 0 {
			out[v] = gs
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// cgroupKey identifies a top-level cgroup across one node's windows.
type cgroupKey struct {
	node int
	path string
}

// cgroupAcc is a foreign cgroup's load beyond its listed threads over a
// variant's windows.
type cgroupAcc struct {
	cg      v1alpha1.ForeignCgroup // the last window's record
	cpuNs   float64
	waitNs  float64
	wakeups int64
	threads int32 // the most unlisted threads a window saw; 0: not known
}

const (
	// maxRestTasks bounds the tasks that stand for one cgroup's unlisted
	// threads: what the root queue sees of them is whether the group
	// entity is queued on each CPU, which a few always-runnable tasks
	// already give.
	maxRestTasks = 64
	// minRestLoad is the least runnable load (threads) a cgroup's rest
	// needs to run as tasks.
	minRestLoad = 0.001
	// restSpreadBusy is the least fraction of the time a rest task is
	// runnable for the rest's tasks to be spread over the CPUs.
	restSpreadBusy = 0.5
)

// rest is the group of tasks that stands for the cgroup's unlisted threads
// over n windows of total ns together on a shape of cpus CPUs (see
// ForeignTasks); false when they had next to no runnable load.
//
// Tasks runnable most of the time are spread over the CPUs, task i on CPU
// i mod cpus (TaskCPUs): on the node such threads (spinners, a build's
// compilers) were forked while the workload ran, fork balancing put them
// on the least loaded CPUs, and a starved thread that never sleeps gives
// the load balancer no reason to move it, so the cgroup's entity is queued
// on as many CPUs as it has such threads. The simulation forks every task
// at its start, where the workload's tasks come first and the CPUs' loads
// tie: without the pins the rest's tasks all went to CPU 0, and the idle
// entity never shared a run queue with a probe on CPU 1 (a probe-hogs
// simulation with 2 such tasks gave 0.00009 of the probe's wake-ups beyond
// 1 ms unpinned, 0.00177 pinned, 0.00005 without them; the node 0.0008
// alone, 0.0017 beside one spinner per CPU). Sleepy rest tasks are not
// pinned: their wake-ups are placed as the kernel places them.
func (a *cgroupAcc) rest(total, n float64, cpus int32) (simengine.Group, bool) {
	if total <= 0 {
		return simengine.Group{}, false
	}
	load := (a.cpuNs + a.waitNs) / total
	if load < minRestLoad {
		return simengine.Group{}, false
	}
	k := max(int(math.Round(load)), 1)
	if a.threads > 0 {
		k = min(k, int(a.threads))
	}
	k = min(k, maxRestTasks)
	busy := min(load/float64(k), 1) // the fraction of the time each is runnable
	// At least one burst per window each (a thread that never blocked).
	wakes := max(float64(a.wakeups)/float64(k), n)
	run := a.cpuNs / float64(k) / wakes
	sleep := total * (1 - busy) / wakes
	g := simengine.Group{Tasks: k, Pattern: simengine.Pattern{Type: simengine.Foreign,
		MeanRunNs: max(int64(math.Round(run)), 1000), MeanSleepNs: max(int64(math.Round(sleep)), 1000)}}
	if busy >= restSpreadBusy && cpus > 1 {
		g.TaskCPUs = make([][]int32, k)
		for i := range g.TaskCPUs {
			g.TaskCPUs[i] = []int32{int32(i) % cpus}
		}
	}
	return g, true
}

// topCgroup is the top level of a cgroup path: "/devbg" of "/devbg/job1".
func topCgroup(p string) string {
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return p
}

// ForeignSummary is the number of Foreign tasks and their mean CPU (the
// mean over the variants of the tasks' CPU: MeanRunNs over the run and
// sleep) in what ForeignTasks returned. For a thread that waited on a run
// queue it is the CPU it asked for, more than it got (a starved cgroup's
// always-runnable rest asks for nearly a CPU a task).
func ForeignSummary(f map[string][]simengine.Group) (tasks int, cpu float64) {
	if len(f) == 0 {
		return 0, 0
	}
	for _, gs := range f {
		for _, g := range gs {
			if g.Tasks == 0 {
				continue
			}
			tasks += g.Tasks
			cpu += float64(g.Tasks) * float64(g.Pattern.MeanRunNs) / float64(g.Pattern.MeanRunNs+g.Pattern.MeanSleepNs)
		}
	}
	return (tasks + len(f) - 1) / len(f), cpu / float64(len(f))
}

// ForeignCgroupSummary is, in what ForeignTasks returned, the most
// foreign cgroups whose unlisted threads run as tasks in one variant and
// the most such tasks.
func ForeignCgroupSummary(f map[string][]simengine.Group) (cgroups, tasks int) {
	for _, gs := range f {
		var c, n int
		for _, g := range gs {
			if strings.HasSuffix(g.Name, "/rest") && g.Parent != "" {
				c++
				n += g.Tasks
			}
		}
		cgroups, tasks = max(cgroups, c), max(tasks, n)
	}
	return cgroups, tasks
}
