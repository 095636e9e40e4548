package simengine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The expectations in this file come from the kernel's code (v6.12
// kernel/sched/fair.c and topology.c, unchanged in what is tested here up
// to v6.18), not from the simulator's earlier output; each test names the
// functions whose behaviour it checks.

// topoSim builds and runs a simulation for durNs and returns the simulator
// in its final state, for tests that call the placement and balancing
// functions directly.
func topoSim(t *testing.T, n Node, groups []Group, durNs int64, before func(*sim)) *sim {
	t.Helper()
	in := Input{Node: n, Groups: groups, DurationNs: durNs, Seed: 1}
	if err := validate(&in); err != nil {
		t.Fatal(err)
	}
	s, err := newSim(&in)
	if err != nil {
		t.Fatal(err)
	}
	if s.topo == nil {
		t.Fatal("no sched domains were built")
	}
	if before != nil {
		before(s)
	}
	s.start()
	s.loop()
	return s
}

func TestTopologyDomains(t *testing.T) {
	for _, c := range []struct {
		cpus int
		topo Topology
		want string // name:weight/groupW:imbalance_pct:cache_nice_tries:imb_numa_nr
	}{
		// 2 sockets × 2 LLCs × 4 cores × SMT2 (32 CPUs): every level.
		{32, Topology{2, 2, 2}, "SMT:2/1:110:0:0 MC:8/2:117:1:0 PKG:16/8:117:1:2 NUMA:32/16:117:2:2"},
		// 2 sockets × 4 cores, one LLC each: PKG degenerates into MC;
		// imb_numa_nr is the LLCs the NUMA domain spans.
		{8, Topology{Sockets: 2}, "MC:4/1:117:1:0 NUMA:8/4:117:2:2"},
		// One socket of 16 CPUs in one LLC under a NUMA-less PKG: nothing
		// above the LLC, so no imb_numa_nr.
		{16, Topology{ThreadsPerCore: 2}, "SMT:2/1:110:0:0 MC:16/2:117:1:0"},
		// One core per LLC with SMT: MC degenerates into SMT, which is the LLC.
		{8, Topology{LLCsPerSocket: 4, ThreadsPerCore: 2}, "SMT:2/1:110:0:0 PKG:8/2:117:1:4"},
	} {
		in := Input{Node: Node{CPUs: c.cpus, Topology: c.topo}, Groups: []Group{{Name: "h", Tasks: 1}}, DurationNs: 1e6}
		s, err := newSim(&in)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, l := range s.topo.levels {
			parts = append(parts, fmt.Sprintf("%s:%d/%d:%d:%d:%d", l.name, l.weight, l.groupW, l.imbalancePct, l.cacheNiceTries, l.imbNumaNr))
		}
		if got := strings.Join(parts, " "); got != c.want {
			t.Errorf("%d CPUs %+v: domains %s, want %s", c.cpus, c.topo, got, c.want)
		}
	}
}

func TestTopologyValidation(t *testing.T) {
	in := Input{Node: Node{CPUs: 12, Topology: Topology{Sockets: 2, LLCsPerSocket: 2, ThreadsPerCore: 2}},
		Groups: []Group{{Name: "h", Tasks: 1}}, DurationNs: 1e6}
	_, err := Run(in)
	if err == nil || !strings.Contains(err.Error(), "node.topology") || !strings.Contains(err.Error(), "multiple of 8") {
		t.Fatalf("12 CPUs as 2×2×2: got %v, want a node.topology error asking for a multiple of 8", err)
	}
}

// runCPUs parses a trace into the CPUs each task was switched in on.
func runCPUs(t *testing.T, trace []byte, fromNs int64) map[int][]int {
	t.Helper()
	out := map[int][]int{}
	sc := bufio.NewScanner(bytes.NewReader(trace))
	for sc.Scan() {
		var at int64
		var c, ti int
		if n, _ := fmt.Sscanf(strings.TrimSpace(sc.Text()), "%d cpu%d run task%d", &at, &c, &ti); n == 3 && at >= fromNs {
			out[ti] = append(out[ti], c)
		}
	}
	return out
}

// A pair of tasks waking each other through a pipe (WF_SYNC) is pulled
// into one LLC even when fork placement put them on different sockets:
// select_task_rq_fair() runs wake_affine() in the lowest SD_WAKE_AFFINE
// domain spanning both CPUs (the NUMA domain keeps SD_WAKE_AFFINE at
// distance 21 ≤ node_reclaim_distance, sd_init()), wake_affine_idle()
// picks the waker's CPU for a sync wake-up of a CPU running one task, and
// select_idle_sibling() then finds an idle CPU in the waker's LLC.
func TestTopologyPairStaysInLLC(t *testing.T) {
	var trace bytes.Buffer
	in := Input{
		Node: Node{CPUs: 8, Topology: Topology{Sockets: 2}},
		Groups: []Group{
			// Sleepers forked first, one per CPU, so that the pair is not
			// forked onto one CPU (the partner's CPU is no longer the
			// most recently idled one) and starts on both sockets.
			{Name: "sleepers", Tasks: 8, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 10_000_000_000}},
			{Name: "pp", Tasks: 2, Pattern: Pattern{Type: PingPong, RunNs: 20_000}},
		},
		DurationNs: 100_000_000, Seed: 1, Trace: &trace,
	}
	mustRun(t, in)
	// Where the pair was forked (find_idlest_group() spreads them).
	in2 := in
	in2.Trace = nil
	s, err := newSim(&in2)
	if err != nil {
		t.Fatal(err)
	}
	s.start()
	if s.tasks[8].cpu/4 == s.tasks[9].cpu/4 {
		t.Fatalf("fork placement should start the pair on different sockets: cpu%d, cpu%d", s.tasks[8].cpu, s.tasks[9].cpu)
	}
	runs := runCPUs(t, trace.Bytes(), 10_000_000)
	same, total := 0, 0
	last := map[int]int{8: -1, 9: -1}
	for _, ti := range []int{8, 9} {
		if len(runs[ti]) < 100 {
			t.Fatalf("task %d ran %d times after 10 ms, want hundreds of messages", ti, len(runs[ti]))
		}
		last[ti] = runs[ti][len(runs[ti])-1]
	}
	for _, c0 := range runs[8] {
		total++
		if c0/4 == last[9]/4 {
			same++
		}
	}
	for _, c1 := range runs[9] {
		total++
		if c1/4 == last[8]/4 {
			same++
		}
	}
	if frac := float64(same) / float64(total); frac < 0.95 {
		t.Errorf("the pair ran in one LLC in %.2f of its runs after 10 ms, want ≥ 0.95 (wake_affine across LLCs)", frac)
	}
}

// wake_wide() (v6.12): a waker whose wakee_flips reach sd_llc_size times
// the wakee's (itself at least sd_llc_size) stops pulling its wakees to
// its own LLC: want_affine is 0, select_task_rq_fair() keeps prev_cpu as
// the target and select_idle_sibling() returns it when idle. A 1:1 waker
// keeps one flip and keeps pulling.
func TestTopologyWakeWide(t *testing.T) {
	// 2 sockets × 4 cores; a hog runs on CPU 0 and wakes the sleepers
	// (long-interval probes) whose previous CPUs are idle on socket 1.
	s := topoSim(t, Node{CPUs: 8, Topology: Topology{Sockets: 2}, Constants: freeWakeups}, []Group{
		{Name: "waker", Tasks: 1},
		{Name: "wakees", Tasks: 8, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 10_000_000_000}},
	}, 2_000_000, nil)
	waker := int32(0)
	this := s.tasks[waker].cpu
	if !s.tasks[waker].running {
		t.Fatal("the hog is not running")
	}
	var remote []int32
	for ti := int32(1); ti < int32(len(s.tasks)); ti++ {
		c := (this/4*4 + 4 + ti%4) % 8 // an idle CPU on the other socket
		if !s.cpuIdle(c) {
			t.Fatalf("cpu%d is not idle", c)
		}
		s.tasks[ti].cpu = c
		s.topo.wk[ti] = wakeeState{flips: 4, last: -1, decayTs: s.now} // wakees that wake 4 others (sd_llc_size)
		remote = append(remote, ti)
	}
	// 1:1: the same wakee over and over keeps the waker at one flip.
	for i := 0; i < 20; i++ {
		c := s.selectTaskRqTopo(remote[0], this, true)
		if c/4 != this/4 {
			t.Fatalf("1:1 wake-up %d went to cpu%d, want the waker's LLC (cpu%d's): wake_affine pulls", i, c, this)
		}
	}
	if f := s.topo.wk[waker].flips; f != 1 {
		t.Fatalf("waker flips = %d after waking one task 20 times, want 1 (record_wakee counts changes of wakee)", f)
	}
	// 1:N: each new wakee is a flip; from flips ≥ 4 × 4 = 16 the wake-ups go wide.
	for i := 0; i < 40; i++ {
		ti := remote[1+i%(len(remote)-1)]
		prev := s.tasks[ti].cpu
		flipsBefore := s.topo.wk[waker].flips
		c := s.selectTaskRqTopo(ti, this, true)
		wide := flipsBefore+1 >= 16
		switch {
		case wide && c != prev:
			t.Fatalf("wake-up %d with waker flips %d went to cpu%d, want prev cpu%d (wake_wide)", i, flipsBefore+1, c, prev)
		case !wide && c/4 != this/4:
			t.Fatalf("wake-up %d with waker flips %d went to cpu%d, want the waker's LLC (not yet wide)", i, flipsBefore+1, c)
		}
	}
}

// select_idle_sibling() on an SMT machine (v6.12): with an idle core in the
// LLC (has_idle_cores), select_idle_cpu() scans for a whole idle core
// (select_idle_core()) rather than the first idle CPU, which here is the
// busy CPU's own sibling; when no core is idle it takes an idle sibling and
// clears has_idle_cores.
func TestTopologySMTPrefersIdleCore(t *testing.T) {
	n := Node{CPUs: 8, Topology: Topology{ThreadsPerCore: 2}, Constants: freeWakeups}
	s := topoSim(t, n, []Group{
		{Name: "hog", Tasks: 1},
		{Name: "sleeper", Tasks: 1, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 10_000_000_000}},
	}, 2_000_000, nil)
	h := s.tasks[0].cpu
	sib := h ^ 1
	if !s.cpuIdle(sib) {
		t.Fatalf("the hog's sibling cpu%d is not idle", sib)
	}
	// The sleeper last ran on the hog's CPU, and the hog's CPU wakes it (a timer there).
	s.tasks[1].cpu = h
	c := s.selectIdleSiblingTopo(1, h, h)
	if c/2 == h/2 || !s.cpuIdle(c) || !s.cpuIdle(c^1) {
		t.Fatalf("wake-up next to a hog on cpu%d went to cpu%d, want a CPU of an idle core (not sibling cpu%d)", h, c, sib)
	}
	// The flat model scans from target+1 and would take the sibling when
	// the hog is on an even CPU: show that this case tells the two apart.
	if h%2 == 0 && s.nextIdleCPU(h+1) != sib {
		t.Fatalf("the flat scan would not pick the sibling; the test lost its point")
	}

	// Four hogs, one per core: no idle core, so an idle sibling.
	s = topoSim(t, n, []Group{
		{Name: "hog", Tasks: 4},
		{Name: "sleeper", Tasks: 1, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 10_000_000_000}},
	}, 20_000_000, nil)
	cores := map[int32]bool{}
	for ti := 0; ti < 4; ti++ {
		cores[s.tasks[ti].cpu/2] = true
	}
	if len(cores) != 4 {
		t.Fatalf("four hogs on %d cores after 20 ms, want one per core", len(cores))
	}
	h = s.tasks[0].cpu
	s.tasks[4].cpu = h
	s.topo.hasIdleCores[0] = true // stale hint, as after a CPU went idle
	c = s.selectIdleSiblingTopo(4, h, h)
	if !s.cpuIdle(c) {
		t.Fatalf("wake-up went to busy cpu%d, want an idle sibling", c)
	}
	if s.topo.hasIdleCores[0] {
		t.Errorf("has_idle_cores still set after a scan found no idle core (select_idle_cpu clears it)")
	}
}

// Two hogs on the SMT siblings of one core, three idle cores: the idle
// CPUs' periodic balance at the MC level sees the core as group_smt_balance
// (smt_balance(), v6.6+), cannot pull a running task (detach_tasks() stops
// at nr_running ≤ 1), counts nr_balance_failed and, past cache_nice_tries+2
// failures, pushes the running hog to the idle core (need_active_balance()
// → imbalanced_active_balance()).
func TestTopologySMTSpreadsHogs(t *testing.T) {
	n := Node{CPUs: 8, Topology: Topology{ThreadsPerCore: 2}}
	s := topoSim(t, n, []Group{{Name: "hog", Tasks: 2}}, 300_000_000, func(s *sim) {
		for c := 2; c < 8; c++ {
			s.cpus[c].forkCount = 1 // fork both hogs onto core 0
		}
	})
	// (They started on CPUs 0 and 1: checked through the fork rule below.)
	a, b := s.tasks[0].cpu, s.tasks[1].cpu
	if a/2 == b/2 {
		t.Fatalf("after 300 ms the hogs are still on one core (cpu%d, cpu%d), want them spread by active balancing", a, b)
	}
	r := s.result()
	for _, m := range r.Groups[0].PerTask {
		near(t, "hog CPU", m.CPU, 1, 0.1)
	}

	// The fork rule does put both on core 0 with that start.
	in := Input{Node: n, Groups: []Group{{Name: "hog", Tasks: 2}}, DurationNs: 1e6}
	s2, err := newSim(&in)
	if err != nil {
		t.Fatal(err)
	}
	for c := 2; c < 8; c++ {
		s2.cpus[c].forkCount = 1
	}
	x := s2.findIdlestCPUFork()
	s2.cpus[x].forkCount++
	y := s2.findIdlestCPUFork()
	if x/2 != 0 || y/2 != 0 || x == y {
		t.Fatalf("fork placement gave cpu%d and cpu%d, want cpu0 and cpu1", x, y)
	}
}

// sched_balance_rq() (load_balance() before v6.10), v6.12: when the domain
// is balanced, nr_balance_failed resets and balance_interval doubles up to
// max_interval (2 × span weight); when an imbalance is found,
// balance_interval goes back to min_interval, and a balance that moves
// nothing increments nr_balance_failed, which halves the load a task may
// carry in detach_tasks() (shr_bound(load, nr_balance_failed)) until one
// moves and it resets.
func TestTopologyBalanceInterval(t *testing.T) {
	n := Node{CPUs: 8, Topology: Topology{Sockets: 2}}
	// Idle machine: balanced at every level.
	s := topoSim(t, n, []Group{{Name: "sleeper", Tasks: 1, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 10_000_000_000}}}, 1_000_000, nil)
	c := int32(7)
	if !s.cpuIdle(c) {
		t.Fatalf("cpu%d is busy", c)
	}
	for l, lv := range s.topo.levels {
		st := s.topo.state(c, l)
		*st = sdState{balanceInterval: lv.minInterval}
		for i, want := range []int64{lv.maxInterval, lv.maxInterval, lv.maxInterval} {
			r := s.balanceLevel(c, l, cpuIdleBal)
			if !r.balanced || st.balanceInterval != want {
				t.Fatalf("%s balance %d on an idle machine: balanced=%v interval %d ms, want balanced and %d ms", lv.name, i, r.balanced, st.balanceInterval, want)
			}
		}
		// A new-idle balance never raises the interval.
		*st = sdState{balanceInterval: lv.minInterval}
		s.balanceLevel(c, l, cpuNewlyIdle)
		if st.balanceInterval != lv.minInterval {
			t.Fatalf("%s: new-idle balance changed balance_interval to %d", lv.name, st.balanceInterval)
		}
	}

	// Five hogs on one socket's four CPUs (the other socket kept busy with
	// its own four): one CPU runs two. A CPU of that LLC running one hog
	// finds the imbalance (local fully busy, busiest overloaded: migrate_load
	// of min(busiest − avg, avg − local) ≈ 256) but a hog's load (1024) is
	// too big until nr_balance_failed ≥ 2.
	s = topoSim(t, Node{CPUs: 8, Topology: Topology{Sockets: 2}, Constants: freeWakeups}, []Group{{Name: "hog", Tasks: 9}}, 400_000_000, nil)
	per := map[int32]int{}
	for ti := range s.tasks {
		per[s.tasks[ti].cpu]++
	}
	two := int32(-1)
	for c, k := range per {
		if k == 2 {
			two = c
		}
	}
	if two < 0 || len(per) != 8 {
		t.Fatalf("hogs per CPU %v, want one CPU with two and seven with one", per)
	}
	dst := two/4*4 + (two+1)%4
	mc := 0 // the MC (LLC) level
	st := s.topo.state(dst, mc)
	*st = sdState{balanceInterval: 2 * s.topo.levels[mc].minInterval}
	for i := 0; ; i++ {
		before := st.nrBalanceFailed
		r := s.balanceLevel(dst, mc, cpuNotIdle)
		if r.balanced {
			t.Fatalf("balance %d from cpu%d: balanced, want the imbalance with cpu%d found", i, dst, two)
		}
		if st.balanceInterval != s.topo.levels[mc].minInterval {
			t.Fatalf("balance %d: interval %d, want min_interval %d after an imbalance", i, st.balanceInterval, s.topo.levels[mc].minInterval)
		}
		if r.moved {
			if before < 2 || st.nrBalanceFailed != 0 {
				t.Fatalf("a hog moved with nr_balance_failed %d (now %d), want it to move only once 1024>>failed ≤ ≈256, i.e. failed ≥ 2, and the counter reset", before, st.nrBalanceFailed)
			}
			break
		}
		if st.nrBalanceFailed != before+1 {
			t.Fatalf("balance %d moved nothing: nr_balance_failed %d → %d, want +1", i, before, st.nrBalanceFailed)
		}
		if i > 5 {
			t.Fatalf("no hog moved after %d failed balances", i+1)
		}
	}
	if s.rqs[s.cpus[dst].root].hNr != 2 {
		t.Fatalf("cpu%d has %d tasks after the pull, want 2", dst, s.rqs[s.cpus[dst].root].hNr)
	}
}

// A whole run with a topology gives the CPU shares the flat machine gives
// where placement cannot matter (one hog per CPU), and its output repeats
// bit for bit.
func TestTopologyDeterministic(t *testing.T) {
	in := Input{
		Node: Node{CPUs: 16, HZ: 1000, Topology: Topology{Sockets: 2, LLCsPerSocket: 2, ThreadsPerCore: 2}},
		Groups: []Group{
			{Name: "hogs", Tasks: 16},
			{Name: "pp", Tasks: 8, Pattern: Pattern{Type: PingPong, RunNs: 20_000}},
			{Name: "burst", Tasks: 8, Pattern: Pattern{Type: Burst, MeanRunNs: 2_000_000, MeanSleepNs: 6_000_000}},
			{Name: "probe", Tasks: 4, Pattern: Pattern{Type: LatencyProbe, IntervalNs: 1_000_000}},
		},
		DurationNs: 500_000_000, WarmupNs: 100_000_000, Seed: 3,
	}
	a, b := mustRun(t, in), mustRun(t, in)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatal("two runs of the same input differ")
	}
	total := 0.0
	for _, g := range a.Groups {
		total += g.Metrics.CPU
	}
	if total > 16.001 || total < 15 {
		t.Errorf("workload used %.3f CPUs of 16 with 16 hogs, want nearly all", total)
	}
}
