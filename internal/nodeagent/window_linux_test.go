package nodeagent

import (
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ownCPU is this process's CPU time, all threads (the workers are its
// children and not counted).
func ownCPU(t *testing.T) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Error(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// gcCycles is how many garbage collections this process has completed.
func gcCycles() uint64 {
	m := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}

// TestWindowReadsProcsOutside: the agent's reading of every process's
// counters (to name the noise sources) opens a few files of every thread
// on the node, milliseconds of CPU at once on the workload's CPUs; inside
// the window the probes waited behind it. It must come before the
// workload's window opens and after it closes, its garbage be collected
// before the window opens (not by a collection the runtime starts inside
// it), and the agent's own CPU inside the window stay small.
func TestWindowReadsProcsOutside(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("-short: measures a window on the real kernel")
	}
	var steps []string
	var atBegin, inside time.Duration
	var gcAtBegin, gcInside uint64
	// The process's read system calls (/proc/self/io syscr) in each
	// reading of every process and inside the window.
	var readsAt, readsInside int64
	var readings []int64
	onWindowStep = func(s string) {
		steps = append(steps, s)
		switch s {
		case "procs start":
			readsAt = readCalls(t)
		case "procs":
			readings = append(readings, readCalls(t)-readsAt)
		case "begin":
			atBegin, gcAtBegin, readsAt = ownCPU(t), gcCycles(), readCalls(t)
		case "end":
			inside, gcInside, readsInside = ownCPU(t)-atBegin, gcCycles()-gcAtBegin, readCalls(t)-readsAt
		}
	}
	defer func() { onWindowStep = nil }()
	st := oneHogWindow(t, "procs-outside", 500*time.Millisecond, 100*time.Millisecond, 1)
	// The timer path's measurements (the run has a calibration window)
	// come outside as well: before the window's knobs are set and after
	// they are back.
	if want := []string{"timer path", "knobs", "procs start", "procs", "begin", "end", "procs start", "procs", "restored", "timer path"}; !slices.Equal(steps, want) {
		t.Errorf("window steps %q, want %q: every process's counters or the timer path read inside the window", steps, want)
	}
	// Inside are the node's and the cgroup's counters, the one worker's and
	// the agent's own (a few small reads each) and the sleep. A reading of
	// every process opens a few files of every thread on the node: moved
	// inside, unannounced, it adds its read system calls to the window's.
	// Its CPU time does not tell it: here a reading took 10-28 ms, and the
	// agent's CPU inside a correct window 2.6-24.5 ms (71 runs, 19:00-19:58
	// UTC; the reads hop between the process's threads at each system
	// call), against 22-30 ms with a reading inside. So the reads are
	// counted, and the agent's CPU is logged.
	if len(readings) != 2 {
		t.Fatalf("%d readings of every process, want 2", len(readings))
	}
	t.Logf("the agent's CPU inside a %v window: %v; read system calls inside it %d, in its readings of every process around it %v", 500*time.Millisecond, inside, readsInside, readings)
	if gcInside > 0 {
		t.Errorf("%d garbage collections inside the window, want none", gcInside)
	}
	if r := min(readings[0], readings[1]); readsInside >= r {
		t.Errorf("%d read system calls inside the window, as many as a reading of every process (%d): every process read inside it?", readsInside, r)
	}
	if len(st.Windows) != 1 || st.Windows[0].Groups == nil {
		t.Fatalf("windows %+v: want one measured", st.Windows)
	}
	// The agent's own entry among the noise sources (this test's process:
	// the agent runs in it) is what it did inside the window, not its
	// readings of every process around it. Its threads' CPU (schedstat,
	// in nanoseconds; the process's own figure counts clock ticks, 10 ms
	// each) over their interval, about the window, times the window is at
	// most what the agent used between begin and end.
	for _, src := range st.Windows[0].NoiseSources {
		if int(src.PID) != os.Getpid() {
			continue
		}
		var threads float64
		for _, th := range src.Threads {
			threads += th.CPU
		}
		t.Logf("the agent's entry: %.3f CPUs, its threads %.4f", src.CPU, threads)
		if used := time.Duration(threads * 0.5 * float64(time.Second)); used > inside+time.Millisecond {
			t.Errorf("the agent's threads in its entry used %.4f CPUs (%v over the window), but it used %v inside: its readings around the window counted as noise", threads, used, inside)
		}
	}
	checkNoWorkers(t, st)
}

// readCalls is this process's read system calls so far (syscr of
// /proc/self/io, all its threads).
func readCalls(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "syscr: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no syscr in /proc/self/io: %q", b)
	return 0
}
