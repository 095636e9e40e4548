package v1alpha1

import "fmt"

// ShapeName is the name of a node shape, e.g. "8cpu-EEVDF".
func ShapeName(cpus int32, s SchedulerFamily) string {
	if s == "" {
		s = SchedulerEEVDF
	}
	return fmt.Sprintf("%dcpu-%s", cpus, s)
}

// TaskCount is the tasks per replica of the group (its default is 1).
func (g *Group) TaskCount() int32 {
	if g.Tasks == nil {
		return 1
	}
	return *g.Tasks
}

// ReplicaCount is the group's replicas (its default is 1).
func (g *Group) ReplicaCount() int32 {
	if g.Replicas < 1 {
		return 1
	}
	return g.Replicas
}

// TotalTasks is replicas × tasks over all groups.
func (w *Workload) TotalTasks() int {
	n := 0
	for i := range w.Groups {
		n += int(w.Groups[i].ReplicaCount()) * int(w.Groups[i].TaskCount())
	}
	return n
}

// RepetitionCount is the spec's repetitions (its default is 1).
func (s *SchedExperimentSpec) RepetitionCount() int32 {
	if s.Repetitions < 1 {
		return 1
	}
	return s.Repetitions
}
