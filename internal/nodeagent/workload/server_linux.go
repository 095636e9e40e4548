package workload

import (
	"fmt"
	"math"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Server pattern's worker.
//
// Every replica of a Server group is one request queue served by the
// replica's tasks, each a worker process like every other pattern's. Their
// shared state (the arrival clock, the queue, the requests in flight) lives
// in a memory file of the replica that every task maps (fd srvFD), guarded by
// a futex lock in that memory. There is no dispatcher thread: the arrival
// process is a schedule, not a thread.
//
//   - Arrivals are open-loop: arrival k is at a time fixed by the replica's
//     clock alone (Periodic: origin + k/rate; Poisson: exponential gaps from
//     a generator seeded by the parent), never by when a worker got to run.
//     A request's latency is its completion time minus that scheduled
//     arrival, so a stalled server's requests all count their stall, as
//     wrk2 counts them (no coordinated omission).
//   - Whoever holds the lock first admits every arrival whose time has come,
//     in order: an arrival that finds Queue requests waiting is dropped,
//     otherwise it joins the FIFO as Fanout sub-requests. No worker takes
//     anything between two holders of the lock, so admitting late gives the
//     same queue as admitting on time.
//   - An idle worker sleeps on its own absolute timer (clock_nanosleep,
//     timer slack 1 ns unless the group sets one) to the next sub-request
//     no other idle worker waits for: the workers that went idle first get
//     the first arrivals, and an arrival wakes its worker as a network
//     interrupt wakes a server thread blocked in epoll — from interrupt
//     context, at the arrival. A worker that wakes to find its sub-request
//     already taken (a busy worker finished first and took it) sleeps to the
//     next unclaimed one.
//   - A worker runs a sub-request's service time as CPU time (spinCPU),
//     then takes the queue's head without sleeping, or sleeps as above. The
//     worker that finishes a request's last sub-request records its latency
//     and counts it (slotOps).
//
// The work thread runs this outside the Go scheduler like every pattern
// (worker_linux.go): nosplit code, raw system calls, no allocation. Its only
// sleeps are the arrival timers and the lock's futex waits, both counted as
// the pattern's blocks.

// srvFD is a Server task's fd of its replica's shared state.
const srvFD = 5

// srvHdr is the head of a replica's shared state; the arrays follow it at
// the offsets it holds. The parent writes the parameters and the free list
// before any worker starts; everything else is changed under lock only.
type srvHdr struct {
	lock uint32 // 0 free, 1 held, 2 held with waiters (a futex word)
	_    uint32

	origin  int64  // CLOCK_MONOTONIC of arrival 0's clock; 0 until a worker starts it
	rng     uint64 // Poisson gaps
	lastT   int64  // Poisson: the last arrival generated
	procSeq int64  // first arrival not yet admitted or dropped
	genSeq  int64  // arrivals procSeq..genSeq-1 have their times in look
	armNext int64  // the next sub-request a sleeping worker may wait for
	qHead   int64
	qLen    int64 // requests waiting with a sub-request no worker has taken
	freeTop int64

	// Parameters.
	rate     int64 // arrivals per second
	gapNs    int64 // Poisson: mean gap
	phaseNs  int64 // Periodic: arrival 0 this long after the clock starts
	periodic int64
	fanout   int64
	qcap     int64
	recs     int64 // request records: qcap + tasks
	lookLen  int64

	offLook, offQueue, offFree, offAt, offLeft, offUntaken int64
}

// srvHdrBytes is the header's room, cache-line aligned.
const srvHdrBytes = 256

// srvParams are a replica's parameters.
type srvParams struct {
	rate     int64
	periodic bool
	fanout   int64
	queue    int64
	tasks    int64
	seed     uint64
}

// srvLayout returns the header with its parameters and offsets, and the
// size of the whole shared state.
func srvLayout(p srvParams) (srvHdr, int64) {
	h := srvHdr{rate: p.rate, gapNs: 1e9 / p.rate, fanout: p.fanout, qcap: p.queue, recs: p.queue + p.tasks, lookLen: p.tasks + 4}
	if p.periodic {
		h.periodic = 1
	}
	off := int64(srvHdrBytes)
	h.offLook = off
	off += h.lookLen * 8
	h.offAt = off
	off += h.recs * 8
	h.offQueue = off
	off += h.qcap * 4
	h.offFree = off
	off += h.recs * 4
	h.offLeft = off
	off += h.recs * 4
	h.offUntaken = off
	off += h.recs * 4
	const page = 4096
	return h, (off + page - 1) / page * page
}

// newSrvState creates a replica's shared state: a memory file holding the
// header and every record on the free list. The caller passes the fd to the
// replica's tasks and closes it.
func newSrvState(p srvParams) (fd int, size int64, err error) {
	if unsafe.Sizeof(srvHdr{}) > srvHdrBytes {
		panic("workload: srvHdr outgrew its room")
	}
	h, size := srvLayout(p)
	// Poisson from the seed; a Periodic replica's first arrival at a phase
	// within its first gap drawn from the same seed.
	h.rng = p.seed ^ 0x5bd1e9955bd1e995
	if p.periodic {
		x := h.rng
		h.phaseNs = int64(splitmix(&x) % uint64(max(1e9/p.rate, 1)))
	}
	fd, err = unix.MemfdCreate("schedlab-server", unix.MFD_CLOEXEC)
	if err != nil {
		return -1, 0, fmt.Errorf("workload: memfd_create: %w", err)
	}
	fail := func(e error) (int, int64, error) { unix.Close(fd); return -1, 0, e }
	if err := unix.Ftruncate(fd, size); err != nil {
		return fail(fmt.Errorf("workload: sizing a server's queue: %w", err))
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail(fmt.Errorf("workload: mapping a server's queue: %w", err))
	}
	defer unix.Munmap(mem)
	hp := (*srvHdr)(unsafe.Pointer(&mem[0]))
	*hp = h
	for i := int64(0); i < h.recs; i++ {
		*hp.i32(h.offFree, i) = int32(i)
	}
	hp.freeTop = h.recs
	return fd, size, nil
}

// mapSrv maps a replica's shared state in a worker, every page present.
func mapSrv(fd int, size int64) (*srvHdr, error) {
	b, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mapping the server's queue: %w", err)
	}
	for off := 0; off < len(b); off += 4096 {
		atomic.AddInt64((*int64)(unsafe.Pointer(&b[off])), 0)
	}
	return (*srvHdr)(unsafe.Pointer(&b[0])), nil
}

//go:nosplit
func (h *srvHdr) i64(off, i int64) *int64 {
	return (*int64)(unsafe.Add(unsafe.Pointer(h), off+i*8))
}

//go:nosplit
func (h *srvHdr) i32(off, i int64) *int32 {
	return (*int32)(unsafe.Add(unsafe.Pointer(h), off+i*4))
}

// Futex operations on memory shared between processes (not PRIVATE).
const (
	futexWait = 0
	futexWake = 1
)

// lockQ takes the replica's lock: a short spin (the holder runs for a few
// microseconds on another CPU), then futex waits, each counted as one of
// the pattern's blocks (Drepper's "Futexes are tricky", mutex 2).
//
//go:nosplit
func (h *srvHdr) lockQ(s *slot) {
	if atomic.CompareAndSwapUint32(&h.lock, 0, 1) {
		return
	}
	for i := 0; i < 200; i++ {
		if atomic.LoadUint32(&h.lock) == 0 && atomic.CompareAndSwapUint32(&h.lock, 0, 1) {
			return
		}
	}
	for atomic.SwapUint32(&h.lock, 2) != 0 {
		atomic.AddInt64(&s[slotBlocks], 1)
		syscall.RawSyscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&h.lock)), futexWait, 2, 0, 0, 0)
	}
}

//go:nosplit
func (h *srvHdr) unlockQ() {
	if atomic.SwapUint32(&h.lock, 0) == 2 {
		syscall.RawSyscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&h.lock)), futexWake, 1, 0, 0, 0)
	}
}

// gen puts the time of arrival genSeq into look.
//
//go:nosplit
func (h *srvHdr) gen() {
	var t int64
	if h.periodic != 0 {
		t = h.origin + h.genSeq*1e9/h.rate
	} else {
		t = h.lastT + expDraw(&h.rng, h.gapNs)
		h.lastT = t
	}
	*h.i64(h.offLook, h.genSeq%h.lookLen) = t
	h.genSeq++
}

// advance admits or drops, in order, every arrival due by now.
//
//go:nosplit
func (h *srvHdr) advance(s *slot, now int64) {
	for {
		if h.procSeq == h.genSeq {
			h.gen()
		}
		t := *h.i64(h.offLook, h.procSeq%h.lookLen)
		if t > now {
			return
		}
		h.procSeq++
		atomic.AddInt64(&s[slotArrivals], 1)
		if h.qLen >= h.qcap {
			atomic.AddInt64(&s[slotDropped], 1)
			continue
		}
		h.freeTop--
		r := int64(*h.i32(h.offFree, h.freeTop))
		*h.i64(h.offAt, r) = t
		*h.i32(h.offLeft, r) = int32(h.fanout)
		*h.i32(h.offUntaken, r) = int32(h.fanout)
		*h.i32(h.offQueue, (h.qHead+h.qLen)%h.qcap) = int32(r)
		h.qLen++
	}
}

// claim takes one sub-request of the queue's head request: its record, or
// -1 when nothing waits.
//
//go:nosplit
func (h *srvHdr) claim() int64 {
	if h.qLen == 0 {
		return -1
	}
	r := int64(*h.i32(h.offQueue, h.qHead))
	u := h.i32(h.offUntaken, r)
	*u--
	if *u == 0 {
		h.qHead = (h.qHead + 1) % h.qcap
		h.qLen--
	}
	return r
}

// complete finishes one sub-request of record r at end: the request's last
// one records the latency from its scheduled arrival and counts it.
//
//go:nosplit
func (h *srvHdr) complete(s *slot, r, end int64) {
	l := h.i32(h.offLeft, r)
	*l--
	if *l != 0 {
		return
	}
	recordLatency(s, end-*h.i64(h.offAt, r))
	atomic.AddInt64(&s[slotOps], 1)
	*h.i32(h.offFree, h.freeTop) = int32(r)
	h.freeTop++
}

// arm picks the next sub-request no sleeping worker waits for and returns
// its arrival time. Every sub-request between the first unadmitted arrival
// and armNext has a sleeping worker of its own, so there are fewer than
// tasks of them; the clamp only guards look's bounds (an earlier wake-up,
// which finds nothing and sleeps again, is harmless).
//
//go:nosplit
func (h *srvHdr) arm() int64 {
	a := h.armNext
	if p := h.procSeq * h.fanout; a < p {
		a = p
	}
	h.armNext = a + 1
	seq := a / h.fanout
	if lim := h.procSeq + h.lookLen - 2; seq > lim {
		seq = lim
	}
	for h.genSeq <= seq {
		h.gen()
	}
	return *h.i64(h.offLook, seq%h.lookLen)
}

// srvWorker is one worker's service-time generator.
type srvWorker struct {
	kind      int64
	meanNs    int64
	mu, sigma float64
	rng       uint64
}

// draw is one sub-request's CPU time (ns).
//
//go:nosplit
func (w *srvWorker) draw() int64 {
	switch w.kind {
	case svcExponential:
		return expDraw(&w.rng, w.meanNs)
	case svcLognormal:
		return int64(expNosplit(w.mu + w.sigma*normDraw(&w.rng)))
	}
	return w.meanNs
}

// serve is a Server task's work loop; it never returns.
//
//go:nosplit
func serve(s *slot, h *srvHdr, w *srvWorker) {
	h.lockQ(s)
	if h.origin == 0 {
		h.origin = nanotime() + h.phaseNs
		h.lastT = h.origin
	}
	h.unlockQ()
	r := int64(-1)
	for {
		if r >= 0 {
			spinCPU(w.draw())
			end := nanotime()
			h.lockQ(s)
			h.complete(s, r, end)
		} else {
			h.lockQ(s)
		}
		h.advance(s, nanotime())
		r = h.claim()
		if r < 0 {
			t := h.arm()
			h.unlockQ()
			sleepUntil(s, t)
		} else {
			h.unlockQ()
		}
	}
}

// splitmix is the next value of a splitmix64 generator.
//
//go:nosplit
func splitmix(state *uint64) uint64 {
	*state += 0x9e3779b97f4a7c15
	z := *state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// normDraw is a standard normal draw (Marsaglia's polar method).
//
//go:nosplit
func normDraw(state *uint64) float64 {
	for {
		u := float64(splitmix(state)>>11)/(1<<52) - 1 // [-1, 1)
		v := float64(splitmix(state)>>11)/(1<<52) - 1
		q := u*u + v*v
		if q > 0 && q < 1 {
			return u * math.Sqrt(-2*lnNosplit(q)/q)
		}
	}
}

// expNosplit is e^x without a call: x = k·ln2 + r, |r| ≤ ln2/2, e^r by its
// series (24 terms leave an error below 1e-16), times 2^k.
//
//go:nosplit
func expNosplit(x float64) float64 {
	if x > 700 {
		x = 700
	} else if x < -700 {
		return 0
	}
	k := int64(x/math.Ln2 + 0.5)
	if x < 0 {
		k = int64(x/math.Ln2 - 0.5)
	}
	r := x - float64(k)*math.Ln2
	sum, term := 1.0, 1.0
	for i := 1; i <= 24; i++ {
		term *= r / float64(i)
		sum += term
	}
	return sum * math.Float64frombits(uint64(k+1023)<<52)
}
