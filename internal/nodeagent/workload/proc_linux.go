package workload

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// procCounters are one reading of a worker's scheduler counters.
type procCounters struct {
	cpuNs        int64 // all threads
	runDelayNs   int64 // work thread
	voluntary    int64 // work thread
	involuntary  int64 // work thread
	sideCPUNs    int64 // every other thread
	sideSwitches int64 // every other thread: times scheduled in
}

func (c procCounters) sub(o procCounters) procCounters {
	return procCounters{c.cpuNs - o.cpuNs, c.runDelayNs - o.runDelayNs, c.voluntary - o.voluntary, c.involuntary - o.involuntary,
		c.sideCPUNs - o.sideCPUNs, c.sideSwitches - o.sideSwitches}
}

// readCounters reads /proc/<pid>/task/*/schedstat (on-CPU time and times
// scheduled in of every thread) and, for the work thread tid, its run delay
// and its voluntary and involuntary context switches from
// /proc/<pid>/task/<tid>/{schedstat,status}. tid 0 counts every thread as a
// side thread (a session leader).
func readCounters(fs procfs.FS, pid, tid int) (procCounters, error) {
	var c procCounters
	threads, err := fs.AllThreads(pid)
	if err != nil {
		return c, fmt.Errorf("listing threads of %d: %w", pid, err)
	}
	found := tid == 0
	for _, th := range threads {
		ss, err := th.Schedstat()
		if err != nil {
			if os.IsNotExist(err) {
				continue // the thread exited meanwhile
			}
			return c, fmt.Errorf("reading schedstat of %d/%d: %w", pid, th.PID, err)
		}
		c.cpuNs += int64(ss.RunningNanoseconds)
		if th.PID != tid {
			c.sideCPUNs += int64(ss.RunningNanoseconds)
			c.sideSwitches += int64(ss.RunTimeslices)
			continue
		}
		found = true
		c.runDelayNs = int64(ss.WaitingNanoseconds)
		st, err := th.NewStatus()
		if err != nil {
			return c, fmt.Errorf("reading status of %d/%d: %w", pid, tid, err)
		}
		c.voluntary = int64(st.VoluntaryCtxtSwitches)
		c.involuntary = int64(st.NonVoluntaryCtxtSwitches)
	}
	if !found {
		return c, fmt.Errorf("work thread %d of process %d is gone", tid, pid)
	}
	return c, nil
}

// procStart returns a process's start time (field 22 of /proc/<pid>/stat,
// clock ticks since boot) and its state, or ok=false when there is no such
// process. Start time and pid together name a process for good.
func procStart(pid int) (start uint64, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, 0, false
	}
	f := strings.Fields(s[i+2:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return 0, 0, false
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return st, f[0][0], true
}

// alive says whether the process pid started at start still exists and is
// not a zombie.
func alive(pid int, start uint64) bool {
	st, state, ok := procStart(pid)
	return ok && st == start && state != 'Z' && state != 'X'
}
