// Package progress says where a SchedExperiment is, in one line, the way
// `make demo` and `schedlab watch` print it, and whether it has finished.
package progress

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// Line is the experiment's true conditions and each node's phase, steps and
// message: "NodesLocked,Running; node vm: Running 3/8".
func Line(exp *v1alpha1.SchedExperiment) string {
	var conds []string
	for _, c := range exp.Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			conds = append(conds, c.Type)
		}
	}
	sort.Strings(conds)
	s := "waiting for the controller"
	if len(conds) > 0 {
		s = strings.Join(conds, ",")
	}
	for _, n := range exp.Status.Nodes {
		s += fmt.Sprintf("; node %s: %s", n.Name, n.Phase)
		if n.StepsTotal > 0 {
			s += fmt.Sprintf(" %d/%d", n.StepsDone, n.StepsTotal)
		}
		if n.Message != "" {
			s += " (" + n.Message + ")"
		}
	}
	return s
}

// Finished says whether the experiment has finished its current
// generation: done with a nil error when Completed, done with an error
// naming the reason when Failed. A Completed condition of an older
// generation is not done: the controller has not seen the new spec yet.
func Finished(exp *v1alpha1.SchedExperiment) (bool, error) {
	if c := meta.FindStatusCondition(exp.Status.Conditions, v1alpha1.ConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
		return true, fmt.Errorf("experiment %s failed: %s: %s", exp.Name, c.Reason, c.Message)
	}
	if meta.IsStatusConditionTrue(exp.Status.Conditions, v1alpha1.ConditionCompleted) && exp.Status.ObservedGeneration == exp.Generation {
		return true, nil
	}
	return false, nil
}
