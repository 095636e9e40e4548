package validation

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// ValidateSpec checks a defaulted SchedExperiment spec against the same rules
// as the CRD schema and its CEL rules, so that a manifest that never saw an
// API server (schedlab run, simulate, plan) and an agent that trusts none
// refuse the same input with the same advice. Every problem is reported,
// each with the field to change. fldPath is the spec's path (usually
// field.NewPath("spec")).
func ValidateSpec(s *v1alpha1.SchedExperimentSpec, fldPath *field.Path) field.ErrorList {
	if s == nil {
		return field.ErrorList{field.Required(fldPath, "a SchedExperiment needs a spec")}
	}
	v := &validator{}
	v.spec(s, fldPath)
	return v.errs
}

// ValidateLocalSpec is ValidateSpec for a manifest run on one machine
// (`schedlab run`, `schedlab simulate`, and the agent, whose node is chosen
// already): the rules that say which nodes of a cluster to use do not apply.
// A Measure spec needs no nodeSelector (this machine is the node), and a
// Simulate spec needs neither a nodeSelector nor simulation.nodes (the
// command's flags, or this machine, give the shape).
func ValidateLocalSpec(s *v1alpha1.SchedExperimentSpec, fldPath *field.Path) field.ErrorList {
	if s == nil {
		return field.ErrorList{field.Required(fldPath, "a SchedExperiment needs a spec")}
	}
	v := &validator{local: true}
	v.spec(s, fldPath)
	return v.errs
}

// AsError is nil for an empty list, else one error naming every problem on
// its own line, headed by what was validated.
func AsError(what string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = e.Error()
	}
	return fmt.Errorf("%s:\n  %s", what, strings.Join(lines, "\n  "))
}

var (
	dnsLabel    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	featureName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	cpuQuantity = regexp.MustCompile(`^([0-9]{1,7}m|[0-9]{1,4}(\.[0-9]{1,3})?)$`)
	integer     = regexp.MustCompile(`^-?[0-9]{1,12}$`)
)

type validator struct {
	errs  field.ErrorList
	local bool // see ValidateLocalSpec
}

// addf records an invalid field with an explanation of what to change.
func (v *validator) addf(p *field.Path, format string, args ...any) {
	v.errs = append(v.errs, field.Invalid(p, field.OmitValueType{}, fmt.Sprintf(format, args...)))
}

func (v *validator) durationIn(p *field.Path, d *metav1.Duration, lo, hi time.Duration) {
	if d == nil {
		return
	}
	if d.Duration < lo || d.Duration > hi {
		v.addf(p, "%s is out of range: must be between %s and %s", d.Duration, lo, hi)
	}
}

func (v *validator) spec(s *v1alpha1.SchedExperimentSpec, f *field.Path) {
	switch s.Mode {
	case v1alpha1.ModeMeasure, v1alpha1.ModeSimulate:
	default:
		v.addf(f.Child("mode"), "%q is not a mode: use Measure or Simulate", s.Mode)
	}
	if s.MaxNodes != nil && (*s.MaxNodes < 1 || *s.MaxNodes > v1alpha1.MaxNodes) {
		v.addf(f.Child("maxNodes"), "%d is out of range 1..%d", *s.MaxNodes, v1alpha1.MaxNodes)
	}
	if s.Duration.Duration < 100*time.Millisecond || s.Duration.Duration > time.Hour {
		v.addf(f.Child("duration"), "%s is out of range: duration must be between 100ms and 1h", s.Duration.Duration)
	}
	if s.Warmup != nil {
		if s.Warmup.Duration < 0 || s.Warmup.Duration > 10*time.Minute {
			v.addf(f.Child("warmup"), "%s is out of range: warmup must be between 0 and 10m", s.Warmup.Duration)
		}
		if s.Warmup.Duration >= s.Duration.Duration {
			v.addf(f.Child("warmup"), "warmup must be shorter than duration")
		}
	}
	if s.Repetitions < 1 || s.Repetitions > v1alpha1.MaxRepetitions {
		v.addf(f.Child("repetitions"), "%d is out of range 1..%d", s.Repetitions, v1alpha1.MaxRepetitions)
	}
	if n := len(s.Variants); n < 1 || n > v1alpha1.MaxVariants {
		v.addf(f.Child("variants"), "%d variants: list between 1 and %d", n, v1alpha1.MaxVariants)
	}
	warm := time.Second
	if s.Warmup != nil {
		warm = s.Warmup.Duration
	}
	if total := (warm + s.Duration.Duration).Seconds() * float64(len(s.Variants)) * float64(s.RepetitionCount()); total > 86400 {
		v.addf(f, "(warmup + duration) × variants × repetitions must be at most 24h per node: shorten the duration or run fewer repetitions")
	}
	seen := map[string]bool{}
	for i := range s.Variants {
		vr := &s.Variants[i]
		vf := f.Child("variants").Index(i)
		if !dnsLabel.MatchString(vr.Name) || len(vr.Name) > 40 {
			v.addf(vf.Child("name"), "%q must be a lower-case DNS label of at most 40 characters", vr.Name)
		}
		if seen[vr.Name] {
			v.addf(vf.Child("name"), "variant names must be unique: %q is used twice", vr.Name)
		}
		seen[vr.Name] = true
		v.knobs(vf.Child("knobs"), &vr.Knobs)
	}
	v.workload(&s.Workload, f.Child("workload"))
	for i, o := range s.Objectives {
		of := f.Child("objectives").Index(i)
		if !slices.Contains(v1alpha1.MetricNames, string(o.Metric)) {
			v.addf(of.Child("metric"), "%q is not a metric: use one of %s", o.Metric, strings.Join(v1alpha1.MetricNames, ", "))
		}
		if o.Goal != v1alpha1.Minimize && o.Goal != v1alpha1.Maximize {
			v.addf(of.Child("goal"), "%q: use Minimize or Maximize", o.Goal)
		}
		if !slices.ContainsFunc(s.Workload.Groups, func(g v1alpha1.Group) bool { return g.Name == o.Group }) {
			v.addf(of.Child("group"), "every objective must name a group listed in workload.groups: %q is not one", o.Group)
		}
	}
	hasNodes := s.Simulation != nil && len(s.Simulation.Nodes) > 0
	if !v.local && s.Mode == v1alpha1.ModeMeasure && s.NodeSelector == nil {
		v.addf(f.Child("nodeSelector"), "mode Measure needs a nodeSelector that picks the nodes to run on (or set mode: Simulate)")
	}
	if !v.local && s.Mode == v1alpha1.ModeSimulate && s.NodeSelector == nil && !hasNodes {
		v.addf(f, "mode Simulate needs either a nodeSelector (to predict for the selected nodes' shapes) or simulation.nodes")
	}
	if s.Simulation != nil {
		v.simulation(s.Simulation, f.Child("simulation"))
	}
	v.sweep(s, f)
}

func (v *validator) knobs(f *field.Path, k *v1alpha1.Knobs) {
	switch k.Autogroup {
	case "", v1alpha1.AutogroupEnabled, v1alpha1.AutogroupDisabled:
	default:
		hint := ""
		if k.Autogroup == "true" || k.Autogroup == "false" {
			hint = " (YAML reads On/Off/Yes/No as booleans)"
		}
		v.addf(f.Child("autogroup"), "%q: use Enabled or Disabled%s", k.Autogroup, hint)
	}
	v.durationIn(f.Child("baseSlice"), k.BaseSlice, 100*time.Microsecond, 100*time.Millisecond)
	v.durationIn(f.Child("latency"), k.Latency, 100*time.Microsecond, time.Second)
	v.durationIn(f.Child("minGranularity"), k.MinGranularity, 100*time.Microsecond, 100*time.Millisecond)
	v.durationIn(f.Child("wakeupGranularity"), k.WakeupGranularity, 0, time.Second)
	v.durationIn(f.Child("migrationCost"), k.MigrationCost, 0, 100*time.Millisecond)
	if k.NrMigrate != nil && (*k.NrMigrate < 1 || *k.NrMigrate > 1024) {
		v.addf(f.Child("nrMigrate"), "%d is out of range 1..1024", *k.NrMigrate)
	}
	switch k.TunableScaling {
	case "", v1alpha1.ScalingNone, v1alpha1.ScalingLog, v1alpha1.ScalingLinear:
	default:
		v.addf(f.Child("tunableScaling"), "%q: use None, Log or Linear", k.TunableScaling)
	}
	v.preempt(f.Child("preempt"), k.Preempt)
	v.features(f.Child("features"), k.Features, 64)
	if len(k.Sysctls) > len(v1alpha1.AllowedSysctls) {
		v.addf(f.Child("sysctls"), "at most %d sysctls", len(v1alpha1.AllowedSysctls))
	}
	for _, name := range sortedKeys(k.Sysctls) {
		if !slices.Contains(v1alpha1.AllowedSysctls, name) {
			v.addf(f.Child("sysctls"), "%q is not allowed: sysctls may only name %s", name, strings.Join(v1alpha1.AllowedSysctls, ", "))
			continue
		}
		if !integer.MatchString(string(k.Sysctls[name])) {
			v.addf(f.Child("sysctls").Key(name), "%q: sysctl values must be integers written as strings, such as \"5000\"", k.Sysctls[name])
		}
	}
}

func (v *validator) preempt(f *field.Path, p v1alpha1.PreemptModel) {
	switch p {
	case "", v1alpha1.PreemptNone, v1alpha1.PreemptVoluntary, v1alpha1.PreemptFull, v1alpha1.PreemptLazy:
	default:
		v.addf(f, "%q: use None, Voluntary, Full or Lazy", p)
	}
}

func (v *validator) features(f *field.Path, m map[string]bool, max int) {
	if len(m) > max {
		v.addf(f, "at most %d features", max)
	}
	for _, name := range sortedKeys(m) {
		if len(name) > 40 || !featureName.MatchString(name) {
			v.addf(f, "%q: feature names are the kernel's upper-case names such as PLACE_LAG (^[A-Z][A-Z0-9_]*$, at most 40 characters)", name)
		}
	}
}

func (v *validator) workload(w *v1alpha1.Workload, f *field.Path) {
	gf := f.Child("groups")
	if n := len(w.Groups); n < 1 || n > v1alpha1.MaxGroups {
		v.addf(gf, "%d groups: list between 1 and %d", n, v1alpha1.MaxGroups)
	}
	if n := w.TotalTasks(); n > v1alpha1.MaxTotalTasks {
		v.addf(gf, "the workload may have at most %d tasks in all (the sum of replicas × tasks over the groups); this one has %d", v1alpha1.MaxTotalTasks, n)
	}
	index := map[string]int{}
	for i := range w.Groups {
		g := &w.Groups[i]
		f := gf.Index(i)
		if !dnsLabel.MatchString(g.Name) || len(g.Name) > 40 {
			v.addf(f.Child("name"), "%q must be a lower-case DNS label of at most 40 characters", g.Name)
		}
		if _, dup := index[g.Name]; dup {
			v.addf(f.Child("name"), "group names must be unique: %q is used twice", g.Name)
		} else {
			index[g.Name] = i
		}
		v.group(f, g)
		if g.Parent != "" {
			p, ok := index[g.Parent]
			switch {
			case !ok && slices.ContainsFunc(w.Groups, func(x v1alpha1.Group) bool { return x.Name == g.Parent }):
				v.addf(f.Child("parent"), "a group's parent must be listed before it: move %q above %q", g.Parent, g.Name)
			case !ok:
				v.addf(f.Child("parent"), "parent must name another group of this workload: %q is not one", g.Parent)
			default:
				pg := &w.Groups[p]
				if pg.ReplicaCount() != 1 || pg.Session != "" {
					v.addf(f.Child("parent"), "a parent group must have one replica and no session: %q does not", g.Parent)
				}
				if depth(w, i) > v1alpha1.MaxNestingDepth {
					v.addf(f.Child("parent"), "cgroups may nest at most %d deep", v1alpha1.MaxNestingDepth)
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

func (v *validator) group(f *field.Path, g *v1alpha1.Group) {
	if g.Replicas < 1 || g.Replicas > v1alpha1.MaxTotalTasks {
		v.addf(f.Child("replicas"), "%d is out of range 1..%d", g.Replicas, v1alpha1.MaxTotalTasks)
	}
	tasks := g.TaskCount()
	if tasks < 0 || tasks > v1alpha1.MaxTotalTasks {
		v.addf(f.Child("tasks"), "%d is out of range 0..%d", tasks, v1alpha1.MaxTotalTasks)
	}
	if g.CPUWeight != nil && (*g.CPUWeight < 1 || *g.CPUWeight > 10000) {
		v.addf(f.Child("cpuWeight"), "%d is out of range: cpuWeight is 1..10000 (cgroup v2 semantics, 100 is the default)", *g.CPUWeight)
	}
	if g.CPUMax != "" && !cpuQuantity.MatchString(g.CPUMax) {
		v.addf(f.Child("cpuMax"), "%q: write a CPU quantity such as 500m or 1.5", g.CPUMax)
	} else if g.CPUMax != "" && v1alpha1.CPUMaxCPUs(g.CPUMax) <= 0 {
		v.addf(f.Child("cpuMax"), "%q: the limit must be above zero", g.CPUMax)
	}
	v.durationIn(f.Child("cpuMaxPeriod"), g.CPUMaxPeriod, time.Millisecond, time.Second)
	if g.Nice != nil && (*g.Nice < -20 || *g.Nice > 19) {
		v.addf(f.Child("nice"), "%d is out of range: nice is -20..19", *g.Nice)
	}
	switch g.Policy {
	case "", v1alpha1.PolicyOther, v1alpha1.PolicyBatch, v1alpha1.PolicyIdle:
	default:
		v.addf(f.Child("policy"), "%q: use Other, Batch or Idle", g.Policy)
	}
	v.durationIn(f.Child("slice"), g.Slice, 100*time.Microsecond, 100*time.Millisecond)
	v.durationIn(f.Child("timerSlack"), g.TimerSlack, 0, 100*time.Millisecond)
	if g.Session != "" {
		if !dnsLabel.MatchString(g.Session) || len(g.Session) > 40 {
			v.addf(f.Child("session"), "%q must be a lower-case DNS label of at most 40 characters", g.Session)
		}
		if (g.CPUWeight != nil && *g.CPUWeight != 100) || g.CPUMax != "" || g.CPUIdle != nil {
			v.addf(f, "session runs the group's tasks outside any cgroup, so cpuWeight, cpuMax and cpuIdle cannot apply: remove them or remove session")
		}
		if g.Parent != "" {
			v.addf(f, "a group with session runs outside any cgroup and cannot have a parent")
		}
		if g.ReplicaCount() != 1 {
			v.addf(f.Child("replicas"), "a group with session is one session: set replicas to 1 (use another group for another session)")
		}
	}
	if g.Pattern == nil {
		if tasks > 0 {
			v.addf(f.Child("pattern"), "a group with tasks needs a pattern (Hog, Periodic, LatencyProbe, PingPong or Burst)")
		}
		return
	}
	v.pattern(f.Child("pattern"), g.Pattern, tasks)
}

func (v *validator) pattern(f *field.Path, p *v1alpha1.Pattern, tasks int32) {
	v.durationIn(f.Child("run"), p.Run, time.Microsecond, time.Second)
	v.durationIn(f.Child("period"), p.Period, 100*time.Microsecond, 10*time.Second)
	v.durationIn(f.Child("interval"), p.Interval, 50*time.Microsecond, time.Second)
	v.durationIn(f.Child("meanRun"), p.MeanRun, 10*time.Microsecond, 10*time.Second)
	v.durationIn(f.Child("meanSleep"), p.MeanSleep, 10*time.Microsecond, 10*time.Second)
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
	default:
		v.addf(f.Child("type"), "%q: use Hog, Periodic, LatencyProbe, PingPong or Burst", p.Type)
	}
}

func (v *validator) simulation(s *v1alpha1.Simulation, f *field.Path) {
	if s.Seed < 0 {
		v.addf(f.Child("seed"), "must not be negative")
	}
	if len(s.Nodes) > 8 {
		v.addf(f.Child("nodes"), "at most 8 node shapes")
	}
	for i, n := range s.Nodes {
		nf := f.Child("nodes").Index(i)
		if n.CPUs < 1 || n.CPUs > 1024 {
			v.addf(nf.Child("cpus"), "%d is out of range 1..1024", n.CPUs)
		}
		switch n.Scheduler {
		case "", v1alpha1.SchedulerEEVDF, v1alpha1.SchedulerCFS:
		default:
			v.addf(nf.Child("scheduler"), "%q: use EEVDF or CFS", n.Scheduler)
		}
		switch n.HZ {
		case 0, 100, 250, 300, 1000:
		default:
			v.addf(nf.Child("hz"), "%d: use 100, 250, 300 or 1000", n.HZ)
		}
		v.preempt(nf.Child("preempt"), n.Preempt)
		if n.Count != nil && (*n.Count < 1 || *n.Count > 100000) {
			v.addf(nf.Child("count"), "%d is out of range 1..100000", *n.Count)
		}
	}
	v.features(f.Child("features"), s.Features, 16)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
