package experiment

import (
	"fmt"
	"math"
	"sort"
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
// sources' floor or that ended within the window, real-time threads)
// stays a uniform slowdown, as before.

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

// foreignCPU is the CPUs of a window's noise that ForeignTasks runs as
// tasks on a shape of cpus CPUs.
func foreignCPU(w *v1alpha1.WindowResult, cpus int32) float64 {
	var sum float64
	for i := range w.NoiseSources {
		for j := range w.NoiseSources[i].Threads {
			if _, ok := foreignThread(&w.NoiseSources[i].Threads[j], cpus); ok {
				t := &w.NoiseSources[i].Threads[j]
				sum += t.CPU
			}
		}
	}
	return sum
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
// left out, in the background load). Windows of unsupported variants are skipped. nil when no
// window has threads (older runs; Simulate mode): the prediction is as
// before.
func ForeignTasks(cpus int32, duration time.Duration, nodes ...[]v1alpha1.WindowResult) map[string][]simengine.Group {
	if duration <= 0 || cpus <= 0 {
		return nil
	}
	secs := duration.Seconds()
	windows := map[string]int{}
	acc := map[string]map[foreignKey]*foreignAcc{}
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
			}
			windows[w.Variant]++
			for si := range w.NoiseSources {
				s := &w.NoiseSources[si]
				for ti := range s.Threads {
					t := &s.Threads[ti]
					if _, ok := foreignThread(t, cpus); !ok {
						continue
					}
					k := foreignKey{node: ni, pid: s.PID, tid: t.TID, name: s.Name}
					a := acc[w.Variant][k]
					if a == nil {
						a = &foreignAcc{}
						acc[w.Variant][k] = a
					}
					a.src, a.th = *s, *t
					a.cpuNs += t.CPU * secs * 1e9
					wait := t.Wait
					if wait == 0 && t.Wakeups == 0 && (t.Policy == "Idle" || s.CgroupIdle) {
						// An idle-class thread (SCHED_IDLE, or in a
						// cpu.idle cgroup) that never blocked in the
						// window: off a CPU it was waiting on a run queue
						// all of it (a run of an agent that did not
						// measure the wait). Only the idle class can be
						// kept waiting that long beside a workload: a
						// normal thread runnable all the window would
						// have had its fair share, so one that got little
						// CPU without blocking was not runnable (or its
						// blocks were not counted) and keeps its sleep.
						wait = max(1-t.CPU, 0)
					}
					a.waitNs += wait * secs * 1e9
					a.wakeups += max(t.Wakeups, 1)
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
		for _, k := range keys {
			a := acc[v][k]
			pin, _ := foreignThread(&a.th, cpus)
			run := a.cpuNs / float64(a.wakeups)
			period := n * secs * 1e9 / float64(a.wakeups) // wall time per wake-up
			// Off a CPU it either sleeps or waits on a run queue; only the
			// sleep is the pattern's, the wait comes back in the
			// simulation as the simulated CPUs keep it waiting.
			wait := a.waitNs / float64(a.wakeups)
			g := simengine.Group{
				Name:   fmt.Sprintf("foreign:%d/%s/%d/%d", k.node, k.name, k.pid, k.tid),
				Tasks:  1,
				Nice:   int(a.th.Nice),
				Policy: a.th.Policy,
				CPUs:   pin,
				Pattern: simengine.Pattern{Type: simengine.Foreign,
					MeanRunNs:   max(int64(math.Round(run)), 1000),
					MeanSleepNs: max(int64(math.Round(period-run-wait)), 1000)},
			}
			switch {
			case a.src.KernelThread || ((a.src.Cgroup == "/" || a.src.Cgroup == "") && a.src.Autogroup == 0):
				g.Root = true
			case a.src.Cgroup == "/" || a.src.Cgroup == "":
				g.Session = fmt.Sprintf("foreign:%d/autogroup-%d", k.node, a.src.Autogroup)
			default:
				top := topCgroup(a.src.Cgroup)
				p := fmt.Sprintf("foreign:%d/cgroup%s", k.node, top)
				if !parents[p] {
					parents[p] = true
					w := 100
					if a.src.CgroupShares > 0 {
						// The inverse of sched_weight_from_cgroup().
						w = int(min(max((a.src.CgroupShares*100+512)/1024, 1), 10000))
					}
					gs = append(gs, simengine.Group{Name: p, Replicas: 1, CPUWeight: w, CPUIdle: a.src.CgroupIdle,
						Pattern: simengine.Pattern{Type: simengine.Foreign, MeanRunNs: 1000, MeanSleepNs: 1000}})
				}
				g.Parent = p
			}
			gs = append(gs, g)
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
// queue it is the CPU it asked for, more than it got.
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
			cpu += float64(g.Pattern.MeanRunNs) / float64(g.Pattern.MeanRunNs+g.Pattern.MeanSleepNs)
		}
	}
	return (tasks + len(f) - 1) / len(f), cpu / float64(len(f))
}
