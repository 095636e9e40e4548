package host

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func validSpec() *v1alpha1.SchedExperimentSpec {
	return &v1alpha1.SchedExperimentSpec{
		Duration: metav1.Duration{Duration: time.Second},
		Warmup:   dur(200 * time.Millisecond),
		Variants: []v1alpha1.Variant{{Name: "on", Knobs: v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupEnabled}}, {Name: "off"}},
		Workload: v1alpha1.Workload{Groups: []v1alpha1.Group{
			{Name: "hog", Tasks: ptr(int32(2)), Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}},
		}},
	}
}

func TestValidate(t *testing.T) {
	if err := Validate(validSpec()); err != nil {
		t.Fatalf("valid spec refused: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(s *v1alpha1.SchedExperimentSpec)
		want   []string
	}{
		{"sysctl outside the allowlist", func(s *v1alpha1.SchedExperimentSpec) {
			s.Variants[0].Knobs.Sysctls = map[string]v1alpha1.SysctlValue{"kernel.core_pattern": "|/bin/sh"}
		}, []string{`spec.variants[0].knobs.sysctls: Invalid value: "kernel.core_pattern" is not allowed: sysctls may only name kernel.sched_cfs_bandwidth_slice_us`}},
		{"sysctl value not an integer", func(s *v1alpha1.SchedExperimentSpec) {
			s.Variants[0].Knobs.Sysctls = map[string]v1alpha1.SysctlValue{"kernel.numa_balancing": "1; reboot"}
		}, []string{`spec.variants[0].knobs.sysctls[kernel.numa_balancing]: Invalid value: "1; reboot": sysctl values must be integers`}},
		{"too many tasks", func(s *v1alpha1.SchedExperimentSpec) {
			s.Workload.Groups[0].Replicas = 100
			s.Workload.Groups[0].Tasks = ptr(int32(6))
		}, []string{"spec.workload.groups: Invalid value: the workload may have at most 512 tasks in all (the sum of replicas × tasks over the groups); this one has 600"}},
		{"bad feature name", func(s *v1alpha1.SchedExperimentSpec) {
			s.Variants[1].Knobs.Features = map[string]bool{"../../etc": true}
		}, []string{`spec.variants[1].knobs.features: Invalid value: "../../etc": feature names are the kernel's upper-case names`}},
		{"bad enum", func(s *v1alpha1.SchedExperimentSpec) {
			s.Variants[1].Knobs.Autogroup = "Maybe"
		}, []string{`spec.variants[1].knobs.autogroup: Unsupported value: "Maybe": supported values: "Enabled", "Disabled"`}},
		{"durations", func(s *v1alpha1.SchedExperimentSpec) {
			s.Duration = metav1.Duration{Duration: 2 * time.Hour}
			s.Variants[0].Knobs.BaseSlice = dur(time.Second)
		}, []string{`spec.duration: Invalid value: "2h0m0s": duration must be between 100ms and 1h`, `spec.variants[0].knobs.baseSlice: Invalid value: "1s": baseSlice must be between 100us and 100ms`}},
		{"nesting too deep", func(s *v1alpha1.SchedExperimentSpec) {
			s.Workload.Groups = []v1alpha1.Group{
				{Name: "a", Tasks: ptr(int32(0))}, {Name: "b", Parent: "a", Tasks: ptr(int32(0))}, {Name: "c", Parent: "b", Tasks: ptr(int32(0))},
				{Name: "d", Parent: "c", Tasks: ptr(int32(0))}, {Name: "e", Parent: "d", Pattern: &v1alpha1.Pattern{Type: v1alpha1.PatternHog}},
			}
		}, []string{"spec.workload.groups[4].parent: Invalid value: cgroups may nest at most 4 deep"}},
		{"cpus backwards", func(s *v1alpha1.SchedExperimentSpec) {
			s.Workload.Groups[0].CPUs = "3-1"
		}, []string{`spec.workload.groups[0].cpus: Invalid value: "3-1": the range "3-1" runs backwards; write 1-3`}},
		{"session with weight", func(s *v1alpha1.SchedExperimentSpec) {
			s.Workload.Groups[0].Session = "s"
			s.Workload.Groups[0].CPUWeight = ptr(int32(300))
		}, []string{"session runs the group's tasks outside any cgroup"}},
		{"pattern needs fields", func(s *v1alpha1.SchedExperimentSpec) {
			s.Workload.Groups[0].Pattern = &v1alpha1.Pattern{Type: v1alpha1.PatternPeriodic}
		}, []string{"a Periodic pattern needs run and period"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := validSpec()
			tc.mutate(s)
			err := Validate(s)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
			if !strings.Contains(err.Error(), "nothing was changed on the node") {
				t.Errorf("error does not say nothing was changed: %v", err)
			}
		})
	}
}

// A group pinned to CPUs the node lacks, or outside the agent's own cpuset,
// is refused before anything changes; CPUs it has pass.
func TestFitsNode(t *testing.T) {
	spec := validSpec()
	caps := &v1alpha1.NodeCapabilities{CPUs: 4, AllowedCPUs: "0-1,3"}
	for cpus, want := range map[string]string{
		"":    "",
		"0-1": "",
		"3":   "",
		"4":   `group "hog" is pinned to CPU 4, which this node lacks (it has CPUs 0-3)`,
		"1-2": `group "hog" is pinned to CPU 2, outside the CPUs the agent may use here (0-1,3, its cpuset)`,
	} {
		spec.Workload.Groups[0].CPUs = cpus
		err := FitsNode(spec, caps)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("cpus %q: %v, want %q", cpus, err, want)
		}
	}
}
