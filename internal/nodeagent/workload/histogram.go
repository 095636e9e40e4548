package workload

import (
	"encoding/binary"
	"fmt"
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// Histogram geometry: 1 ns .. 10 s at 3 significant digits. Every histogram
// of this package has it, so merging is exact (bucket counts are added).
const (
	histLowest  = 1
	histHighest = 10_000_000_000
	histDigits  = 3
)

// Histogram records latencies in nanoseconds. Values below 0 are recorded as
// 0 and values above 10 s as 10 s (Clamped counts them).
type Histogram struct {
	h       *hdrhistogram.Histogram
	clamped int64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{h: hdrhistogram.New(histLowest, histHighest, histDigits)}
}

// Record adds one value in nanoseconds.
func (h *Histogram) Record(ns int64) {
	if ns < 0 {
		ns = 0
		h.clamped++
	} else if ns > histHighest {
		ns = histHighest
		h.clamped++
	}
	_ = h.h.RecordValue(ns) // in range by construction
}

// Reset empties the histogram.
func (h *Histogram) Reset() { h.h.Reset(); h.clamped = 0 }

// Merge adds every count of o into h. Both have this package's geometry, so
// nothing is approximated.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil {
		return
	}
	h.h.Merge(o.h)
	h.clamped += o.clamped
}

// Count is the number of values recorded.
func (h *Histogram) Count() int64 { return h.h.TotalCount() }

// Clamped is the number of values outside 0..10 s that were clamped.
func (h *Histogram) Clamped() int64 { return h.clamped }

// Quantile returns the value (ns) at quantile q in 0..1, 0 when empty.
func (h *Histogram) Quantile(q float64) int64 { return h.h.ValueAtQuantile(q * 100) }

// CountBelow is how many values lie in buckets wholly below ns.
func (h *Histogram) CountBelow(ns int64) int64 {
	var n int64
	for _, b := range h.h.Distribution() {
		if b.To <= ns {
			n += b.Count
		}
	}
	return n
}

// Max is the largest value recorded (ns, within the histogram's precision).
func (h *Histogram) Max() int64 { return h.h.Max() }

// Mean is the mean of the values recorded (ns).
func (h *Histogram) Mean() float64 { return h.h.Mean() }

// SummaryUs summarises the histogram in microseconds, as the API reports it.
func (h *Histogram) SummaryUs() v1alpha1.LatencySummary {
	if h == nil || h.Count() == 0 {
		return v1alpha1.LatencySummary{}
	}
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	return v1alpha1.LatencySummary{
		P50:   us(h.Quantile(0.50)),
		P90:   us(h.Quantile(0.90)),
		P99:   us(h.Quantile(0.99)),
		P999:  us(h.Quantile(0.999)),
		Max:   us(h.Max()),
		Mean:  h.Mean() / 1e3,
		Count: h.Count(),
	}
}

// LateFraction is the fraction of values later than 100 µs, 1 ms and
// 10 ms (a bucket counts as later when its lowest value is).
func (h *Histogram) LateFraction() v1alpha1.LateFraction {
	if h == nil || h.Count() == 0 {
		return v1alpha1.LateFraction{}
	}
	var over [3]int64
	limits := [3]int64{100_000, 1_000_000, 10_000_000}
	for _, b := range h.h.Distribution() {
		for i, l := range limits {
			if b.From > l {
				over[i] += b.Count
			}
		}
	}
	n := float64(h.Count())
	return v1alpha1.LateFraction{Over100us: float64(over[0]) / n, Over1ms: float64(over[1]) / n, Over10ms: float64(over[2]) / n}
}

// countsLen is the length of the counts array of this package's geometry.
var countsLen = len(hdrhistogram.New(histLowest, histHighest, histDigits).Export().Counts)

// Wire format: a version byte, the clamped count, the number of non-zero
// buckets, then for each the gap in bucket index from the previous one and
// its count, all as unsigned varints. Latency histograms have a few hundred
// non-zero buckets among ~25k, so this is a few hundred bytes, and encoding,
// decoding and merging stay exact and take microseconds (HdrHistogram's own
// compressed V2 encoding took ~4 ms per histogram here).
const wireVersion = 1

// MarshalBinary encodes the histogram compactly; see UnmarshalBinary.
func (h *Histogram) MarshalBinary() ([]byte, error) {
	counts := h.h.Export().Counts
	nz := 0
	for _, c := range counts {
		if c != 0 {
			nz++
		}
	}
	out := make([]byte, 0, 1+2*binary.MaxVarintLen64+nz*6)
	out = append(out, wireVersion)
	out = binary.AppendUvarint(out, uint64(h.clamped))
	out = binary.AppendUvarint(out, uint64(nz))
	prev := -1
	for i, c := range counts {
		if c == 0 {
			continue
		}
		if c < 0 {
			return nil, fmt.Errorf("encoding histogram: negative count %d at bucket %d", c, i)
		}
		out = binary.AppendUvarint(out, uint64(i-prev))
		out = binary.AppendUvarint(out, uint64(c))
		prev = i
	}
	return out, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded, checking every bucket
// index and count.
func (h *Histogram) UnmarshalBinary(b []byte) error {
	if len(b) < 1 || b[0] != wireVersion {
		return fmt.Errorf("decoding histogram: not a version %d histogram", wireVersion)
	}
	off := 1 // an offset, not a re-sliced b: no pointer writes in the loop
	next := func(what string) (uint64, error) {
		v, n := binary.Uvarint(b[off:])
		if n <= 0 {
			return 0, fmt.Errorf("decoding histogram: truncated at %s", what)
		}
		off += n
		return v, nil
	}
	clamped, err := next("the clamped count")
	if err != nil {
		return err
	}
	nz, err := next("the bucket count")
	if err != nil {
		return err
	}
	if nz > uint64(countsLen) {
		return fmt.Errorf("decoding histogram: %d buckets, the geometry has %d", nz, countsLen)
	}
	counts := make([]int64, countsLen)
	idx := -1
	for range nz {
		gap, err := next("a bucket index")
		if err != nil {
			return err
		}
		c, err := next("a bucket count")
		if err != nil {
			return err
		}
		if gap == 0 || gap > uint64(countsLen) || idx+int(gap) >= countsLen || c == 0 || c > math.MaxInt64/2 {
			return fmt.Errorf("decoding histogram: bad bucket (gap %d, count %d) after index %d", gap, c, idx)
		}
		idx += int(gap)
		counts[idx] = int64(c)
	}
	if off != len(b) {
		return fmt.Errorf("decoding histogram: %d bytes left over", len(b)-off)
	}
	snap := &hdrhistogram.Snapshot{LowestTrackableValue: histLowest, HighestTrackableValue: histHighest, SignificantFigures: histDigits, Counts: counts}
	if err := snap.Validate(); err != nil {
		return fmt.Errorf("decoding histogram: %w", err)
	}
	*h = Histogram{h: hdrhistogram.Import(snap), clamped: int64(clamped)}
	return nil
}
