package simengine

import "math/bits"

// histogram is a log-linear latency histogram (HDR style): exact below 64ns,
// then 32 sub-buckets per power of two (≤3% relative bucket width), with
// exact count, sum and max. Percentiles interpolate within a bucket.
//
// The buckets are stored sparsely: one chunk of histSub buckets (a power
// of two, 256 bytes) is allocated the first time a value falls in it. A
// task's wake-up latencies fall in a few powers of two, so its histogram
// is a few chunks instead of histBuckets counts (15 KB), which a run of
// hundreds of latency tasks allocated, zeroed and faulted in whole.
type histogram struct {
	chunks [histChunks]*histChunk
	n      int64
	sum    float64
	max    int64
}

// histChunk is the counts of the buckets of one chunk.
type histChunk [histSub]int64

const (
	histSub     = 32
	histLinear  = 2 * histSub
	histBuckets = histLinear + 58*histSub
	histChunks  = histBuckets / histSub
)

func histIndex(v int64) int {
	if v < histLinear {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - 6 // v>>shift in [32, 64)
	return histLinear + (shift-1)*histSub + int(v>>uint(shift)) - histSub
}

// histBounds returns the [lo, hi) value range of bucket i.
func histBounds(i int) (int64, int64) {
	if i < histLinear {
		return int64(i), int64(i) + 1
	}
	j := i - histLinear
	shift := uint(j/histSub + 1)
	lo := int64(j%histSub+histSub) << shift
	return lo, lo + 1<<shift
}

func (h *histogram) record(v int64) {
	if v < 0 {
		v = 0
	}
	h.add(histIndex(v), 1)
	h.n++
	h.sum += float64(v)
	if v > h.max {
		h.max = v
	}
}

// add adds c to bucket i's count, allocating its chunk if it has none.
func (h *histogram) add(i int, c int64) {
	k := h.chunks[i/histSub]
	if k == nil {
		k = new(histChunk)
		h.chunks[i/histSub] = k
	}
	k[i%histSub] += c
}

// recordLatency is t.hist.record(v) with the count, sum and max kept in
// the task (finishLatency copies them into the histogram). The sum is
// kept as an exact integer while it stays below 2^53, where every partial
// sum of the float64 accumulation record does is exact, so it is the same
// number; from there on it is accumulated in float64 as record does.
func (t *task) recordLatency(v int64) {
	if v < 0 {
		v = 0
	}
	t.hist.add(histIndex(v), 1)
	t.latN++
	if !t.latFloat {
		if v < 1<<53-t.latISum {
			t.latISum += v
		} else {
			t.latFloat = true
			t.latFSum = float64(t.latISum) + float64(v)
		}
	} else {
		t.latFSum += float64(v)
	}
	if v > t.latMax {
		t.latMax = v
	}
}

// finishLatency stores the task's latency count, sum and max in its
// histogram.
func (t *task) finishLatency() {
	h := t.hist
	h.n = t.latN
	if t.latFloat {
		h.sum = t.latFSum
	} else {
		h.sum = float64(t.latISum)
	}
	h.max = t.latMax
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.all() {
		h.add(i, c)
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// all yields the index and count of every bucket with a non-zero count,
// in increasing order.
func (h *histogram) all() func(yield func(int, int64) bool) {
	return func(yield func(int, int64) bool) {
		for j, k := range h.chunks {
			if k == nil {
				continue
			}
			for i, c := range k {
				if c != 0 && !yield(j*histSub+i, c) {
					return
				}
			}
		}
	}
}

// quantile returns the q-quantile in ns.
func (h *histogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := q * float64(h.n) // values below this rank
	var cum int64
	for i, c := range h.all() {
		if float64(cum+c) >= rank {
			lo, hi := histBounds(i)
			hi = min(hi, h.max+1)
			if hi <= lo {
				hi = lo + 1
			}
			f := (rank - float64(cum)) / float64(c)
			return float64(lo) + f*float64(hi-lo-1)
		}
		cum += c
	}
	return float64(h.max)
}

// quantiles is quantile() for increasing qs in one pass over the buckets
// (the same arithmetic, so the same values).
func (h *histogram) quantiles(qs [4]float64) [4]float64 {
	var out [4]float64
	if h.n == 0 {
		return out
	}
	var rank [4]float64
	for k, q := range qs {
		rank[k] = q * float64(h.n)
	}
	k := 0
	var cum int64
	for i, c := range h.all() {
		for k < len(rank) && float64(cum+c) >= rank[k] {
			lo, hi := histBounds(i)
			hi = min(hi, h.max+1)
			if hi <= lo {
				hi = lo + 1
			}
			f := (rank[k] - float64(cum)) / float64(c)
			out[k] = float64(lo) + f*float64(hi-lo-1)
			k++
		}
		if k == len(rank) {
			return out
		}
		cum += c
	}
	for ; k < len(rank); k++ {
		out[k] = float64(h.max)
	}
	return out
}

func (h *histogram) latency() *Latency {
	l := &Latency{Count: h.n}
	if h.n == 0 {
		return l
	}
	qs := h.quantiles([4]float64{0.50, 0.90, 0.99, 0.999})
	l.P50 = qs[0] / 1000
	l.P90 = qs[1] / 1000
	l.P99 = qs[2] / 1000
	l.P999 = qs[3] / 1000
	l.Max = float64(h.max) / 1000
	l.Mean = h.sum / float64(h.n) / 1000
	n := float64(h.n)
	l.Over100us = float64(h.countAbove(100_000)) / n
	l.Over1ms = float64(h.countAbove(1_000_000)) / n
	l.Over10ms = float64(h.countAbove(10_000_000)) / n
	return l
}

// above is the fraction of values above each threshold (ns).
func (h *histogram) above(thresholds []int64) []float64 {
	if len(thresholds) == 0 {
		return nil
	}
	out := make([]float64, len(thresholds))
	if h.n == 0 {
		return out
	}
	for i, v := range thresholds {
		out[i] = float64(h.countAbove(v)) / float64(h.n)
	}
	return out
}

// countAbove is the number of values above v (ns), counting a bucket that
// straddles v in proportion to the part of it above v.
func (h *histogram) countAbove(v int64) int64 {
	var n float64
	first := histIndex(v)
	for i, c := range h.all() {
		if i < first {
			continue
		}
		lo, hi := histBounds(i)
		if lo > v {
			n += float64(c)
			continue
		}
		n += float64(c) * float64(hi-1-v) / float64(hi-lo)
	}
	return int64(n + 0.5)
}

// log2Us is the whole distribution in power-of-two buckets of µs (see
// Latency.Histogram).
func (h *histogram) log2Us() []int64 {
	var out []int64
	for i, c := range h.all() {
		lo, _ := histBounds(i)
		b := 0
		if us := lo / 1000; us > 0 {
			b = bits.Len64(uint64(us))
		}
		for len(out) <= b {
			out = append(out, 0)
		}
		out[b] += c
	}
	return out
}

// result builds the Result from the window accumulators.
func (s *sim) result() *Result {
	in := s.in
	dur := float64(in.DurationNs)
	secs := dur / 1e9
	scale := float64(s.bgNum) / 1e6
	res := &Result{
		Events:         s.nEvents,
		SimulatedNs:    s.end,
		CPUUtilization: make([]float64, s.nCPU),
	}
	for c := range s.cpus {
		res.CPUUtilization[c] = float64(s.cpus[c].busyNs) * scale / dur
	}
	var totalCPU float64
	for i := range s.tasks {
		if s.tasks[i].kind != patForeign {
			totalCPU += float64(s.tasks[i].cpuNs)
		}
	}
	totalCPU *= scale / dur
	ti := 0
	for gi := range in.Groups {
		g := &in.Groups[gi]
		reps := g.Replicas
		if reps == 0 {
			reps = 1
		}
		nt := reps * g.Tasks
		if g.Pattern.Type == Foreign {
			ti += nt
			continue
		}
		gr := GroupResult{Name: g.Name, Tasks: nt, PerTask: make([]Metrics, 0, nt)}
		var gh *histogram
		var gcpu, gvol, ginv, gops float64
		var gper, gmiss int64
		for k := 0; k < nt; k++ {
			t := &s.tasks[ti]
			ti++
			m := Metrics{
				CPU:               float64(t.cpuNs) * scale / dur,
				CtxSwitchesPerSec: CtxSwitches{Voluntary: float64(t.vol) / secs, Involuntary: float64(t.invol) / secs},
			}
			m.CPUPerTask = m.CPU
			if totalCPU > 0 {
				m.Share = m.CPU / totalCPU
			}
			if t.hist != nil {
				t.finishLatency()
				m.WakeupLatencyUs = t.hist.latency()
				if gh == nil {
					gh = &histogram{}
				}
				gh.merge(t.hist)
			}
			if t.kind != patHog {
				ops := float64(t.ops) / secs
				m.OpsPerSec = &ops
				gops += ops
			}
			if t.kind == patPeriodic {
				r := 0.0
				if t.periods > 0 {
					r = float64(t.misses) / float64(t.periods)
				}
				m.DeadlineMissRatio = &r
				gper += t.periods
				gmiss += t.misses
			}
			gcpu += m.CPU
			gvol += m.CtxSwitchesPerSec.Voluntary
			ginv += m.CtxSwitchesPerSec.Involuntary
			gr.PerTask = append(gr.PerTask, m)
		}
		gm := Metrics{CPU: gcpu, CtxSwitchesPerSec: CtxSwitches{Voluntary: gvol, Involuntary: ginv}}
		if nt > 0 {
			gm.CPUPerTask = gcpu / float64(nt)
		}
		if totalCPU > 0 {
			gm.Share = gcpu / totalCPU
		}
		if g.Pattern.Type != "" && g.Pattern.Type != Hog {
			if gh == nil {
				gh = &histogram{}
			}
			gm.WakeupLatencyUs = gh.latency()
			gm.WakeupLatencyUs.Histogram = gh.log2Us()
			gm.WakeupLatencyUs.Above = gh.above(in.LatencyThresholdsNs)
			if g.Pattern.Type == PingPong {
				gops /= 2 // a round trip is one run of each partner
			}
			gm.OpsPerSec = &gops
			if g.Pattern.Type == Periodic {
				r := 0.0
				if gper > 0 {
					r = float64(gmiss) / float64(gper)
				}
				gm.DeadlineMissRatio = &r
			}
		}
		if g.Pattern.Type == Server {
			s.serverMetrics(gi, &gm, secs)
		}
		gr.Metrics = gm
		res.Groups = append(res.Groups, gr)
	}
	return res
}
