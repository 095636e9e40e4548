package v1alpha1

import "testing"

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
	if _, err := ParseShapeName("32cpu-EEVDF-two"); err == nil {
		t.Error("a bad topology suffix parsed")
	}
}
