package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default applies the same defaults as the CRD schema's markers, for specs
// that did not come through an API server (schedlab run, simulate, plan) and
// for an agent that trusts none.
func (s *SchedExperimentSpec) Default() {
	if s.Mode == "" {
		s.Mode = ModeMeasure
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
	s.defaultSweep()
	if s.Simulation != nil {
		for i := range s.Simulation.Nodes {
			if s.Simulation.Nodes[i].Scheduler == "" {
				s.Simulation.Nodes[i].Scheduler = SchedulerEEVDF
			}
		}
	}
}

// defaultSweep applies the schema's defaults to spec.sweep: answer Largest,
// range step 1.
func (s *SchedExperimentSpec) defaultSweep() {
	if s.Sweep == nil {
		return
	}
	if s.Sweep.Answer == "" {
		s.Sweep.Answer = SweepLargest
	}
	for i := range s.Sweep.Parameters {
		if r := s.Sweep.Parameters[i].Range; r != nil && r.Step == 0 {
			r.Step = 1
		}
	}
}
