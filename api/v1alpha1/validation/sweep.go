package validation

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// sweepBounds are the values each sweep target accepts, as in the CRD's
// CEL rule. Durations are in microseconds. WakeupGranularity and
// MigrationCost start at 1us: the simulator reads 0 as "the default".
var sweepBounds = map[v1alpha1.SweepTarget][2]int64{
	v1alpha1.SweepReplicas:          {1, 512},
	v1alpha1.SweepTasks:             {1, 512},
	v1alpha1.SweepCPUWeight:         {1, 10000},
	v1alpha1.SweepRate:              {1, v1alpha1.MaxServerRate},
	v1alpha1.SweepCPUs:              {1, 1024},
	v1alpha1.SweepNrMigrate:         {1, 1024},
	v1alpha1.SweepBaseSlice:         {100, 100000},
	v1alpha1.SweepMinGranularity:    {100, 100000},
	v1alpha1.SweepLatency:           {100, 1000000},
	v1alpha1.SweepWakeupGranularity: {1, 1000000},
	v1alpha1.SweepMigrationCost:     {1, 100000},
}

// sweep checks spec.sweep and spec.constraints as the CRD's schema and CEL
// rules do, plus what CEL cannot check cheaply: the tasks at the grid's
// largest corner, PingPong pairs, and the patterns constraints need.
func (v *validator) sweep(s *v1alpha1.SchedExperimentSpec, root *field.Path) {
	groups := map[string]*v1alpha1.Group{}
	isParent := map[string]bool{}
	for i := range s.Workload.Groups {
		g := &s.Workload.Groups[i]
		groups[g.Name] = g
		if g.Parent != "" {
			isParent[g.Parent] = true
		}
	}
	if len(s.Constraints) > 0 && s.Sweep == nil {
		v.addf(root.Child("constraints"), "constraints are evaluated over spec.sweep: add a sweep")
	}
	if len(s.Constraints) > 8 {
		v.addf(root.Child("constraints"), "at most 8 constraints")
	}
	for i, c := range s.Constraints {
		f := root.Child("constraints").Index(i)
		if !slices.Contains(v1alpha1.MetricNames, string(c.Metric)) {
			v.errs = append(v.errs, field.NotSupported(f.Child("metric"), string(c.Metric), v1alpha1.MetricNames))
		}
		g, ok := groups[c.Group]
		if !ok {
			v.addf(f.Child("group"), "every constraint must name a group listed in workload.groups: %q is not one", c.Group)
		}
		if c.Max == nil && c.Min == nil {
			v.addf(f, "a constraint needs max or min (or both)")
		}
		if c.Max != nil && c.Min != nil && *c.Min > *c.Max {
			v.addf(f, "a constraint's min must not be above its max")
		}
		if ok {
			pt := v1alpha1.PatternHog
			if g.Pattern != nil {
				pt = g.Pattern.Type
			}
			if strings.HasPrefix(string(c.Metric), "wakeupLatencyUs.") && pt == v1alpha1.PatternHog {
				v.addf(f.Child("metric"), "a wakeupLatencyUs constraint needs a group that sleeps and wakes (not a Hog): %q never sleeps", c.Group)
			}
			if v1alpha1.IsServerMetric(string(c.Metric)) && pt != v1alpha1.PatternServer {
				v.addf(f.Child("metric"), "requestLatencyUs, throughput and dropped apply to Server groups only: %q is %s", c.Group, pt)
			}
			if c.Metric == "deadlineMissRatio" && pt != v1alpha1.PatternPeriodic {
				v.addf(f.Child("metric"), "deadlineMissRatio applies to Periodic groups only: %q is %s", c.Group, pt)
			}
		}
	}
	sw := s.Sweep
	if sw == nil {
		return
	}
	if s.Mode != v1alpha1.ModeSimulate {
		v.addf(root.Child("sweep"), "a sweep runs on the simulator only: set mode: Simulate")
	}
	switch sw.Answer {
	case "", v1alpha1.SweepLargest, v1alpha1.SweepSmallest:
	case v1alpha1.SweepBest:
		if len(s.Objectives) == 0 {
			v.addf(root.Child("sweep", "answer"), "sweep.answer Best picks by spec.objectives: add an objective, or use Largest or Smallest")
		}
	default:
		v.addf(root.Child("sweep", "answer"), "%q: use Largest, Smallest or Best", sw.Answer)
	}
	if n := len(sw.Parameters); n < 1 || n > 2 {
		v.addf(root.Child("sweep", "parameters"), "%d parameters: a sweep has one or two", n)
		return
	}
	for i, p := range sw.Parameters {
		v.sweepParameter(root.Child("sweep", "parameters").Index(i), s, p, groups, isParent)
	}
	if len(sw.Parameters) == 2 {
		a, b := sw.Parameters[0], sw.Parameters[1]
		if a.Target == b.Target && a.Group == b.Group && a.Variant == b.Variant {
			v.addf(root.Child("sweep", "parameters"), "the two sweep parameters must change different things")
		}
	}
	if n := sw.PointCount() * int64(len(s.Variants)); n > v1alpha1.MaxSweepPoints {
		v.addf(root.Child("sweep"), "the sweep has too many points: grid points × variants must be at most %d (widen the step or list fewer values); it has %d", v1alpha1.MaxSweepPoints, n)
	}
	// Tasks at the grid's largest corner, every parameter at its maximum.
	{
		corner := s.DeepCopy()
		for _, p := range sw.Parameters {
			vals := p.Points()
			if len(vals) == 0 || !p.Target.IsGroupTarget() {
				continue
			}
			corner.SetGroupParameter(p, vals[len(vals)-1])
		}
		if n := corner.Workload.TotalTasks(); n > v1alpha1.MaxTotalTasks {
			v.addf(root.Child("sweep"), "at the sweep's largest value the workload would have more than %d tasks (the sum of replicas × tasks over the groups): it would have %d, lower the sweep's upper bound", v1alpha1.MaxTotalTasks, n)
		}
	}
}

func (v *validator) sweepParameter(f *field.Path, s *v1alpha1.SchedExperimentSpec, p v1alpha1.SweepParameter,
	groups map[string]*v1alpha1.Group, isParent map[string]bool) {
	bounds, ok := sweepBounds[p.Target]
	if !ok {
		v.addf(f.Child("target"), "%q: use Replicas, Tasks, CPUWeight, Rate, CPUs, BaseSlice, Latency, MinGranularity, WakeupGranularity, MigrationCost or NrMigrate", p.Target)
		return
	}
	if p.Target.IsGroupTarget() != (p.Group != "") {
		v.addf(f.Child("group"), "Replicas, Tasks, CPUWeight and Rate need group (the workload group they change); other targets take no group")
	}
	g := groups[p.Group]
	if p.Group != "" && g == nil {
		v.addf(f.Child("group"), "a sweep parameter's group must name a group listed in workload.groups: %q is not one", p.Group)
	}
	if p.Variant != "" {
		if p.Target.IsGroupTarget() || p.Target == v1alpha1.SweepCPUs {
			v.addf(f.Child("variant"), "variant applies only to knob targets (BaseSlice, Latency, MinGranularity, WakeupGranularity, MigrationCost, NrMigrate)")
		} else if !slices.ContainsFunc(s.Variants, func(x v1alpha1.Variant) bool { return x.Name == p.Variant }) {
			v.addf(f.Child("variant"), "a sweep parameter's variant must name a variant listed in variants: %q is not one", p.Variant)
		}
	}
	if (p.Range != nil) == (p.Values != nil) {
		v.addf(f, "give a sweep parameter either range or values, not both")
		return
	}
	if r := p.Range; r != nil {
		if r.From > r.To {
			v.addf(f.Child("range"), "range.from must not be above range.to")
		}
		if r.Step < 1 {
			v.addf(f.Child("range", "step"), "%d: step must be at least 1", r.Step)
		}
	}
	if len(p.Values) > v1alpha1.MaxSweepPoints {
		v.addf(f.Child("values"), "at most %d values", v1alpha1.MaxSweepPoints)
	}
	for i := 1; i < len(p.Values); i++ {
		if p.Values[i] <= p.Values[i-1] {
			v.addf(f.Child("values"), "sweep values must be listed in increasing order, each once")
			break
		}
	}
	vals := p.Points()
	if len(vals) > 0 && (vals[0] < bounds[0] || vals[len(vals)-1] > bounds[1]) {
		unit := ""
		if _, isDur := map[v1alpha1.SweepTarget]bool{v1alpha1.SweepBaseSlice: true, v1alpha1.SweepMinGranularity: true,
			v1alpha1.SweepLatency: true, v1alpha1.SweepWakeupGranularity: true, v1alpha1.SweepMigrationCost: true}[p.Target]; isDur {
			unit = " (microseconds)"
		}
		v.addf(f, "sweep values are out of range for the target: %s takes %d..%d%s", p.Target, bounds[0], bounds[1], unit)
	}
	if g == nil {
		return
	}
	if p.Target == v1alpha1.SweepReplicas && (g.Session != "" || isParent[g.Name]) {
		v.addf(f.Child("group"), "%q is a session or a parent group, which has exactly one replica: sweep another group's replicas", g.Name)
	}
	if p.Target == v1alpha1.SweepRate && (g.Pattern == nil || g.Pattern.Type != v1alpha1.PatternServer) {
		v.addf(f.Child("group"), "a Rate sweep parameter's group must be a Server group: %q is not", g.Name)
	}
	if p.Target == v1alpha1.SweepCPUWeight && g.Session != "" {
		v.addf(f.Child("group"), "%q runs in a session outside any cgroup: it has no cpuWeight to sweep", g.Name)
	}
	if p.Target == v1alpha1.SweepTasks && g.Pattern != nil && g.Pattern.Type == v1alpha1.PatternPingPong {
		for _, x := range vals {
			if x%2 != 0 {
				v.addf(f, "PingPong runs tasks in pairs: every swept tasks value must be even (%d is not)", x)
				break
			}
		}
	}
}
