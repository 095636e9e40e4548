package experiment

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/api/v1alpha1/validation"
	"github.com/schedlab/schedlab/internal/simengine"
)

// MaxSimulatedDuration caps the simulated window: steady-state metrics
// converge long before an hour-long measurement ends, and predictions must
// stay cheap. The CLI's --duration overrides it.
const MaxSimulatedDuration = 20 * time.Second

// agentParent is the implicit cgroup the agent creates all of a run's
// cgroups under (schedlab/<run>). It matters only beside what sits outside
// it and competes with it at the root: session groups, and the node's other
// processes run as Foreign tasks (kernel threads, other sessions, other
// cgroups such as a cpu.idle one). The name cannot clash with a user's
// group: group names are DNS labels.
const agentParent = "_schedlab"

// Prediction is the simulator's answer for one node shape × variant × group.
type Prediction struct {
	Shape   string
	Node    v1alpha1.NodeShape
	Variant string
	Group   string
	Tasks   int
	Metrics v1alpha1.Metrics
	// Low and High bound the 95% interval of each metric over the
	// replicas (Student's t on their means); Metrics is the mean.
	Low, High v1alpha1.Metrics
	// Replicas is the number of seeds behind the prediction.
	Replicas int
	// Unsupported says why the variant cannot run on this shape (a knob
	// the kernel family lacks); Metrics is then empty.
	Unsupported string
}

// UnsupportedError is a variant that needs a knob the node shape's kernel
// does not have, as the agent would find it on such a node.
type UnsupportedError struct{ Reason string }

func (e *UnsupportedError) Error() string { return e.Reason }

// checkKnobsApply reports knobs that the shape's scheduler family lacks:
// base_slice_ns exists only on EEVDF, the CFS granularities only before it.
func checkKnobsApply(k *v1alpha1.Knobs, shape v1alpha1.NodeShape) error {
	if shape.Scheduler == v1alpha1.SchedulerCFS && k.BaseSlice != nil {
		return &UnsupportedError{"baseSlice: CFS kernels (before 6.6) have no base_slice_ns"}
	}
	if shape.Scheduler != v1alpha1.SchedulerCFS {
		for name, d := range map[string]*metav1.Duration{"latency": k.Latency, "minGranularity": k.MinGranularity, "wakeupGranularity": k.WakeupGranularity} {
			if d != nil {
				return &UnsupportedError{name + ": EEVDF kernels (6.6 and later) have no " + name + " tunable"}
			}
		}
	}
	return nil
}

// PredictOptions tune a prediction run.
type PredictOptions struct {
	// Duration of the simulated window; 0 means the spec's duration capped
	// at MaxSimulatedDuration.
	Duration time.Duration
	// Seed overrides spec.simulation.seed when non-nil.
	Seed *uint64
	// Calibration per shape name, fitted from earlier measurements.
	Calibration map[string]simengine.Calibration
	// Replicas overrides spec.simulation.replicas when positive: the
	// number of independent seeds (seed, seed+1, …) each prediction runs.
	Replicas int
	// Foreign are tasks outside the experiment that run beside it, per
	// variant name: the node's other processes as its windows measured
	// them (ForeignTasks). They are in no prediction's metrics.
	Foreign map[string][]simengine.Group
	// GridPhases are, per variant name, the deadline grids' phases of the
	// variant's measured windows (WindowGridPhases), each window's per
	// group name: replica i of a prediction (seed Seed+i) takes window
	// i mod their number, so the seeds replay where the node's windows put
	// the periodic tasks' grids, against each other and the tick. None
	// (older runs; Simulate mode): the simulator draws them.
	GridPhases map[string][]map[string][]int64
	// TimerShifts are, per variant name, how much later than the
	// calibration window's each of the variant's measured windows met the
	// node's timer path (WindowConditions, which lists them in the order of
	// GridPhases): replica i takes shift i mod their number, moving the
	// node's timer expiry and idle exit (shiftTimerPath). None (older runs;
	// Simulate mode): every replica takes the calibration's constants.
	TimerShifts map[string][]TimerShift
}

// DefaultReplicas is the number of seeds a prediction runs when
// spec.simulation.replicas is unset.
const DefaultReplicas = 5

// Replicas resolves the number of seeds a prediction runs.
func Replicas(spec *v1alpha1.SchedExperimentSpec, opts PredictOptions) int {
	if opts.Replicas > 0 {
		return opts.Replicas
	}
	if spec.Simulation != nil && spec.Simulation.Replicas != nil && *spec.Simulation.Replicas > 0 {
		return int(*spec.Simulation.Replicas)
	}
	return DefaultReplicas
}

// simSlots bounds the simulations running at once in this process to
// GOMAXPROCS: every replica of every prediction takes a slot around its
// simengine.Run, however many predictions run side by side (Predict's
// variants and shapes, calibration's candidates).
var simSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

// runReplicas runs in with seeds in.Seed, in.Seed+1, … (n of them) at once,
// one goroutine each (the simulator is single-threaded and keeps no shared
// state), and returns the results in seed order. With phases, replica i
// runs with phases[i mod len(phases)] (per group name) as its groups'
// GridPhasesNs; with shifts, with its node's timer path moved by
// shifts[i mod len(shifts)].
func runReplicas(in simengine.Input, n int, phases []map[string][]int64, shifts []TimerShift) ([]*simengine.Result, error) {
	out := make([]*simengine.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			simSlots <- struct{}{}
			defer func() { <-simSlots }()
			r := in
			r.Seed = in.Seed + uint64(i)
			if len(phases) > 0 {
				r.Groups = withGridPhases(in.Groups, phases[i%len(phases)])
			}
			if len(shifts) > 0 {
				s := shifts[i%len(shifts)]
				r.Node.Constants = shiftTimerPath(in.Node.Constants, s)
				// CPUs the simulated node does not have are dropped.
				r.Node.TimerExpiryShiftNs = s.CPUTimerExpiryNs[:min(len(s.CPUTimerExpiryNs), r.Node.CPUs)]
			}
			out[i], errs[i] = simengine.Run(r)
		}(i)
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// withGridPhases is a copy of groups with each named group's GridPhasesNs
// set from phases (the others as they are).
func withGridPhases(groups []simengine.Group, phases map[string][]int64) []simengine.Group {
	out := slices.Clone(groups)
	for i := range out {
		if ph, ok := phases[out[i].Name]; ok {
			out[i].GridPhasesNs = ph
		}
	}
	return out
}

// WindowGridPhases collects the grid phases the agent recorded
// (GroupMeasurement.gridPhasesNs) per variant: one map per window that
// has any, from group name to the group's phases, in window order (the
// nodes' windows one node after another). Unsupported windows are
// skipped. nil when no window has phases (runs before the agent recorded
// them).
func WindowGridPhases(nodes ...[]v1alpha1.WindowResult) map[string][]map[string][]int64 {
	var out map[string][]map[string][]int64
	for _, ws := range nodes {
		for i := range ws {
			w := &ws[i]
			if w.Unsupported != "" {
				continue
			}
			m := windowGridPhases(w)
			if m == nil {
				continue
			}
			if out == nil {
				out = map[string][]map[string][]int64{}
			}
			out[w.Variant] = append(out[w.Variant], m)
		}
	}
	return out
}

// windowGridPhases is one window's grid phases by group name, nil when no
// group recorded any.
func windowGridPhases(w *v1alpha1.WindowResult) map[string][]int64 {
	var m map[string][]int64
	for _, g := range w.Groups {
		if len(g.GridPhasesNs) == 0 {
			continue
		}
		if m == nil {
			m = map[string][]int64{}
		}
		m[g.Name] = g.GridPhasesNs
	}
	return m
}

// summarizeReplicas is the mean of each metric over the replicas and its
// 95% interval (mean ± t·s/√n); with one replica the interval is the value.
func summarizeReplicas(samples []*v1alpha1.Metrics) (mid, low, high v1alpha1.Metrics) {
	half := func(v []float64) float64 {
		if len(v) < 2 {
			return 0
		}
		return tCritical95(float64(len(v)-1)) * stddev(v) / math.Sqrt(float64(len(v)))
	}
	mid = combine(samples, mean)
	low = combine(samples, func(v []float64) float64 { return max(0, mean(v)-half(v)) })
	high = combine(samples, func(v []float64) float64 { return mean(v) + half(v) })
	return mid, low, high
}

// ShapeForKernel is the node shape of a node with cpus CPUs running the
// given kernel release (uname -r): EEVDF from 6.6, CFS before, and the
// release itself, which selects the simulator's version-dependent paths.
func ShapeForKernel(cpus int32, kernelVersion string) v1alpha1.NodeShape {
	s := v1alpha1.NodeShape{CPUs: cpus, Scheduler: v1alpha1.SchedulerEEVDF}
	var major, minor int
	if _, err := fmt.Sscanf(kernelVersion, "%d.%d", &major, &minor); err == nil {
		if major < 6 || (major == 6 && minor < 6) {
			s.Scheduler = v1alpha1.SchedulerCFS
		}
		if len(kernelVersion) <= 64 {
			s.Kernel = kernelVersion
		}
	}
	return s
}

// ShapeFromCapabilities is the one translation of what an agent detected on
// a node into the simulator's node shape: CPUs and the kernel's family, the
// tick rate and the preemption model where known. The controller, the
// analysis and `schedlab run` all use it, so a node's prediction is the same
// whichever of them makes it.
func ShapeFromCapabilities(c *v1alpha1.NodeCapabilities) v1alpha1.NodeShape {
	s := ShapeForKernel(c.CPUs, c.KernelVersion)
	if c.Scheduler != "" {
		s.Scheduler = c.Scheduler
	}
	switch c.HZ {
	case 100, 250, 300, 1000:
		s.HZ = c.HZ
	}
	s.Preempt = c.Preempt
	// The topology the agent read from sysfs, if it is regular and agrees
	// with the CPU count; a node whose topology is unknown stays flat.
	if c.Topology != nil && !c.Topology.IsFlat() && len(validation.ValidateTopology(c.Topology, c.CPUs, field.NewPath("topology"))) == 0 {
		t := *c.Topology
		s.Topology = &t
	}
	return s
}

// ShapeName names a shape, e.g. "8cpu-EEVDF" or "32cpu-EEVDF-2s-2llc-smt2"
// (NodeShape.Name).
func ShapeName(n v1alpha1.NodeShape) string { return n.Name() }

// SimTopology is the simulator's topology of a shape: zero (flat) when the
// shape has none or a flat one.
func SimTopology(t *v1alpha1.NodeTopology) simengine.Topology {
	if t.IsFlat() {
		return simengine.Topology{}
	}
	return simengine.Topology{Sockets: int(t.SocketCount()), LLCsPerSocket: int(t.LLCsPerSocketCount()), ThreadsPerCore: int(t.ThreadsPerCoreCount())}
}

// SimInput translates one variant of a (defaulted, valid) spec on one node
// shape into the simulator's input.
func SimInput(spec *v1alpha1.SchedExperimentSpec, variant int, shape v1alpha1.NodeShape, opts PredictOptions) (simengine.Input, error) {
	if variant < 0 || variant >= len(spec.Variants) {
		return simengine.Input{}, fmt.Errorf("variant %d out of range", variant)
	}
	k := spec.Variants[variant].Knobs
	if err := checkKnobsApply(&k, shape); err != nil {
		return simengine.Input{}, err
	}
	in := simengine.Input{
		Node: simengine.Node{
			CPUs:           int(shape.CPUs),
			Scheduler:      simengine.Scheduler(orDefault(string(shape.Scheduler), "EEVDF")),
			Kernel:         shape.Kernel,
			HZ:             int(shape.HZ),
			Preempt:        string(shape.Preempt),
			TunableScaling: string(shape.TunableScaling),
			Topology:       SimTopology(shape.Topology),
		},
		Knobs: simengine.Knobs{
			BaseSliceNs:         durNs(k.BaseSlice),
			LatencyNs:           durNs(k.Latency),
			MinGranularityNs:    durNs(k.MinGranularity),
			WakeupGranularityNs: wakeupGranularityNs(k.WakeupGranularity),
			MigrationCostNs:     migrationCostNs(k.MigrationCost),
			Features:            map[string]bool{},
		},
		DurationNs: spec.Duration.Nanoseconds(),
		WarmupNs:   time.Second.Nanoseconds(),
	}
	if spec.Warmup != nil {
		in.WarmupNs = spec.Warmup.Nanoseconds()
	}
	if opts.Duration > 0 {
		in.DurationNs = opts.Duration.Nanoseconds()
	} else if in.DurationNs > MaxSimulatedDuration.Nanoseconds() {
		in.DurationNs = MaxSimulatedDuration.Nanoseconds()
	}
	if in.WarmupNs > in.DurationNs {
		in.WarmupNs = in.DurationNs / 2
	}
	if c, ok := opts.Calibration[ShapeName(shape)]; ok {
		in.Node.Calibration = c
	}
	in.Node.Constants = SimConstants(shape.Constants)
	// A variant's preempt and tunableScaling knobs change the node.
	if k.Preempt != "" {
		in.Node.Preempt = string(k.Preempt)
	}
	if k.TunableScaling != "" {
		in.Node.TunableScaling = string(k.TunableScaling)
	}
	switch k.Autogroup {
	case v1alpha1.AutogroupEnabled:
		in.Knobs.Autogroup = ptr(true)
	case v1alpha1.AutogroupDisabled:
		in.Knobs.Autogroup = ptr(false)
	}
	if k.NrMigrate != nil {
		in.Knobs.NrMigrate = int(*k.NrMigrate)
	}
	if spec.Simulation != nil {
		for name, on := range spec.Simulation.Features {
			in.Knobs.Features[name] = on
		}
		in.Seed = uint64(spec.Simulation.Seed)
	}
	for name, on := range k.Features {
		in.Knobs.Features[name] = on
	}
	if opts.Seed != nil {
		in.Seed = *opts.Seed
	}

	foreign := opts.Foreign[spec.Variants[variant].Name]
	// outside: something competes with the agent's cgroup at the root, so
	// the workload's cgroups go under it, as on the node. A cpu.idle
	// cgroup's task beside the workload's groups acts otherwise than one
	// beside their parent, on the node as in the simulator
	// (docs/latency-tail.md, tenth session).
	outside := len(foreign) > 0
	for i := range spec.Workload.Groups {
		if spec.Workload.Groups[i].Session != "" {
			outside = true
		}
	}
	if outside {
		in.Groups = append(in.Groups, simengine.Group{Name: agentParent, Replicas: 1, Tasks: 0, CPUWeight: 100})
	}
	for i := range spec.Workload.Groups {
		g := &spec.Workload.Groups[i]
		sg := simengine.Group{
			Name:         g.Name,
			Replicas:     int(g.ReplicaCount()),
			Tasks:        int(g.TaskCount()),
			CPUIdle:      g.CPUIdle != nil && *g.CPUIdle,
			Policy:       string(g.Policy),
			SliceNs:      durNs(g.Slice),
			TimerSlackNs: timerSlackNs(g.TimerSlack),
			Session:      g.Session,
			Parent:       g.Parent,
		}
		cpus, err := v1alpha1.ParseCPUList(g.CPUs)
		if err != nil {
			return in, fmt.Errorf("spec.workload.groups[%d].cpus: %w", i, err)
		}
		for _, c := range cpus {
			if int(c) >= int(shape.CPUs) {
				return in, fmt.Errorf("spec.workload.groups[%d].cpus: group %q is pinned to CPU %d, which shape %s lacks (it has CPUs 0-%d): pin it to CPUs every shape has, or predict it on larger shapes", i, g.Name, c, ShapeName(shape), shape.CPUs-1)
			}
		}
		sg.CPUs = cpus
		if shape.Scheduler == v1alpha1.SchedulerCFS {
			// CFS kernels take sched_attr.sched_runtime for a fair task
			// and ignore it: there is no custom slice to model.
			sg.SliceNs = 0
		}
		if g.CPUWeight != nil && g.Session == "" {
			sg.CPUWeight = int(*g.CPUWeight)
		}
		if g.Nice != nil {
			sg.Nice = int(*g.Nice)
		}
		if g.CPUMax != "" {
			sg.CPUMaxPeriodNs = 100 * time.Millisecond.Nanoseconds()
			if g.CPUMaxPeriod != nil {
				sg.CPUMaxPeriodNs = g.CPUMaxPeriod.Nanoseconds()
			}
			sg.CPUMaxQuotaNs = int64(v1alpha1.CPUMaxCPUs(g.CPUMax) * float64(sg.CPUMaxPeriodNs))
		}
		if outside && g.Session == "" && g.Parent == "" {
			sg.Parent = agentParent
		}
		if g.Pattern != nil {
			sg.Pattern = simengine.Pattern{
				Type:        simengine.PatternType(g.Pattern.Type),
				RunNs:       durNs(g.Pattern.Run),
				PeriodNs:    durNs(g.Pattern.Period),
				IntervalNs:  durNs(g.Pattern.Interval),
				MeanRunNs:   durNs(g.Pattern.MeanRun),
				MeanSleepNs: durNs(g.Pattern.MeanSleep),
			}
			if p := g.Pattern; p.Type == v1alpha1.PatternServer && p.Rate != nil && p.Service != nil {
				sp := &simengine.ServerPattern{RatePerSec: float64(*p.Rate), Arrivals: string(p.Arrivals),
					Service: string(p.Service.Distribution), ServiceMeanNs: p.Service.Mean.Nanoseconds(), ServiceP99Ns: durNs(p.Service.P99)}
				if p.Fanout != nil {
					sp.Fanout = int(*p.Fanout)
				}
				if p.Queue != nil {
					sp.Queue = int(*p.Queue)
				}
				sg.Pattern.Server = sp
			}
		} else {
			sg.Pattern = simengine.Pattern{Type: simengine.PatternType(v1alpha1.PatternHog)}
		}
		in.Groups = append(in.Groups, sg)
	}
	in.Groups = append(in.Groups, foreign...)
	return in, nil
}

// Predict runs the simulator for every shape × variant and returns one
// prediction per shape × variant × group, in spec order.
func Predict(spec *v1alpha1.SchedExperimentSpec, shapes []v1alpha1.NodeShape, opts PredictOptions) ([]Prediction, error) {
	// Every (shape, variant) pair is simulated at once, so that their
	// replicas together keep every core busy (simSlots bounds them); the
	// predictions come out in shape, then variant order, and the first
	// error in that order is returned.
	nv := len(spec.Variants)
	res := make([][]Prediction, len(shapes)*nv)
	errs := make([]error, len(shapes)*nv)
	var wg sync.WaitGroup
	for si := range shapes {
		for vi := 0; vi < nv; vi++ {
			wg.Add(1)
			go func(j, vi int, shape v1alpha1.NodeShape) {
				defer wg.Done()
				res[j], errs[j] = simulateVariant(spec, vi, shape, opts)
			}(si*nv+vi, vi, shapes[si])
		}
	}
	wg.Wait()
	var out []Prediction
	for j := range res {
		if errs[j] != nil {
			return nil, errs[j]
		}
		out = append(out, res[j]...)
	}
	return out, nil
}

func simulateVariant(spec *v1alpha1.SchedExperimentSpec, vi int, shape v1alpha1.NodeShape, opts PredictOptions) ([]Prediction, error) {
	in, err := SimInput(spec, vi, shape, opts)
	var unsupported *UnsupportedError
	if errors.As(err, &unsupported) {
		var out []Prediction
		for _, g := range spec.Workload.Groups {
			out = append(out, Prediction{Shape: ShapeName(shape), Node: shape, Variant: spec.Variants[vi].Name,
				Group: g.Name, Tasks: int(g.ReplicaCount() * g.TaskCount()), Unsupported: unsupported.Reason})
		}
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	n := Replicas(spec, opts)
	runs, err := runReplicas(in, n, opts.GridPhases[spec.Variants[vi].Name], opts.TimerShifts[spec.Variants[vi].Name])
	if err != nil {
		return nil, fmt.Errorf("simulating variant %q on %s: %w", spec.Variants[vi].Name, ShapeName(shape), err)
	}
	var out []Prediction
	for gi, g := range runs[0].Groups {
		if g.Name == agentParent {
			continue
		}
		samples := make([]*v1alpha1.Metrics, n)
		for i, r := range runs {
			m := FromSim(r.Groups[gi].Metrics)
			samples[i] = &m
		}
		mid, low, high := summarizeReplicas(samples)
		out = append(out, Prediction{
			Shape:    ShapeName(shape),
			Node:     shape,
			Variant:  spec.Variants[vi].Name,
			Group:    g.Name,
			Tasks:    g.Tasks,
			Metrics:  mid,
			Low:      low,
			High:     high,
			Replicas: n,
		})
	}
	return out, nil
}

// FromSim converts the simulator's metrics into the API's vocabulary.
func FromSim(m simengine.Metrics) v1alpha1.Metrics {
	out := v1alpha1.Metrics{
		CPU:        m.CPU,
		CPUPerTask: m.CPUPerTask,
		Share:      m.Share,
		CtxSwitchesPerSec: &v1alpha1.ContextSwitches{
			Voluntary:   m.CtxSwitchesPerSec.Voluntary,
			Involuntary: m.CtxSwitchesPerSec.Involuntary,
		},
	}
	if l := m.WakeupLatencyUs; l != nil {
		out.WakeupLatencyUs = &v1alpha1.LatencySummary{P50: l.P50, P90: l.P90, P99: l.P99, P999: l.P999, Max: l.Max, Mean: l.Mean, Count: l.Count}
		out.LateFraction = &v1alpha1.LateFraction{Over100us: l.Over100us, Over1ms: l.Over1ms, Over10ms: l.Over10ms}
	}
	if m.DeadlineMissRatio != nil {
		out.DeadlineMissRatio = ptr(*m.DeadlineMissRatio)
	}
	if m.OpsPerSec != nil {
		out.OpsPerSec = ptr(*m.OpsPerSec)
	}
	if l := m.RequestLatencyUs; l != nil {
		out.RequestLatencyUs = &v1alpha1.LatencySummary{P50: l.P50, P90: l.P90, P95: l.P95, P99: l.P99, P999: l.P999, Max: l.Max, Mean: l.Mean, Count: l.Count}
	}
	if m.Offered != nil {
		out.Offered = ptr(*m.Offered)
	}
	if m.Throughput != nil {
		out.Throughput = ptr(*m.Throughput)
	}
	if m.Dropped != nil {
		out.Dropped = ptr(*m.Dropped)
	}
	return out
}

// ParseScheduler accepts eevdf/cfs in any case.
func ParseScheduler(s string) (v1alpha1.SchedulerFamily, error) {
	switch strings.ToUpper(s) {
	case "EEVDF":
		return v1alpha1.SchedulerEEVDF, nil
	case "CFS":
		return v1alpha1.SchedulerCFS, nil
	}
	return "", fmt.Errorf("scheduler %q: use eevdf or cfs", s)
}

// ParsePreempt accepts none/voluntary/full/lazy in any case.
func ParsePreempt(s string) (v1alpha1.PreemptModel, error) {
	for _, p := range []v1alpha1.PreemptModel{v1alpha1.PreemptNone, v1alpha1.PreemptVoluntary, v1alpha1.PreemptFull, v1alpha1.PreemptLazy} {
		if strings.EqualFold(s, string(p)) {
			return p, nil
		}
	}
	return "", fmt.Errorf("preempt %q: use none, voluntary, full or lazy", s)
}

func durNs(d *metav1.Duration) int64 {
	if d == nil {
		return 0
	}
	return d.Nanoseconds()
}

// migrationCostNs maps the knob to the simulator's convention: unset is
// the kernel default (0), an explicit zero is MigrationCostZero.
func migrationCostNs(d *metav1.Duration) int64 {
	if d != nil && d.Duration == 0 {
		return simengine.MigrationCostZero
	}
	return durNs(d)
}

// timerSlackNs maps the API's timerSlack to the simulator's: unset is the
// default (0), and an explicit zero is the 1 ns the worker sets (prctl
// reads 0 as "back to the default").
func timerSlackNs(d *metav1.Duration) int64 {
	if d == nil {
		return 0
	}
	return max(d.Nanoseconds(), 1)
}

// SimConstants converts a shape's constants (nil: all defaults) for the
// simulator, where 0 also means the default.
func SimConstants(c *v1alpha1.NodeConstants) simengine.Constants {
	if c == nil {
		return simengine.Constants{}
	}
	return simengine.Constants{TimerExpiryNs: c.TimerExpiryNs, WakeupNs: c.WakeupNs, IdleExitNs: c.IdleExitNs,
		CtxSwitchNs: c.CtxSwitchNs, WakeupCPUNs: c.WakeupCPUNs, TimerArmCPUNs: c.TimerArmCPUNs, ColdWakeNs: c.ColdWakeNs,
		ProcessSwitchNs:        c.ProcessSwitchNs,
		TimerExpiryQuantilesNs: c.TimerExpiryQuantilesNs, WakeupQuantilesNs: c.WakeupQuantilesNs,
		IdleExitQuantilesNs: c.IdleExitQuantilesNs, CtxSwitchQuantilesNs: c.CtxSwitchQuantilesNs,
		HostPausesPerHour: c.HostPausesPerHour, HostPauseQuantilesNs: c.HostPauseQuantilesNs,
		VCPUStallsPerHour: c.VCPUStallsPerHour, VCPUStallQuantilesNs: c.VCPUStallQuantilesNs,
		VCPUShortStallsPerHour: c.VCPUShortStallsPerHour, VCPUShortStallQuantilesNs: c.VCPUShortStallQuantilesNs}
}

// wakeupGranularityNs maps an explicit zero, which the simulator would read
// as "the default", to 1 ns: a granularity no wakeup can fall short of,
// so the same as the kernel's zero.
func wakeupGranularityNs(d *metav1.Duration) int64 {
	if d != nil && d.Duration == 0 {
		return 1
	}
	return durNs(d)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// WithNodeCalibration is the shape and options a prediction for one node
// uses once the node's calibration window (NodeRun status.calibration) is
// known: its measured constants replace the defaults, and a constant the
// shape sets stays (the user's word wins over the window's, for every
// constant alike: see userConstants), and its background load is the
// simulator's unless a fleet calibration for the shape already sets one (a
// fleet calibration's overheads still add on top). nil leaves both as they
// are.
func WithNodeCalibration(shape v1alpha1.NodeShape, cal *v1alpha1.NodeCalibration, opts PredictOptions) (v1alpha1.NodeShape, PredictOptions) {
	if cal == nil {
		return shape, opts
	}
	c := cal.Constants
	if shape.Constants != nil {
		c = userConstants(c, *shape.Constants)
	}
	shape.Constants = &c
	name := ShapeName(shape)
	m := make(map[string]simengine.Calibration, len(opts.Calibration)+1)
	for k, v := range opts.Calibration {
		m[k] = v
	}
	fc := m[name]
	if fc.BackgroundLoad == 0 {
		fc.BackgroundLoad = min(max(cal.BackgroundLoad, 0), 0.95)
	}
	m[name] = fc
	opts.Calibration = m
	return shape, opts
}

// userConstants is the node's measured constants with every constant the
// user's shape sets put in their place. A figure and its quantiles go
// together: the simulator draws from the quantiles when they are there, so
// a user's timerExpiryNs beside the window's timer quantiles would be
// ignored; the user setting either one takes both from the user.
func userConstants(measured, user v1alpha1.NodeConstants) v1alpha1.NodeConstants {
	c := measured
	pair := func(dst *int64, dstQ *[]int64, v int64, q []int64) {
		if v != 0 || len(q) > 0 {
			*dst, *dstQ = v, q
		}
	}
	pair(&c.TimerExpiryNs, &c.TimerExpiryQuantilesNs, user.TimerExpiryNs, user.TimerExpiryQuantilesNs)
	pair(&c.WakeupNs, &c.WakeupQuantilesNs, user.WakeupNs, user.WakeupQuantilesNs)
	pair(&c.IdleExitNs, &c.IdleExitQuantilesNs, user.IdleExitNs, user.IdleExitQuantilesNs)
	pair(&c.CtxSwitchNs, &c.CtxSwitchQuantilesNs, user.CtxSwitchNs, user.CtxSwitchQuantilesNs)
	pair(&c.HostPausesPerHour, &c.HostPauseQuantilesNs, user.HostPausesPerHour, user.HostPauseQuantilesNs)
	pair(&c.VCPUStallsPerHour, &c.VCPUStallQuantilesNs, user.VCPUStallsPerHour, user.VCPUStallQuantilesNs)
	pair(&c.VCPUShortStallsPerHour, &c.VCPUShortStallQuantilesNs, user.VCPUShortStallsPerHour, user.VCPUShortStallQuantilesNs)
	for _, f := range []struct {
		dst *int64
		v   int64
	}{
		{&c.WakeupCPUNs, user.WakeupCPUNs}, {&c.TimerArmCPUNs, user.TimerArmCPUNs}, {&c.ColdWakeNs, user.ColdWakeNs},
		{&c.ProcessSwitchNs, user.ProcessSwitchNs},
	} {
		if f.v != 0 {
			*f.dst = f.v
		}
	}
	return c
}

// WithWindowNoise is cal (nil: a calibration with the default constants)
// with its background load raised to the share of the node's CPUs that
// everything but the workload used in the node's measured windows (the
// mean of their noiseCPU over cpus). That CPU was not the workload's to
// take: a prediction shown next to these measurements predicts what the
// workload gets on the node as it was, so the simulator's tasks progress
// at the rate the others left (Calibration.BackgroundLoad, as IRQ time is
// left out of rq_clock_task). The calibration window's own background load
// (interrupts, soft interrupts and steal) is part of the windows' noise, so
// the larger of the two is kept, not their sum. The CPU of the noise
// threads that ForeignTasks runs as tasks is not counted again: the caller
// passes those tasks (PredictOptions.Foreign) with this calibration. Windows not run
// (unsupported) do not count; without windows or CPUs cal is returned as is.
func WithWindowNoise(cal *v1alpha1.NodeCalibration, windows []v1alpha1.WindowResult, cpus int32) *v1alpha1.NodeCalibration {
	var sum float64
	var n int
	for i := range windows {
		if windows[i].Unsupported == "" && len(windows[i].Groups) > 0 {
			sum += max(windows[i].NoiseCPU-foreignCPU(&windows[i], cpus), 0)
			n++
		}
	}
	if n == 0 || cpus <= 0 {
		return cal
	}
	out := &v1alpha1.NodeCalibration{}
	if cal != nil {
		out = cal.DeepCopy()
	}
	out.BackgroundLoad = min(max(out.BackgroundLoad, sum/float64(n)/float64(cpus)), 0.95)
	return out
}

// MedianCalibration is the element-wise median of the calibration windows
// of several nodes of one shape (nil for none): the shape's prediction
// next to their measurements uses it.
func MedianCalibration(cals []*v1alpha1.NodeCalibration) *v1alpha1.NodeCalibration {
	var cs []*v1alpha1.NodeCalibration
	for _, c := range cals {
		if c != nil {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return nil
	}
	med := func(f func(c *v1alpha1.NodeCalibration) float64) float64 {
		xs := make([]float64, len(cs))
		for i, c := range cs {
			xs[i] = f(c)
		}
		sort.Float64s(xs)
		if n := len(xs); n%2 == 0 {
			return (xs[n/2-1] + xs[n/2]) / 2
		}
		return xs[len(xs)/2]
	}
	// A constant is the median over the nodes that measured it (0 is the
	// default: a node with only a background load has none).
	medNs := func(f func(c *v1alpha1.NodeConstants) int64) int64 {
		var xs []float64
		for _, c := range cs {
			if v := f(&c.Constants); v != 0 {
				xs = append(xs, float64(v))
			}
		}
		if len(xs) == 0 {
			return 0
		}
		sort.Float64s(xs)
		m := xs[len(xs)/2]
		if n := len(xs); n%2 == 0 {
			m = (xs[n/2-1] + xs[n/2]) / 2
		}
		return int64(math.Round(m))
	}
	out := &v1alpha1.NodeCalibration{
		Constants: v1alpha1.NodeConstants{
			TimerExpiryNs:   medNs(func(k *v1alpha1.NodeConstants) int64 { return k.TimerExpiryNs }),
			WakeupNs:        medNs(func(k *v1alpha1.NodeConstants) int64 { return k.WakeupNs }),
			IdleExitNs:      medNs(func(k *v1alpha1.NodeConstants) int64 { return k.IdleExitNs }),
			CtxSwitchNs:     medNs(func(k *v1alpha1.NodeConstants) int64 { return k.CtxSwitchNs }),
			WakeupCPUNs:     medNs(func(k *v1alpha1.NodeConstants) int64 { return k.WakeupCPUNs }),
			TimerArmCPUNs:   medNs(func(k *v1alpha1.NodeConstants) int64 { return k.TimerArmCPUNs }),
			ColdWakeNs:      medNs(func(k *v1alpha1.NodeConstants) int64 { return k.ColdWakeNs }),
			ProcessSwitchNs: medNs(func(k *v1alpha1.NodeConstants) int64 { return k.ProcessSwitchNs }),
			// Pauses a node's calibration sets (a user's, e.g. a replay's
			// -host-pauses), over the nodes that set them; the pauses the
			// windows measured are pooled instead (ShapeCalibration).
			HostPausesPerHour: medNs(func(k *v1alpha1.NodeConstants) int64 { return k.HostPausesPerHour }),
			// The same for the stalls of one vCPU (WithWindowStalls).
			VCPUStallsPerHour:      medNs(func(k *v1alpha1.NodeConstants) int64 { return k.VCPUStallsPerHour }),
			VCPUShortStallsPerHour: medNs(func(k *v1alpha1.NodeConstants) int64 { return k.VCPUShortStallsPerHour }),
		},
		TimerLatenessNs: int64(math.Round(med(func(c *v1alpha1.NodeCalibration) float64 { return float64(c.TimerLatenessNs) }))),
		NoiseCPU:        med(func(c *v1alpha1.NodeCalibration) float64 { return c.NoiseCPU }),
		BackgroundLoad:  med(func(c *v1alpha1.NodeCalibration) float64 { return c.BackgroundLoad }),
	}
	// Quantile lists: level by level, the median over the nodes that have one.
	medQ := func(f func(k *v1alpha1.NodeConstants) []int64) []int64 {
		var have []*v1alpha1.NodeCalibration
		for _, c := range cs {
			if len(f(&c.Constants)) == len(simengine.QuantileLevels) {
				have = append(have, c)
			}
		}
		if len(have) == 0 {
			return nil
		}
		q := make([]int64, len(simengine.QuantileLevels))
		xs := make([]float64, len(have))
		for i := range q {
			for j, c := range have {
				xs[j] = float64(f(&c.Constants)[i])
			}
			sort.Float64s(xs)
			m := xs[len(xs)/2]
			if n := len(xs); n%2 == 0 {
				m = (xs[n/2-1] + xs[n/2]) / 2
			}
			q[i] = int64(math.Round(m))
			if i > 0 && q[i] < q[i-1] {
				q[i] = q[i-1]
			}
		}
		return q
	}
	k := &out.Constants
	k.TimerExpiryQuantilesNs = medQ(func(k *v1alpha1.NodeConstants) []int64 { return k.TimerExpiryQuantilesNs })
	k.WakeupQuantilesNs = medQ(func(k *v1alpha1.NodeConstants) []int64 { return k.WakeupQuantilesNs })
	k.IdleExitQuantilesNs = medQ(func(k *v1alpha1.NodeConstants) []int64 { return k.IdleExitQuantilesNs })
	k.CtxSwitchQuantilesNs = medQ(func(k *v1alpha1.NodeConstants) []int64 { return k.CtxSwitchQuantilesNs })
	if k.HostPausesPerHour > 0 {
		k.HostPauseQuantilesNs = medQ(func(k *v1alpha1.NodeConstants) []int64 { return k.HostPauseQuantilesNs })
	}
	if k.VCPUStallsPerHour > 0 {
		k.VCPUStallQuantilesNs = medQ(func(k *v1alpha1.NodeConstants) []int64 { return k.VCPUStallQuantilesNs })
	}
	if k.VCPUShortStallsPerHour > 0 {
		k.VCPUShortStallQuantilesNs = medQ(func(k *v1alpha1.NodeConstants) []int64 { return k.VCPUShortStallQuantilesNs })
	}
	for _, c := range cs {
		out.Samples += c.Samples
	}
	return out
}
