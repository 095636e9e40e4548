package nodeagent

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent/workload"
)

func TestHostPausesReported(t *testing.T) {
	if hostPauses(nil) != nil {
		t.Error("no Hog: something reported")
	}
	got := hostPauses(&workload.HostPauses{Hogs: 2, ObservedNs: 9e9, HogCPUNs: 17e9, Lost: 1, OffGaps: 7,
		ShortStalls: []workload.Pause{{StartNs: 3, LengthNs: 2e6, Seen: 2}, {StartNs: 4, LengthNs: 3e6, Seen: 1, OthersRan: 1}, {StartNs: 6, LengthNs: 1e6, Seen: 1},
			{StartNs: 9, LengthNs: 1.2e6, Seen: 1, OthersRan: 1}, {StartNs: 10, LengthNs: 1.1e6, Seen: 1}},
		VCPUStalls: []workload.Pause{{StartNs: 7, LengthNs: 100e6, Seen: 1, OthersRan: 1}, {StartNs: 8, LengthNs: 7e6, Seen: 1, OthersRan: 1}},
		Pauses:     []workload.Pause{{StartNs: 1, LengthNs: 20e6, Seen: 2}, {StartNs: 5, LengthNs: 6e6, Seen: 1}}})
	// The short stalls one hog saw: 1, 1.1, 1.2, 3 ms (the 2 ms one both saw
	// is the machine's, not among them).
	want := &v1alpha1.HostPauseMeasurement{Hogs: 2, ObservedNs: 9e9, HogCPUNs: 17e9, Count: 2, LengthsNs: []int64{20e6, 6e6},
		QuantilesNs: []int64{6e6, 6e6, 20e6, 20e6, 20e6, 20e6, 20e6}, SeenByMore: 1, OffCPUGaps: 7,
		ShortStalls: 5, ShortStallsSeenByMore: 1, ShortStallsOthersRan: 2, ShortStallQuantilesNs: []int64{1e6, 1.1e6, 1.2e6, 3e6, 3e6, 3e6, 3e6},
		LostStalls: 1, VCPUStalls: 2, VCPUStallLongestNs: 100e6, VCPUStallLengthsNs: []int64{100e6, 7e6}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := hostPauses(&workload.HostPauses{Hogs: 1, ObservedNs: 2e9}); got == nil || got.Count != 0 || got.LengthsNs != nil || got.QuantilesNs != nil || got.ShortStallQuantilesNs != nil || got.VCPUStallLengthsNs != nil {
		t.Errorf("observed, none seen: %+v", got)
	}
}
