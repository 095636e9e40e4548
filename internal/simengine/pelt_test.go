package simengine

import (
	"math"
	"testing"
)

// reweight_entity() (v6.1..v6.18) recomputes an entity's load_avg as its new
// weight times its runnable average (se_weight(se) * se->avg.load_sum /
// divider) and moves the difference into the load_avg of the queue it is
// attached to, queued or blocked: cpu_load() follows a group entity's
// reweight at once, not over PELT's half-life.
func TestReweightMovesLoadAtOnce(t *testing.T) {
	for _, kernel := range []string{"6.1.100", "6.12"} {
		s := startedSim(t, Input{Node: Node{CPUs: 1, Kernel: kernel}, DurationNs: 2e9, Seed: 1,
			Groups: []Group{{Name: "a", Tasks: 1}, {Name: "b", Tasks: 1},
				{Name: "c", Tasks: 1, Pattern: Pattern{Type: Burst, MeanRunNs: 1e6, MeanSleepNs: 8e6}}}})
		groupEntity := func(name string) int32 {
			for ti := range s.tasks {
				if s.in.Groups[s.tasks[ti].group].Name == name {
					return s.ents[s.tasks[ti].se].parent
				}
			}
			t.Fatalf("%s: no task of group %s", kernel, name)
			return -1
		}
		s.end = 300_000_000
		s.loop()

		// A queued group entity (a hog's, always runnable).
		ge := groupEntity("a")
		if !s.ents[ge].onRq {
			t.Fatalf("%s: the hog's group entity is not queued", kernel)
		}
		check := func(what string, ge int32) {
			t.Helper()
			cq := s.ents[ge].rq
			s.updateSeLoad(ge)
			w := s.ents[ge].weight
			seBefore, rqBefore := s.ents[ge].load.avg, s.cpuLoad(0)
			s.reweightEntity(cq, ge, w/4)
			seAfter, rqAfter := s.ents[ge].load.avg, s.cpuLoad(0)
			if want := seBefore / 4; math.Abs(seAfter-want) > 0.01*want+0.5 {
				t.Errorf("%s: %s group entity: load_avg %.1f after its weight went %d -> %d, want %.1f (a quarter of %.1f)",
					kernel, what, seAfter, w, w/4, want, seBefore)
			}
			if want := rqBefore - (seBefore - seBefore/4); math.Abs(rqAfter-want) > 0.01*want+0.5 {
				t.Errorf("%s: %s group entity: cpu_load %.1f after the reweight, want %.1f (%.1f less the entity's %.1f)",
					kernel, what, rqAfter, want, rqBefore, seBefore-seBefore/4)
			}
		}
		check("queued", ge)

		// A blocked group entity: the bursty task's, while it sleeps.
		gc := groupEntity("c")
		for i := 0; i < 1000 && s.ents[gc].onRq; i++ {
			s.end += 1_000_000
			s.loop()
		}
		if s.ents[gc].onRq {
			t.Fatalf("%s: the bursty task's group entity never blocked", kernel)
		}
		if s.updateSeLoad(gc); s.ents[gc].load.avg < 10 {
			t.Fatalf("%s: the blocked group entity has no load to move (%.1f)", kernel, s.ents[gc].load.avg)
		}
		check("blocked", gc)
	}
}

// A task's runnable_avg counts the time it is queued, not the time it
// sleeps: enqueue_entity() (v6.12, v6.18) updates the entity's averages
// (update_load_avg()) before it sets se->on_rq, and a task woken from a
// delayed dequeue (requeue_delayed_entity()) was not runnable while delayed
// (se_runnable() is false for a sched_delayed entity). The simulator
// brought a waking task's averages up to date after marking it queued, so
// every sleep a PingPong task woke from counted as runnable: its
// runnable_avg sat at 800-1000 where the node's is about 520.
//
// The node's figures: a PingPong pair (20 µs of work a message) pinned to
// one CPU with three hogs, or with one, plain tasks at the root (autogroup
// off), on the 2-CPU 6.18.44 node (7 December 2026, 06:43-06:44 UTC, load
// average 5-12; se.avg.load_avg and se.avg.runnable_avg read from
// /proc/PID/sched every 10 ms over a 4 s window, after a 1 s warm-up).
// With three hogs: load 520, runnable 520 (728 samples of the two pair
// tasks; two more windows with the pair beside three hogs on one CPU and the
// rest of the flat layout on the other gave 520/521 and 521/521). With one
// hog: load 607, runnable 601 (776 samples). Neither layout leaves a pair
// task delayed, so load and runnable agree.
func TestPingPongRunnableAvgCountsQueuedTimeOnly(t *testing.T) {
	for _, c := range []struct {
		hogs              int
		runnable, loadAvg float64
	}{{3, 520, 520}, {1, 601, 607}} {
		in := Input{Node: Node{CPUs: 2, Kernel: "6.18.44"}, DurationNs: 4e9, WarmupNs: 1e9, Seed: 1,
			Groups: []Group{
				{Name: "pair", Session: "a", Tasks: 2, Pattern: Pattern{Type: PingPong, RunNs: 20_000}},
				{Name: "hogs", Session: "b", Tasks: c.hogs},
			}}
		off := false
		in.Knobs.Autogroup = &off
		in.Groups[0].TaskCPUs = [][]int32{{1}, {1}}
		for range c.hogs {
			in.Groups[1].TaskCPUs = append(in.Groups[1].TaskCPUs, []int32{1})
		}
		s := startedSim(t, in)
		var run, load float64
		n := 0
		for at := int64(1e9); at < 5e9; at += 10e6 {
			s.end = at
			s.loop()
			for ti := range int32(2) {
				s.taskPelt(ti)
				s.updateSeLoad(s.tasks[ti].se)
				run += s.tasks[ti].pl.runnable
				load += s.ents[s.tasks[ti].se].load.avg
				n++
			}
		}
		run, load = run/float64(n), load/float64(n)
		t.Logf("pair beside %d hog(s): runnable_avg %.0f (node %.0f), load_avg %.0f (node %.0f)", c.hogs, run, c.runnable, load, c.loadAvg)
		if math.Abs(run-c.runnable) > 0.05*c.runnable {
			t.Errorf("pair beside %d hog(s): runnable_avg %.0f, the node's %.0f", c.hogs, run, c.runnable)
		}
		if math.Abs(load-c.loadAvg) > 0.05*c.loadAvg {
			t.Errorf("pair beside %d hog(s): load_avg %.0f, the node's %.0f", c.hogs, load, c.loadAvg)
		}
		if run > load+1 {
			t.Errorf("pair beside %d hog(s): runnable_avg %.0f above load_avg %.0f: a queued task is counted in both", c.hogs, run, load)
		}
	}
}
