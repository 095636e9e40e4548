package v1alpha1

import (
	"slices"
	"strings"
	"testing"
)

// Shape names carry the topology when it is not flat, and parse back.
func TestShapeNameRoundTrip(t *testing.T) {
	for _, c := range []struct {
		shape NodeShape
		name  string
	}{
		{NodeShape{CPUs: 8}, "8cpu-EEVDF"},
		{NodeShape{CPUs: 2, Scheduler: SchedulerCFS, Topology: &NodeTopology{Sockets: 1}}, "2cpu-CFS"},
		{NodeShape{CPUs: 32, Scheduler: SchedulerEEVDF, Topology: &NodeTopology{Sockets: 2, LLCsPerSocket: 2, ThreadsPerCore: 2}}, "32cpu-EEVDF-2s-2llc-smt2"},
		{NodeShape{CPUs: 16, Scheduler: SchedulerEEVDF, Topology: &NodeTopology{ThreadsPerCore: 2}}, "16cpu-EEVDF-1s-1llc-smt2"},
		{NodeShape{CPUs: 2, Kernel: "6.18.44-fc-v1045", HZ: 250, Preempt: PreemptNone}, "2cpu-EEVDF-k6.18.44-none"},
		{NodeShape{CPUs: 2, Kernel: "6.12", Preempt: PreemptVoluntary}, "2cpu-EEVDF-k6.12.0"},
		{NodeShape{CPUs: 4, Scheduler: SchedulerCFS, Kernel: "6.1.100", HZ: 1000, Preempt: PreemptFull, TunableScaling: ScalingLinear}, "4cpu-CFS-k6.1.100-hz1000-full-tslinear"},
		{NodeShape{CPUs: 32, Kernel: "6.18.45", HZ: 100, Preempt: PreemptLazy, TunableScaling: ScalingNone,
			Topology: &NodeTopology{Sockets: 2, LLCsPerSocket: 2, ThreadsPerCore: 2}}, "32cpu-EEVDF-k6.18.45-hz100-lazy-tsnone-2s-2llc-smt2"},
	} {
		if got := c.shape.Name(); got != c.name {
			t.Errorf("%+v: name %q, want %q", c.shape, got, c.name)
		}
		back, err := ParseShapeName(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if back.Name() != c.name {
			t.Errorf("%q parsed to %+v, named %q", c.name, back, back.Name())
		}
	}
	for _, bad := range []string{"32cpu-EEVDF-two", "2cpu-EEVDF-hzfast", "2cpu-EEVDF-2s-2llc", "2cpu-EEVDF-2s-2llc-smt2-none"} {
		if _, err := ParseShapeName(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// Everything that changes a prediction is in the name: shapes that differ
// in kernel release, tick rate, preemption model, tunable scaling or
// topology never share one; what the simulator does not read (a release's
// suffix, a default spelled out) does not split a name.
func TestShapeNameCarriesWhatPredicts(t *testing.T) {
	base := NodeShape{CPUs: 2, Scheduler: SchedulerEEVDF, Kernel: "6.18.44", HZ: 250, Preempt: PreemptNone}
	differ := []func(*NodeShape){
		func(s *NodeShape) { s.Kernel = "6.18.45" },
		func(s *NodeShape) { s.Kernel = "6.12.0" },
		func(s *NodeShape) { s.Kernel = "" },
		func(s *NodeShape) { s.HZ = 1000 },
		func(s *NodeShape) { s.Preempt = PreemptLazy },
		func(s *NodeShape) { s.TunableScaling = ScalingNone },
		func(s *NodeShape) { s.Scheduler = SchedulerCFS },
		func(s *NodeShape) { s.Topology = &NodeTopology{ThreadsPerCore: 2} },
	}
	for i, f := range differ {
		o := base
		f(&o)
		if o.Name() == base.Name() {
			t.Errorf("change %d (%+v) keeps the name %q", i, o, base.Name())
		}
	}
	same := []func(*NodeShape){
		func(s *NodeShape) { s.Kernel = "6.18.44-fc-v1045" },
		func(s *NodeShape) { s.HZ = 0 },
		func(s *NodeShape) { s.TunableScaling = ScalingLog },
		func(s *NodeShape) { s.Topology = &NodeTopology{Sockets: 1} },
	}
	for i, f := range same {
		o := base
		f(&o)
		if o.Name() != base.Name() {
			t.Errorf("change %d (%+v) renames %q to %q", i, o, base.Name(), o.Name())
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int32{
		"":            nil,
		"0":           {0},
		"0-3":         {0, 1, 2, 3},
		"6,0-1,4-5,1": {0, 1, 4, 5, 6},
		"8191":        {8191},
	} {
		got, err := ParseCPUList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"a":      `"a" is not a CPU number`,
		"1,":     `"" is not a CPU number`,
		"3-1":    "runs backwards; write 1-3",
		"0-":     "is not a range of CPUs",
		"8192":   "above the largest CPU number",
		"0-9999": "CPU 9999 is above",
		"-1":     `"-1" is not a CPU number`,
	} {
		if _, err := ParseCPUList(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseCPUList(%q): %v; want an error containing %q", in, err, want)
		}
	}
}
