package v1alpha1

import (
	"fmt"
	"regexp"
	"sort"
)

// MaxKnobRecords is the most records NodeRunStatus.Knobs holds (its MaxItems).
const MaxKnobRecords = 256

// MaxWindows is the most window results a NodeRun's status holds (the
// schema's MaxItems of status.windows): variants × repetitions is bounded
// by the experiment's schema to fit.
const MaxWindows = 160

// replicaSuffix is a replica's index at the end of a cgroup's name
// ("cgroup schedlab/x/web-17").
var replicaSuffix = regexp.MustCompile(`-[0-9]+$`)

// knobKind is what records of one kind share: the name with a replica index
// replaced by "*" ("cgroup schedlab/x/web-*").
func knobKind(name string) string {
	if k := replicaSuffix.ReplaceAllString(name, "-*"); k != name {
		return k
	}
	return name
}

// AggregateKnobRecords returns recs unchanged when they fit in max records.
// Otherwise the records of each kind (the same knob of the replicas of one
// group) become one record with their count, ok only when all were, and the
// values of the first; records that were not restored keep their own record
// first, as far as the list allows. The result never holds more than max.
func AggregateKnobRecords(recs []KnobRecord, max int) []KnobRecord {
	if len(recs) <= max || max < 2 {
		if len(recs) > max {
			return recs[:max]
		}
		return recs
	}
	type kind struct {
		rec   KnobRecord
		count int32
	}
	var order []string
	kinds := map[string]*kind{}
	var failed []KnobRecord
	for _, r := range recs {
		n := r.Count
		if n < 1 {
			n = 1
		}
		k := knobKind(r.Name)
		if !r.OK {
			failed = append(failed, r)
		}
		if g := kinds[k]; g != nil {
			g.count += n
			g.rec.OK = g.rec.OK && r.OK
			continue
		}
		order = append(order, k)
		rec := r
		kinds[k] = &kind{rec: rec, count: n}
	}
	out := make([]KnobRecord, 0, max)
	for _, k := range order {
		g := kinds[k]
		rec := g.rec
		if g.count > 1 {
			rec.Name, rec.Count = k, g.count
		}
		out = append(out, rec)
	}
	if len(out) > max {
		// More kinds than room: keep the first max-1 and count the rest.
		var rest int32
		ok := true
		for _, r := range out[max-1:] {
			rest += max32(r.Count, 1)
			ok = ok && r.OK
		}
		out = append(out[:max-1], KnobRecord{Name: fmt.Sprintf("%d more knobs", rest), Count: rest, OK: ok})
		return out
	}
	// Room left: the knobs that were not restored, each on its own, so a
	// person sees which cgroup or file to look at.
	sort.SliceStable(failed, func(i, j int) bool { return failed[i].Name < failed[j].Name })
	for _, r := range failed {
		if len(out) == max {
			break
		}
		if r.Count > 1 || kinds[knobKind(r.Name)].count <= 1 {
			continue // already a record of its own
		}
		out = append(out, r)
	}
	return out
}

func max32(a, b int32) int32 {
	if a > b {
		return a
	}
	return b
}
