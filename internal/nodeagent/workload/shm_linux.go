package workload

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Shared counters.
//
// Every task's work thread counts what it does (ops, periods, misses, the
// sleeps and blocks it asked for, and its latency histogram) in a slot of a
// memory file the parent created and mapped too. The parent reads a window's
// counters straight from that memory, at Begin and at End, with no message to
// the worker: the worker's control path needs no CPU time during a run, so a
// worker the kernel starves still reports (what it did is in the slot) and
// its side threads stay asleep through every window.
//
// A slot is slotWords int64 words. The work thread only ever adds to them
// with atomic adds; the parent only loads them, and a window is the
// difference of two loads.
const (
	slotState    = 0 // 1 once the work loop has started
	slotOps      = 1
	slotPeriods  = 2
	slotMisses   = 3
	slotBlocks   = 4 // sleeps and blocking reads the pattern asked for
	slotClamped  = 5 // latencies outside 0..10 s, clamped
	slotArrivals = 6 // Server: arrivals admitted or dropped
	slotDropped  = 7 // Server: arrivals dropped (the queue was full)
	slotHist     = 8 // first histogram bucket
	// slotGrid (after the histogram and a Hog's two pause words) is a
	// LatencyProbe's or Periodic's first deadline (CLOCK_MONOTONIC ns),
	// stored once before its first sleep: every later deadline lies on its
	// grid (TaskStats.FirstDeadlineNs).
	slotGrid = 3594

	// The shared histogram has HdrHistogram's layout with 2 significant
	// digits (256 sub-buckets, half-count magnitude 7) from 1 ns to 10 s:
	// 3584 buckets, each at most 1/128 of its value wide. Three digits
	// would make 25,600 buckets (200 KiB) per task.
	shmSubBits   = 8
	shmHalfBits  = shmSubBits - 1
	shmHistLen   = 3584
	slotWords    = 4096 // 32 KiB: header and histogram, page aligned
	slotBytes    = slotWords * 8
	shmHistLimit = histHighest
)

// shmIndex is the bucket of a value in 0..shmHistLimit: HdrHistogram's
// countsIndex for lowest 1 and 2 significant digits. Inlined into the work
// loops (no call, no stack check).
//
//go:nosplit
func shmIndex(v int64) int {
	b := bits.Len64(uint64(v)|(1<<shmSubBits-1)) - shmSubBits
	sub := int(v >> uint(b))
	return (b+1)<<shmHalfBits + sub - 1<<shmHalfBits
}

// shmValue is the middle of the values that bucket i holds.
func shmValue(i int) int64 {
	if i < 1<<shmSubBits {
		return int64(i)
	}
	b := i>>shmHalfBits - 1
	sub := int64(i - (b+1)<<shmHalfBits + 1<<shmHalfBits)
	lo := sub << uint(b)
	return lo + (int64(1)<<uint(b)-1)/2
}

// slot is one task's counters in shared memory.
type slot = [slotWords]int64

// recordLatency adds one latency (ns) to the slot's histogram.
//
//go:nosplit
func recordLatency(s *slot, ns int64) {
	if ns < 0 {
		ns = 0
		atomic.AddInt64(&s[slotClamped], 1)
	} else if ns > shmHistLimit {
		ns = shmHistLimit
		atomic.AddInt64(&s[slotClamped], 1)
	}
	atomic.AddInt64(&s[slotHist+shmIndex(ns)], 1)
}

// mapSlot maps slot i of the shared memory file fd, every page present
// (MAP_POPULATE, and each page written once): the work loop must never
// fault on a histogram bucket it meets for the first time, which can sleep.
func mapSlot(fd, i int) (*slot, error) {
	b, err := unix.Mmap(fd, int64(i)*slotBytes, slotBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mapping counter slot %d: %w", i, err)
	}
	s := (*slot)(unsafe.Pointer(&b[0]))
	for w := 0; w < slotWords; w += 4096 / 8 {
		atomic.AddInt64(&s[w], 0)
	}
	return s, nil
}

// shm is the parent's side: the memory file and its whole mapping.
type shm struct {
	fd  int
	mem []byte
}

func newShm(tasks int) (*shm, error) {
	fd, err := unix.MemfdCreate("schedlab-counters", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("workload: memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(tasks)*slotBytes); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("workload: sizing the counters: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, tasks*slotBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("workload: mapping the counters: %w", err)
	}
	return &shm{fd: fd, mem: mem}, nil
}

func (m *shm) slot(i int) *slot { return (*slot)(unsafe.Pointer(&m.mem[i*slotBytes])) }

func (m *shm) close() {
	if m == nil {
		return
	}
	_ = unix.Munmap(m.mem)
	_ = unix.Close(m.fd)
}

// slotSnap is one reading of a slot.
type slotSnap struct {
	state, ops, periods, misses, blocks, clamped int64
	arrivals, dropped                            int64
	hist                                         []int64 // nil until read
}

func readSlot(s *slot) slotSnap {
	r := slotSnap{
		state: atomic.LoadInt64(&s[slotState]), ops: atomic.LoadInt64(&s[slotOps]),
		periods: atomic.LoadInt64(&s[slotPeriods]), misses: atomic.LoadInt64(&s[slotMisses]),
		blocks: atomic.LoadInt64(&s[slotBlocks]), clamped: atomic.LoadInt64(&s[slotClamped]),
		arrivals: atomic.LoadInt64(&s[slotArrivals]), dropped: atomic.LoadInt64(&s[slotDropped]),
		hist: make([]int64, shmHistLen),
	}
	for i := range r.hist {
		r.hist[i] = atomic.LoadInt64(&s[slotHist+i])
	}
	return r
}

// since is what was counted between o and r, the histogram as a Histogram
// (each shared bucket recorded at its middle value).
func (r slotSnap) since(o slotSnap) (h *Histogram, ops, periods, misses, blocks int64) {
	h = NewHistogram()
	for i, c := range r.hist {
		if d := c - o.hist[i]; d > 0 {
			_ = h.h.RecordValues(shmValue(i), d)
		}
	}
	h.clamped = r.clamped - o.clamped
	return h, r.ops - o.ops, r.periods - o.periods, r.misses - o.misses, r.blocks - o.blocks
}
