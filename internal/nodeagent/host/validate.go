package host

import (
	"fmt"
	"slices"

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

// FitsNode checks what only this node can tell: every CPU a group is pinned
// to (cpus) is one of the node's. Nothing was changed on the node when it
// fails.
func FitsNode(spec *v1alpha1.SchedExperimentSpec, caps *v1alpha1.NodeCapabilities) error {
	// The agent's own affinity bounds its workers' (a container's cpuset).
	allowed, err := v1alpha1.ParseCPUList(caps.AllowedCPUs)
	if err != nil {
		allowed = nil
	}
	for i := range spec.Workload.Groups {
		g := &spec.Workload.Groups[i]
		cpus, err := v1alpha1.ParseCPUList(g.CPUs)
		if err != nil {
			return fmt.Errorf("spec.workload.groups[%d].cpus: %w", i, err)
		}
		for _, c := range cpus {
			if c >= caps.CPUs {
				return fmt.Errorf("spec.workload.groups[%d].cpus: group %q is pinned to CPU %d, which this node lacks (it has CPUs 0-%d); nothing was changed on the node: pin the group to CPUs every chosen node has, or choose nodes with more CPUs", i, g.Name, c, caps.CPUs-1)
			}
			if allowed != nil && !slices.Contains(allowed, c) {
				return fmt.Errorf("spec.workload.groups[%d].cpus: group %q is pinned to CPU %d, outside the CPUs the agent may use here (%s, its cpuset); nothing was changed on the node: pin the group within them", i, g.Name, c, caps.AllowedCPUs)
			}
		}
	}
	return nil
}
