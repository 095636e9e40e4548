package simengine

import (
	"math"
	"testing"
)

// TestInvoluntaryOnlyOnASwitch: __schedule() counts a switch only when it
// picks another task (prev != next), in prev->nivcsw unless prev blocked
// (prev_state set and not a preemption: nvcsw), v6.18. A nice-0 and a nice-5
// hog alone on one CPU alternate, so every switch away from one is a switch
// to the other and their involuntary counts differ by at most one over the
// window; the nice-0 hog runs about three slices for each of the nice-5
// hog's, and the two it runs on are picks of the task that was running,
// which count nothing. A count kept per resched instead of per switch would
// give the nice-0 hog about three times the nice-5 hog's count; neither
// blocks, so neither has voluntary switches. On the node (6.18.44, 7
// December 2026 07:36 UTC, two nice-0 and two nice-5 shell hogs in one
// session on 2 CPUs, 5 s traced) each nice-0 hog was switched to a nice-5
// hog 49-55 times a second, and 35-55 times more to the node's other
// threads woken on its CPU, which this input does not have.
func TestInvoluntaryOnlyOnASwitch(t *testing.T) {
	const secs = 4
	in := Input{Node: Node{CPUs: 1, Kernel: "6.18.44"}, DurationNs: secs * 1e9, WarmupNs: 1e9, Seed: 1,
		Groups: []Group{
			{Name: "nice0", Tasks: 1, Session: "s"},
			{Name: "nice5", Tasks: 1, Session: "s", Nice: 5},
		}}
	r, err := Run(in)
	if err != nil {
		t.Fatal(err)
	}
	n0, n5 := r.Groups[0].Metrics, r.Groups[1].Metrics
	t.Logf("nice0: cpu %.3f, involuntary %.1f/s; nice5: cpu %.3f, involuntary %.1f/s",
		n0.CPU, n0.CtxSwitchesPerSec.Involuntary, n5.CPU, n5.CtxSwitchesPerSec.Involuntary)
	if n5.CtxSwitchesPerSec.Involuntary < 10 {
		t.Fatalf("nice5 switched out %.1f times a second: the hogs no longer alternate, the test proves nothing", n5.CtxSwitchesPerSec.Involuntary)
	}
	if n0.CPU < 2*n5.CPU {
		t.Fatalf("nice0 %.3f CPU against nice5 %.3f: the nice-0 hog no longer runs several slices in a row, the test proves nothing", n0.CPU, n5.CPU)
	}
	if d := math.Abs(n0.CtxSwitchesPerSec.Involuntary-n5.CtxSwitchesPerSec.Involuntary) * secs; d > 1.01 {
		t.Errorf("involuntary switches differ by %.1f over the window; alone on a CPU the two hogs alternate, so at most 1", d)
	}
	if n0.CtxSwitchesPerSec.Voluntary != 0 || n5.CtxSwitchesPerSec.Voluntary != 0 {
		t.Errorf("voluntary %.1f and %.1f per second; hogs never block", n0.CtxSwitchesPerSec.Voluntary, n5.CtxSwitchesPerSec.Voluntary)
	}
}
