package simengine

import (
	"fmt"
	"sort"
	"strings"
)

// featureDef is a scheduler feature the simulator models, with its default.
type featureDef struct {
	name string
	def  bool
}

// Features modelled for EEVDF kernels (kernel/sched/features.h, v6.12; turn
// PREEMPT_SHORT and DELAY_DEQUEUE off for the behaviour of v6.6..v6.11).
var eevdfFeatures = []featureDef{
	{"PLACE_LAG", true},
	{"PLACE_DEADLINE_INITIAL", true},
	{"RUN_TO_PARITY", true},
	{"PREEMPT_SHORT", true},
	{"DELAY_DEQUEUE", true},
	{"DELAY_ZERO", true},
	// PICK_BUDDY: the pick takes an eligible cfs_rq->next first, which
	// dequeue_entities() sets when a task goes to sleep and its group keeps
	// other entities (kernelRules.pickBuddy says from which releases; off
	// before them, where only NEXT_BUDDY, off, picked the buddy).
	{"PICK_BUDDY", true},
	{"WAKEUP_PREEMPTION", true},
	{"WA_IDLE", true},
	{"WA_WEIGHT", true},
	{"WA_BIAS", true},
	{"LB_MIN", false},
	{"SMP_FAIR_GROUPS", true}, // simulator-only: calc_group_shares vs fixed group weights
	// NI_RANDOM (proportional new-idle balance, v6.18.5+ and v6.19, where
	// the kernel's default is on; no effect on other releases): off by
	// default in the simulator for now, see newidle.go.
	{"NI_RANDOM", false},
}

// Features modelled for CFS kernels (kernel/sched/features.h, v6.1).
var cfsFeatures = []featureDef{
	{"GENTLE_FAIR_SLEEPERS", true},
	{"START_DEBIT", true},
	{"WAKEUP_PREEMPTION", true},
	{"ALT_PERIOD", true},
	{"BASE_SLICE", true},
	{"WA_IDLE", true},
	{"WA_WEIGHT", true},
	{"WA_BIAS", true},
	{"LB_MIN", false},
	{"SMP_FAIR_GROUPS", true},
}

// FeatureNames lists the feature names accepted for a scheduler, sorted.
func FeatureNames(s Scheduler) []string {
	defs := eevdfFeatures
	if s == CFS {
		defs = cfsFeatures
	}
	out := make([]string, 0, len(defs))
	for _, d := range defs {
		out = append(out, d.name)
	}
	sort.Strings(out)
	return out
}

// features is the resolved feature set of a run.
type features struct {
	placeLag, placeDeadlineInitial, runToParity, preemptShort bool
	delayDequeue, delayZero, pickBuddy                        bool
	wakeupPreemption, waIdle, waWeight, waBias, lbMin         bool
	gentleFairSleepers, startDebit, altPeriod, baseSlice      bool
	smpFairGroups, niRandom                                   bool
}

// resolveFeatures applies set over the defaults of scheduler s on a kernel
// with rules kr (DELAY_DEQUEUE and PREEMPT_SHORT default off before 6.12,
// where the code does not exist; PICK_BUDDY before the releases of
// kernelRules.pickBuddy).
func resolveFeatures(s Scheduler, set map[string]bool, kr kernelRules) (features, error) {
	defs := eevdfFeatures
	if s == CFS {
		defs = cfsFeatures
	}
	val := make(map[string]bool, len(defs))
	for _, d := range defs {
		val[d.name] = d.def
	}
	if s == EEVDF && !kr.completeEEVDF {
		val["DELAY_DEQUEUE"], val["PREEMPT_SHORT"] = false, false
	}
	if s == EEVDF && !kr.pickBuddy {
		val["PICK_BUDDY"] = false
	}
	// Sorted iteration keeps the first error deterministic.
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := val[n]; !ok {
			return features{}, fmt.Errorf("knobs.features: unknown feature %q for scheduler %s; accepted names: %s",
				n, s, strings.Join(FeatureNames(s), ", "))
		}
		val[n] = set[n]
	}
	return features{
		placeLag:             val["PLACE_LAG"],
		placeDeadlineInitial: val["PLACE_DEADLINE_INITIAL"],
		runToParity:          val["RUN_TO_PARITY"],
		preemptShort:         val["PREEMPT_SHORT"],
		delayDequeue:         val["DELAY_DEQUEUE"],
		delayZero:            val["DELAY_ZERO"],
		pickBuddy:            s == EEVDF && val["PICK_BUDDY"],
		wakeupPreemption:     val["WAKEUP_PREEMPTION"],
		waIdle:               val["WA_IDLE"],
		waWeight:             val["WA_WEIGHT"],
		waBias:               val["WA_BIAS"],
		lbMin:                val["LB_MIN"],
		gentleFairSleepers:   val["GENTLE_FAIR_SLEEPERS"],
		startDebit:           val["START_DEBIT"],
		altPeriod:            val["ALT_PERIOD"],
		baseSlice:            val["BASE_SLICE"],
		smpFairGroups:        val["SMP_FAIR_GROUPS"],
		niRandom:             val["NI_RANDOM"],
	}, nil
}

// Limits that keep a run bounded in memory and time.
const (
	maxCPUs          = 1024
	maxTasks         = 65536
	maxGroupEntities = 1 << 22 // task groups × CPUs
	maxSimulatedNs   = int64(24 * 3600 * 1e9)
)

// validate checks in and returns an error that says what to change.
func validate(in *Input) error {
	n := &in.Node
	if n.CPUs < 1 || n.CPUs > maxCPUs {
		return fmt.Errorf("node.cpus is %d; set it between 1 and %d", n.CPUs, maxCPUs)
	}
	if err := validateTopology(n.Topology, n.CPUs); err != nil {
		return err
	}
	if len(n.TimerExpiryShiftNs) > n.CPUs {
		return fmt.Errorf("node.timerExpiryShiftNs has %d entries for %d CPUs; give at most one per CPU", len(n.TimerExpiryShiftNs), n.CPUs)
	}
	for c, d := range n.TimerExpiryShiftNs {
		if d < -1_000_000_000 || d > 1_000_000_000 {
			return fmt.Errorf("node.timerExpiryShiftNs[%d] is %d; set it between -1000000000 and 1000000000 (1s)", c, d)
		}
	}
	switch n.Scheduler {
	case "", EEVDF, CFS:
	default:
		return fmt.Errorf("node.scheduler %q is unknown; use %q or %q", n.Scheduler, EEVDF, CFS)
	}
	if n.Kernel != "" {
		kv, err := parseKernel(n.Kernel)
		if err != nil {
			return err
		}
		if n.Scheduler == EEVDF && !rulesFor(kv).eevdf {
			return fmt.Errorf("node.kernel %s has no EEVDF (it came in 6.6); set node.scheduler to CFS or leave it empty", n.Kernel)
		}
	}
	switch n.HZ {
	case 0, 100, 250, 300, 1000:
	default:
		return fmt.Errorf("node.hz is %d; use 100, 250, 300 or 1000 (0 means %d)", n.HZ, DefaultHZ)
	}
	switch n.Preempt {
	case "", "None", "Voluntary", "Full", "Lazy":
	default:
		return fmt.Errorf("node.preempt %q is unknown; use None, Voluntary, Full or Lazy", n.Preempt)
	}
	switch n.TunableScaling {
	case "", "None", "Log", "Linear":
	default:
		return fmt.Errorf("node.tunableScaling %q is unknown; use None, Log or Linear", n.TunableScaling)
	}
	c := &n.Calibration
	if c.TimerOverheadNs < 0 || c.WakeupOverheadNs < 0 || c.CtxSwitchNs < 0 {
		return fmt.Errorf("node.calibration overheads must not be negative")
	}
	if c.TimerOverheadNs > 1e9 || c.WakeupOverheadNs > 1e9 || c.CtxSwitchNs > 1e9 {
		return fmt.Errorf("node.calibration overheads must be at most 1s")
	}
	k0 := &n.Constants
	for _, kv := range []struct {
		name string
		v    int64
	}{{"timerExpiryNs", k0.TimerExpiryNs}, {"wakeupNs", k0.WakeupNs}, {"idleExitNs", k0.IdleExitNs},
		{"ctxSwitchNs", k0.CtxSwitchNs}, {"wakeupCPUNs", k0.WakeupCPUNs}, {"timerArmCPUNs", k0.TimerArmCPUNs},
		{"coldWakeNs", k0.ColdWakeNs}, {"processSwitchNs", k0.ProcessSwitchNs}} {
		if kv.v < NoCost || kv.v > 100_000_000 {
			return fmt.Errorf("node.constants.%s is %d; set it between 0 (the default) and 1e8 (100ms), or to -1 for none", kv.name, kv.v)
		}
	}
	for _, kv := range []struct {
		name string
		q    []int64
	}{{"timerExpiryQuantilesNs", k0.TimerExpiryQuantilesNs}, {"wakeupQuantilesNs", k0.WakeupQuantilesNs},
		{"idleExitQuantilesNs", k0.IdleExitQuantilesNs}, {"ctxSwitchQuantilesNs", k0.CtxSwitchQuantilesNs}} {
		if len(kv.q) == 0 {
			continue
		}
		if len(kv.q) != len(QuantileLevels) {
			return fmt.Errorf("node.constants.%s has %d values; give one per level %v, or none", kv.name, len(kv.q), QuantileLevels)
		}
		for i, v := range kv.q {
			if v < 0 || v > 100_000_000 {
				return fmt.Errorf("node.constants.%s[%d] is %d; set it between 0 and 1e8 (100ms)", kv.name, i, v)
			}
			if i > 0 && v < kv.q[i-1] {
				return fmt.Errorf("node.constants.%s[%d] is %d, below the level before it (%d); quantiles must not decrease", kv.name, i, v, kv.q[i-1])
			}
		}
	}
	if k0.HostPausesPerHour < 0 || k0.HostPausesPerHour > 3_600_000 {
		return fmt.Errorf("node.constants.hostPausesPerHour is %d; set it between 0 (no pauses) and 3600000 (1000 a second)", k0.HostPausesPerHour)
	}
	if k0.HostPausesPerHour > 0 && len(k0.HostPauseQuantilesNs) != len(QuantileLevels) {
		return fmt.Errorf("node.constants.hostPauseQuantilesNs has %d values; with hostPausesPerHour set give one pause length per level %v", len(k0.HostPauseQuantilesNs), QuantileLevels)
	}
	if k0.HostPausesPerHour == 0 && len(k0.HostPauseQuantilesNs) > 0 {
		return fmt.Errorf("node.constants.hostPauseQuantilesNs is set without hostPausesPerHour; set the rate too, or remove the lengths")
	}
	for i, v := range k0.HostPauseQuantilesNs {
		if v < 1 || v > 1_000_000_000 {
			return fmt.Errorf("node.constants.hostPauseQuantilesNs[%d] is %d; set it between 1 and 1e9 (1s)", i, v)
		}
		if i > 0 && v < k0.HostPauseQuantilesNs[i-1] {
			return fmt.Errorf("node.constants.hostPauseQuantilesNs[%d] is %d, below the level before it (%d); quantiles must not decrease", i, v, k0.HostPauseQuantilesNs[i-1])
		}
	}
	for _, st := range []struct {
		name, qName string
		perHour     int64
		q           []int64
	}{
		{"vcpuStallsPerHour", "vcpuStallQuantilesNs", k0.VCPUStallsPerHour, k0.VCPUStallQuantilesNs},
		{"vcpuShortStallsPerHour", "vcpuShortStallQuantilesNs", k0.VCPUShortStallsPerHour, k0.VCPUShortStallQuantilesNs},
	} {
		if st.perHour < 0 || st.perHour > 3_600_000 {
			return fmt.Errorf("node.constants.%s is %d; set it between 0 (no stalls) and 3600000 (1000 a second on each CPU)", st.name, st.perHour)
		}
		if st.perHour > 0 && len(st.q) != len(QuantileLevels) {
			return fmt.Errorf("node.constants.%s has %d values; with %s set give one stall length per level %v", st.qName, len(st.q), st.name, QuantileLevels)
		}
		if st.perHour == 0 && len(st.q) > 0 {
			return fmt.Errorf("node.constants.%s is set without %s; set the rate too, or remove the lengths", st.qName, st.name)
		}
		for i, v := range st.q {
			if v < 1 || v > 1_000_000_000 {
				return fmt.Errorf("node.constants.%s[%d] is %d; set it between 1 and 1e9 (1s)", st.qName, i, v)
			}
			if i > 0 && v < st.q[i-1] {
				return fmt.Errorf("node.constants.%s[%d] is %d, below the level before it (%d); quantiles must not decrease", st.qName, i, v, st.q[i-1])
			}
		}
	}
	if !(c.BackgroundLoad >= 0 && c.BackgroundLoad <= 0.95) {
		return fmt.Errorf("node.calibration.backgroundLoad is %v; set it between 0 and 0.95", c.BackgroundLoad)
	}
	sched := nodeScheduler(*n)
	k := &in.Knobs
	if k.BaseSliceNs != 0 {
		if sched != EEVDF {
			return fmt.Errorf("knobs.baseSliceNs applies only to EEVDF; remove it or set node.scheduler to EEVDF")
		}
		if k.BaseSliceNs < 50_000 || k.BaseSliceNs > 1e9 {
			return fmt.Errorf("knobs.baseSliceNs is %d; set it between 50000 (50µs) and 1e9 (1s)", k.BaseSliceNs)
		}
	}
	for _, kv := range []struct {
		name string
		v    int64
	}{{"latencyNs", k.LatencyNs}, {"minGranularityNs", k.MinGranularityNs}, {"wakeupGranularityNs", k.WakeupGranularityNs}} {
		if kv.v == 0 {
			continue
		}
		if sched != CFS {
			return fmt.Errorf("knobs.%s applies only to CFS; remove it or set node.scheduler to CFS", kv.name)
		}
		if kv.v < 100_000 || kv.v > 1e9 {
			return fmt.Errorf("knobs.%s is %d; set it between 100000 (0.1ms) and 1e9 (1s)", kv.name, kv.v)
		}
	}
	if k.MigrationCostNs < MigrationCostZero || k.MigrationCostNs > 1e9 {
		return fmt.Errorf("knobs.migrationCostNs is %d; set it between 0 and 1e9 (-1: always cache hot, %d: zero)", k.MigrationCostNs, MigrationCostZero)
	}
	if k.NrMigrate < 0 || k.NrMigrate > 1024 {
		return fmt.Errorf("knobs.nrMigrate is %d; set it between 1 and 1024 (0 means 32)", k.NrMigrate)
	}
	if _, err := resolveFeatures(sched, k.Features, rulesFor(nodeKernel(*n))); err != nil {
		return err
	}
	if in.DurationNs <= 0 {
		return fmt.Errorf("durationNs is %d; set a positive duration", in.DurationNs)
	}
	if in.WarmupNs < 0 {
		return fmt.Errorf("warmupNs is %d; it must not be negative", in.WarmupNs)
	}
	if in.DurationNs > maxSimulatedNs || in.WarmupNs > maxSimulatedNs-in.DurationNs {
		return fmt.Errorf("warmupNs+durationNs exceeds 24h of simulated time; shorten them")
	}
	for i, t := range in.LatencyThresholdsNs {
		if t <= 0 {
			return fmt.Errorf("latencyThresholdsNs[%d] is %d; set a positive threshold", i, t)
		}
	}
	if len(in.Groups) == 0 {
		return fmt.Errorf("groups is empty; add at least one group")
	}
	seen := map[string]int{}
	totalTasks := 0
	tgs := 0
	for i := range in.Groups {
		g := &in.Groups[i]
		where := fmt.Sprintf("groups[%d] (%q)", i, g.Name)
		if g.Name == "" {
			return fmt.Errorf("groups[%d].name is empty; give every group a name", i)
		}
		if _, dup := seen[g.Name]; dup {
			return fmt.Errorf("%s: the name is used twice; group names must be unique", where)
		}
		seen[g.Name] = i
		reps := g.Replicas
		if reps < 0 || reps > maxTasks {
			return fmt.Errorf("%s: replicas is %d; set it between 1 and %d (0 means 1)", where, reps, maxTasks)
		}
		if reps == 0 {
			reps = 1
		}
		if g.Tasks < 0 || g.Tasks > maxTasks {
			return fmt.Errorf("%s: tasks is %d; set it between 0 and %d", where, g.Tasks, maxTasks)
		}
		totalTasks += reps * g.Tasks
		if totalTasks > maxTasks {
			return fmt.Errorf("the groups hold more than %d tasks in total; reduce replicas or tasks", maxTasks)
		}
		if g.CPUWeight < 0 || g.CPUWeight > 10000 {
			return fmt.Errorf("%s: cpuWeight is %d; set it between 1 and 10000 (0 means 100)", where, g.CPUWeight)
		}
		if g.CPUShares != 0 && (g.CPUShares < 2 || g.CPUShares > 262144) {
			return fmt.Errorf("%s: cpuShares is %d; set it between 2 and 262144, or 0 to use cpuWeight", where, g.CPUShares)
		}
		if g.CPUShares != 0 && g.CPUWeight != 0 {
			return fmt.Errorf("%s: cpuShares and cpuWeight are two spellings of one weight; set one", where)
		}
		if g.CPUMaxQuotaNs < 0 || g.CPUMaxPeriodNs < 0 {
			return fmt.Errorf("%s: cpuMax quota and period must not be negative", where)
		}
		if g.CPUMaxPeriodNs != 0 && (g.CPUMaxPeriodNs < 1_000_000 || g.CPUMaxPeriodNs > 1_000_000_000) {
			return fmt.Errorf("%s: cpuMaxPeriodNs is %d; set it between 1ms and 1s (0 means 100ms)", where, g.CPUMaxPeriodNs)
		}
		if g.CPUMaxQuotaNs != 0 && g.CPUMaxQuotaNs < 1_000_000 {
			return fmt.Errorf("%s: cpuMaxQuotaNs is %d; set it to at least 1ms (1000000) or 0 for unlimited", where, g.CPUMaxQuotaNs)
		}
		if len(g.TaskCPUs) > 0 && len(g.TaskCPUs) != g.Tasks {
			return fmt.Errorf("%s: taskCPUs has %d entries for %d tasks: give one CPU list per task, or use cpus for the whole group", where, len(g.TaskCPUs), g.Tasks)
		}
		for _, cpus := range append([][]int32{g.CPUs}, g.TaskCPUs...) {
			for _, c := range cpus {
				if c < 0 || int(c) >= in.Node.CPUs {
					return fmt.Errorf("%s: cpus names CPU %d, but the node has %d CPUs (0-%d): pin to CPUs the node has, or leave cpus empty", where, c, in.Node.CPUs, in.Node.CPUs-1)
				}
			}
		}
		if g.TimerSlackNs < 0 || g.TimerSlackNs > 100_000_000 {
			return fmt.Errorf("%s: timerSlackNs is %d; set it between 1 and 100000000 (100ms), or 0 for the default 50µs", where, g.TimerSlackNs)
		}
		if g.Nice < -20 || g.Nice > 19 {
			return fmt.Errorf("%s: nice is %d; set it between -20 and 19", where, g.Nice)
		}
		switch g.Policy {
		case "", "Other", "Batch", "Idle":
		default:
			return fmt.Errorf("%s: policy %q is unknown; use Other, Batch or Idle", where, g.Policy)
		}
		if g.SliceNs != 0 {
			if sched != EEVDF {
				return fmt.Errorf("%s: sliceNs applies only to EEVDF; remove it or set node.scheduler to EEVDF", where)
			}
			if g.SliceNs < 100_000 || g.SliceNs > 100_000_000 {
				return fmt.Errorf("%s: sliceNs is %d; set it between 100000 (0.1ms) and 100000000 (100ms), as the kernel clamps", where, g.SliceNs)
			}
		}
		if g.Root {
			if g.Session != "" || g.Parent != "" || g.CPUWeight != 0 || g.CPUShares != 0 || g.CPUMaxQuotaNs != 0 || g.CPUIdle || g.CPUMaxPeriodNs != 0 || g.Replicas > 1 {
				return fmt.Errorf("%s: a root group is in no cgroup and no session; remove session, parent, cpuWeight, cpuShares, cpuMax, cpuIdle and replicas, or root", where)
			}
		} else if g.Session != "" {
			if g.Parent != "" {
				return fmt.Errorf("%s: session and parent are exclusive (session tasks are outside any cgroup); remove one", where)
			}
			if g.CPUWeight != 0 || g.CPUShares != 0 || g.CPUMaxQuotaNs != 0 || g.CPUIdle || g.CPUMaxPeriodNs != 0 {
				return fmt.Errorf("%s: a session group has no cgroup, so cpuWeight, cpuShares, cpuMax and cpuIdle do not apply; remove them or the session", where)
			}
			if g.Replicas > 1 {
				return fmt.Errorf("%s: a session group has no cgroups to replicate; set replicas to 1 or 0 and use tasks", where)
			}
		} else {
			tgs += reps
		}
		if g.Parent != "" {
			pi, ok := seen[g.Parent]
			if !ok || pi == i {
				return fmt.Errorf("%s: parent %q does not name an earlier group; list the parent group before this one", where, g.Parent)
			}
			p := &in.Groups[pi]
			if p.Replicas > 1 {
				return fmt.Errorf("%s: parent %q has %d replicas; a parent must have replicas 1", where, g.Parent, p.Replicas)
			}
			if p.Session != "" || p.Root {
				return fmt.Errorf("%s: parent %q is a session or root group without a cgroup; choose a cgroup group as parent", where, g.Parent)
			}
		}
		if g.KernelThread && g.AddressSpace != "" {
			return fmt.Errorf("%s: a kernel thread has no address space of its own; remove addressSpace or kernelThread", where)
		}
		if err := validatePattern(where, g); err != nil {
			return err
		}
	}
	if int64(tgs+len(in.Groups))*int64(n.CPUs) > maxGroupEntities {
		return fmt.Errorf("cgroups × cpus exceeds %d group entities; reduce replicas or cpus", maxGroupEntities)
	}
	return nil
}

func validatePattern(where string, g *Group) error {
	p := &g.Pattern
	if p.RunNs < 0 || p.PeriodNs < 0 || p.IntervalNs < 0 || p.MeanRunNs < 0 || p.MeanSleepNs < 0 {
		return fmt.Errorf("%s: pattern durations must not be negative", where)
	}
	const maxD = int64(3600 * 1e9)
	if p.RunNs > maxD || p.PeriodNs > maxD || p.IntervalNs > maxD || p.MeanRunNs > maxD || p.MeanSleepNs > maxD {
		return fmt.Errorf("%s: pattern durations must be at most 1h", where)
	}
	if p.RunJitterNs != 0 && p.Type != PingPong {
		return fmt.Errorf("%s: runJitterNs is for a PingPong pattern only", where)
	}
	if p.PhaseNs != 0 && (p.Type != LatencyProbe || p.PhaseNs < 0 || p.PhaseNs >= p.IntervalNs) {
		return fmt.Errorf("%s: phaseNs is for a LatencyProbe pattern only, between 0 and its intervalNs (excluded)", where)
	}
	if len(g.GridPhasesNs) > 0 {
		grid := p.IntervalNs
		if p.Type == Periodic {
			grid = p.PeriodNs
		}
		if p.Type != LatencyProbe && p.Type != Periodic {
			return fmt.Errorf("%s: gridPhasesNs is for a LatencyProbe or Periodic pattern only", where)
		}
		if n := max(g.Replicas, 1) * g.Tasks; len(g.GridPhasesNs) != n {
			return fmt.Errorf("%s: gridPhasesNs has %d entries, want one per task (%d)", where, len(g.GridPhasesNs), n)
		}
		for _, ph := range g.GridPhasesNs {
			if ph < 0 || ph >= grid {
				return fmt.Errorf("%s: grid phase %d must lie within 0 and the interval %d (excluded)", where, ph, grid)
			}
		}
	}
	switch p.Type {
	case "", Hog:
	case Periodic:
		if p.PeriodNs < 10_000 || p.RunNs <= 0 {
			return fmt.Errorf("%s: a Periodic pattern needs periodNs >= 10000 and runNs > 0", where)
		}
	case LatencyProbe:
		if p.IntervalNs < 10_000 {
			return fmt.Errorf("%s: a LatencyProbe pattern needs intervalNs >= 10000 (10µs)", where)
		}
	case PingPong:
		if g.Tasks%2 != 0 {
			return fmt.Errorf("%s: PingPong pairs tasks 0-1, 2-3, ...; set tasks to an even number", where)
		}
		if p.RunJitterNs < 0 || p.RunJitterNs > p.RunNs {
			return fmt.Errorf("%s: a PingPong pattern's runJitterNs must be between 0 and its runNs", where)
		}
	case Server:
		if err := validateServer(where, g); err != nil {
			return err
		}
	case Burst, Foreign:
		if p.MeanRunNs < 1000 || p.MeanSleepNs < 1000 {
			return fmt.Errorf("%s: a %s pattern needs meanRunNs >= 1000 and meanSleepNs >= 1000", where, p.Type)
		}
	default:
		return fmt.Errorf("%s: pattern type %q is unknown; use Hog, Periodic, LatencyProbe, PingPong, Burst, Server or Foreign", where, p.Type)
	}
	return nil
}
