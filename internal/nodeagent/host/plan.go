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
