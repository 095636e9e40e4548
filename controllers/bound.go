package controllers

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// boundStatus keeps the status within v1alpha1.MaxStatusBytes, so that its
// write is never refused for size (and the simulation behind it never runs
// again for nothing). First the sweep curves are thinned (every k-th point,
// the first and the last kept; answers untouched), then result rows beyond
// what fits are left out. status.omitted says what was left out; an Event
// says so once.
func boundStatus(s *scope) {
	st := s.status
	size := statusBytes(st)
	if size <= v1alpha1.MaxStatusBytes {
		return
	}
	before := size
	var notes []string
	if sw := st.Sweep; sw != nil {
		total := 0
		for _, sh := range sw.Shapes {
			total += len(sh.Points)
		}
		full := make([][]v1alpha1.SweepPoint, len(sw.Shapes))
		for i := range sw.Shapes {
			full[i] = sw.Shapes[i].Points
		}
		for k := 2; size > v1alpha1.MaxStatusBytes && k <= 4096; k *= 2 {
			kept := 0
			for i := range sw.Shapes {
				sw.Shapes[i].Points = thin(full[i], k)
				kept += len(sw.Shapes[i].Points)
			}
			size = statusBytes(st)
			if size <= v1alpha1.MaxStatusBytes || k == 4096 {
				notes = append(notes, fmt.Sprintf("sweep curves keep every %dth point (%d of %d points; the answers are exact)", k, kept, total))
			}
		}
	}
	if size > v1alpha1.MaxStatusBytes && len(st.Results) > 0 {
		all := len(st.Results)
		lo, hi := 0, all // the most rows that fit, by bisection
		rows := st.Results
		for lo < hi {
			mid := (lo + hi + 1) / 2
			st.Results = rows[:mid]
			if statusBytes(st) <= v1alpha1.MaxStatusBytes {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		st.Results = rows[:lo]
		size = statusBytes(st)
		notes = append(notes, fmt.Sprintf("%d of %d result rows", all-lo, all))
	}
	if len(notes) == 0 {
		return
	}
	st.Omitted = fmt.Sprintf("the status (%d KiB) was cut to %d KiB, within %d KiB: %s", before>>10, size>>10, v1alpha1.MaxStatusBytes>>10, strings.Join(notes, "; "))
	if s.exp.Status.Omitted != st.Omitted {
		s.event(corev1.EventTypeWarning, "StatusSummarized", "BoundStatus", st.Omitted)
	}
}

// thin keeps every k-th point of a curve, and its last.
func thin(points []v1alpha1.SweepPoint, k int) []v1alpha1.SweepPoint {
	if len(points) <= 2 {
		return points
	}
	out := make([]v1alpha1.SweepPoint, 0, len(points)/k+2)
	for i := 0; i < len(points); i += k {
		out = append(out, points[i])
	}
	if (len(points)-1)%k != 0 {
		out = append(out, points[len(points)-1])
	}
	return out
}

func statusBytes(st *v1alpha1.SchedExperimentStatus) int {
	b, err := json.Marshal(st)
	if err != nil {
		return 0
	}
	return len(b)
}
