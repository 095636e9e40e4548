package validation

import (
	"regexp"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

var percent = regexp.MustCompile(`^(100|[1-9][0-9]?)%$`)

// ValidateProfileSpec checks a SchedProfile's spec by the rules of its CRD
// schema and CEL, in their words: a selector that names something, the
// experiment variants' knob rules with at least one knob set, the rollout's
// bounds and the canary verification's.
func ValidateProfileSpec(s *v1alpha1.SchedProfileSpec, fldPath *field.Path) field.ErrorList {
	v := &validator{}
	sel := s.NodeSelector
	if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		v.addf(fldPath.Child("nodeSelector"), "nodeSelector is empty: name at least one label (matchLabels or matchExpressions); a profile never applies to every node by default")
	}
	k := &s.Knobs
	kf := fldPath.Child("knobs")
	if k.Autogroup == "" && k.BaseSlice == nil && k.Latency == nil && k.MinGranularity == nil && k.WakeupGranularity == nil &&
		k.MigrationCost == nil && k.NrMigrate == nil && k.TunableScaling == "" && k.Preempt == "" && len(k.Features) == 0 && len(k.Sysctls) == 0 {
		v.addf(kf, "knobs sets nothing: a profile must set at least one knob")
	}
	v.knobs(kf, k)
	if r := s.Rollout; r != nil {
		rf := fldPath.Child("rollout")
		if mu := r.MaxUnavailable; mu != nil {
			ok := (mu.Type == intstr.Int && mu.IntVal >= 1 && mu.IntVal <= 1000) || (mu.Type == intstr.String && percent.MatchString(mu.StrVal))
			if !ok {
				v.addf(rf.Child("maxUnavailable"), "maxUnavailable must be a count from 1 to 1000 or a percentage from 1%% to 100%%")
			}
		}
		if c := r.Canary; c != nil {
			cf := rf.Child("canary")
			v.intIn(cf.Child("nodes"), int64(c.Nodes), 1, 100)
			vf := cf.Child("verify")
			d := c.Verify.Duration.Duration
			if d < 100*time.Millisecond || d > 10*time.Minute {
				v.addf(vf.Child("duration"), "verify.duration must be between 100ms and 10m")
			}
			groups := map[string]bool{}
			for _, g := range c.Verify.Workload.Groups {
				groups[g.Name] = true
			}
			for i, o := range c.Verify.Objectives {
				if !groups[o.Group] {
					v.addf(vf.Child("objectives").Index(i).Child("group"), "every verify objective must name a group listed in verify.workload.groups: %q is not one", o.Group)
				}
			}
		}
	}
	return v.errs
}
