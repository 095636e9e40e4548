package host

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"
)

// EntryProcesses is a journal entry for the worker processes of a run,
// found by the environment variable they carry (workers outside cgroups —
// session tasks — are found this way after a crash).
const EntryProcesses = "processes"

// WorkerMarkerVar is the environment variable that marks a worker process;
// its value is the workload's run id.
const WorkerMarkerVar = "SCHEDLAB_WORKER"

// ProcessesEntry is the journal entry for the workers whose marker starts
// with prefix: SCHEDLAB_WORKER=<prefix>…. One entry covers every window of
// a run (the workload's ids are "<runID>.<n>", the prefix "<runID>.").
func ProcessesEntry(prefix string) JournalEntry {
	return JournalEntry{Kind: EntryProcesses, Name: "workers " + prefix + "*", Original: WorkerMarkerVar + "=" + prefix}
}

// MarkedProcesses lists the live processes whose environment holds a
// variable starting with marker ("SCHEDLAB_WORKER=<prefix>").
func MarkedProcesses(fsys FS, marker string) ([]int, error) {
	if !strings.HasPrefix(marker, WorkerMarkerVar+"=") || len(marker) <= len(WorkerMarkerVar)+1 {
		return nil, fmt.Errorf("journal: %q is not a worker marker", marker)
	}
	ents, err := fsys.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	want := append([]byte{0}, marker...)
	self := unix.Getpid()
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid <= 1 {
			continue
		}
		env, err := fsys.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), want) {
			continue
		}
		if st, err := fsys.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && (st[i+2] == 'Z' || st[i+2] == 'X') {
				continue
			}
		}
		out = append(out, pid)
	}
	return out, nil
}

// killMarked SIGKILLs the marked processes until none is left.
func killMarked(fsys FS, marker string, timeout time.Duration) error {
	var pids []int
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var err error
		if pids, err = MarkedProcesses(fsys, marker); err != nil || len(pids) == 0 {
			return err == nil, err
		}
		for _, p := range pids {
			_ = unix.Kill(p, unix.SIGKILL)
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("processes marked %s still alive after %s: %v", marker, timeout, pids)
	}
	return err
}
