// Package promote turns a completed experiment's winning variant into a
// SchedProfile manifest for a Git repository: the variant's knobs, the
// experiment's nodeSelector, and provenance with the measured effect and its
// interval. It refuses a variant that was not significantly better unless
// forced, saying why. It imports the API and internal/experiment; the CLI
// command is `schedlab promote`.
package promote

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

// Options of a promotion.
type Options struct {
	// Variant to promote; default the experiment's best variant.
	Variant string
	// Name of the profile; default <experiment>-<variant>.
	Name string
	// Force promotes a variant that was not significantly better.
	Force bool
}

// Source is what a promotion reads: an experiment as the cluster has it, or
// a local run's report.
type Source struct {
	Name       string
	Generation int64
	Spec       *v1alpha1.SchedExperimentSpec
	Results    []v1alpha1.GroupResult
	Best       string
	BestReason string
}

// FromExperiment reads a SchedExperiment from the cluster. It must have
// completed in Measure mode for its current generation.
func FromExperiment(exp *v1alpha1.SchedExperiment) (*Source, error) {
	c := meta.FindStatusCondition(exp.Status.Conditions, v1alpha1.ConditionCompleted)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != exp.Generation {
		return nil, fmt.Errorf("experiment %s has not completed its current generation %d: wait for it (kubectl wait --for=condition=Completed schedexperiment/%s)", exp.Name, exp.Generation, exp.Name)
	}
	if exp.Spec.Mode == v1alpha1.ModeSimulate {
		return nil, fmt.Errorf("experiment %s ran in Simulate mode: a profile needs measurements from real nodes (run it in Measure mode)", exp.Name)
	}
	return &Source{Name: exp.Name, Generation: exp.Status.ResultsGeneration, Spec: &exp.Spec, Results: exp.Status.Results,
		Best: exp.Status.BestVariant, BestReason: exp.Status.BestVariantReason}, nil
}

// FromReport reads a `schedlab run --report` report.json.
func FromReport(r *experiment.Report) (*Source, error) {
	if r.Spec == nil {
		return nil, errors.New("the report has no spec: it was written by an older schedlab run; run the experiment again with --report")
	}
	res := r.Results()
	measured := false
	for _, x := range res {
		if x.Measured != nil && x.Measured.N > 0 {
			measured = true
		}
	}
	if !measured {
		return nil, errors.New("the report has no measurements (a simulate report?): promote needs a `schedlab run --report` of a real run")
	}
	name := r.Experiment
	if name == "" {
		name = "local-run"
	}
	return &Source{Name: name, Spec: r.Spec, Results: res, Best: r.BestVariant, BestReason: r.BestReason}, nil
}

// Profile builds the SchedProfile manifest.
func Profile(src *Source, o Options) (*v1alpha1.SchedProfile, error) {
	spec := src.Spec
	variant := o.Variant
	if variant == "" {
		variant = src.Best
	}
	if variant == "" || variant == v1alpha1.NoSignificantDifference {
		return nil, fmt.Errorf("experiment %s has no significantly better variant (%s); name one with --variant and add --force to promote it anyway", src.Name, orNone(src.BestReason))
	}
	var v *v1alpha1.Variant
	var known []string
	for i := range spec.Variants {
		known = append(known, spec.Variants[i].Name)
		if spec.Variants[i].Name == variant {
			v = &spec.Variants[i]
		}
	}
	if v == nil {
		return nil, fmt.Errorf("experiment %s has no variant %q: use one of %s", src.Name, variant, strings.Join(known, ", "))
	}
	if len(spec.Variants) < 2 {
		return nil, fmt.Errorf("experiment %s has one variant: there is nothing it was compared with", src.Name)
	}
	base := spec.Variants[0].Name
	if base == variant {
		base = spec.Variants[1].Name
	}
	effects := experiment.Effects(spec, src.Results, variant, base)
	significant := variant == src.Best
	if !significant && !o.Force {
		why := fmt.Sprintf("the experiment's best variant is %q", src.Best)
		if src.BestReason != "" {
			why += " (" + src.BestReason + ")"
		}
		var eff []string
		for _, e := range effects {
			eff = append(eff, fmt.Sprintf("%s of %s: %s → %s, difference %s", e.Metric, e.Group, e.Baseline, e.Variant, orNone(e.Interval)))
		}
		if len(eff) > 0 {
			why += "; measured against " + base + ": " + strings.Join(eff, "; ")
		}
		return nil, fmt.Errorf("variant %q was not significantly better on the objectives of %s: %s. Add --force to promote it anyway", variant, src.Name, why)
	}
	if knobsEmpty(&v.Knobs) {
		return nil, fmt.Errorf("variant %q sets no knobs (it is the node's own state): there is nothing to keep on the nodes", variant)
	}
	if spec.NodeSelector == nil {
		return nil, fmt.Errorf("experiment %s has no nodeSelector to copy: write the profile's nodeSelector by hand", src.Name)
	}
	name := o.Name
	if name == "" {
		name = src.Name + "-" + variant
	}
	p := &v1alpha1.SchedProfile{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "SchedProfile"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SchedProfileSpec{
			NodeSelector: *spec.NodeSelector.DeepCopy(),
			Knobs:        *v.Knobs.DeepCopy(),
			Provenance: &v1alpha1.Provenance{
				Experiment: src.Name, Generation: src.Generation, Variant: variant, Baseline: base,
				Effects: effects, Forced: !significant, Reason: v1alpha1.Truncate(src.BestReason, 1024),
			},
		},
	}
	return p, nil
}

func knobsEmpty(k *v1alpha1.Knobs) bool {
	return k.Autogroup == "" && k.BaseSlice == nil && k.Latency == nil && k.MinGranularity == nil &&
		k.WakeupGranularity == nil && k.MigrationCost == nil && k.NrMigrate == nil && k.TunableScaling == "" &&
		k.Preempt == "" && len(k.Features) == 0 && len(k.Sysctls) == 0
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Manifest is the profile as a manifest for Git: apiVersion, kind, name and
// spec, no status or server fields.
func Manifest(p *v1alpha1.SchedProfile) map[string]any {
	return map[string]any{
		"apiVersion": p.APIVersion,
		"kind":       p.Kind,
		"metadata":   map[string]any{"name": p.Name},
		"spec":       p.Spec,
	}
}
