package controllers

import (
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// kstatusOf computes what Argo CD, Flux and kstatus-based tools see.
func kstatusOf(t *testing.T, p *v1alpha1.SchedProfile) status.Status {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind("SchedProfile")
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

// The profile's conditions follow kstatus: a rollout in progress is
// InProgress, a finished one Current, a failed canary Failed, and a
// generation the controller has not seen yet InProgress.
func TestProfileConditionsAreKstatus(t *testing.T) {
	base := func() *v1alpha1.SchedProfile {
		return &v1alpha1.SchedProfile{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 2},
			Spec:       v1alpha1.SchedProfileSpec{Knobs: v1alpha1.Knobs{Autogroup: v1alpha1.AutogroupDisabled}},
		}
	}
	applied := func(node string, gen int64) v1alpha1.ProfileNodeStatus {
		return v1alpha1.ProfileNodeStatus{Node: node, Phase: v1alpha1.ProfileNodeApplied, Generation: gen}
	}
	cases := []struct {
		name     string
		selected []string
		nodes    []v1alpha1.ProfileNodeStatus
		rollout  *v1alpha1.RolloutStatus
		want     status.Status
		ready    metav1.ConditionStatus
	}{
		{name: "rolling out", selected: []string{"a", "b"}, nodes: []v1alpha1.ProfileNodeStatus{applied("a", 2)},
			want: status.InProgressStatus, ready: metav1.ConditionFalse},
		{name: "rolled out", selected: []string{"a", "b"}, nodes: []v1alpha1.ProfileNodeStatus{applied("a", 2), applied("b", 2)},
			want: status.CurrentStatus, ready: metav1.ConditionTrue},
		{name: "old generation applied", selected: []string{"a"}, nodes: []v1alpha1.ProfileNodeStatus{applied("a", 1)},
			want: status.InProgressStatus, ready: metav1.ConditionFalse},
		{name: "canary rolled back", selected: []string{"a", "b"},
			rollout: &v1alpha1.RolloutStatus{Generation: 2, Phase: v1alpha1.RolloutRolledBack, Canaries: []string{"a"}, Message: "no significant difference"},
			want:    status.FailedStatus, ready: metav1.ConditionFalse},
		{name: "unsupported node", selected: []string{"a"},
			nodes: []v1alpha1.ProfileNodeStatus{{Node: "a", Phase: v1alpha1.ProfileNodeUnsupported, Reason: "no debugfs"}},
			want:  status.FailedStatus, ready: metav1.ConditionFalse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			p.Status.Nodes = tc.nodes
			p.Status.Rollout = tc.rollout
			s := &profileScope{p: p, log: logr.Discard(), selected: tc.selected, entries: map[string]*v1alpha1.ProfileNodeStatus{}}
			for i := range p.Status.Nodes {
				s.entries[p.Status.Nodes[i].Node] = &p.Status.Nodes[i]
			}
			r := &SchedProfileReconciler{}
			if err := r.rollout(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			p.Status = *profileStatus(s)
			p.Status.Nodes = tc.nodes
			if got := kstatusOf(t, p); got != tc.want {
				t.Fatalf("kstatus %s, want %s; conditions %+v", got, tc.want, p.Status.Conditions)
			}
			ready := false
			for _, c := range p.Status.Conditions {
				if c.Type == v1alpha1.ConditionReady {
					ready = true
					if c.Status != tc.ready {
						t.Fatalf("Ready %s, want %s (%s)", c.Status, tc.ready, c.Message)
					}
				}
			}
			if !ready {
				t.Fatal("no Ready condition")
			}
			// A spec the controller has not observed is InProgress, whatever
			// the conditions say.
			p.Generation++
			if got := kstatusOf(t, p); got != status.InProgressStatus {
				t.Fatalf("unobserved generation: kstatus %s, want InProgress", got)
			}
		})
	}
}

// maxUnavailable bounds how many nodes change at once.
func TestProfileRolloutMaxUnavailable(t *testing.T) {
	p := &v1alpha1.SchedProfile{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 1}}
	s := &profileScope{p: p, log: logr.Discard(), selected: []string{"a", "b", "c", "d", "e"}, entries: map[string]*v1alpha1.ProfileNodeStatus{}}
	r := &SchedProfileReconciler{}
	if err := r.rollout(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if len(s.ro.Nodes) != 1 || s.ro.Nodes[0] != "a" {
		t.Fatalf("first step allowed %v, want [a] (maxUnavailable defaults to 1)", s.ro.Nodes)
	}
	// a applied: b may go.
	p.Status.Rollout = s.ro.DeepCopy()
	s = &profileScope{p: p, log: logr.Discard(), selected: s.selected, entries: map[string]*v1alpha1.ProfileNodeStatus{
		"a": {Node: "a", Phase: v1alpha1.ProfileNodeApplied, Generation: 1},
	}}
	if err := r.rollout(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if len(s.ro.Nodes) != 2 || s.ro.Nodes[1] != "b" {
		t.Fatalf("second step allowed %v, want [a b]", s.ro.Nodes)
	}
	// 40% of 5 nodes = 2 at a time.
	pct := intOrStringPercent(40)
	p.Spec.Rollout = &v1alpha1.ProfileRollout{MaxUnavailable: &pct}
	p.Status.Rollout = nil
	s = &profileScope{p: p, log: logr.Discard(), selected: s.selected, entries: map[string]*v1alpha1.ProfileNodeStatus{}}
	if err := r.rollout(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if len(s.ro.Nodes) != 2 {
		t.Fatalf("40%% of 5 allowed %v, want 2 nodes", s.ro.Nodes)
	}
}
