package v1alpha1

import (
	"fmt"
	"testing"
)

// 300 replicas of one group plus a few scheduler knobs: 304 records, more
// than the list's 256, aggregate per kind; a cgroup that was not restored
// keeps its own record.
func TestAggregateKnobRecords(t *testing.T) {
	var recs []KnobRecord
	for _, n := range []string{"autogroup", "features.PLACE_LAG", "base_slice_ns"} {
		recs = append(recs, KnobRecord{Name: n, Original: "1", Set: "0", Restored: "1", OK: true})
	}
	for i := 0; i < 300; i++ {
		r := KnobRecord{Name: fmt.Sprintf("cgroup schedlab/x/web-%d", i), Set: "created", Restored: "removed", OK: i != 117}
		recs = append(recs, r)
	}
	recs = append(recs, KnobRecord{Name: "cgroup schedlab/x", Set: "created", Restored: "removed", OK: true})
	if len(recs) != 304 {
		t.Fatalf("%d records", len(recs))
	}
	got := AggregateKnobRecords(recs, MaxKnobRecords)
	if len(got) > MaxKnobRecords {
		t.Fatalf("%d records after aggregation, more than %d", len(got), MaxKnobRecords)
	}
	var total int32
	byName := map[string]KnobRecord{}
	for _, r := range got {
		byName[r.Name] = r
		if r.Count > 0 {
			total += r.Count
		} else {
			total++
		}
	}
	web, ok := byName["cgroup schedlab/x/web-*"]
	if !ok || web.Count != 300 || web.OK {
		t.Errorf("aggregated web record %+v (present %v), want count 300 and ok false", web, ok)
	}
	if r, ok := byName["cgroup schedlab/x/web-117"]; !ok || r.OK {
		t.Errorf("the unrestored cgroup web-117 has no record of its own: %+v", got)
	}
	if _, ok := byName["autogroup"]; !ok {
		t.Errorf("autogroup's record is gone: %+v", got)
	}
	// Each knob counted once in the aggregates, plus the failed one again.
	if total != 304+1 {
		t.Errorf("records stand for %d knobs, want 305 (304 and the failed one on its own)", total)
	}
	if small := recs[:10]; len(AggregateKnobRecords(small, MaxKnobRecords)) != 10 {
		t.Errorf("records that fit were changed")
	}
}

// More kinds than room: the list is cut with a record counting the rest.
func TestAggregateKnobRecordsManyKinds(t *testing.T) {
	var recs []KnobRecord
	for i := 0; i < 20; i++ {
		recs = append(recs, KnobRecord{Name: fmt.Sprintf("sysctls.k%c", 'a'+i), OK: true})
	}
	got := AggregateKnobRecords(recs, 8)
	if len(got) != 8 || got[7].Count != 13 {
		t.Errorf("got %d records, last %+v; want 8 with the last counting 13", len(got), got[len(got)-1])
	}
}
