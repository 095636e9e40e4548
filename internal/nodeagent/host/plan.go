package host

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/api/v1alpha1/validation"
)

// Setting is one knob and the value a variant wants it to have.
type Setting struct {
	Knob  Knob
	Value string
}

// UnsupportedError says which knob a node lacks for a variant, and why.
// Nothing was changed.
type UnsupportedError struct{ Reason string }

func (e *UnsupportedError) Error() string { return e.Reason }

// Plan turns a variant's knobs into settings on this node. Every knob must
// exist, be readable and be writable here (and every feature must be one the
// kernel lists); otherwise Plan returns an *UnsupportedError whose reason
// names the knob and why, e.g. "baseSlice: /sys/kernel/debug/sched/base_slice_ns
// is locked down (kernel lockdown forbids debugfs)". Plan changes nothing.
// Settings come in catalogue order; features and sysctls sorted by name.
func Plan(caps *v1alpha1.NodeCapabilities, k *v1alpha1.Knobs) ([]Setting, error) {
	if errs := validation.ValidateKnobs(k, field.NewPath("knobs")); len(errs) > 0 {
		return nil, fmt.Errorf("invalid knobs: %v", errs.ToAggregate())
	}
	var out []Setting
	var missing []string
	want := func(name, value string) {
		kc, ok := Capability(caps, name)
		if !ok {
			missing = append(missing, name+": not in this node's catalogue")
			return
		}
		if reason := unusable(kc); reason != "" {
			missing = append(missing, name+": "+reason)
			return
		}
		out = append(out, Setting{Knob: knobFor(kc), Value: value})
	}
	if k.Autogroup != "" {
		want(KnobAutogroup, map[v1alpha1.AutogroupMode]string{v1alpha1.AutogroupEnabled: "1", v1alpha1.AutogroupDisabled: "0"}[k.Autogroup])
	}
	nsKnob := func(name string, d *metav1.Duration) {
		if d != nil {
			want(name, strconv.FormatInt(int64(d.Duration/time.Nanosecond), 10))
		}
	}
	nsKnob(KnobBaseSlice, k.BaseSlice)
	nsKnob(KnobLatency, k.Latency)
	nsKnob(KnobMinGranularity, k.MinGranularity)
	nsKnob(KnobWakeupGranularity, k.WakeupGranularity)
	nsKnob(KnobMigrationCost, k.MigrationCost)
	if k.NrMigrate != nil {
		want(KnobNrMigrate, strconv.Itoa(int(*k.NrMigrate)))
	}
	if k.TunableScaling != "" {
		want(KnobTunableScaling, map[v1alpha1.TunableScaling]string{v1alpha1.ScalingNone: "0", v1alpha1.ScalingLog: "1", v1alpha1.ScalingLinear: "2"}[k.TunableScaling])
	}
	if k.Preempt != "" {
		want(KnobPreempt, strings.ToLower(string(k.Preempt)))
	}
	if len(k.Features) > 0 {
		kc, _ := Capability(caps, KnobFeatures)
		if reason := unusable(kc); reason != "" {
			missing = append(missing, "features: "+reason)
		} else {
			for _, f := range sortedKeys(k.Features) {
				if _, listed := caps.Features[f]; !listed {
					missing = append(missing, fmt.Sprintf("features.%s: kernel %s does not list %s in %s", f, caps.KernelVersion, f, featuresPath))
					continue
				}
				out = append(out, Setting{Knob: featureKnob{f}, Value: featureValue(f, k.Features[f])})
			}
		}
	}
	for _, s := range sortedKeys(k.Sysctls) {
		want(sysctlPrefix+s, string(k.Sysctls[s]))
	}
	if len(missing) > 0 {
		return nil, &UnsupportedError{Reason: strings.Join(missing, "; ")}
	}
	return out, nil
}

// unusable is why a knob cannot be used on this node, or "".
func unusable(kc v1alpha1.KnobCapability) string {
	path := kc.Path
	if path == "" {
		path = "the knob"
	}
	switch {
	case kc.Name == "":
		return "not in this node's catalogue"
	case !kc.Exists:
		return path + " does not exist: " + kc.Reason
	case kc.Reason == ReasonLockedDown:
		return path + " is " + ReasonLockedDown
	case !kc.Readable:
		return path + " is not readable: " + kc.Reason
	case !kc.Writable:
		return path + " is not writable: " + kc.Reason
	}
	return ""
}

// knobFor is the knob a capability describes.
func knobFor(kc v1alpha1.KnobCapability) Knob {
	if kc.Name == KnobPreempt {
		return choiceKnob{kc.Name, kc.Path}
	}
	return valueKnob{kc.Name, kc.Path}
}

// sameValue compares a knob value as read with one to be written: integers
// by value ("05" = "5"), everything else as text.
func sameValue(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
	y, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 64)
	return err1 == nil && err2 == nil && x == y
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// KnobsFromValues is Plan's inverse: the knobs that set each catalogue knob
// to the value given as the node shows it ("autogroup": "1",
// "features.PLACE_LAG": "NO_PLACE_LAG", "sysctls.kernel.numa_balancing": "0").
// A canary verification uses it to write a node's previous values as a
// variant.
func KnobsFromValues(values map[string]string) (v1alpha1.Knobs, error) {
	var k v1alpha1.Knobs
	ns := func(name, v string) (*metav1.Duration, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a number of nanoseconds", name, v)
		}
		return &metav1.Duration{Duration: time.Duration(n)}, nil
	}
	var err error
	for name, v := range values {
		switch {
		case name == KnobAutogroup:
			k.Autogroup = map[string]v1alpha1.AutogroupMode{"0": v1alpha1.AutogroupDisabled, "1": v1alpha1.AutogroupEnabled}[strings.TrimSpace(v)]
			if k.Autogroup == "" {
				return k, fmt.Errorf("autogroup: %q is neither 0 nor 1", v)
			}
		case name == KnobBaseSlice:
			k.BaseSlice, err = ns(name, v)
		case name == KnobLatency:
			k.Latency, err = ns(name, v)
		case name == KnobMinGranularity:
			k.MinGranularity, err = ns(name, v)
		case name == KnobWakeupGranularity:
			k.WakeupGranularity, err = ns(name, v)
		case name == KnobMigrationCost:
			k.MigrationCost, err = ns(name, v)
		case name == KnobNrMigrate:
			n, perr := strconv.Atoi(strings.TrimSpace(v))
			if perr != nil {
				return k, fmt.Errorf("nrMigrate: %q is not a number", v)
			}
			k.NrMigrate = ptrTo(int32(n))
		case name == KnobTunableScaling:
			k.TunableScaling = map[string]v1alpha1.TunableScaling{"0": v1alpha1.ScalingNone, "1": v1alpha1.ScalingLog, "2": v1alpha1.ScalingLinear}[strings.TrimSpace(v)]
			if k.TunableScaling == "" {
				return k, fmt.Errorf("tunableScaling: %q is not 0, 1 or 2", v)
			}
		case name == KnobPreempt:
			for _, m := range []v1alpha1.PreemptModel{v1alpha1.PreemptNone, v1alpha1.PreemptVoluntary, v1alpha1.PreemptFull, v1alpha1.PreemptLazy} {
				if strings.EqualFold(string(m), strings.TrimSpace(v)) {
					k.Preempt = m
				}
			}
			if k.Preempt == "" {
				return k, fmt.Errorf("preempt: %q is not a preemption model", v)
			}
		case strings.HasPrefix(name, featurePrefix):
			f := strings.TrimPrefix(name, featurePrefix)
			if k.Features == nil {
				k.Features = map[string]bool{}
			}
			k.Features[f] = strings.TrimSpace(v) == f
		case strings.HasPrefix(name, sysctlPrefix):
			if k.Sysctls == nil {
				k.Sysctls = map[string]v1alpha1.SysctlValue{}
			}
			k.Sysctls[strings.TrimPrefix(name, sysctlPrefix)] = v1alpha1.SysctlValue(strings.TrimSpace(v))
		default:
			return k, fmt.Errorf("%q is not a catalogue knob", name)
		}
		if err != nil {
			return k, err
		}
	}
	return k, nil
}

func ptrTo[T any](v T) *T { return &v }
