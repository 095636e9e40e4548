package simengine

// This file holds CPU affinity (p->cpus_ptr, set with sched_setaffinity or
// by a cpuset): which CPUs a task may run on, and the checks the kernel's
// placement and balancing make against it (kernel/sched/core.c and fair.c,
// v6.12, also v6.18).

// affinity is one group's allowed CPUs.
type affinity struct {
	mask []uint64
	n    int32 // p->nr_cpus_allowed
	// first is the lowest allowed CPU: select_fallback_rq()'s pick, and
	// the only one when n is 1.
	first int32
}

// newAffinity records a group's CPUs and returns its index for task.aff,
// or -1 when the group may run everywhere (no CPUs, or all of them).
func (s *sim) newAffinity(cpus []int32) int32 {
	if len(cpus) == 0 {
		return -1
	}
	a := affinity{mask: make([]uint64, (s.nCPU+63)/64), first: -1}
	for _, c := range cpus {
		if a.mask[c>>6]&(1<<(uint(c)&63)) == 0 {
			a.mask[c>>6] |= 1 << (uint(c) & 63)
			a.n++
		}
		if a.first < 0 || c < a.first {
			a.first = c
		}
	}
	if a.n == s.nCPU {
		return -1
	}
	s.affs = append(s.affs, a)
	return int32(len(s.affs) - 1)
}

// allowed is cpumask_test_cpu(c, p->cpus_ptr).
func (s *sim) allowed(ti, c int32) bool {
	a := s.tasks[ti].aff
	if a < 0 {
		return true
	}
	return s.affs[a].mask[c>>6]&(1<<(uint(c)&63)) != 0
}

// pinnedCPU is the one CPU a task pinned to one CPU may run on, or -1.
// select_task_rq() (core.c) does not call the class's select_task_rq for
// such a task: it takes cpumask_any(p->cpus_ptr).
func (s *sim) pinnedCPU(ti int32) int32 {
	a := s.tasks[ti].aff
	if a < 0 || s.affs[a].n != 1 {
		return -1
	}
	return s.affs[a].first
}

// fallbackCPU is select_task_rq()'s is_cpu_allowed() check: a CPU the
// task may not run on becomes select_fallback_rq()'s, the first allowed.
func (s *sim) fallbackCPU(ti, c int32) int32 {
	if s.allowed(ti, c) {
		return c
	}
	return s.affs[s.tasks[ti].aff].first
}

// forkCPUAllowed places a pinned task at its fork. The worker forks as any
// task and pins itself before its pattern starts: __set_cpus_allowed_ptr()
// leaves it where it is if that CPU is allowed, else moves it to an
// allowed one (cpumask_any_and_distribute()); here, of the allowed CPUs,
// the first no task was forked onto yet, else the least loaded.
func (s *sim) forkCPUAllowed(ti, c int32) int32 {
	if s.allowed(ti, c) {
		return c
	}
	best, bl := int32(-1), 0.0
	for x := int32(0); x < s.nCPU; x++ {
		if !s.allowed(ti, x) {
			continue
		}
		if s.cpus[x].forkCount == 0 {
			return x
		}
		if l := s.cpuLoad(x); best < 0 || l < bl {
			best, bl = x, l
		}
	}
	return best
}
