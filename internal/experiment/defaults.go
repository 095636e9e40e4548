package experiment

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// Default applies the same defaults as the CRD schema's markers, for specs
// that did not come through an API server (schedlab run, simulate, plan).
func Default(s *v1alpha1.SchedExperimentSpec) {
	if s.Mode == "" {
		s.Mode = v1alpha1.ModeMeasure
	}
	if s.Repetitions == 0 {
		s.Repetitions = 1
	}
	if s.Warmup == nil {
		s.Warmup = &metav1.Duration{Duration: time.Second}
	}
	for i := range s.Workload.Groups {
		g := &s.Workload.Groups[i]
		if g.Replicas == 0 {
			g.Replicas = 1
		}
		if g.Tasks == nil {
			one := int32(1)
			g.Tasks = &one
		}
		if g.CPUWeight == nil {
			w := int32(100)
			g.CPUWeight = &w
		}
	}
	defaultSweep(s)
	if s.Simulation != nil {
		for i := range s.Simulation.Nodes {
			if s.Simulation.Nodes[i].Scheduler == "" {
				s.Simulation.Nodes[i].Scheduler = v1alpha1.SchedulerEEVDF
			}
		}
	}
}
