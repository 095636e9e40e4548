package workload

import "sort"

// PauseMinNs is the shortest charged stall counted as a host pause
// (pause_linux.go says why 5 ms).
const PauseMinNs = 5_000_000

// HostPauses is what a window's Hog workers saw of the machine's host pauses
// (pause_linux.go tells how they see them).
type HostPauses struct {
	// Hogs is how many Hog tasks watched.
	Hogs int
	// ObservedNs is the wall time during which at least one of them was
	// current on a CPU, counted once however many were: the time in which
	// a pause could be seen.
	ObservedNs int64
	// HogCPUNs is the watching hogs' CPU time over the window, summed (the
	// stalls charged to them included): the CPU time in which a stall of
	// one vCPU could be seen, since a hog sees only the stalls of the vCPU
	// it is current on.
	HogCPUNs int64
	// Pauses are the pauses seen (stalls of PauseMinNs or more), in time
	// order, those of several hogs at overlapping times merged into one.
	Pauses []Pause
	// Lost counts stalls logged but overwritten in a hog's log before the
	// window's end read them (of unknown length: in neither Pauses nor
	// ShortStalls).
	Lost int64
	// OffGaps counts gaps of PauseMinNs or more in a hog's loop during
	// which it was not charged (preempted, not paused), over every hog.
	OffGaps int64
	// ShortStalls are the charged stalls of 1 ms up to PauseMinNs (merged
	// like pauses): not counted as pauses, since with one hog they cannot
	// be told from interrupt work (pause_linux.go).
	ShortStalls []Pause
	// VCPUStalls are the stalls of PauseMinNs or more that one hog saw
	// while another ran: one vCPU stopped, not the machine.
	VCPUStalls []Pause
}

// Pause is one host pause.
type Pause struct {
	// StartNs is CLOCK_MONOTONIC at the last clock read before it.
	StartNs int64
	// LengthNs is the CPU time charged over the gap (the longest, when
	// several hogs saw it).
	LengthNs int64
	// Seen is how many hogs saw it.
	Seen int
	// OthersRan is how many other hogs showed that they ran during it (the
	// most any record of it says): above 0 with Seen 1, one vCPU stopped,
	// not the machine.
	OthersRan int
}

// mergePauses turns the hogs' logged pauses into pauses: records whose gaps
// ([start, start+gap]) overlap are one pause of the whole machine seen by
// several hogs.
func mergePauses(recs []pauseRecord) []Pause {
	sort.Slice(recs, func(i, j int) bool { return recs[i].start < recs[j].start })
	var out []Pause
	var end int64
	for _, r := range recs {
		if len(out) > 0 && r.start <= end {
			p := &out[len(out)-1]
			p.LengthNs = max(p.LengthNs, r.charged)
			p.Seen++
			p.OthersRan = max(p.OthersRan, int(r.others))
			end = max(end, r.start+r.gap)
			continue
		}
		out = append(out, Pause{StartNs: r.start, LengthNs: r.charged, Seen: 1, OthersRan: int(r.others)})
		end = r.start + r.gap
	}
	return out
}

// splitStalls divides merged stalls into pauses (PauseMinNs or more, seen by
// every hog that was running or by two or more), one vCPU's stalls (seen by
// one hog while another ran) and short stalls.
func splitStalls(all []Pause) (pauses, vcpu, short []Pause) {
	for _, p := range all {
		switch {
		case p.LengthNs < PauseMinNs:
			short = append(short, p)
		case p.Seen == 1 && p.OthersRan > 0:
			vcpu = append(vcpu, p)
		default:
			pauses = append(pauses, p)
		}
	}
	return pauses, vcpu, short
}

// Count is how many pauses were seen.
func (h *HostPauses) Count() int64 {
	if h == nil {
		return 0
	}
	return int64(len(h.Pauses))
}

// PerHour is the rate of pauses over the observed time (0 when nothing was
// observed).
func (h *HostPauses) PerHour() float64 {
	if h == nil || h.ObservedNs <= 0 {
		return 0
	}
	return float64(h.Count()) * 3.6e12 / float64(h.ObservedNs)
}
