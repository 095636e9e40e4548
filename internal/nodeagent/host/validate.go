package host

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/api/v1alpha1/validation"
)

// Validate checks a spec again before the agent touches anything: the agent
// never trusts the API server to have validated. The rules are the shared
// ones (api/v1alpha1/validation's local set: the CRD schema's and CEL's,
// less those that choose a cluster's nodes), run on a defaulted copy; the node adds only what it needs to write the
// values: every cpuMax must be a quantity it can turn into a quota. One
// error lists every problem, each saying what to change.
func Validate(spec *v1alpha1.SchedExperimentSpec) error {
	const what = "invalid experiment (nothing was changed on the node)"
	if spec == nil {
		return fmt.Errorf("%s: no spec", what)
	}
	s := spec.DeepCopy()
	s.Default()
	root := field.NewPath("spec")
	// Choosing nodes is the controller's business (and a local run's node
	// is this one): the node checks what it runs.
	errs := validation.ValidateLocalSpec(s, root)
	for i := range s.Workload.Groups {
		g := &s.Workload.Groups[i]
		gf := root.Child("workload", "groups").Index(i)
		if g.CPUMax == "" {
			continue
		}
		if _, err := CPUMaxMillis(g.CPUMax); err != nil {
			errs = append(errs, field.Invalid(gf.Child("cpuMax"), g.CPUMax, err.Error()))
		}
	}
	return validation.AsError(what, errs)
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
