package workload

import (
	"fmt"

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

// MarshalBinary encodes the histogram compactly (HdrHistogram's compressed
// V2 encoding, preceded by the clamped count).
func (h *Histogram) MarshalBinary() ([]byte, error) {
	b, err := h.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("encoding histogram: %w", err)
	}
	out := make([]byte, 8, 8+len(b))
	for i := range 8 {
		out[i] = byte(uint64(h.clamped) >> (8 * i))
	}
	return append(out, b...), nil
}

// UnmarshalBinary decodes what MarshalBinary encoded.
func (h *Histogram) UnmarshalBinary(b []byte) error {
	if len(b) < 8 {
		return fmt.Errorf("decoding histogram: %d bytes is too short", len(b))
	}
	var c uint64
	for i := range 8 {
		c |= uint64(b[i]) << (8 * i)
	}
	d, err := hdrhistogram.Decode(b[8:])
	if err != nil {
		return fmt.Errorf("decoding histogram: %w", err)
	}
	if d.LowestTrackableValue() != histLowest || d.HighestTrackableValue() < histHighest || d.SignificantFigures() != histDigits {
		return fmt.Errorf("decoding histogram: geometry %d..%d/%d is not %d..%d/%d",
			d.LowestTrackableValue(), d.HighestTrackableValue(), d.SignificantFigures(), histLowest, histHighest, histDigits)
	}
	n := NewHistogram()
	n.h.Merge(d)
	n.clamped = int64(c)
	*h = *n
	return nil
}
