package main

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/schedlab/schedlab/internal/experiment"
)

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// tHalf95 is the half-width of the 95 % t-interval of v's mean:
// t(0.975, n−1) · s / √n; 0 for fewer than two values.
func tHalf95(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	return experiment.ConfidenceHalfWidth(stat.StdDev(v, nil), len(v))
}

func minMax(v []float64) (lo, hi float64) {
	if len(v) == 0 {
		return 0, 0
	}
	lo, hi = v[0], v[0]
	for _, x := range v[1:] {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// poisson95 is the exact (Garwood) 95 % interval of a Poisson mean from an
// observed count k: [χ²(0.025; 2k)/2, χ²(0.975; 2k+2)/2], lower end 0 at
// k = 0.
func poisson95(k int64) (lo, hi float64) {
	if k > 0 {
		lo = distuv.ChiSquared{K: float64(2 * k)}.Quantile(0.025) / 2
	}
	hi = distuv.ChiSquared{K: float64(2*k + 2)}.Quantile(0.975) / 2
	return lo, hi
}
