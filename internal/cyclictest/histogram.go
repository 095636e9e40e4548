// Package cyclictest reads the latency histogram that rt-tests' cyclictest
// prints with -h N: one line per microsecond bucket ("US COUNT", one count
// column per thread; schedlab runs one thread), comment lines starting with
// "#", and "# Histogram Overflows:" for the wake-ups N µs or more late. The
// reference comparisons (test/reference) and the validation table
// (hack/validation) read cyclictest's output through it, so that both count
// a wake-up as late the same way.
package cyclictest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Histogram is cyclictest's latency histogram of one thread.
type Histogram struct {
	// Buckets[us] is the number of wake-ups us µs late (rounded down).
	Buckets []int64
	// Overflow is the number of wake-ups beyond the last bucket.
	Overflow int64
}

// Parse reads cyclictest -h output. Lines it does not know are left alone;
// a bucket line with more than one count column is refused (one thread).
func Parse(r io.Reader) (*Histogram, error) {
	h := &Histogram{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "# Histogram Overflows:"); ok {
			f := strings.Fields(v)
			if len(f) != 1 {
				return nil, fmt.Errorf("line %d: %d overflow counts: run cyclictest with one thread (-t 1 or none)", n, len(f))
			}
			c, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: overflow count: %w", n, err)
			}
			h.Overflow = c
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		us, err := strconv.Atoi(f[0])
		if err != nil || us < 0 {
			continue // a status line, not a bucket
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: %d count columns: run cyclictest with one thread (-t 1 or none)", n, len(f)-1)
		}
		c, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: bucket %d: %w", n, us, err)
		}
		for len(h.Buckets) <= us {
			h.Buckets = append(h.Buckets, 0)
		}
		h.Buckets[us] += c
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if h.Total() == 0 {
		return nil, errors.New("cyclictest printed no histogram: run it with -h N")
	}
	return h, nil
}

// Total is the number of wake-ups.
func (h *Histogram) Total() int64 {
	t := h.Overflow
	for _, c := range h.Buckets {
		t += c
	}
	return t
}

// Quantile is the lateness in µs at or below which a fraction p of the
// wake-ups lie: the smallest bucket whose cumulative count reaches p of
// the total; +Inf when that lies in the overflow.
func (h *Histogram) Quantile(p float64) float64 {
	total := float64(h.Total())
	var cum int64
	for us, c := range h.Buckets {
		cum += c
		if float64(cum) >= p*total {
			return float64(us)
		}
	}
	return math.Inf(1)
}

// Beyond is the number of wake-ups us µs or more late (the bucket us
// counts, the overflow too).
func (h *Histogram) Beyond(us int) int64 {
	n := h.Overflow
	for i := max(us, 0); i < len(h.Buckets); i++ {
		n += h.Buckets[i]
	}
	return n
}

// Max is the largest bucket with a wake-up in it, or -1 if none; the
// overflow is not in it (see Overflow).
func (h *Histogram) Max() int {
	for us := len(h.Buckets) - 1; us >= 0; us-- {
		if h.Buckets[us] > 0 {
			return us
		}
	}
	return -1
}
