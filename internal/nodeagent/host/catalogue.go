package host

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// Host paths of the knobs. These constants are the only knob paths the agent
// ever writes.
const (
	debugfsDir      = "/sys/kernel/debug"
	debugSchedDir   = "/sys/kernel/debug/sched"
	autogroupPath   = "/proc/sys/kernel/sched_autogroup_enabled"
	preemptPath     = debugSchedDir + "/preempt"
	featuresPath    = debugSchedDir + "/features"
	schedDebugPath  = debugSchedDir + "/debug"
	sysctlKernelDir = "/proc/sys/kernel"
)

// Catalogue knob names, as they appear in capabilities and restore records.
const (
	KnobAutogroup         = "autogroup"
	KnobBaseSlice         = "baseSlice"
	KnobLatency           = "latency"
	KnobMinGranularity    = "minGranularity"
	KnobWakeupGranularity = "wakeupGranularity"
	KnobMigrationCost     = "migrationCost"
	KnobNrMigrate         = "nrMigrate"
	KnobTunableScaling    = "tunableScaling"
	KnobPreempt           = "preempt"
	KnobFeatures          = "features"
	// featurePrefix and sysctlPrefix name per-feature and per-sysctl knobs:
	// "features.PLACE_LAG", "sysctls.kernel.numa_balancing".
	featurePrefix = "features."
	sysctlPrefix  = "sysctls."
)

// Knob is one setting on the node: a file the agent may read and write.
// Values are the strings the kernel shows (trimmed), except where a kind says
// otherwise.
type Knob interface {
	// Name in the catalogue: "autogroup", "features.PLACE_LAG", …
	Name() string
	// Path of the file on the host.
	Path() string
	// Read returns the current value.
	Read(fsys FS) (string, error)
	// Write sets the value.
	Write(fsys FS, value string) error
}

// valueKnob is a file holding one value: sysctls and debugfs tunables.
type valueKnob struct{ name, path string }

func (k valueKnob) Name() string { return k.name }
func (k valueKnob) Path() string { return k.path }
func (k valueKnob) Read(fsys FS) (string, error) {
	b, err := fsys.ReadFile(k.path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
func (k valueKnob) Write(fsys FS, v string) error { return fsys.WriteFile(k.path, []byte(v)) }

// choiceKnob is a file listing choices with the current one in parentheses,
// "none voluntary (full) lazy": the preempt model. Its value is the current
// choice; writing a choice selects it.
type choiceKnob struct{ name, path string }

func (k choiceKnob) Name() string { return k.name }
func (k choiceKnob) Path() string { return k.path }
func (k choiceKnob) Read(fsys FS) (string, error) {
	b, err := fsys.ReadFile(k.path)
	if err != nil {
		return "", err
	}
	cur, _ := parseChoices(string(b))
	if cur == "" {
		return "", fmt.Errorf("%s: no current choice in %q", k.path, strings.TrimSpace(string(b)))
	}
	return cur, nil
}
func (k choiceKnob) Write(fsys FS, v string) error { return fsys.WriteFile(k.path, []byte(v)) }

// parseChoices parses "none voluntary (full) lazy" into "full" and every choice.
func parseChoices(s string) (current string, all []string) {
	for _, f := range strings.Fields(s) {
		if strings.HasPrefix(f, "(") && strings.HasSuffix(f, ")") {
			f = strings.Trim(f, "()")
			current = f
		}
		all = append(all, f)
	}
	return current, all
}

// featureKnob is one scheduler feature in the features file. Its value is
// "NAME" when on and "NO_NAME" when off, which is also what is written.
type featureKnob struct{ feature string }

func (k featureKnob) Name() string { return featurePrefix + k.feature }
func (k featureKnob) Path() string { return featuresPath }
func (k featureKnob) Read(fsys FS) (string, error) {
	b, err := fsys.ReadFile(featuresPath)
	if err != nil {
		return "", err
	}
	on, ok := parseFeatures(string(b))[k.feature]
	if !ok {
		return "", fmt.Errorf("%s does not list %s", featuresPath, k.feature)
	}
	return featureValue(k.feature, on), nil
}
func (k featureKnob) Write(fsys FS, v string) error { return fsys.WriteFile(featuresPath, []byte(v)) }

func featureValue(name string, on bool) string {
	if on {
		return name
	}
	return "NO_" + name
}

// parseFeatures parses the debugfs features file: "PLACE_LAG NO_NEXT_BUDDY …".
func parseFeatures(s string) map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Fields(s) {
		if n, ok := strings.CutPrefix(f, "NO_"); ok {
			m[n] = false
		} else {
			m[f] = true
		}
	}
	return m
}

// KernelVersion is a kernel's major.minor.
type KernelVersion struct{ Major, Minor int }

// ParseKernelVersion parses "6.18.44-fc-v657".
func ParseKernelVersion(s string) (KernelVersion, error) {
	parts := strings.SplitN(strings.TrimSpace(s), ".", 3)
	if len(parts) < 2 {
		return KernelVersion{}, fmt.Errorf("kernel version %q: want major.minor", s)
	}
	maj, err := strconv.Atoi(parts[0])
	if err != nil {
		return KernelVersion{}, fmt.Errorf("kernel version %q: %w", s, err)
	}
	minStr := parts[1]
	if i := strings.IndexFunc(minStr, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minStr = minStr[:i]
	}
	min, err := strconv.Atoi(minStr)
	if err != nil {
		return KernelVersion{}, fmt.Errorf("kernel version %q: %w", s, err)
	}
	return KernelVersion{maj, min}, nil
}

// AtLeast reports whether v ≥ major.minor.
func (v KernelVersion) AtLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

func (v KernelVersion) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Scheduler is the fair scheduler of a kernel: EEVDF from 6.6.
func (v KernelVersion) Scheduler() v1alpha1.SchedulerFamily {
	if v.AtLeast(6, 6) {
		return v1alpha1.SchedulerEEVDF
	}
	return v1alpha1.SchedulerCFS
}

// catalogueEntry is one knob of the catalogue as it is on a given kernel.
type catalogueEntry struct {
	knob Knob
	// absent is why this kernel has no such knob ("" when it should).
	absent string
}

// cfsTunable is where a CFS latency tunable lives on kernel v.
func cfsTunable(v KernelVersion, name, file string) catalogueEntry {
	switch {
	case v.AtLeast(6, 6):
		return catalogueEntry{
			knob:   valueKnob{name, debugSchedDir + "/" + file},
			absent: fmt.Sprintf("not in kernel %s: EEVDF (6.6+) replaced %s; use baseSlice", v, file),
		}
	case v.AtLeast(5, 13):
		return catalogueEntry{knob: valueKnob{name, debugSchedDir + "/" + file}}
	default:
		return catalogueEntry{knob: valueKnob{name, sysctlKernelDir + "/sched_" + file}}
	}
}

// catalogue is every knob of DESIGN.md's catalogue as kernel v has it, in a
// fixed order. Features are one entry (the file); per-feature knobs are made
// by featureKnob once the feature name is checked against the kernel's list.
func catalogue(v KernelVersion) []catalogueEntry {
	base := catalogueEntry{knob: valueKnob{KnobBaseSlice, debugSchedDir + "/base_slice_ns"}}
	if !v.AtLeast(6, 6) {
		base.absent = fmt.Sprintf("not in kernel %s: base_slice_ns is EEVDF's (6.6+); use latency/minGranularity", v)
	}
	debugOnly := func(name, file string) catalogueEntry {
		e := catalogueEntry{knob: valueKnob{name, debugSchedDir + "/" + file}}
		if !v.AtLeast(5, 13) {
			e.knob = valueKnob{name, sysctlKernelDir + "/sched_" + file}
		}
		return e
	}
	preempt := catalogueEntry{knob: choiceKnob{KnobPreempt, preemptPath}}
	if !v.AtLeast(5, 12) {
		preempt.absent = fmt.Sprintf("not in kernel %s: dynamic preemption came in 5.12", v)
	}
	es := []catalogueEntry{
		{knob: valueKnob{KnobAutogroup, autogroupPath}},
		base,
		cfsTunable(v, KnobLatency, "latency_ns"),
		cfsTunable(v, KnobMinGranularity, "min_granularity_ns"),
		cfsTunable(v, KnobWakeupGranularity, "wakeup_granularity_ns"),
		debugOnly(KnobMigrationCost, "migration_cost_ns"),
		debugOnly(KnobNrMigrate, "nr_migrate"),
		debugOnly(KnobTunableScaling, "tunable_scaling"),
		preempt,
		{knob: valueKnob{KnobFeatures, featuresPath}},
	}
	for _, s := range v1alpha1.AllowedSysctls {
		es = append(es, catalogueEntry{knob: valueKnob{sysctlPrefix + s, sysctlPath(s)}})
	}
	return es
}

// sysctlPath maps an allowlisted sysctl name to its file:
// kernel.numa_balancing → /proc/sys/kernel/numa_balancing.
func sysctlPath(name string) string {
	return "/proc/sys/" + strings.ReplaceAll(name, ".", "/")
}

// allowedSysctl reports whether name is on the allowlist.
func allowedSysctl(name string) bool {
	for _, s := range v1alpha1.AllowedSysctls {
		if s == name {
			return true
		}
	}
	return false
}

// knobFromJournal rebuilds a knob from a journal entry's name and path. The
// journal lives on the host and is not trusted: only a name and path pair
// that the catalogue of some kernel produces is accepted.
func knobFromJournal(name, path string) (Knob, error) {
	if f, ok := strings.CutPrefix(name, featurePrefix); ok {
		if path != featuresPath || !validFeatureName(f) {
			return nil, fmt.Errorf("journal: knob %q at %q is not in the catalogue", name, path)
		}
		return featureKnob{f}, nil
	}
	for _, v := range []KernelVersion{{6, 6}, {5, 13}, {5, 0}} {
		for _, e := range catalogue(v) {
			if e.knob.Name() == name && e.knob.Path() == path && name != KnobFeatures {
				return e.knob, nil
			}
		}
	}
	return nil, fmt.Errorf("journal: knob %q at %q is not in the catalogue", name, path)
}

// validFeatureName is the API's rule for feature names.
func validFeatureName(f string) bool {
	if len(f) == 0 || len(f) > 40 || f[0] < 'A' || f[0] > 'Z' {
		return false
	}
	for _, r := range f {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}
