package simengine

import (
	"bytes"
	"testing"
)

// Every knob changes the simulation, as it changes the kernel: each
// mutation of a rich input must change the output.
func TestEveryKnobChangesTheSimulation(t *testing.T) {
	type mut struct {
		name string
		sch  Scheduler
		mod  func(*Input)
	}
	// Some features act only at fork (START_DEBIT, PLACE_DEADLINE_INITIAL)
	// or only with many tasks on one CPU (ALT_PERIOD): they get inputs that
	// show them.
	special := map[string]func(Scheduler) Input{
		"feature START_DEBIT":            forkInput,
		"feature PLACE_DEADLINE_INITIAL": forkInput,
		// Migration cost matters where CPUs go idle and pull (newidle
		// balancing, task_hot()).
		"migration cost": func(sch Scheduler) Input {
			return Input{Node: Node{CPUs: 4, Scheduler: sch}, DurationNs: 5e8,
				Groups: []Group{{Name: "hog", Tasks: 2}, {Name: "b", Tasks: 8, Pattern: Pattern{Type: Burst, MeanRunNs: 1e6, MeanSleepNs: 2e6}}}}
		},
		// Lazy preemption defers wakeups from another CPU to the tick.
		"preempt lazy": func(sch Scheduler) Input {
			return Input{Node: Node{CPUs: 2, Scheduler: sch}, DurationNs: 5e8,
				Groups: []Group{{Name: "hog", Tasks: 2}, {Name: "pp", Tasks: 4, Pattern: Pattern{Type: PingPong, RunNs: 20e3}}}}
		},
		// WA_BIAS tips wake_affine_weight() between loaded CPUs: sync
		// wake-ups of pairs beside hogs (no CPU idle, so wake-ups onto the
		// other CPU are enqueued at once). Since a busy CPU of a balanced
		// domain balances every 60 ms, not 32 (sched_balance_rq()'s
		// balance_interval, tuneBalanceInterval), no input of hogs and
		// pairs alone tried (2-5 hogs, 2-6 pair tasks, 0.5-1 s, HZ 100-1000)
		// changes with it; the validation's mixed scenario (a pair beside
		// hogs, a periodic task and a bursty one) does in 1 s. Under CFS
		// no pairs-and-hogs input tried (2-5 hogs, 2-3 pairs, 20-50 µs,
		// 0.5-1 s) changed with it: the golden input's whole second does.
		"feature WA_BIAS": func(sch Scheduler) Input {
			if sch == CFS {
				return goldenInput(sch)
			}
			return Input{Node: Node{CPUs: 2, Scheduler: sch}, DurationNs: 1e9, Seed: 1,
				Groups: []Group{{Name: "hogs", Tasks: 2},
					{Name: "frames", Tasks: 1, Pattern: Pattern{Type: Periodic, RunNs: 4e6, PeriodNs: 40e6}},
					{Name: "pingpong", Tasks: 2, Pattern: Pattern{Type: PingPong, RunNs: 20_000}},
					{Name: "burst", Tasks: 1, Pattern: Pattern{Type: Burst, MeanRunNs: 2e6, MeanSleepNs: 6e6}}}}
		},
		// LB_MIN skips tasks of load under 16 in detach_tasks() (the
		// golden input's cpu.idle group's: its entities weigh 3): over the
		// golden input's whole 1 s, as in its first 0.5 s no balance tried
		// one once a reweight moved cpu_load() at once (reweight_entity()).
		"feature LB_MIN": goldenInput,
		// BASE_SLICE raises slices shorter than min_granularity: light
		// tasks among many.
		"feature BASE_SLICE": func(sch Scheduler) Input {
			return Input{Node: Node{CPUs: 1, Scheduler: sch, HZ: 1000}, DurationNs: 5e8,
				Knobs:  Knobs{LatencyNs: 24e6, MinGranularityNs: 3e6},
				Groups: []Group{{Name: "a", Tasks: 6}, {Name: "b", Tasks: 6, CPUWeight: 400}}}
		},
		// NI_RANDOM exists from 6.18.5; new-idle balances happen where
		// CPUs go idle while another is overloaded: VALIDATION.md's mixed
		// scenario with one hog instead of two (with two, a CPU goes idle
		// too seldom: seeds 1-6 ran the same with and without it once
		// PingPong spins end at a clock read, spinOvershoot). Seed 1: seed
		// 2 ran the same with and without it once task_h_load() read an
		// h_load cached per jiffy (update_cfs_rq_h_load()).
		"feature NI_RANDOM": func(sch Scheduler) Input {
			return Input{Node: Node{CPUs: 2, Kernel: "6.18.44"}, DurationNs: 8e9, WarmupNs: 1e9, Seed: 1,
				Groups: []Group{
					{Name: "hogs", Tasks: 1},
					{Name: "frames", Tasks: 1, Pattern: Pattern{Type: Periodic, RunNs: 4e6, PeriodNs: 40e6}},
					{Name: "pingpong", Tasks: 2, Pattern: Pattern{Type: PingPong, RunNs: 20_000}},
					{Name: "burst", Tasks: 1, Pattern: Pattern{Type: Burst, MeanRunNs: 2e6, MeanSleepNs: 6e6}},
				}}
		},
		// PICK_BUDDY exists from 6.14 (6.12.13); the buddy is the group of
		// a task that goes to sleep while the group keeps another, still
		// eligible (else DELAY_DEQUEUE keeps it queued): VALIDATION.md's
		// mixed scenario under one parent cgroup (as the agent runs it
		// beside other processes' cgroups) next to a root task, where the
		// parent becomes the root queue's buddy whenever one of its
		// groups' tasks sleeps and empties its group.
		"feature PICK_BUDDY": func(sch Scheduler) Input {
			return Input{Node: Node{CPUs: 2, Kernel: "6.18.44"}, DurationNs: 2e9, Seed: 1,
				Groups: []Group{
					{Name: "agent", Tasks: 0},
					{Name: "hogs", Parent: "agent", Tasks: 2},
					{Name: "frames", Parent: "agent", Tasks: 1, Pattern: Pattern{Type: Periodic, RunNs: 4e6, PeriodNs: 40e6}},
					{Name: "pingpong", Parent: "agent", Tasks: 2, Pattern: Pattern{Type: PingPong, RunNs: 20_000}},
					{Name: "burst", Parent: "agent", Tasks: 1, Pattern: Pattern{Type: Burst, MeanRunNs: 2e6, MeanSleepNs: 6e6}},
					{Name: "other", Root: true, Tasks: 1, Pattern: Pattern{Type: Burst, MeanRunNs: 1e6, MeanSleepNs: 20e6}},
				}}
		},
		"feature ALT_PERIOD": func(sch Scheduler) Input {
			return Input{Node: Node{CPUs: 1, Scheduler: sch}, DurationNs: 5e8,
				Groups: []Group{{Name: "a", Tasks: 6}, {Name: "b", Tasks: 6}}}
		},
	}
	// WA_IDLE is skipped: with one LLC, select_idle_sibling() already
	// prefers an idle previous or target CPU, so wake_affine_idle() changes
	// the outcome only when the waker is alone on its CPU, no CPU is idle and
	// the load comparison would have kept the previous CPU.
	skip := map[string]bool{"WA_IDLE": true}
	muts := []mut{
		{"autogroup off", EEVDF, func(in *Input) { in.Knobs.Autogroup = boolp(false) }},
		{"base slice", EEVDF, func(in *Input) { in.Knobs.BaseSliceNs = 6e6 }},
		{"legacy slice", EEVDF, func(in *Input) { in.Node.LegacySlice = true }},
		{"tunable scaling none", EEVDF, func(in *Input) { in.Node.TunableScaling = "None" }},
		{"latency", CFS, func(in *Input) { in.Knobs.LatencyNs = 24e6 }},
		{"min granularity", CFS, func(in *Input) { in.Knobs.MinGranularityNs = 3e6 }},
		{"wakeup granularity", CFS, func(in *Input) { in.Knobs.WakeupGranularityNs = 4e6 }},
		{"migration cost", EEVDF, func(in *Input) { in.Knobs.MigrationCostNs = 5e6 }},
		{"nr migrate", EEVDF, func(in *Input) { in.Knobs.NrMigrate = 1 }},
		{"preempt lazy", EEVDF, func(in *Input) { in.Node.Preempt = "Lazy" }},
		{"hz", EEVDF, func(in *Input) { in.Node.HZ = 1000 }},
		{"cpu weight", EEVDF, func(in *Input) { in.Groups[0].CPUWeight = 400 }},
		{"cpu max", EEVDF, func(in *Input) { in.Groups[4].CPUMaxQuotaNs = 50e6 }},
		{"cpu idle", EEVDF, func(in *Input) { in.Groups[5].CPUIdle = false }},
		{"nice", EEVDF, func(in *Input) { in.Groups[8].Nice = 0 }},
		{"policy", EEVDF, func(in *Input) { in.Groups[2].Policy = "Batch" }},
		{"slice", EEVDF, func(in *Input) { in.Groups[7].SliceNs = 100_000 }},
		{"calibration", EEVDF, func(in *Input) { in.Node.Calibration.CtxSwitchNs = 5000 }},
	}
	for _, sch := range bothSchedulers {
		for _, f := range FeatureNames(sch) {
			if skip[f] {
				continue
			}
			def := true
			for _, d := range append(append([]featureDef{}, eevdfFeatures...), cfsFeatures...) {
				if d.name == f {
					def = d.def
				}
			}
			muts = append(muts, mut{"feature " + f, sch, func(in *Input) { in.Knobs.Features = map[string]bool{f: !def} }})
		}
	}
	base := map[Scheduler][]byte{}
	for _, sch := range bothSchedulers {
		in := goldenInput(sch)
		in.DurationNs = 5e8
		base[sch] = marshal(t, mustRun(t, in))
	}
	for _, m := range muts {
		t.Run(m.name+"/"+string(m.sch), func(t *testing.T) {
			in := goldenInput(m.sch)
			in.DurationNs = 5e8
			want := base[m.sch]
			if mk, ok := special[m.name]; ok {
				in = mk(m.sch)
				want = marshal(t, mustRun(t, in))
			}
			m.mod(&in)
			if bytes.Equal(want, marshal(t, mustRun(t, in))) {
				t.Errorf("%s did not change the simulation", m.name)
			}
		})
	}
}

// forkInput measures from time 0, when the tasks are forked.
func forkInput(sch Scheduler) Input {
	return Input{Node: Node{CPUs: 1, Scheduler: sch}, DurationNs: 1e8,
		Groups: []Group{{Name: "a", Tasks: 3, Session: "s"}, {Name: "b", Tasks: 1, Session: "s",
			Pattern: Pattern{Type: Periodic, RunNs: 1e5, PeriodNs: 1e6}}}}
}

// Directional checks of per-group knobs on one CPU.
func TestGroupKnobEffects(t *testing.T) {
	run := func(sch Scheduler, groups ...Group) *Result {
		return mustRun(t, Input{Node: Node{CPUs: 1, Scheduler: sch, HZ: 1000}, Groups: groups, DurationNs: 3e9, WarmupNs: 5e8, Seed: 3})
	}
	for _, sch := range bothSchedulers {
		t.Run(string(sch), func(t *testing.T) {
			// cpu.max 30ms per 100ms caps a group of hogs at 0.3 CPU.
			r := run(sch, Group{Name: "capped", Tasks: 2, CPUMaxQuotaNs: 30e6}, Group{Name: "free", Tasks: 1})
			near(t, "cpu.max capped", group(t, r, "capped").Metrics.CPU, 0.3, 0.02)
			near(t, "cpu.max free", group(t, r, "free").Metrics.CPU, 0.7, 0.02)
			// cpu.idle: the idle group weighs 3 against 1024.
			r = run(sch, Group{Name: "idle", Tasks: 1, CPUIdle: true}, Group{Name: "normal", Tasks: 1})
			near(t, "cpu.idle idle group", group(t, r, "idle").Metrics.CPU, 3.0/1027, 0.01)
			// SCHED_IDLE task beside a normal one in the same group: weight 3.
			r = run(sch, Group{Name: "idlepol", Tasks: 1, Policy: "Idle", Session: "s"}, Group{Name: "normal", Tasks: 1, Session: "s"})
			near(t, "SCHED_IDLE share", group(t, r, "idlepol").Metrics.CPU, 3.0/1027, 0.01)
			// A SCHED_BATCH probe does not preempt on wakeup: it waits longer.
			probe := func(pol string) float64 {
				r := run(sch, Group{Name: "hogs", Tasks: 2, Session: "s"},
					Group{Name: "probe", Tasks: 1, Session: "s", Policy: pol, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_234_567}})
				return group(t, r, "probe").Metrics.WakeupLatencyUs.Mean
			}
			if other, batch := probe("Other"), probe("Batch"); batch <= other {
				t.Errorf("mean probe latency: Batch %.1f µs, Other %.1f µs; want Batch higher", batch, other)
			}
		})
	}
	// EEVDF custom slice: a probe asking for a 0.1 ms slice against hogs with
	// a 6 ms base slice gets an earlier deadline and, with PREEMPT_SHORT,
	// cuts the current task's protected slice: it waits less. Without
	// PREEMPT_SHORT it waits for the current slice to end.
	probeSlice := func(slice int64, feat map[string]bool) *Latency {
		r := mustRun(t, Input{Node: Node{CPUs: 1, HZ: 1000}, Knobs: Knobs{BaseSliceNs: 6e6, Features: feat},
			Groups: []Group{{Name: "hogs", Tasks: 4, Session: "s"},
				{Name: "probe", Tasks: 1, Session: "s", SliceNs: slice, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_234_567}}},
			DurationNs: 3e9, WarmupNs: 5e8, Seed: 3})
		return group(t, r, "probe").Metrics.WakeupLatencyUs
	}
	short, base := probeSlice(100_000, nil), probeSlice(0, nil)
	if short.Mean >= base.Mean || short.Max >= base.Max {
		t.Errorf("probe latency with a 0.1 ms custom slice (mean %.1f, max %.1f µs) not below the 6 ms base slice's (mean %.1f, max %.1f µs)",
			short.Mean, short.Max, base.Mean, base.Max)
	}
	noShort := probeSlice(100_000, map[string]bool{"PREEMPT_SHORT": false})
	if noShort.P50 < 1000 {
		t.Errorf("without PREEMPT_SHORT the short-slice probe's p50 = %.1f µs, want ≥ 1 ms (it waits for the protected slice)", noShort.P50)
	}
}

// cpu.max across CPUs: a quota of 200 ms per 100 ms period caps 4 hogs on 4
// CPUs at 2 CPUs; the other CPUs' hogs take the rest.
func TestBandwidthAcrossCPUs(t *testing.T) {
	for _, sch := range bothSchedulers {
		r := mustRun(t, Input{Node: Node{CPUs: 4, Scheduler: sch},
			Groups:     []Group{{Name: "capped", Tasks: 4, CPUMaxQuotaNs: 200e6}, {Name: "free", Tasks: 4}},
			DurationNs: 3e9, WarmupNs: 5e8, Seed: 1})
		near(t, string(sch)+" capped cpu", group(t, r, "capped").Metrics.CPU, 2.0, 0.05)
		near(t, string(sch)+" free cpu", group(t, r, "free").Metrics.CPU, 2.0, 0.05)
	}
}

// A Periodic task needing 10 ms every 16 ms misses its deadlines when it
// shares the CPU equally with two hogs (entitled to a third, 5.3 ms per
// period), and meets them at nice -10 (weight 9548 against 2 × 1024).
func TestPeriodicDeadlineMisses(t *testing.T) {
	for _, sch := range bothSchedulers {
		miss := func(nice int) float64 {
			r := mustRun(t, Input{Node: Node{CPUs: 1, Scheduler: sch},
				Groups: []Group{{Name: "hogs", Tasks: 2, Session: "s"},
					{Name: "video", Tasks: 1, Session: "s", Nice: nice, Pattern: Pattern{Type: Periodic, RunNs: 10e6, PeriodNs: 16e6}}},
				DurationNs: 3e9, WarmupNs: 5e8, Seed: 1})
			m := group(t, r, "video").Metrics
			if m.DeadlineMissRatio == nil || m.OpsPerSec == nil {
				t.Fatal("Periodic group lacks deadlineMissRatio or opsPerSec")
			}
			return *m.DeadlineMissRatio
		}
		if m := miss(0); m < 0.9 {
			t.Errorf("%s: miss ratio at nice 0 = %.3f, want ≥ 0.9", sch, m)
		}
		if m := miss(-10); m > 0.05 {
			t.Errorf("%s: miss ratio at nice -10 = %.3f, want ≤ 0.05", sch, m)
		}
	}
}

// Migration cost: an idle CPU pulls waiting tasks (new-idle balancing,
// skipped when the CPU expects to idle for less than the migration cost, and
// skipping tasks that ran within it, task_hot()). With a zero cost the four
// CPUs stay busier than when every task counts as cache hot (-1): seeds 1–6
// gave 3.84–3.87 CPUs against 3.77–3.80. The bursty tasks' mean wait no
// longer tells the two apart: they read their CPU clock while they spin
// (readsCPUClock), so tasks queued on a busy CPU take turns in 0.7 ms
// requests either way (seeds 1–6: 815–871 µs with the zero cost, 802–837
// µs always hot; before the clock reads were modelled for Burst, 902–990
// against 971–1062).
func TestMigrationCostEffect(t *testing.T) {
	run := func(mc int64) (float64, float64) {
		r := mustRun(t, Input{Node: Node{CPUs: 4}, Knobs: Knobs{MigrationCostNs: mc}, DurationNs: 3e9, WarmupNs: 5e8, Seed: 1,
			Groups: []Group{{Name: "hog", Tasks: 2}, {Name: "b", Tasks: 8, Pattern: Pattern{Type: Burst, MeanRunNs: 1e6, MeanSleepNs: 2e6}}}})
		util := 0.0
		for _, u := range r.CPUUtilization {
			util += u
		}
		return util, group(t, r, "b").Metrics.WakeupLatencyUs.Mean
	}
	uz, lz := run(MigrationCostZero)
	uh, lh := run(-1)
	if uz < uh+0.04 {
		t.Errorf("migration cost 0: utilization %.3f CPUs, mean latency %.0f µs; always hot: %.3f, %.0f µs; want the zero cost busier by 0.04 CPU or more", uz, lz, uh, lh)
	}
}
