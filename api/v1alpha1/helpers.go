package v1alpha1

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ShapeName is the name of a flat node shape, e.g. "8cpu-EEVDF"; use
// NodeShape.Name for a shape that may have a topology.
func ShapeName(cpus int32, s SchedulerFamily) string {
	if s == "" {
		s = SchedulerEEVDF
	}
	return fmt.Sprintf("%dcpu-%s", cpus, s)
}

// Name is the one name of a node shape: "8cpu-EEVDF" for a flat one,
// "32cpu-EEVDF-2s-2llc-smt2" with a topology (sockets, LLCs per socket,
// SMT threads per core). Shapes with the same name are simulated alike.
func (s NodeShape) Name() string {
	n := ShapeName(s.CPUs, s.Scheduler)
	if s.Topology.IsFlat() {
		return n
	}
	t := s.Topology
	return fmt.Sprintf("%s-%ds-%dllc-smt%d", n, t.SocketCount(), t.LLCsPerSocketCount(), t.ThreadsPerCoreCount())
}

// ParseShapeName is the inverse of NodeShape.Name: CPUs, scheduler and
// topology from "8cpu-EEVDF" or "32cpu-EEVDF-2s-2llc-smt2".
func ParseShapeName(name string) (NodeShape, error) {
	var s NodeShape
	cpus, rest, ok := strings.Cut(name, "cpu-")
	n, err := strconv.Atoi(cpus)
	if !ok || err != nil {
		return s, fmt.Errorf("shape %q is not of the form 8cpu-EEVDF", name)
	}
	s.CPUs = int32(n)
	sched, topo, hasTopo := strings.Cut(rest, "-")
	s.Scheduler = SchedulerFamily(sched)
	if hasTopo {
		var t NodeTopology
		if _, err := fmt.Sscanf(topo, "%ds-%dllc-smt%d", &t.Sockets, &t.LLCsPerSocket, &t.ThreadsPerCore); err != nil {
			return s, fmt.Errorf("shape %q: topology %q is not of the form 2s-2llc-smt2", name, topo)
		}
		s.Topology = &t
	}
	return s, nil
}

// IsFlat reports a topology of one socket, one LLC and no SMT (nil is flat).
func (t *NodeTopology) IsFlat() bool {
	return t == nil || t.SocketCount() == 1 && t.LLCsPerSocketCount() == 1 && t.ThreadsPerCoreCount() == 1
}

// SocketCount is the sockets, 1 when unset.
func (t *NodeTopology) SocketCount() int32 {
	return orOne(t, func(t *NodeTopology) int32 { return t.Sockets })
}

// LLCsPerSocketCount is the LLCs per socket, 1 when unset.
func (t *NodeTopology) LLCsPerSocketCount() int32 {
	return orOne(t, func(t *NodeTopology) int32 { return t.LLCsPerSocket })
}

// ThreadsPerCoreCount is the SMT threads per core, 1 when unset.
func (t *NodeTopology) ThreadsPerCoreCount() int32 {
	return orOne(t, func(t *NodeTopology) int32 { return t.ThreadsPerCore })
}

func orOne(t *NodeTopology, f func(*NodeTopology) int32) int32 {
	if t == nil || f(t) < 1 {
		return 1
	}
	return f(t)
}

// TaskCount is the tasks per replica of the group (its default is 1).
func (g *Group) TaskCount() int32 {
	if g.Tasks == nil {
		return 1
	}
	return *g.Tasks
}

// ReplicaCount is the group's replicas (its default is 1).
func (g *Group) ReplicaCount() int32 {
	if g.Replicas < 1 {
		return 1
	}
	return g.Replicas
}

// TotalTasks is replicas × tasks over all groups.
func (w *Workload) TotalTasks() int {
	n := 0
	for i := range w.Groups {
		n += int(w.Groups[i].ReplicaCount()) * int(w.Groups[i].TaskCount())
	}
	return n
}

// RepetitionCount is the spec's repetitions (its default is 1).
func (s *SchedExperimentSpec) RepetitionCount() int32 {
	if s.Repetitions < 1 {
		return 1
	}
	return s.Repetitions
}

// MetricNames are the metrics objectives, constraints and reports may name.
var MetricNames = []string{
	"cpu", "cpuPerTask", "share",
	"wakeupLatencyUs.p50", "wakeupLatencyUs.p90", "wakeupLatencyUs.p99", "wakeupLatencyUs.p999",
	"wakeupLatencyUs.max", "wakeupLatencyUs.mean",
	"ctxSwitchesPerSec.voluntary", "ctxSwitchesPerSec.involuntary",
	"deadlineMissRatio", "opsPerSec",
	"lateFraction.over100us", "lateFraction.over1ms", "lateFraction.over10ms",
	"requestLatencyUs.p50", "requestLatencyUs.p90", "requestLatencyUs.p95", "requestLatencyUs.p99",
	"requestLatencyUs.p999", "requestLatencyUs.max", "requestLatencyUs.mean",
	"offered", "throughput", "dropped",
}

// IsServerMetric says whether a metric exists only for Server groups.
func IsServerMetric(name string) bool {
	return strings.HasPrefix(name, "requestLatencyUs.") || name == "offered" || name == "throughput" || name == "dropped"
}

// IsGroupTarget says whether a sweep target changes a workload group
// (replicas, tasks, cpuWeight or a Server pattern's rate of the group the
// parameter names).
func (t SweepTarget) IsGroupTarget() bool {
	return t == SweepReplicas || t == SweepTasks || t == SweepCPUWeight || t == SweepRate
}

// Points are the parameter's values (a range from..to by step, or the
// listed values), sorted ascending; at most MaxSweepPoints+1 of a range.
func (p SweepParameter) Points() []int64 {
	var vals []int64
	if p.Range != nil {
		step := p.Range.Step
		if step < 1 {
			step = 1
		}
		for x := p.Range.From; x <= p.Range.To && len(vals) <= MaxSweepPoints; x += step {
			vals = append(vals, x)
		}
		return vals
	}
	vals = append(vals, p.Values...)
	slices.Sort(vals)
	return vals
}

// PointCount is the number of grid points of a sweep, without expanding it
// (1 for no sweep).
func (s *Sweep) PointCount() int64 {
	if s == nil {
		return 1
	}
	n := int64(1)
	for _, p := range s.Parameters {
		switch {
		case p.Range != nil:
			step := p.Range.Step
			if step < 1 {
				step = 1
			}
			if p.Range.To < p.Range.From {
				return 0
			}
			n *= (p.Range.To-p.Range.From)/step + 1
		default:
			n *= int64(len(p.Values))
		}
	}
	return n
}

// SetGroupParameter sets a group-targeted sweep parameter (replicas, tasks
// cpuWeight or a Server pattern's rate of the group it names) to v.
func (s *SchedExperimentSpec) SetGroupParameter(p SweepParameter, v int64) {
	for gi := range s.Workload.Groups {
		g := &s.Workload.Groups[gi]
		if g.Name != p.Group {
			continue
		}
		switch p.Target {
		case SweepReplicas:
			g.Replicas = int32(v)
		case SweepTasks:
			t := int32(v)
			g.Tasks = &t
		case SweepCPUWeight:
			w := int32(v)
			g.CPUWeight = &w
		case SweepRate:
			if g.Pattern != nil {
				g.Pattern = g.Pattern.DeepCopy()
				r := int32(v)
				g.Pattern.Rate = &r
			}
		}
	}
}

// CPUMaxCPUs parses a cpuMax quantity (500m, 1.5) into CPUs; 0 if malformed.
func CPUMaxCPUs(q string) float64 {
	if strings.HasSuffix(q, "m") {
		m, err := strconv.ParseFloat(strings.TrimSuffix(q, "m"), 64)
		if err != nil {
			return 0
		}
		return m / 1000
	}
	c, err := strconv.ParseFloat(q, 64)
	if err != nil {
		return 0
	}
	return c
}
