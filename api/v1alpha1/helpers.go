package v1alpha1

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ShapeName is the name of a flat node shape, e.g. "8cpu-EEVDF"; use
// NodeShape.Name for a shape that may have a topology.
func ShapeName(cpus int32, s SchedulerFamily) string {
	if s == "" {
		s = SchedulerEEVDF
	}
	return fmt.Sprintf("%dcpu-%s", cpus, s)
}

// Name is the one name of a node shape. It carries everything of the shape
// that changes a prediction, so two shapes the simulator predicts
// differently never share a name: CPUs and scheduler ("8cpu-EEVDF"), then,
// where they differ from the simulator's defaults, the kernel release
// (major.minor.patch, "k6.18.44"; a shape without one is the reference
// kernel), the tick rate ("hz1000"; 250 is the default), the preemption
// model ("none", "full", "lazy"; Voluntary is the default), the tunable
// scaling ("tsnone", "tslinear"; Log is the default) and a topology that is
// not flat ("2s-2llc-smt2": sockets, LLCs per socket, SMT threads per core).
// E.g. "2cpu-EEVDF-k6.18.44-none" or "32cpu-EEVDF-k6.12.31-hz1000-2s-2llc-smt2".
// Shapes with the same name are simulated alike (their node constants
// aside, which are measured per node and merged per shape).
func (s NodeShape) Name() string {
	parts := []string{ShapeName(s.CPUs, s.Scheduler)}
	if k := kernelRelease(s.Kernel); k != "" {
		parts = append(parts, "k"+k)
	}
	if s.HZ != 0 && s.HZ != 250 {
		parts = append(parts, fmt.Sprintf("hz%d", s.HZ))
	}
	if s.Preempt != "" && s.Preempt != PreemptVoluntary {
		parts = append(parts, strings.ToLower(string(s.Preempt)))
	}
	if s.TunableScaling != "" && s.TunableScaling != ScalingLog {
		parts = append(parts, "ts"+strings.ToLower(string(s.TunableScaling)))
	}
	if !s.Topology.IsFlat() {
		t := s.Topology
		parts = append(parts, fmt.Sprintf("%ds-%dllc-smt%d", t.SocketCount(), t.LLCsPerSocketCount(), t.ThreadsPerCoreCount()))
	}
	return strings.Join(parts, "-")
}

// kernelRelease is the numeric part of a kernel release as the simulator
// reads it ("6.18.44-fc-v1045" → "6.18.44", "6.12" → "6.12.0"): only the
// numbers select its version-dependent rules. "" for none (or one that
// does not start with major.minor).
func kernelRelease(k string) string {
	var nums [3]int
	rest := k
	for i := range nums {
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == 0 || j > 4 {
			if i < 2 {
				return ""
			}
			break
		}
		nums[i], _ = strconv.Atoi(rest[:j])
		rest = rest[j:]
		if i < 2 {
			if !strings.HasPrefix(rest, ".") {
				if i == 0 {
					return ""
				}
				break
			}
			rest = rest[1:]
		}
	}
	return fmt.Sprintf("%d.%d.%d", nums[0], nums[1], nums[2])
}

// ParseShapeName is the inverse of NodeShape.Name: CPUs, scheduler, kernel,
// tick rate, preemption model, tunable scaling and topology from a name
// such as "8cpu-EEVDF" or "32cpu-EEVDF-k6.18.44-hz1000-none-2s-2llc-smt2".
func ParseShapeName(name string) (NodeShape, error) {
	var s NodeShape
	cpus, rest, ok := strings.Cut(name, "cpu-")
	n, err := strconv.Atoi(cpus)
	if !ok || err != nil {
		return s, fmt.Errorf("shape %q is not of the form 8cpu-EEVDF", name)
	}
	s.CPUs = int32(n)
	parts := strings.Split(rest, "-")
	s.Scheduler = SchedulerFamily(parts[0])
	parts = parts[1:]
	for len(parts) > 0 {
		p := parts[0]
		switch {
		case len(p) > 1 && p[0] == 'k' && p[1] >= '0' && p[1] <= '9':
			s.Kernel = p[1:]
		case strings.HasPrefix(p, "hz"):
			hz, err := strconv.Atoi(p[2:])
			if err != nil {
				return s, fmt.Errorf("shape %q: tick rate %q is not of the form hz1000", name, p)
			}
			s.HZ = int32(hz)
		case p == "none" || p == "voluntary" || p == "full" || p == "lazy":
			s.Preempt = PreemptModel(strings.ToUpper(p[:1]) + p[1:])
		case p == "tsnone":
			s.TunableScaling = ScalingNone
		case p == "tslinear":
			s.TunableScaling = ScalingLinear
		default:
			var t NodeTopology
			topo := strings.Join(parts, "-")
			if _, err := fmt.Sscanf(topo, "%ds-%dllc-smt%d", &t.Sockets, &t.LLCsPerSocket, &t.ThreadsPerCore); err != nil || len(parts) != 3 {
				return s, fmt.Errorf("shape %q: %q is not a kernel (k6.18.44), tick rate (hz1000), preemption model, tunable scaling or topology (2s-2llc-smt2)", name, topo)
			}
			s.Topology = &t
			return s, nil
		}
		parts = parts[1:]
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

// MaxCPUID is the highest CPU number a group's cpus may name: the kernel's
// largest NR_CPUS (CONFIG_MAXSMP) less one.
const MaxCPUID = 8191

// ParseCPUList reads a cpulist ("0", "0-3", "0,2,4-7": the format of
// cpuset.cpus and /sys/devices/system/cpu/online) into its CPU numbers,
// ascending and each once. An empty list is nil: every CPU.
func ParseCPUList(s string) ([]int32, error) {
	if s == "" {
		return nil, nil
	}
	seen := map[int32]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseInt(lo, 10, 32)
		if err != nil || lo == "" {
			return nil, fmt.Errorf("%q: %q is not a CPU number; write CPUs as 0-3,8", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseInt(hi, 10, 32); err != nil || hi == "" {
				return nil, fmt.Errorf("%q: %q is not a range of CPUs such as 4-7", s, part)
			}
			if b < a {
				return nil, fmt.Errorf("%q: the range %q runs backwards; write %d-%d", s, part, b, a)
			}
		}
		if b > MaxCPUID {
			return nil, fmt.Errorf("%q: CPU %d is above the largest CPU number a kernel has (%d)", s, b, MaxCPUID)
		}
		for c := int32(a); c <= int32(b); c++ {
			seen[c] = true
		}
	}
	out := make([]int32, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	slices.Sort(out)
	return out, nil
}

// Truncate shortens s to at most n bytes for a status field with a size
// limit (a Condition's message, an Event's note, a NodeRun's texts), ending it with "..." and
// never cutting a UTF-8 character in two (the messages carry µs).
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(0, n-3)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
