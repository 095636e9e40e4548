package experiment

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// Validate checks a defaulted spec against the same rules as the CRD schema
// and its CEL rules, so that a manifest that never saw an API server (and an
// agent that trusts none) refuses the same input with the same advice. All
// problems are reported at once, each with the field to change.
func Validate(s *v1alpha1.SchedExperimentSpec) error {
	v := &validator{}
	v.spec(s)
	return v.err()
}

// ValidateLocal is Validate for a manifest run on this machine (`schedlab
// run`, `schedlab simulate`): the rules that say which nodes of a cluster
// to use do not apply. A Measure manifest needs no nodeSelector (this
// machine is the node), and a Simulate manifest needs neither a
// nodeSelector nor simulation.nodes (the command's flags, or this
// machine, give the shape).
func ValidateLocal(s *v1alpha1.SchedExperimentSpec) error {
	v := &validator{local: true}
	v.spec(s)
	return v.err()
}

var (
	dnsLabel    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	featureName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	cpuQuantity = regexp.MustCompile(`^([0-9]{1,7}m|[0-9]{1,4}(\.[0-9]{1,3})?)$`)
	integer     = regexp.MustCompile(`^-?[0-9]{1,12}$`)
)

type validator struct {
	errs  []string
	local bool // see ValidateLocal
}

func (v *validator) addf(field, format string, args ...any) {
	v.errs = append(v.errs, field+": "+fmt.Sprintf(format, args...))
}

func (v *validator) err() error {
	if len(v.errs) == 0 {
		return nil
	}
	return errors.New("invalid SchedExperiment:\n  " + strings.Join(v.errs, "\n  "))
}

func (v *validator) durationIn(field string, d *metav1.Duration, lo, hi time.Duration) {
	if d == nil {
		return
	}
	if d.Duration < lo || d.Duration > hi {
		v.addf(field, "%s is out of range: must be between %s and %s", d.Duration, lo, hi)
	}
}

func (v *validator) spec(s *v1alpha1.SchedExperimentSpec) {
	switch s.Mode {
	case v1alpha1.ModeMeasure, v1alpha1.ModeSimulate:
	default:
		v.addf("spec.mode", "%q is not a mode: use Measure or Simulate", s.Mode)
	}
	if s.MaxNodes != nil && (*s.MaxNodes < 1 || *s.MaxNodes > v1alpha1.MaxNodes) {
		v.addf("spec.maxNodes", "%d is out of range 1..%d", *s.MaxNodes, v1alpha1.MaxNodes)
	}
	if s.Duration.Duration < 100*time.Millisecond || s.Duration.Duration > time.Hour {
		v.addf("spec.duration", "%s is out of range: duration must be between 100ms and 1h", s.Duration.Duration)
	}
	if s.Warmup != nil {
		if s.Warmup.Duration < 0 || s.Warmup.Duration > 10*time.Minute {
			v.addf("spec.warmup", "%s is out of range: warmup must be between 0 and 10m", s.Warmup.Duration)
		}
		if s.Warmup.Duration >= s.Duration.Duration {
			v.addf("spec.warmup", "warmup must be shorter than duration")
		}
	}
	if s.Repetitions < 1 || s.Repetitions > v1alpha1.MaxRepetitions {
		v.addf("spec.repetitions", "%d is out of range 1..%d", s.Repetitions, v1alpha1.MaxRepetitions)
	}
	if n := len(s.Variants); n < 1 || n > v1alpha1.MaxVariants {
		v.addf("spec.variants", "%d variants: list between 1 and %d", n, v1alpha1.MaxVariants)
	}
	warm := time.Second
	if s.Warmup != nil {
		warm = s.Warmup.Duration
	}
	if total := (warm + s.Duration.Duration).Seconds() * float64(len(s.Variants)) * float64(s.RepetitionCount()); total > 86400 {
		v.addf("spec", "(warmup + duration) × variants × repetitions must be at most 24h per node: shorten the duration or run fewer repetitions")
	}
	seen := map[string]bool{}
	for i := range s.Variants {
		vr := &s.Variants[i]
		f := fmt.Sprintf("spec.variants[%d]", i)
		if !dnsLabel.MatchString(vr.Name) || len(vr.Name) > 40 {
			v.addf(f+".name", "%q must be a lower-case DNS label of at most 40 characters", vr.Name)
		}
		if seen[vr.Name] {
			v.addf(f+".name", "variant names must be unique: %q is used twice", vr.Name)
		}
		seen[vr.Name] = true
		v.knobs(f+".knobs", &vr.Knobs)
	}
	v.workload(&s.Workload)
	for i, o := range s.Objectives {
		f := fmt.Sprintf("spec.objectives[%d]", i)
		if !slices.Contains(MetricNames, string(o.Metric)) {
			v.addf(f+".metric", "%q is not a metric: use one of %s", o.Metric, strings.Join(MetricNames, ", "))
		}
		if o.Goal != v1alpha1.Minimize && o.Goal != v1alpha1.Maximize {
			v.addf(f+".goal", "%q: use Minimize or Maximize", o.Goal)
		}
		if !slices.ContainsFunc(s.Workload.Groups, func(g v1alpha1.Group) bool { return g.Name == o.Group }) {
			v.addf(f+".group", "every objective must name a group listed in workload.groups: %q is not one", o.Group)
		}
	}
	hasNodes := s.Simulation != nil && len(s.Simulation.Nodes) > 0
	if !v.local && s.Mode == v1alpha1.ModeMeasure && s.NodeSelector == nil {
		v.addf("spec.nodeSelector", "mode Measure needs a nodeSelector that picks the nodes to run on (or set mode: Simulate)")
	}
	if !v.local && s.Mode == v1alpha1.ModeSimulate && s.NodeSelector == nil && !hasNodes {
		v.addf("spec", "mode Simulate needs either a nodeSelector (to predict for the selected nodes' shapes) or simulation.nodes")
	}
	if s.Simulation != nil {
		v.simulation(s.Simulation)
	}
	v.sweep(s)
}

func (v *validator) knobs(f string, k *v1alpha1.Knobs) {
	switch k.Autogroup {
	case "", v1alpha1.AutogroupEnabled, v1alpha1.AutogroupDisabled:
	default:
		hint := ""
		if k.Autogroup == "true" || k.Autogroup == "false" {
			hint = " (YAML reads On/Off/Yes/No as booleans)"
		}
		v.addf(f+".autogroup", "%q: use Enabled or Disabled%s", k.Autogroup, hint)
	}
	v.durationIn(f+".baseSlice", k.BaseSlice, 100*time.Microsecond, 100*time.Millisecond)
	v.durationIn(f+".latency", k.Latency, 100*time.Microsecond, time.Second)
	v.durationIn(f+".minGranularity", k.MinGranularity, 100*time.Microsecond, 100*time.Millisecond)
	v.durationIn(f+".wakeupGranularity", k.WakeupGranularity, 0, time.Second)
	v.durationIn(f+".migrationCost", k.MigrationCost, 0, 100*time.Millisecond)
	if k.NrMigrate != nil && (*k.NrMigrate < 1 || *k.NrMigrate > 1024) {
		v.addf(f+".nrMigrate", "%d is out of range 1..1024", *k.NrMigrate)
	}
	switch k.TunableScaling {
	case "", v1alpha1.ScalingNone, v1alpha1.ScalingLog, v1alpha1.ScalingLinear:
	default:
		v.addf(f+".tunableScaling", "%q: use None, Log or Linear", k.TunableScaling)
	}
	v.preempt(f+".preempt", k.Preempt)
	v.features(f+".features", k.Features, 64)
	if len(k.Sysctls) > len(v1alpha1.AllowedSysctls) {
		v.addf(f+".sysctls", "at most %d sysctls", len(v1alpha1.AllowedSysctls))
	}
	for _, name := range sortedKeys(k.Sysctls) {
		if !slices.Contains(v1alpha1.AllowedSysctls, name) {
			v.addf(f+".sysctls", "%q is not allowed: sysctls may only name %s", name, strings.Join(v1alpha1.AllowedSysctls, ", "))
			continue
		}
		if !integer.MatchString(string(k.Sysctls[name])) {
			v.addf(f+".sysctls["+name+"]", "%q: sysctl values must be integers written as strings, such as \"5000\"", k.Sysctls[name])
		}
	}
}

func (v *validator) preempt(f string, p v1alpha1.PreemptModel) {
	switch p {
	case "", v1alpha1.PreemptNone, v1alpha1.PreemptVoluntary, v1alpha1.PreemptFull, v1alpha1.PreemptLazy:
	default:
		v.addf(f, "%q: use None, Voluntary, Full or Lazy", p)
	}
}

func (v *validator) features(f string, m map[string]bool, max int) {
	if len(m) > max {
		v.addf(f, "at most %d features", max)
	}
	for _, name := range sortedKeys(m) {
		if len(name) > 40 || !featureName.MatchString(name) {
			v.addf(f, "%q: feature names are the kernel's upper-case names such as PLACE_LAG (^[A-Z][A-Z0-9_]*$, at most 40 characters)", name)
		}
	}
}

func (v *validator) workload(w *v1alpha1.Workload) {
	if n := len(w.Groups); n < 1 || n > v1alpha1.MaxGroups {
		v.addf("spec.workload.groups", "%d groups: list between 1 and %d", n, v1alpha1.MaxGroups)
	}
	if n := w.TotalTasks(); n > v1alpha1.MaxTotalTasks {
		v.addf("spec.workload.groups", "the workload may have at most %d tasks in all (the sum of replicas × tasks over the groups); this one has %d", v1alpha1.MaxTotalTasks, n)
	}
	index := map[string]int{}
	for i := range w.Groups {
		g := &w.Groups[i]
		f := fmt.Sprintf("spec.workload.groups[%d]", i)
		if !dnsLabel.MatchString(g.Name) || len(g.Name) > 40 {
			v.addf(f+".name", "%q must be a lower-case DNS label of at most 40 characters", g.Name)
		}
		if _, dup := index[g.Name]; dup {
			v.addf(f+".name", "group names must be unique: %q is used twice", g.Name)
		} else {
			index[g.Name] = i
		}
		v.group(f, g)
		if g.Parent != "" {
			p, ok := index[g.Parent]
			switch {
			case !ok && slices.ContainsFunc(w.Groups, func(x v1alpha1.Group) bool { return x.Name == g.Parent }):
				v.addf(f+".parent", "a group's parent must be listed before it: move %q above %q", g.Parent, g.Name)
			case !ok:
				v.addf(f+".parent", "parent must name another group of this workload: %q is not one", g.Parent)
			default:
				pg := &w.Groups[p]
				if pg.ReplicaCount() != 1 || pg.Session != "" {
					v.addf(f+".parent", "a parent group must have one replica and no session: %q does not", g.Parent)
				}
				if depth(w, i) > v1alpha1.MaxNestingDepth {
					v.addf(f+".parent", "cgroups may nest at most %d deep", v1alpha1.MaxNestingDepth)
				}
			}
		}
	}
}

// depth is the nesting depth of group i: 1 for a group without a parent.
func depth(w *v1alpha1.Workload, i int) int {
	d := 1
	for name := w.Groups[i].Parent; name != "" && d <= len(w.Groups); d++ {
		j := slices.IndexFunc(w.Groups, func(g v1alpha1.Group) bool { return g.Name == name })
		if j < 0 {
			break
		}
		name = w.Groups[j].Parent
	}
	return d
}

func (v *validator) group(f string, g *v1alpha1.Group) {
	if g.Replicas < 1 || g.Replicas > v1alpha1.MaxTotalTasks {
		v.addf(f+".replicas", "%d is out of range 1..%d", g.Replicas, v1alpha1.MaxTotalTasks)
	}
	tasks := g.TaskCount()
	if tasks < 0 || tasks > v1alpha1.MaxTotalTasks {
		v.addf(f+".tasks", "%d is out of range 0..%d", tasks, v1alpha1.MaxTotalTasks)
	}
	if g.CPUWeight != nil && (*g.CPUWeight < 1 || *g.CPUWeight > 10000) {
		v.addf(f+".cpuWeight", "%d is out of range: cpuWeight is 1..10000 (cgroup v2 semantics, 100 is the default)", *g.CPUWeight)
	}
	if g.CPUMax != "" && !cpuQuantity.MatchString(g.CPUMax) {
		v.addf(f+".cpuMax", "%q: write a CPU quantity such as 500m or 1.5", g.CPUMax)
	} else if g.CPUMax != "" && CPUMaxCPUs(g.CPUMax) <= 0 {
		v.addf(f+".cpuMax", "%q: the limit must be above zero", g.CPUMax)
	}
	v.durationIn(f+".cpuMaxPeriod", g.CPUMaxPeriod, time.Millisecond, time.Second)
	if g.Nice != nil && (*g.Nice < -20 || *g.Nice > 19) {
		v.addf(f+".nice", "%d is out of range: nice is -20..19", *g.Nice)
	}
	switch g.Policy {
	case "", v1alpha1.PolicyOther, v1alpha1.PolicyBatch, v1alpha1.PolicyIdle:
	default:
		v.addf(f+".policy", "%q: use Other, Batch or Idle", g.Policy)
	}
	v.durationIn(f+".slice", g.Slice, 100*time.Microsecond, 100*time.Millisecond)
	v.durationIn(f+".timerSlack", g.TimerSlack, 0, 100*time.Millisecond)
	if g.Session != "" {
		if !dnsLabel.MatchString(g.Session) || len(g.Session) > 40 {
			v.addf(f+".session", "%q must be a lower-case DNS label of at most 40 characters", g.Session)
		}
		if (g.CPUWeight != nil && *g.CPUWeight != 100) || g.CPUMax != "" || g.CPUIdle != nil {
			v.addf(f, "session runs the group's tasks outside any cgroup, so cpuWeight, cpuMax and cpuIdle cannot apply: remove them or remove session")
		}
		if g.Parent != "" {
			v.addf(f, "a group with session runs outside any cgroup and cannot have a parent")
		}
		if g.ReplicaCount() != 1 {
			v.addf(f+".replicas", "a group with session is one session: set replicas to 1 (use another group for another session)")
		}
	}
	if g.Pattern == nil {
		if tasks > 0 {
			v.addf(f+".pattern", "a group with tasks needs a pattern (Hog, Periodic, LatencyProbe, PingPong, Burst or Server)")
		}
		return
	}
	v.pattern(f+".pattern", g.Pattern, tasks)
}

func (v *validator) pattern(f string, p *v1alpha1.Pattern, tasks int32) {
	v.durationIn(f+".run", p.Run, time.Microsecond, time.Second)
	v.durationIn(f+".period", p.Period, 100*time.Microsecond, 10*time.Second)
	v.durationIn(f+".interval", p.Interval, 50*time.Microsecond, time.Second)
	v.durationIn(f+".meanRun", p.MeanRun, 10*time.Microsecond, 10*time.Second)
	v.durationIn(f+".meanSleep", p.MeanSleep, 10*time.Microsecond, 10*time.Second)
	switch p.Type {
	case v1alpha1.PatternHog:
	case v1alpha1.PatternPeriodic:
		if p.Run == nil || p.Period == nil {
			v.addf(f, "a Periodic pattern needs run and period")
		} else if p.Run.Duration >= p.Period.Duration {
			v.addf(f, "a Periodic pattern's run must be shorter than its period")
		}
	case v1alpha1.PatternLatencyProbe:
		if p.Interval == nil {
			v.addf(f, "a LatencyProbe pattern needs interval")
		}
	case v1alpha1.PatternPingPong:
		if tasks%2 != 0 {
			v.addf(f, "PingPong runs tasks in pairs: tasks must be even")
		}
	case v1alpha1.PatternBurst:
		if p.MeanRun == nil || p.MeanSleep == nil {
			v.addf(f, "a Burst pattern needs meanRun and meanSleep")
		}
	case v1alpha1.PatternServer:
	default:
		v.addf(f+".type", "%q: use Hog, Periodic, LatencyProbe, PingPong, Burst or Server", p.Type)
	}
	for _, e := range p.ServerErrors(tasks) {
		v.addf(f+e.Field, "%s", e.Msg)
	}
}

func (v *validator) simulation(s *v1alpha1.Simulation) {
	if s.Seed < 0 {
		v.addf("spec.simulation.seed", "must not be negative")
	}
	if len(s.Nodes) > 8 {
		v.addf("spec.simulation.nodes", "at most 8 node shapes")
	}
	for i, n := range s.Nodes {
		f := fmt.Sprintf("spec.simulation.nodes[%d]", i)
		if n.CPUs < 1 || n.CPUs > 1024 {
			v.addf(f+".cpus", "%d is out of range 1..1024", n.CPUs)
		}
		switch n.Scheduler {
		case "", v1alpha1.SchedulerEEVDF, v1alpha1.SchedulerCFS:
		default:
			v.addf(f+".scheduler", "%q: use EEVDF or CFS", n.Scheduler)
		}
		switch n.HZ {
		case 0, 100, 250, 300, 1000:
		default:
			v.addf(f+".hz", "%d: use 100, 250, 300 or 1000", n.HZ)
		}
		v.preempt(f+".preempt", n.Preempt)
		if n.Count != nil && (*n.Count < 1 || *n.Count > 100000) {
			v.addf(f+".count", "%d is out of range 1..100000", *n.Count)
		}
	}
	v.features("spec.simulation.features", s.Features, 16)
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
