package cyclictest

import (
	"math"
	"strings"
	"testing"
)

// out is cyclictest -h 8 -q output in the shape rt-tests 2.x prints it:
// buckets 0..7, then the summary comments.
const out = `# /dev/cpu_dma_latency set to 0us
# Histogram
000000 000000
000001 000000
000002 000010
000003 000070
000004 000005
000005 000000
000006 000003
000007 000002
# Total: 000000100
# Min Latencies: 00002
# Avg Latencies: 00003
# Max Latencies: 00011
# Histogram Overflows: 00010
# Histogram Overflow at cycle number:
# Thread 0: 00012 00040 # 00008 others
`

func TestParse(t *testing.T) {
	h, err := Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Total(); got != 100 {
		t.Errorf("total %d, want 100 (90 in buckets, 10 overflows)", got)
	}
	for _, c := range []struct {
		p    float64
		want float64
	}{{0.05, 2}, {0.10, 2}, {0.11, 3}, {0.80, 3}, {0.85, 4}, {0.88, 6}, {0.90, 7}, {0.91, math.Inf(1)}} {
		if got := h.Quantile(c.p); got != c.want {
			t.Errorf("Quantile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	for _, c := range []struct {
		us   int
		want int64
	}{{0, 100}, {3, 90}, {4, 20}, {6, 15}, {7, 12}, {8, 10}, {100, 10}} {
		if got := h.Beyond(c.us); got != c.want {
			t.Errorf("Beyond(%d) = %d, want %d", c.us, got, c.want)
		}
	}
	if got := h.Max(); got != 7 {
		t.Errorf("Max = %d, want 7", got)
	}
}

func TestParseRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"no histogram":  "# Min Latencies: 00002\n",
		"two threads":   "000000 000001 000002\n# Histogram Overflows: 00000 00000\n",
		"two overflows": "000000 000001\n# Histogram Overflows: 00000 00001\n",
		"bad count":     "000000 0x1\n",
	} {
		if h, err := Parse(strings.NewReader(in)); err == nil {
			t.Errorf("%s: parsed as %+v, want an error", name, h)
		}
	}
}
