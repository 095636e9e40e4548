package simengine

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// The Server pattern: a replica (one cgroup of the group) receives requests
// open-loop, at its own clock, and keeps them in a FIFO queue shared by its
// worker tasks. The node agent's worker does exactly this, so the two are
// compared request for request:
//
//   - An arrival at time T whose replica already holds Queue requests that
//     no worker has taken is dropped. Otherwise it becomes Fanout sub-requests
//     at the queue's tail, and each wakes one idle worker (the one idle
//     longest: the agent's idle workers each sleep to the next arrival
//     nobody else waits for, so the first to go idle get the first
//     arrivals) if there is one.
//   - The wake is the worker's own timer expiring at T (the agent's worker
//     sleeps to the arrival with clock_nanosleep, timer slack 1 ns unless
//     the group sets one: hrtimer_wakeup → try_to_wake_up). The woken worker
//     is not promised the sub-request: when it gets a CPU it takes the
//     queue's head, and finds nothing when a busy worker that finished in
//     the meantime took it (the agent's worker takes whatever is at the
//     head under the lock); then it sleeps again to the next arrival nobody
//     waits for, at the back of the idle workers — one more voluntary
//     switch, as the agent's worker counts it.
//   - A worker runs its sub-request's service time (CPU time, so preemption
//     stretches it), then takes the queue's head without sleeping, or blocks
//     (a voluntary switch) when the queue is empty.
//   - A request completes when its last sub-request does; its latency is the
//     completion time minus its scheduled arrival T: queueing, wake-up,
//     scheduling and service. Requests completing inside the window count
//     in requestLatencyUs and throughput; arrivals dropped inside it in
//     dropped.

// Arrival processes and service-time distributions of a ServerPattern.
const (
	ArrivalsPoisson  = "Poisson"
	ArrivalsPeriodic = "Periodic"

	ServiceFixed       = "Fixed"
	ServiceExponential = "Exponential"
	ServiceLognormal   = "Lognormal"
)

// ServerPattern is the request process of a Server group, per replica.
type ServerPattern struct {
	// RatePerSec is the arrival rate of one replica.
	RatePerSec float64 `json:"ratePerSec"`
	// Arrivals is "Poisson" (default) or "Periodic".
	Arrivals string `json:"arrivals,omitempty"`
	// Service is "Fixed" (default), "Exponential" or "Lognormal".
	Service       string `json:"service,omitempty"`
	ServiceMeanNs int64  `json:"serviceMeanNs"`
	// ServiceP99Ns is the Lognormal's 99th percentile (above the mean, at
	// most 14 times it).
	ServiceP99Ns int64 `json:"serviceP99Ns,omitempty"`
	// Fanout is how many workers one request needs (0 means 1).
	Fanout int `json:"fanout,omitempty"`
	// Queue is the most waiting requests (0 means 1000).
	Queue int `json:"queue,omitempty"`
}

// DefaultServerQueue is the queue bound of a ServerPattern with Queue 0.
const DefaultServerQueue = 1000

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

// LognormalParams returns μ and σ of the lognormal with the given mean and
// 99th percentile: mean = e^(μ+σ²/2), p99 = e^(μ+z99·σ), taking the smaller
// root σ = z99 − √(z99² − 2 ln(p99/mean)). ok is false when no lognormal
// has them (p99 ≤ mean or p99/mean > e^(z99²/2) ≈ 14.96).
func LognormalParams(mean, p99 float64) (mu, sigma float64, ok bool) {
	if mean <= 0 || p99 <= mean {
		return 0, 0, false
	}
	d := z99*z99 - 2*math.Log(p99/mean)
	if d < 0 {
		return 0, 0, false
	}
	sigma = z99 - math.Sqrt(d)
	return math.Log(mean) - sigma*sigma/2, sigma, true
}

func validateServer(where string, g *Group) error {
	sp := g.Pattern.Server
	if sp == nil {
		return fmt.Errorf("%s: a Server pattern needs server (ratePerSec, serviceMeanNs)", where)
	}
	if !(sp.RatePerSec > 0 && sp.RatePerSec <= 1e7) {
		return fmt.Errorf("%s: server.ratePerSec must be in (0, 1e7]", where)
	}
	if sp.ServiceMeanNs < 100 || sp.ServiceMeanNs > 3600e9 {
		return fmt.Errorf("%s: server.serviceMeanNs must be between 100 and 3.6e12", where)
	}
	switch sp.Arrivals {
	case "", ArrivalsPoisson, ArrivalsPeriodic:
	default:
		return fmt.Errorf("%s: server.arrivals %q: use Poisson or Periodic", where, sp.Arrivals)
	}
	switch sp.Service {
	case "", ServiceFixed, ServiceExponential:
		if sp.ServiceP99Ns != 0 {
			return fmt.Errorf("%s: server.serviceP99Ns applies to a Lognormal service only", where)
		}
	case ServiceLognormal:
		if _, _, ok := LognormalParams(float64(sp.ServiceMeanNs), float64(sp.ServiceP99Ns)); !ok {
			return fmt.Errorf("%s: server.serviceP99Ns must be above serviceMeanNs and at most 14.96 times it for a lognormal", where)
		}
	default:
		return fmt.Errorf("%s: server.service %q: use Fixed, Exponential or Lognormal", where, sp.Service)
	}
	if sp.Fanout < 0 || sp.Fanout > g.Tasks {
		return fmt.Errorf("%s: server.fanout %d must be between 1 and tasks (%d)", where, sp.Fanout, g.Tasks)
	}
	if sp.Queue < 0 || sp.Queue > 1_000_000 {
		return fmt.Errorf("%s: server.queue must be between 1 and 1000000 (0 means %d)", where, DefaultServerQueue)
	}
	if g.Tasks < 1 {
		return fmt.Errorf("%s: a Server pattern needs at least one task (worker)", where)
	}
	return nil
}

// server is one replica of a Server group: its arrival process, its queue
// of sub-requests, its idle workers and its request slots.
type server struct {
	rng      *rand.Rand
	group    int32
	periodic bool
	gapNs    float64 // mean (Poisson) or exact (Periodic) gap between arrivals
	origin   int64   // Periodic: the first arrival; arrival k is origin + k·gap
	k        int64
	svc      uint8 // 0 fixed, 1 exponential, 2 lognormal
	meanNs   float64
	mu, sig  float64
	fanout   int32
	qcap     int32
	waiting  int32 // requests with a sub-request no worker has taken

	queue []int32 // FIFO of request slots, one entry per sub-request
	qHead int
	idle  []int32 // idle workers, longest idle first

	arrAt   []int64 // per request slot: the scheduled arrival
	left    []int32 // per slot: sub-requests not yet finished
	untaken []int32 // per slot: sub-requests not yet taken by a worker
	free    []int32 // free slots

	hist      histogram
	arrivals  int64 // scheduled inside the window, admitted or dropped
	completed int64
	dropped   int64
}

// newServer creates the server of replica r of group gi; its generator is
// seeded from the input's seed and the server's index, apart from the
// tasks' generators.
func (s *sim) newServer(gi, r int) int32 {
	sp := s.in.Groups[gi].Pattern.Server
	si := int32(len(s.servers))
	sv := server{
		rng:      rand.New(rand.NewPCG(s.in.Seed^0x5bd1e995, uint64(si)+0xc2b2ae3d27d4eb4f)),
		group:    int32(gi),
		periodic: sp.Arrivals == ArrivalsPeriodic,
		gapNs:    1e9 / sp.RatePerSec,
		meanNs:   float64(sp.ServiceMeanNs),
		fanout:   int32(max(sp.Fanout, 1)),
		qcap:     int32(sp.Queue),
	}
	if sv.qcap == 0 {
		sv.qcap = DefaultServerQueue
	}
	switch sp.Service {
	case ServiceExponential:
		sv.svc = 1
	case ServiceLognormal:
		sv.svc = 2
		sv.mu, sv.sig, _ = LognormalParams(sv.meanNs, float64(sp.ServiceP99Ns))
	}
	s.servers = append(s.servers, sv)
	return si
}

// startWorker puts a worker to sleep on its replica's empty queue.
func (s *sim) startWorker(ti int32) {
	t := &s.tasks[ti]
	t.state = tsSleeping
	t.workEnd = never
	sv := &s.servers[t.srv]
	sv.idle = append(sv.idle, ti)
}

// startServers schedules every replica's first arrival at a seeded random
// phase: a Periodic replica within its first gap, a Poisson one after an
// exponential gap.
func (s *sim) startServers() {
	for i := range s.servers {
		sv := &s.servers[i]
		var first int64
		if sv.periodic {
			first = sv.rng.Int64N(max(int64(sv.gapNs), 1))
			sv.origin = first
		} else {
			first = int64(sv.rng.ExpFloat64() * sv.gapNs)
		}
		s.push(event{t: first, kind: evArrival, a: int32(i)})
	}
}

// serviceDraw draws one sub-request's CPU time.
func (sv *server) serviceDraw() int64 {
	var d float64
	switch sv.svc {
	case 1:
		d = sv.rng.ExpFloat64() * sv.meanNs
	case 2:
		d = math.Exp(sv.mu + sv.sig*sv.rng.NormFloat64())
	default:
		d = sv.meanNs
	}
	return max(int64(math.Round(d)), 1)
}

// arrival handles the request of server si scheduled at s.now and
// schedules the next one.
func (s *sim) arrival(si int32) {
	sv := &s.servers[si]
	var next int64
	if sv.periodic {
		sv.k++
		next = sv.origin + int64(float64(sv.k)*sv.gapNs)
	} else {
		next = s.now + int64(sv.rng.ExpFloat64()*sv.gapNs)
	}
	s.push(event{t: next, kind: evArrival, a: si})
	if s.inWindow() {
		sv.arrivals++
	}
	if sv.waiting >= sv.qcap {
		if s.inWindow() {
			sv.dropped++
		}
		return
	}
	var slot int32
	if n := len(sv.free); n > 0 {
		slot = sv.free[n-1]
		sv.free = sv.free[:n-1]
	} else {
		slot = int32(len(sv.arrAt))
		sv.arrAt = append(sv.arrAt, 0)
		sv.left = append(sv.left, 0)
		sv.untaken = append(sv.untaken, 0)
	}
	sv.arrAt[slot] = s.now
	sv.left[slot] = sv.fanout
	sv.untaken[slot] = sv.fanout
	sv.waiting++
	for k := int32(0); k < sv.fanout; k++ {
		sv.queue = append(sv.queue, slot)
		if len(sv.idle) > 0 {
			w := sv.idle[0]
			sv.idle = sv.idle[1:]
			s.arrivalWake(w)
		}
	}
}

// claimNs is the CPU a woken worker spends before it has taken the queue's
// head: the agent's worker takes the lock, admits what is due and claims
// (a few hundred ns; the wake-up's own costs come on top, in runTask).
const claimNs = 300

// arrivalWake wakes idle worker ti for the sub-request that arrived now:
// the worker slept to this arrival on its own timer (clock_nanosleep to
// the absolute arrival time, an hrtimer with the task's slack: armTimer),
// so it wakes as a timer expiry does and counts its latency from the
// arrival. Its first burst is the claim (t.req −1); serviceDone then gives
// it the queue's head, or puts it back to sleep.
func (s *sim) arrivalWake(ti int32) {
	t := &s.tasks[ti]
	t.req = -1
	t.workEnd = s.ents[t.se].sumExec + claimNs
	s.armTimer(ti, s.now)
}

// takeRequest gives request slot to worker ti: its next CPU burst is the
// sub-request's service time.
func (s *sim) takeRequest(ti, slot int32) {
	t := &s.tasks[ti]
	sv := &s.servers[t.srv]
	t.req = slot
	t.workEnd = s.ents[t.se].sumExec + sv.serviceDraw()
	sv.untaken[slot]--
	if sv.untaken[slot] == 0 {
		sv.waiting--
	}
}

// serviceDone is called when worker ti has run its sub-request's service
// time, or its claim after a wake-up (t.req −1): the request completes if
// this was its last sub-request, and the worker takes the queue's head or
// blocks on the empty queue.
func (s *sim) serviceDone(ti int32) {
	t := &s.tasks[ti]
	sv := &s.servers[t.srv]
	inWin := s.inWindow()
	if slot := t.req; slot >= 0 {
		t.req = -1
		if inWin {
			t.ops++
		}
		sv.left[slot]--
		if sv.left[slot] == 0 {
			if inWin {
				sv.completed++
				sv.hist.record(s.now - sv.arrAt[slot])
			}
			sv.free = append(sv.free, slot)
		}
	}
	if sv.qHead < len(sv.queue) {
		next := sv.queue[sv.qHead]
		sv.qHead++
		if sv.qHead == len(sv.queue) {
			sv.queue, sv.qHead = sv.queue[:0], 0
		} else if sv.qHead > 4096 && sv.qHead*2 > len(sv.queue) {
			n := copy(sv.queue, sv.queue[sv.qHead:])
			sv.queue, sv.qHead = sv.queue[:n], 0
		}
		s.takeRequest(ti, next)
		s.armRunEnd(t.cpu)
		return
	}
	t.workEnd = never
	s.blockTask(ti)
	sv.idle = append(sv.idle, ti)
}

// clockReadSliceEnd is the CPU time after which the running entity se of a
// worker that reads its CPU clock (readsCPUClock) uses up its EEVDF
// request. The agent's worker runs its work by reading its thread's CPU
// clock in a loop (spinCPU), and every
// clock_gettime(CLOCK_THREAD_CPUTIME_ID) of a running task goes through
// task_sched_runtime() → update_curr_fair() → update_curr() of the task's
// own cfs_rq (kernel/sched/core.c, fair.c, v6.6–v6.18): the request's end
// is seen within microseconds (update_deadline(), then resched_curr() when
// others are queued, taken on the system call's return), not at the next
// tick. The run end armed here makes runEnd call updateCurr then; a burst
// that is not over re-arms for the next request.
func (s *sim) clockReadSliceEnd(se int32) int64 { return clockReadSliceEndOf(&s.ents[se]) }

// clockReadSliceEndOf is clockReadSliceEnd of an entity held by pointer.
func clockReadSliceEndOf(e *entity) int64 {
	v := e.deadline - e.vruntime
	if v <= 0 {
		return 0
	}
	if e.weight == nice0Load {
		return v
	}
	return (v*e.weight + nice0Load - 1) / nice0Load
}

// serverMetrics fills a Server group's request metrics from its replicas.
// A Server group has no wakeupLatencyUs: the agent's worker records request
// latency only (its timer wake-ups are not a metric of their own), so the
// prediction carries what the measurement can be compared with.
func (s *sim) serverMetrics(gi int, gm *Metrics, secs float64) {
	gm.WakeupLatencyUs = nil
	var h histogram
	var arrived, done, dropped int64
	for i := range s.servers {
		sv := &s.servers[i]
		if sv.group != int32(gi) {
			continue
		}
		h.merge(&sv.hist)
		arrived += sv.arrivals
		done += sv.completed
		dropped += sv.dropped
	}
	l := h.latency()
	if h.n > 0 {
		l.P95 = h.quantile(0.95) / 1000
	}
	l.Above = h.above(s.in.LatencyThresholdsNs)
	gm.RequestLatencyUs = l
	of := float64(arrived) / secs
	tp := float64(done) / secs
	dr := float64(dropped) / secs
	gm.Offered = &of
	gm.Throughput = &tp
	gm.Dropped = &dr
	gm.OpsPerSec = &tp
}
