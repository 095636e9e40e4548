package util

import (
	"math"
	"testing"
)

func TestFairSharesAndNoiseLoss(t *testing.T) {
	for _, c := range []struct {
		cpus            float64
		weights         []float64
		wantShare, loss []float64
	}{
		// Two CPUs: the 400 group alone on one, 100 and 200 split the other 1:2.
		{2, []float64{100, 200, 400}, []float64{1.0 / 3, 2.0 / 3, 1}, []float64{1.0 / 3, 2.0 / 3, 1}},
		// One CPU: 1/7, 2/7, 4/7; others' time comes out of all three by weight.
		{1, []float64{100, 200, 400}, []float64{1.0 / 7, 2.0 / 7, 4.0 / 7}, []float64{1.0 / 7, 2.0 / 7, 4.0 / 7}},
		// Four CPUs for three tasks: each capped at one CPU.
		{4, []float64{100, 200, 400}, []float64{1, 1, 1}, []float64{1, 1, 1}},
	} {
		share, loss := FairShares(c.cpus, c.weights), NoiseLoss(c.cpus, c.weights)
		for i := range c.weights {
			if math.Abs(share[i]-c.wantShare[i]) > 1e-9 || math.Abs(loss[i]-c.loss[i]) > 1e-9 {
				t.Errorf("%v CPUs, weights %v: share %v loss %v, want %v and %v", c.cpus, c.weights, share, loss, c.wantShare, c.loss)
				break
			}
		}
	}
}

func TestSharedByWeight(t *testing.T) {
	// Two CPUs: 100 and 200 share what they got 1:2; 400 is capped.
	got := SharedByWeight(2, []float64{100, 200, 400}, []float64{0.2, 0.7, 0.9})
	if math.Abs(got[0]-0.3) > 1e-9 || math.Abs(got[1]-0.6) > 1e-9 || !math.IsNaN(got[2]) {
		t.Errorf("SharedByWeight = %v, want [0.3 0.6 NaN]", got)
	}
}
