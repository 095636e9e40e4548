package workload

import (
	"math/rand/v2"
	"testing"
)

func BenchmarkZZEncode(b *testing.B) {
	h := NewHistogram()
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		h.Record(int64(r.ExpFloat64() * 80e3))
	}
	var n int
	for b.Loop() {
		enc, _ := h.MarshalBinary()
		n = len(enc)
	}
	b.ReportMetric(float64(n), "bytes")
}

func BenchmarkZZDecode(b *testing.B) {
	h := NewHistogram()
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		h.Record(int64(r.ExpFloat64() * 80e3))
	}
	enc, _ := h.MarshalBinary()
	for b.Loop() {
		var d Histogram
		d.UnmarshalBinary(enc)
	}
}
func BenchmarkZZNew(b *testing.B) {
	for b.Loop() {
		NewHistogram()
	}
}
