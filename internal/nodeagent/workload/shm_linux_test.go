package workload

import (
	"math"
	"slices"
	"testing"
)

// The shared histogram's buckets follow HdrHistogram's layout: every value
// falls in a bucket whose middle is within 1/128 of it, buckets are
// ordered, and the largest value fits.
func TestShmBuckets(t *testing.T) {
	prev := -1
	for _, v := range []int64{0, 1, 2, 127, 128, 255, 256, 257, 511, 512, 1000, 65_432, 1_000_000, 123_456_789, 9_999_999_999, shmHistLimit} {
		i := shmIndex(v)
		if i < 0 || i >= shmHistLen {
			t.Fatalf("value %d: bucket %d outside 0..%d", v, i, shmHistLen-1)
		}
		if i < prev {
			t.Errorf("value %d: bucket %d before the previous value's %d", v, i, prev)
		}
		prev = i
		if mid := shmValue(i); math.Abs(float64(mid-v)) > float64(v)/128+1 {
			t.Errorf("value %d: bucket %d's middle %d is more than 1/128 off", v, i, mid)
		}
	}
	for i := 0; i < shmHistLen; i++ {
		if got := shmIndex(shmValue(i)); got != i {
			t.Fatalf("bucket %d: middle %d maps to bucket %d", i, shmValue(i), got)
		}
	}
}

func TestLnNosplit(t *testing.T) {
	for _, x := range []float64{1e-16, 1e-9, 0.001, 0.3, 0.5, 0.7071, 0.99999, 1, 1.5, 2, 1e6} {
		if got, want := lnNosplit(x), math.Log(x); math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("ln(%g) = %.17g, want %.17g", x, got, want)
		}
	}
}

// expDraw is exponential: the Kolmogorov-Smirnov distance of 20,000 draws
// from the exponential CDF is far below the 1% critical value
// (1.63/√n = 0.0115), while a uniform of the same mean is far above it.
func TestExpDrawIsExponential(t *testing.T) {
	const n, mean = 20000, 1e6
	state := uint64(42)
	draws := make([]float64, n)
	var sum float64
	for i := range draws {
		draws[i] = float64(expDraw(&state, mean))
		sum += draws[i]
	}
	if m := sum / n; math.Abs(m-mean)/mean > 0.03 {
		t.Errorf("mean %.0f, want %.0f ± 3%%", m, mean)
	}
	ks := func(xs []float64) float64 {
		xs = slices.Clone(xs)
		slices.Sort(xs)
		var d float64
		for i, x := range xs {
			f := 1 - math.Exp(-x/mean)
			d = math.Max(d, math.Max(math.Abs(f-float64(i)/n), math.Abs(f-float64(i+1)/n)))
		}
		return d
	}
	if d := ks(draws); d > 1.63/math.Sqrt(n) {
		t.Errorf("KS distance %.4f from the exponential, want below %.4f", d, 1.63/math.Sqrt(n))
	}
	uniform := make([]float64, n)
	for i := range uniform {
		uniform[i] = 2 * mean * (float64(i) + 0.5) / n
	}
	if d := ks(uniform); d < 0.05 {
		t.Errorf("the KS check does not tell a uniform from an exponential (distance %.4f)", d)
	}
}
