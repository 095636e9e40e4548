package simengine

import (
	"math"
	"testing"
)

// reweight_entity() (v6.1..v6.18) recomputes an entity's load_avg as its new
// weight times its runnable average (se_weight(se) * se->avg.load_sum /
// divider) and moves the difference into the load_avg of the queue it is
// attached to, queued or blocked: cpu_load() follows a group entity's
// reweight at once, not over PELT's half-life.
func TestReweightMovesLoadAtOnce(t *testing.T) {
	for _, kernel := range []string{"6.1.100", "6.12"} {
		s := startedSim(t, Input{Node: Node{CPUs: 1, Kernel: kernel}, DurationNs: 2e9, Seed: 1,
			Groups: []Group{{Name: "a", Tasks: 1}, {Name: "b", Tasks: 1},
				{Name: "c", Tasks: 1, Pattern: Pattern{Type: Burst, MeanRunNs: 1e6, MeanSleepNs: 8e6}}}})
		groupEntity := func(name string) int32 {
			for ti := range s.tasks {
				if s.in.Groups[s.tasks[ti].group].Name == name {
					return s.ents[s.tasks[ti].se].parent
				}
			}
			t.Fatalf("%s: no task of group %s", kernel, name)
			return -1
		}
		s.end = 300_000_000
		s.loop()

		// A queued group entity (a hog's, always runnable).
		ge := groupEntity("a")
		if !s.ents[ge].onRq {
			t.Fatalf("%s: the hog's group entity is not queued", kernel)
		}
		check := func(what string, ge int32) {
			t.Helper()
			cq := s.ents[ge].rq
			s.updateSeLoad(ge)
			w := s.ents[ge].weight
			seBefore, rqBefore := s.ents[ge].load.avg, s.cpuLoad(0)
			s.reweightEntity(cq, ge, w/4)
			seAfter, rqAfter := s.ents[ge].load.avg, s.cpuLoad(0)
			if want := seBefore / 4; math.Abs(seAfter-want) > 0.01*want+0.5 {
				t.Errorf("%s: %s group entity: load_avg %.1f after its weight went %d -> %d, want %.1f (a quarter of %.1f)",
					kernel, what, seAfter, w, w/4, want, seBefore)
			}
			if want := rqBefore - (seBefore - seBefore/4); math.Abs(rqAfter-want) > 0.01*want+0.5 {
				t.Errorf("%s: %s group entity: cpu_load %.1f after the reweight, want %.1f (%.1f less the entity's %.1f)",
					kernel, what, rqAfter, want, rqBefore, seBefore-seBefore/4)
			}
		}
		check("queued", ge)

		// A blocked group entity: the bursty task's, while it sleeps.
		gc := groupEntity("c")
		for i := 0; i < 1000 && s.ents[gc].onRq; i++ {
			s.end += 1_000_000
			s.loop()
		}
		if s.ents[gc].onRq {
			t.Fatalf("%s: the bursty task's group entity never blocked", kernel)
		}
		if s.updateSeLoad(gc); s.ents[gc].load.avg < 10 {
			t.Fatalf("%s: the blocked group entity has no load to move (%.1f)", kernel, s.ents[gc].load.avg)
		}
		check("blocked", gc)
	}
}
