package simengine

import (
	"strings"
	"testing"
)

// Invalid input is rejected before anything runs, with a message that says
// what to change.
func TestValidationErrors(t *testing.T) {
	base := func() Input {
		return Input{
			Node:       Node{CPUs: 2},
			Groups:     []Group{{Name: "a", Tasks: 1}},
			DurationNs: 1e8,
		}
	}
	cases := []struct {
		name string
		mod  func(*Input)
		want []string // substrings of the error
	}{
		{"unknown feature", func(in *Input) { in.Knobs.Features = map[string]bool{"NO_SUCH_THING": true} },
			[]string{`unknown feature "NO_SUCH_THING"`, "accepted names:", "PLACE_LAG", "RUN_TO_PARITY", "SMP_FAIR_GROUPS"}},
		{"CFS feature on EEVDF", func(in *Input) { in.Knobs.Features = map[string]bool{"GENTLE_FAIR_SLEEPERS": false} },
			[]string{`unknown feature "GENTLE_FAIR_SLEEPERS" for scheduler EEVDF`}},
		{"zero CPUs", func(in *Input) { in.Node.CPUs = 0 }, []string{"node.cpus is 0", "between 1 and 1024"}},
		{"too many CPUs", func(in *Input) { in.Node.CPUs = 2048 }, []string{"node.cpus is 2048", "between 1 and 1024"}},
		{"parent missing", func(in *Input) { in.Groups = append(in.Groups, Group{Name: "b", Tasks: 1, Parent: "nope"}) },
			[]string{`parent "nope" does not name an earlier group`, "list the parent group before this one"}},
		{"parent later", func(in *Input) {
			in.Groups = []Group{{Name: "child", Tasks: 1, Parent: "pod"}, {Name: "pod", Tasks: 0}}
		}, []string{`parent "pod" does not name an earlier group`}},
		{"parent with replicas", func(in *Input) {
			in.Groups = []Group{{Name: "pod", Replicas: 2}, {Name: "child", Tasks: 1, Parent: "pod"}}
		}, []string{`parent "pod" has 2 replicas`, "replicas 1"}},
		{"bad HZ", func(in *Input) { in.Node.HZ = 999 }, []string{"node.hz is 999", "100, 250, 300 or 1000"}},
		{"host pauses without lengths", func(in *Input) { in.Node.Constants.HostPausesPerHour = 100 },
			[]string{"node.constants.hostPauseQuantilesNs has 0 values", "one pause length per level"}},
		{"host pause lengths without a rate", func(in *Input) {
			in.Node.Constants.HostPauseQuantilesNs = []int64{1, 2, 3, 4, 5, 6, 7}
		}, []string{"without hostPausesPerHour"}},
		{"host pause lengths decreasing", func(in *Input) {
			in.Node.Constants.HostPausesPerHour = 100
			in.Node.Constants.HostPauseQuantilesNs = []int64{5e6, 4e6, 5e6, 6e6, 7e6, 8e6, 9e6}
		}, []string{"hostPauseQuantilesNs[1] is 4000000", "must not decrease"}},
		{"odd ping-pong", func(in *Input) { in.Groups[0].Tasks = 3; in.Groups[0].Pattern.Type = PingPong },
			[]string{"set tasks to an even number"}},
		{"session with weight", func(in *Input) { in.Groups[0].Session = "s"; in.Groups[0].CPUWeight = 200 },
			[]string{"session group has no cgroup"}},
		{"shares below the kernel's least", func(in *Input) { in.Groups[0].CPUShares = 1 },
			[]string{"cpuShares is 1", "between 2 and 262144"}},
		{"shares and weight", func(in *Input) { in.Groups[0].CPUShares = 2; in.Groups[0].CPUWeight = 1 },
			[]string{"cpuShares and cpuWeight", "set one"}},
		{"base slice on CFS", func(in *Input) { in.Node.Scheduler = CFS; in.Knobs.BaseSliceNs = 3e6 },
			[]string{"baseSliceNs applies only to EEVDF"}},
		{"duplicate name", func(in *Input) { in.Groups = append(in.Groups, Group{Name: "a", Tasks: 1}) },
			[]string{"used twice"}},
		{"no duration", func(in *Input) { in.DurationNs = 0 }, []string{"durationNs is 0"}},
		{"bad pattern", func(in *Input) { in.Groups[0].Pattern.Type = "Sometimes" }, []string{`pattern type "Sometimes" is unknown`}},
		{"periodic without period", func(in *Input) { in.Groups[0].Pattern = Pattern{Type: Periodic, RunNs: 1e6} },
			[]string{"Periodic pattern needs periodNs"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			tc.mod(&in)
			_, err := Run(in)
			if err == nil {
				t.Fatal("Run accepted the input, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := Run(base()); err != nil {
		t.Fatalf("base input rejected: %v", err)
	}
}
