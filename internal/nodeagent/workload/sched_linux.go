package workload

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func policyNumber(p string) (uint32, error) {
	switch p {
	case "", "Other":
		return unix.SCHED_NORMAL, nil
	case "Batch":
		return unix.SCHED_BATCH, nil
	case "Idle":
		return unix.SCHED_IDLE, nil
	}
	return 0, fmt.Errorf("unknown policy %q (Other, Batch or Idle)", p)
}

func policyName(n uint32) string {
	switch n {
	case unix.SCHED_NORMAL:
		return "Other"
	case unix.SCHED_BATCH:
		return "Batch"
	case unix.SCHED_IDLE:
		return "Idle"
	}
	return "policy " + strconv.Itoa(int(n))
}

// ReadSched reads a thread's (or a process's main thread's) scheduling
// attributes with sched_getattr.
func ReadSched(tid int) (Sched, error) {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return Sched{}, fmt.Errorf("sched_getattr(%d): %w", tid, err)
	}
	return Sched{Policy: policyName(a.Policy), Nice: int(a.Nice), SliceNs: int64(a.Runtime)}, nil
}

// applySched sets policy, nice and slice on one thread with one
// sched_setattr (which sets nice too, so the thread's current nice is kept
// when nice is nil), then reads them back: a kernel before 6.12 ignores
// sched_runtime for fair tasks, which is reported as an error.
func applySched(tid int, nice *int, policy string, sliceNs int64) error {
	pol, err := policyNumber(policy)
	if err != nil {
		return err
	}
	cur, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return fmt.Errorf("sched_getattr(%d): %w", tid, err)
	}
	attr := unix.SchedAttr{Policy: pol, Nice: cur.Nice}
	if nice != nil {
		attr.Nice = int32(*nice)
	}
	attr.Runtime = uint64(sliceNs)
	if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
		return fmt.Errorf("sched_setattr(%d, policy %s, nice %d, slice %dns): %w", tid, policyName(pol), attr.Nice, sliceNs, err)
	}
	got, err := ReadSched(tid)
	if err != nil {
		return err
	}
	if got.Policy != policyName(pol) || (pol != unix.SCHED_IDLE && got.Nice != int(attr.Nice)) {
		return fmt.Errorf("thread %d: set policy %s nice %d, kernel reports %s nice %d", tid, policyName(pol), attr.Nice, got.Policy, got.Nice)
	}
	if sliceNs != 0 && got.SliceNs != sliceNs {
		return fmt.Errorf("thread %d: set slice %dns, kernel reports %dns: custom slices need an EEVDF kernel 6.12 or later", tid, sliceNs, got.SliceNs)
	}
	return nil
}

// applySchedAllThreads applies the attributes to every thread of this
// process, so that threads the Go runtime starts later inherit them
// whichever thread clones them.
func applySchedAllThreads(nice *int, policy string, sliceNs int64) error {
	if nice == nil && policy == "" && sliceNs == 0 {
		return nil
	}
	return forEachThread(func(tid int) error { return applySched(tid, nice, policy, sliceNs) })
}

// forEachThread runs apply on every thread of this process, listing the
// threads until no new one shows (a thread may start meanwhile). A thread
// that exited meanwhile (ESRCH) is skipped.
func forEachThread(apply func(tid int) error) error {
	done := map[int]bool{}
	for range 5 {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("listing threads: %w", err)
		}
		fresh := false
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			fresh = true
			if err := apply(tid); err != nil {
				if errors.Is(err, unix.ESRCH) {
					continue // the thread exited meanwhile
				}
				return err
			}
			done[tid] = true
		}
		if !fresh {
			return nil
		}
	}
	return nil
}

// applyAffinityAllThreads pins every thread of this process to cpus
// (sched_setaffinity), as a cpuset confines a container's threads; threads
// started later inherit it. Each thread's mask is read back.
func applyAffinityAllThreads(cpus []int32) error {
	if len(cpus) == 0 {
		return nil
	}
	var set unix.CPUSet
	for _, c := range cpus {
		if int(c) >= len(set)*64 {
			return fmt.Errorf("CPU %d: above the %d CPUs a sched_setaffinity mask here holds", c, len(set)*64)
		}
		set.Set(int(c))
	}
	return forEachThread(func(tid int) error {
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return fmt.Errorf("sched_setaffinity(%d, CPUs %v): %w (a CPU this node has not online, or a cpuset that excludes it)", tid, cpus, err)
		}
		var got unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &got); err != nil {
			return fmt.Errorf("sched_getaffinity(%d): %w", tid, err)
		}
		if got != set {
			return fmt.Errorf("thread %d: set CPUs %v, the kernel keeps %d of them", tid, cpus, got.Count())
		}
		return nil
	})
}
