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

// ValidateKnobs checks one set of knobs (a variant's, a profile's) by the
// same rules as ValidateSpec.
func ValidateKnobs(k *v1alpha1.Knobs, fldPath *field.Path) field.ErrorList {
	v := &validator{}
	v.knobs(fldPath, k)
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

// durationIn refuses a duration outside lo..hi with the words of the CRD's
// CEL rule ("baseSlice must be between 100us and 100ms").
func (v *validator) durationIn(p *field.Path, d *metav1.Duration, lo, hi time.Duration) {
	if d == nil || (d.Duration >= lo && d.Duration <= hi) {
		return
	}
	name := p.String()
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	if lo == 0 && d.Duration < 0 {
		v.errs = append(v.errs, field.Invalid(p, d.Duration.String(), fmt.Sprintf("%s must not be negative: write a duration from 0 to %s", name, celDuration(hi))))
		return
	}
	if lo == 0 {
		v.errs = append(v.errs, field.Invalid(p, d.Duration.String(), fmt.Sprintf("%s must be at most %s", name, celDuration(hi))))
		return
	}
	v.errs = append(v.errs, field.Invalid(p, d.Duration.String(), fmt.Sprintf("%s must be between %s and %s", name, celDuration(lo), celDuration(hi))))
}

// celDuration writes a bound as the CEL rules do: 100us, 10s, 10m, 1h.
// Only the zero seconds and minutes that time.Duration.String appends to a
// whole minute or hour go ("10m0s" → "10m", "1h0m0s" → "1h"); "10s" stays.
func celDuration(d time.Duration) string {
	s := strings.ReplaceAll(d.String(), "µs", "us")
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// intIn refuses a number outside lo..hi with the words of the schema's
// minimum and maximum.
func (v *validator) intIn(p *field.Path, n, lo, hi int64) {
	switch {
	case n < lo:
		v.errs = append(v.errs, field.Invalid(p, n, fmt.Sprintf("should be greater than or equal to %d", lo)))
	case n > hi:
		v.errs = append(v.errs, field.Invalid(p, n, fmt.Sprintf("should be less than or equal to %d", hi)))
	}
}

// itemsIn refuses a list of n items outside lo..hi as the schema's
// minItems and maxItems do.
func (v *validator) itemsIn(p *field.Path, n, lo, hi int) {
	switch {
	case n < lo:
		v.errs = append(v.errs, field.Invalid(p, n, fmt.Sprintf("should have at least %d items", lo)))
	case n > hi:
		v.errs = append(v.errs, field.TooMany(p, n, hi))
	}
}

// oneOf refuses a value outside an enum as the schema's enum does.
func oneOf[T ~string](v *validator, p *field.Path, val T, allowed ...T) {
	if val == "" || slices.Contains(allowed, val) {
		return
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	v.errs = append(v.errs, field.NotSupported(p, string(val), names))
}

// dnsLabelName refuses a name that is not a lower-case DNS label of at most
// 40 characters, as the schema's pattern and maxLength do.
func (v *validator) dnsLabelName(p *field.Path, name string) {
	switch {
	case len(name) > 40:
		v.errs = append(v.errs, field.TooLong(p, name, 40))
	case !dnsLabel.MatchString(name):
		v.errs = append(v.errs, field.Invalid(p, name, "should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$': a lower-case DNS label"))
	}
}

func (v *validator) spec(s *v1alpha1.SchedExperimentSpec, f *field.Path) {
	if s.Mode == "" {
		v.errs = append(v.errs, field.Required(f.Child("mode"), "use Measure or Simulate"))
	}
	oneOf(v, f.Child("mode"), s.Mode, v1alpha1.ModeMeasure, v1alpha1.ModeSimulate)
	if s.MaxNodes != nil {
		v.intIn(f.Child("maxNodes"), int64(*s.MaxNodes), 1, v1alpha1.MaxNodes)
	}
	v.durationIn(f.Child("duration"), &s.Duration, 100*time.Millisecond, time.Hour)
	if s.Warmup != nil {
		v.durationIn(f.Child("warmup"), s.Warmup, 0, 10*time.Minute)
		if s.Warmup.Duration < 0 {
			v.addf(f.Child("warmup"), "warmup must not be negative")
		}
		if s.Warmup.Duration >= s.Duration.Duration {
			v.addf(f.Child("warmup"), "warmup must be shorter than duration")
		}
	}
	v.intIn(f.Child("repetitions"), int64(s.Repetitions), 1, v1alpha1.MaxRepetitions)
	v.itemsIn(f.Child("variants"), len(s.Variants), 1, v1alpha1.MaxVariants)
	warm := time.Second
	if s.Warmup != nil {
		warm = s.Warmup.Duration
	}
	// Milliseconds of the sum, as the CEL rule computes it, so that the two
	// agree to the last millisecond.
	if total := (warm + s.Duration.Duration).Milliseconds() * int64(len(s.Variants)) * int64(s.RepetitionCount()); total > 86400000 {
		v.addf(f, "(warmup + duration) × variants × repetitions must be at most 24h per node: shorten the duration or run fewer repetitions")
	}
	seen := map[string]bool{}
	for i := range s.Variants {
		vr := &s.Variants[i]
		vf := f.Child("variants").Index(i)
		v.dnsLabelName(vf.Child("name"), vr.Name)
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
			v.errs = append(v.errs, field.NotSupported(of.Child("metric"), string(o.Metric), v1alpha1.MetricNames))
		}
		if o.Goal == "" {
			v.errs = append(v.errs, field.Required(of.Child("goal"), "use Minimize or Maximize"))
		}
		oneOf(v, of.Child("goal"), o.Goal, v1alpha1.Minimize, v1alpha1.Maximize)
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
	oneOf(v, f.Child("autogroup"), k.Autogroup, v1alpha1.AutogroupEnabled, v1alpha1.AutogroupDisabled)
	v.durationIn(f.Child("baseSlice"), k.BaseSlice, 100*time.Microsecond, 100*time.Millisecond)
	v.durationIn(f.Child("latency"), k.Latency, 100*time.Microsecond, time.Second)
	v.durationIn(f.Child("minGranularity"), k.MinGranularity, 100*time.Microsecond, 100*time.Millisecond)
	v.durationIn(f.Child("wakeupGranularity"), k.WakeupGranularity, 0, time.Second)
	v.durationIn(f.Child("migrationCost"), k.MigrationCost, 0, 100*time.Millisecond)
	if k.NrMigrate != nil {
		v.intIn(f.Child("nrMigrate"), int64(*k.NrMigrate), 1, 1024)
	}
	oneOf(v, f.Child("tunableScaling"), k.TunableScaling, v1alpha1.ScalingNone, v1alpha1.ScalingLog, v1alpha1.ScalingLinear)
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
	oneOf(v, f, p, v1alpha1.PreemptNone, v1alpha1.PreemptVoluntary, v1alpha1.PreemptFull, v1alpha1.PreemptLazy)
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
	v.itemsIn(gf, len(w.Groups), 1, v1alpha1.MaxGroups)
	if n := w.TotalTasks(); n > v1alpha1.MaxTotalTasks {
		v.addf(gf, "the workload may have at most %d tasks in all (the sum of replicas × tasks over the groups); this one has %d", v1alpha1.MaxTotalTasks, n)
	}
	index := map[string]int{}
	for i := range w.Groups {
		g := &w.Groups[i]
		f := gf.Index(i)
		v.dnsLabelName(f.Child("name"), g.Name)
		if _, dup := index[g.Name]; dup {
			v.addf(f.Child("name"), "group names must be unique: %q is used twice", g.Name)
		} else {
			index[g.Name] = i
		}
		v.group(f, g)
		if g.Parent != "" {
			p, ok := index[g.Parent]
			switch {
			case g.Parent == g.Name:
				v.addf(f.Child("parent"), "a group's parent must be listed before it: %q names itself; name another group or drop parent", g.Name)
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
	v.intIn(f.Child("replicas"), int64(g.Replicas), 1, v1alpha1.MaxTotalTasks)
	tasks := g.TaskCount()
	v.intIn(f.Child("tasks"), int64(tasks), 0, v1alpha1.MaxTotalTasks)
	if g.CPUWeight != nil {
		v.intIn(f.Child("cpuWeight"), int64(*g.CPUWeight), 1, 10000)
	}
	if g.CPUMax != "" && !cpuQuantity.MatchString(g.CPUMax) {
		v.addf(f.Child("cpuMax"), "%q: write a CPU quantity such as 500m or 1.5", g.CPUMax)
	} else if c := v1alpha1.CPUMaxCPUs(g.CPUMax); g.CPUMax != "" && (c < 0.001 || c > 1024) {
		v.addf(f.Child("cpuMax"), "%q: cpuMax must be between 1m and 1024 CPUs", g.CPUMax)
	}
	v.durationIn(f.Child("cpuMaxPeriod"), g.CPUMaxPeriod, time.Millisecond, time.Second)
	if g.Nice != nil {
		v.intIn(f.Child("nice"), int64(*g.Nice), -20, 19)
	}
	oneOf(v, f.Child("policy"), g.Policy, v1alpha1.PolicyOther, v1alpha1.PolicyBatch, v1alpha1.PolicyIdle)
	v.durationIn(f.Child("slice"), g.Slice, 100*time.Microsecond, 100*time.Millisecond)
	v.durationIn(f.Child("timerSlack"), g.TimerSlack, 0, 100*time.Millisecond)
	if len(g.CPUs) > 256 {
		v.addf(f.Child("cpus"), "%d characters: write at most 256 (ranges such as 0-63 keep it short)", len(g.CPUs))
	} else if _, err := v1alpha1.ParseCPUList(g.CPUs); err != nil {
		v.addf(f.Child("cpus"), "%v", err)
	}
	if g.Session != "" {
		v.dnsLabelName(f.Child("session"), g.Session)
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
			v.addf(f.Child("pattern"), "a group with tasks needs a pattern (Hog, Periodic, LatencyProbe, PingPong, Burst or Server)")
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
	case v1alpha1.PatternServer:
	default:
		v.errs = append(v.errs, field.NotSupported(f.Child("type"), string(p.Type), []string{"Hog", "Periodic", "LatencyProbe", "PingPong", "Burst", "Server"}))
	}
	for _, e := range p.ServerErrors(tasks) {
		ef := f
		for _, name := range strings.Split(strings.TrimPrefix(e.Field, "."), ".") {
			if name != "" {
				ef = ef.Child(name)
			}
		}
		v.addf(ef, "%s", e.Msg)
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
		v.intIn(nf.Child("cpus"), int64(n.CPUs), 1, 1024)
		oneOf(v, nf.Child("scheduler"), n.Scheduler, v1alpha1.SchedulerEEVDF, v1alpha1.SchedulerCFS)
		switch n.HZ {
		case 0, 100, 250, 300, 1000:
		default:
			v.addf(nf.Child("hz"), "%d: use 100, 250, 300 or 1000", n.HZ)
		}
		v.preempt(nf.Child("preempt"), n.Preempt)
		if n.Count != nil {
			v.intIn(nf.Child("count"), int64(*n.Count), 1, 100000)
		}
		v.errs = append(v.errs, ValidateTopology(n.Topology, n.CPUs, nf.Child("topology"))...)
	}
	v.features(f.Child("features"), s.Features, 16)
	if s.Replicas != nil {
		v.intIn(f.Child("replicas"), int64(*s.Replicas), 1, 32)
	}
	if s.Parallelism != nil {
		v.intIn(f.Child("parallelism"), int64(*s.Parallelism), 1, 64)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TopologyMessage is the refusal of a topology that does not divide the
// CPUs, in the words of the CRD's CEL rule on NodeShape.
const TopologyMessage = "topology: cpus must be a multiple of sockets × llcsPerSocket × threadsPerCore (every LLC holds the same whole number of cores)"

// ValidateTopology checks a node shape's topology against its CPUs: each
// count within the schema's bounds (0 means unset, i.e. 1) and cpus a
// multiple of sockets × llcsPerSocket × threadsPerCore, so every LLC holds
// the same whole number of cores. A nil topology is flat and valid.
func ValidateTopology(t *v1alpha1.NodeTopology, cpus int32, f *field.Path) field.ErrorList {
	if t == nil {
		return nil
	}
	v := &validator{}
	for _, c := range []struct {
		name   string
		n, max int32
	}{{"sockets", t.Sockets, 16}, {"llcsPerSocket", t.LLCsPerSocket, 64}, {"threadsPerCore", t.ThreadsPerCore, 8}} {
		if c.n != 0 {
			v.intIn(f.Child(c.name), int64(c.n), 1, int64(c.max))
		}
	}
	if len(v.errs) > 0 {
		return v.errs
	}
	if per := int64(t.SocketCount()) * int64(t.LLCsPerSocketCount()) * int64(t.ThreadsPerCoreCount()); cpus > 0 && int64(cpus)%per != 0 {
		v.addf(f, "%s", TopologyMessage)
	}
	return v.errs
}
