package host

import (
	"errors"
	"fmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"regexp"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

var (
	dnsLabel   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	integerStr = regexp.MustCompile(`^-?[0-9]{1,12}$`)
)

// maxDuration is v1alpha1.MaxDuration parsed.
var maxDuration = func() time.Duration {
	d, err := time.ParseDuration(v1alpha1.MaxDuration)
	if err != nil {
		panic(err)
	}
	return d
}()

// Validate checks a spec again before the agent touches anything: the agent
// never trusts the API server to have validated. It enforces the same bounds
// as the CRD schema and its CEL rules and returns one error listing every
// problem, each saying what to change.
func Validate(spec *v1alpha1.SchedExperimentSpec) error {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	if spec == nil {
		return errors.New("invalid experiment: no spec")
	}

	dur := spec.Duration.Duration
	if dur < 100*time.Millisecond || dur > maxDuration {
		add("duration %s: must be between 100ms and %s", dur, v1alpha1.MaxDuration)
	}
	warm := time.Second
	if spec.Warmup != nil {
		warm = spec.Warmup.Duration
		if warm < 0 || warm > 10*time.Minute {
			add("warmup %s: must be between 0 and 10m", warm)
		}
		if warm >= dur {
			add("warmup %s: must be shorter than duration %s", warm, dur)
		}
	}
	if spec.Repetitions < 0 || spec.Repetitions > v1alpha1.MaxRepetitions {
		add("repetitions %d: must be between 1 and %d", spec.Repetitions, v1alpha1.MaxRepetitions)
	}
	if n := len(spec.Variants); n < 1 || n > v1alpha1.MaxVariants {
		add("variants: %d listed, must be between 1 and %d", n, v1alpha1.MaxVariants)
	}
	if total := (warm + dur) * time.Duration(len(spec.Variants)) * time.Duration(spec.RepetitionCount()); total > 24*time.Hour {
		add("(warmup + duration) × variants × repetitions is %s: must be at most 24h per node; shorten the duration or run fewer repetitions", total)
	}
	seen := map[string]bool{}
	for i := range spec.Variants {
		v := &spec.Variants[i]
		where := fmt.Sprintf("variants[%d] (%s)", i, v.Name)
		if !dnsLabel.MatchString(v.Name) || len(v.Name) > 40 {
			add("%s: name must be lower-case letters, digits and '-', at most 40 characters", where)
		}
		if seen[v.Name] {
			add("%s: name is used twice; variant names must be unique", where)
		}
		seen[v.Name] = true
		for _, e := range validateKnobs(&v.Knobs) {
			add("%s.knobs.%s", where, e)
		}
	}
	errs = append(errs, validateWorkload(&spec.Workload)...)
	for i, o := range spec.Objectives {
		if !groupExists(&spec.Workload, o.Group) {
			add("objectives[%d]: group %q is not in workload.groups", i, o.Group)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid experiment (nothing was changed on the node):\n  - %s", strings.Join(errs, "\n  - "))
	}
	return nil
}

func groupExists(w *v1alpha1.Workload, name string) bool {
	for i := range w.Groups {
		if w.Groups[i].Name == name {
			return true
		}
	}
	return false
}

func durIn(errs *[]string, name string, d *metav1.Duration, lo, hi time.Duration) {
	if d == nil {
		return
	}
	if d.Duration < lo || d.Duration > hi {
		*errs = append(*errs, fmt.Sprintf("%s %s: must be between %s and %s", name, d.Duration, lo, hi))
	}
}

func validateKnobs(k *v1alpha1.Knobs) []string {
	var errs []string
	switch k.Autogroup {
	case "", v1alpha1.AutogroupEnabled, v1alpha1.AutogroupDisabled:
	default:
		errs = append(errs, fmt.Sprintf("autogroup %q: must be Enabled or Disabled", k.Autogroup))
	}
	durIn(&errs, "baseSlice", k.BaseSlice, 100*time.Microsecond, 100*time.Millisecond)
	durIn(&errs, "latency", k.Latency, 100*time.Microsecond, time.Second)
	durIn(&errs, "minGranularity", k.MinGranularity, 100*time.Microsecond, 100*time.Millisecond)
	durIn(&errs, "wakeupGranularity", k.WakeupGranularity, 0, time.Second)
	durIn(&errs, "migrationCost", k.MigrationCost, 0, 100*time.Millisecond)
	if k.NrMigrate != nil && (*k.NrMigrate < 1 || *k.NrMigrate > 1024) {
		errs = append(errs, fmt.Sprintf("nrMigrate %d: must be between 1 and 1024", *k.NrMigrate))
	}
	switch k.TunableScaling {
	case "", v1alpha1.ScalingNone, v1alpha1.ScalingLog, v1alpha1.ScalingLinear:
	default:
		errs = append(errs, fmt.Sprintf("tunableScaling %q: must be None, Log or Linear", k.TunableScaling))
	}
	switch k.Preempt {
	case "", v1alpha1.PreemptNone, v1alpha1.PreemptVoluntary, v1alpha1.PreemptFull, v1alpha1.PreemptLazy:
	default:
		errs = append(errs, fmt.Sprintf("preempt %q: must be None, Voluntary, Full or Lazy", k.Preempt))
	}
	if len(k.Features) > 64 {
		errs = append(errs, fmt.Sprintf("features: %d listed, at most 64", len(k.Features)))
	}
	for _, f := range sortedKeys(k.Features) {
		if !validFeatureName(f) {
			errs = append(errs, fmt.Sprintf("features %q: feature names are the kernel's upper-case names such as PLACE_LAG (^[A-Z][A-Z0-9_]*$, at most 40 characters)", f))
		}
	}
	for _, s := range sortedKeys(k.Sysctls) {
		if !allowedSysctl(s) {
			errs = append(errs, fmt.Sprintf("sysctls %q: not on the allowlist; sysctls may only name %s", s, strings.Join(v1alpha1.AllowedSysctls, ", ")))
			continue
		}
		if !integerStr.MatchString(string(k.Sysctls[s])) {
			errs = append(errs, fmt.Sprintf("sysctls %q: value %q must be an integer written as a string, such as \"5000\"", s, k.Sysctls[s]))
		}
	}
	return errs
}

func validateWorkload(w *v1alpha1.Workload) []string {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	if n := len(w.Groups); n < 1 || n > v1alpha1.MaxGroups {
		add("workload.groups: %d listed, must be between 1 and %d", n, v1alpha1.MaxGroups)
	}
	total := 0
	index := map[string]int{}
	for i := range w.Groups {
		g := &w.Groups[i]
		where := fmt.Sprintf("workload.groups[%d] (%s)", i, g.Name)
		if !dnsLabel.MatchString(g.Name) || len(g.Name) > 40 {
			add("%s: name must be lower-case letters, digits and '-', at most 40 characters", where)
		}
		if _, dup := index[g.Name]; dup {
			add("%s: name is used twice; group names must be unique", where)
		}
		index[g.Name] = i
		if g.Replicas < 0 || g.Replicas > v1alpha1.MaxTotalTasks {
			add("%s: replicas %d must be between 1 and %d", where, g.Replicas, v1alpha1.MaxTotalTasks)
		}
		tasks := g.TaskCount()
		if tasks < 0 || tasks > v1alpha1.MaxTotalTasks {
			add("%s: tasks %d must be between 0 and %d", where, tasks, v1alpha1.MaxTotalTasks)
		} else {
			total += int(g.ReplicaCount()) * int(tasks)
		}
		if g.CPUWeight != nil && (*g.CPUWeight < 1 || *g.CPUWeight > 10000) {
			add("%s: cpuWeight %d must be between 1 and 10000", where, *g.CPUWeight)
		}
		if g.CPUMax != "" {
			if _, err := CPUMaxMillis(g.CPUMax); err != nil {
				add("%s: %v", where, err)
			}
		}
		durIn(&errs, where+": cpuMaxPeriod", g.CPUMaxPeriod, time.Millisecond, time.Second)
		if g.Nice != nil && (*g.Nice < -20 || *g.Nice > 19) {
			add("%s: nice %d must be between -20 and 19", where, *g.Nice)
		}
		switch g.Policy {
		case "", v1alpha1.PolicyOther, v1alpha1.PolicyBatch, v1alpha1.PolicyIdle:
		default:
			add("%s: policy %q must be Other, Batch or Idle", where, g.Policy)
		}
		durIn(&errs, where+": slice", g.Slice, 100*time.Microsecond, 100*time.Millisecond)
		if g.Session != "" {
			if !dnsLabel.MatchString(g.Session) || len(g.Session) > 40 {
				add("%s: session must be lower-case letters, digits and '-', at most 40 characters", where)
			}
			if (g.CPUWeight != nil && *g.CPUWeight != 100) || g.CPUMax != "" || g.CPUIdle != nil {
				add("%s: session runs the group's tasks outside any cgroup, so cpuWeight, cpuMax and cpuIdle cannot apply: remove them or remove session", where)
			}
			if g.Parent != "" {
				add("%s: a group with session runs outside any cgroup and cannot have a parent", where)
			}
			if g.ReplicaCount() != 1 {
				add("%s: a group with session is one session: set replicas to 1", where)
			}
		}
		if g.Parent != "" {
			pi, ok := index[g.Parent]
			switch {
			case !ok && groupExists(w, g.Parent):
				add("%s: parent %q must be listed before it", where, g.Parent)
			case !ok:
				add("%s: parent %q must name another group of this workload", where, g.Parent)
			default:
				p := &w.Groups[pi]
				if p.ReplicaCount() != 1 || p.Session != "" {
					add("%s: parent %q must have one replica and no session", where, g.Parent)
				}
				if d := depth(w, g); d > v1alpha1.MaxNestingDepth {
					add("%s: cgroups nest %d deep; at most %d", where, d, v1alpha1.MaxNestingDepth)
				}
			}
		}
		if tasks > 0 && g.Pattern == nil {
			add("%s: a group with tasks needs a pattern (Hog, Periodic, LatencyProbe, PingPong, Burst or Server)", where)
		}
		if g.Pattern != nil {
			errs = append(errs, validatePattern(where, g.Pattern, tasks)...)
		}
	}
	if total > v1alpha1.MaxTotalTasks {
		add("workload: %d tasks in all (replicas × tasks over the groups); at most %d: use fewer replicas or tasks", total, v1alpha1.MaxTotalTasks)
	}
	return errs
}

// depth is how deep g's cgroup nests (1 for a group without parent).
func depth(w *v1alpha1.Workload, g *v1alpha1.Group) int {
	d := 1
	for p := g.Parent; p != "" && d <= v1alpha1.MaxNestingDepth+1; d++ {
		found := false
		for i := range w.Groups {
			if w.Groups[i].Name == p {
				p, found = w.Groups[i].Parent, true
				break
			}
		}
		if !found {
			break
		}
	}
	return d
}

func validatePattern(where string, p *v1alpha1.Pattern, tasks int32) []string {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(where+": pattern: "+format, a...)) }
	durIn(&errs, where+": pattern.run", p.Run, time.Microsecond, time.Second)
	durIn(&errs, where+": pattern.period", p.Period, 100*time.Microsecond, 10*time.Second)
	durIn(&errs, where+": pattern.interval", p.Interval, 50*time.Microsecond, time.Second)
	durIn(&errs, where+": pattern.meanRun", p.MeanRun, 10*time.Microsecond, 10*time.Second)
	durIn(&errs, where+": pattern.meanSleep", p.MeanSleep, 10*time.Microsecond, 10*time.Second)
	switch p.Type {
	case v1alpha1.PatternHog:
	case v1alpha1.PatternPeriodic:
		if p.Run == nil || p.Period == nil {
			add("a Periodic pattern needs run and period")
		} else if p.Run.Duration >= p.Period.Duration {
			add("a Periodic pattern's run must be shorter than its period")
		}
	case v1alpha1.PatternLatencyProbe:
		if p.Interval == nil {
			add("a LatencyProbe pattern needs interval")
		}
	case v1alpha1.PatternPingPong:
		if tasks%2 != 0 {
			add("PingPong runs tasks in pairs: tasks must be even")
		}
	case v1alpha1.PatternBurst:
		if p.MeanRun == nil || p.MeanSleep == nil {
			add("a Burst pattern needs meanRun and meanSleep")
		}
	case v1alpha1.PatternServer:
		// Its fields are checked below (ServerErrors), as by the API.
	default:
		add("type %q must be Hog, Periodic, LatencyProbe, PingPong, Burst or Server", p.Type)
	}
	for _, e := range p.ServerErrors(tasks) {
		errs = append(errs, where+": pattern"+e.Field+": "+e.Msg)
	}
	return errs
}

// CPUMaxMillis parses a group's cpuMax ("500m", "1.5") into milli-CPUs.
func CPUMaxMillis(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("cpuMax %q: not a CPU quantity such as 500m or 1.5", s)
	}
	m := q.MilliValue()
	if m < 1 || m > 1024*1000 {
		return 0, fmt.Errorf("cpuMax %q: must be between 1m and 1024 CPUs", s)
	}
	return m, nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
