package simengine

import (
	"slices"
	"testing"
)

// OrderQuantiles takes the value at rank level × n of the sorted values,
// at every QuantileLevels level, and leaves its input as it was.
func TestOrderQuantiles(t *testing.T) {
	xs := make([]int64, 200)
	for i := range xs {
		xs[i] = int64(200 - i)
	}
	in := slices.Clone(xs)
	if got, want := OrderQuantiles(xs), []int64{11, 51, 101, 151, 181, 191, 199}; !slices.Equal(got, want) {
		t.Errorf("OrderQuantiles = %v, want %v", got, want)
	}
	if !slices.Equal(xs, in) {
		t.Error("OrderQuantiles changed its input")
	}
	if got := OrderQuantiles(nil); got != nil {
		t.Errorf("OrderQuantiles(nil) = %v, want nil", got)
	}
}
