package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-logr/logr"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// ProfileDir is the directory, under the agent's state directory, of the
// profile mode's journal (the same journal an experiment keeps, in a
// directory of its own so that an experiment's recovery never restores a
// profile's originals) and of its committed state.
const ProfileDir = "profile"

// ProfileStateFile holds the committed state in the profile directory.
const ProfileStateFile = "state.json"

// ProfileRunID names the profile mode as the holder of the node lock.
const ProfileRunID = "profile"

// ProfileState is what the node holds under a profile: the values the
// keeper last finished applying. It is written durably after every write of
// a transition, so that a keeper killed half-way returns the node to it.
type ProfileState struct {
	// Profile and Generation the values belong to ("" when none).
	Profile    string `json:"profile,omitempty"`
	Generation int64  `json:"generation,omitempty"`
	// Knobs is the profile's spec of the committed values.
	Knobs *v1alpha1.Knobs `json:"knobs,omitempty"`
	// Values by catalogue knob name ("autogroup" → "0").
	Values map[string]string `json:"values,omitempty"`
}

// DesiredProfile is what the profile agent wants the node to hold.
type DesiredProfile struct {
	Profile    string
	Generation int64
	Knobs      *v1alpha1.Knobs
}

// Drift is a knob found away from its committed value and set back.
type Drift struct {
	Knob, Found, Want string
}

// KeepResult says what a Keep pass found and did.
type KeepResult struct {
	// Busy names the run holding the node (an experiment): nothing was
	// read or written.
	Busy string
	// Unsupported says which knob the node lacks for the desired profile;
	// the node keeps its committed state.
	Unsupported string
	// State is the committed state after the pass.
	State ProfileState
	// Original values of the committed knobs, from the journal.
	Original map[string]string
	// Repaired knobs: drift set back in this pass.
	Repaired []Drift
	// Changed is true when the pass moved the node to another state.
	Changed bool
}

// ProfileKeeper keeps a profile's knobs on this node. Every pass holds the
// node lock, so it never runs beside an experiment's agent; an experiment
// that holds the lock makes the pass return Busy without touching anything.
//
// A transition (apply, change, restore) writes each knob after journaling
// its original, and only then commits the new state. A keeper killed
// half-way leaves a journal whose recovery (the next pass, Recover) writes
// the committed values back: the node ends in the old or the new state,
// never a mix.
type ProfileKeeper struct {
	FS       FS
	StateDir string
	Log      logr.Logger
	// BetweenWrites, when set, runs between two knob writes of a
	// transition (tests widen the window a kill can land in).
	BetweenWrites func()
}

func (k *ProfileKeeper) dir() string { return filepath.Join(k.StateDir, ProfileDir) }

// ReadProfileState reads the committed state (empty when there is none).
func ReadProfileState(stateDir string) (ProfileState, error) {
	var st ProfileState
	b, err := os.ReadFile(filepath.Join(stateDir, ProfileDir, ProfileStateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("profile state %s: %w", filepath.Join(stateDir, ProfileDir, ProfileStateFile), err)
	}
	return st, nil
}

func (k *ProfileKeeper) commit(st ProfileState) error {
	b, err := json.MarshalIndent(&st, "", "  ")
	if err != nil {
		return err
	}
	return writeDurable(k.dir(), ProfileStateFile, b)
}

func (k *ProfileKeeper) journal() (*Journal, error) {
	j, err := ReadJournal(k.dir())
	if errors.Is(err, fs.ErrNotExist) {
		return NewJournal(k.dir(), ProfileRunID), nil
	}
	return j, err
}

// Keep makes the node hold want (nil: no profile, every knob back to its
// original). When want is what the node already holds, it re-reads every
// committed knob and sets back any found changed (drift).
func (k *ProfileKeeper) Keep(want *DesiredProfile) (*KeepResult, error) {
	lock, err := AcquireLock(k.FS, k.StateDir, ProfileRunID, 0)
	if errors.Is(err, ErrBusy) {
		return &KeepResult{Busy: err.Error()}, nil
	}
	if err != nil {
		return nil, err
	}
	defer lock.Release()

	st, err := ReadProfileState(k.StateDir)
	if err != nil {
		return nil, err
	}
	j, err := k.journal()
	if err != nil {
		return nil, err
	}
	res := &KeepResult{}
	// Bring the node to the committed state first: this repairs drift, and
	// finishes the recovery of a keeper killed mid-transition.
	if res.Repaired, err = k.enforce(j, st); err != nil {
		return nil, err
	}
	if !sameDesired(want, st) {
		var target map[string]string
		var settings []Setting
		if want != nil && want.Knobs != nil {
			caps, err := Detect(k.FS)
			if err != nil {
				return nil, fmt.Errorf("detecting capabilities: %w", err)
			}
			settings, err = Plan(caps, want.Knobs)
			var unsup *UnsupportedError
			if errors.As(err, &unsup) {
				res.Unsupported = unsup.Reason
				return k.finish(res, j, st), nil
			}
			if err != nil {
				return nil, err
			}
			target = map[string]string{}
			for _, s := range settings {
				target[s.Knob.Name()] = s.Value
			}
		}
		next := ProfileState{Values: target}
		if want != nil && want.Knobs != nil {
			next.Profile, next.Generation, next.Knobs = want.Profile, want.Generation, want.Knobs.DeepCopy()
		}
		if err := k.transition(j, settings, next); err != nil {
			// Back to the committed state: nothing half applied.
			if _, rerr := k.enforce(j, st); rerr != nil {
				err = errors.Join(err, fmt.Errorf("returning to the committed state: %w", rerr))
			}
			return nil, err
		}
		st, res.Changed = next, true
		res.Repaired = nil
	} else if want != nil && want.Knobs != nil && want.Generation != st.Generation {
		// Same knobs, a newer generation of the profile: nothing to write.
		st.Generation = want.Generation
		if err := k.commit(st); err != nil {
			return nil, err
		}
	}
	return k.finish(res, j, st), nil
}

func (k *ProfileKeeper) finish(res *KeepResult, j *Journal, st ProfileState) *KeepResult {
	res.State = st
	res.Original = map[string]string{}
	for _, e := range j.Entries() {
		if _, ok := st.Values[e.Name]; ok && e.Kind == EntryKnob {
			res.Original[e.Name] = e.Original
		}
	}
	return res
}

// Recover returns the node to the committed state (a keeper killed
// mid-transition leaves a mix) and returns the state. It waits up to wait
// for the node lock.
func (k *ProfileKeeper) Recover(wait time.Duration) (ProfileState, error) {
	lock, err := AcquireLock(k.FS, k.StateDir, ProfileRunID, wait)
	if err != nil {
		return ProfileState{}, err
	}
	defer lock.Release()
	st, err := ReadProfileState(k.StateDir)
	if err != nil {
		return st, err
	}
	j, err := k.journal()
	if err != nil {
		return st, err
	}
	_, err = k.enforce(j, st)
	return st, err
}

// enforce writes every journalled knob to its committed value, or to its
// original where the committed state does not set it. With nothing
// committed and everything restored, the journal and state are removed.
func (k *ProfileKeeper) enforce(j *Journal, st ProfileState) ([]Drift, error) {
	var drifts []Drift
	var errs []error
	entries := j.Entries()
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Kind != EntryKnob {
			continue
		}
		kn, err := knobFromJournal(e.Name, e.Path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		want, committed := st.Values[e.Name]
		if !committed {
			want = e.Original
		}
		cur, err := kn.Read(k.FS)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: read %s: %w", e.Name, e.Path, err))
			continue
		}
		if sameValue(cur, want) {
			continue
		}
		if err := kn.Write(k.FS, want); err != nil {
			errs = append(errs, fmt.Errorf("%s: write %q to %s: %w", e.Name, want, e.Path, err))
			continue
		}
		if got, err := kn.Read(k.FS); err != nil || !sameValue(got, want) {
			errs = append(errs, fmt.Errorf("%s: wrote %q to %s but it reads %q (%v)", e.Name, want, e.Path, got, err))
			continue
		}
		if committed {
			drifts = append(drifts, Drift{Knob: e.Name, Found: cur, Want: want})
			k.Log.Info("Repaired drift", "knob", e.Name, "found", cur, "want", want)
		} else {
			k.Log.Info("Restored knob", "knob", e.Name, "value", want)
		}
	}
	if len(errs) > 0 {
		return drifts, errors.Join(errs...)
	}
	if len(st.Values) == 0 && len(entries) > 0 {
		if err := k.removeAll(j); err != nil {
			return drifts, err
		}
	}
	return drifts, nil
}

// transition moves the node to next: originals of the new knobs are
// journalled before the first write, the new values written, knobs the
// next state leaves out get their originals back, and only then is next
// committed.
func (k *ProfileKeeper) transition(j *Journal, settings []Setting, next ProfileState) error {
	var entries []JournalEntry
	for _, s := range settings {
		v, err := s.Knob.Read(k.FS)
		if err != nil {
			return fmt.Errorf("%s: read %s: %w", s.Knob.Name(), s.Knob.Path(), err)
		}
		entries = append(entries, JournalEntry{Kind: EntryKnob, Name: s.Knob.Name(), Path: s.Knob.Path(), Original: v})
	}
	if len(entries) > 0 {
		if err := j.Record(entries...); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	wrote := false
	write := func(kn Knob, v string) error {
		cur, err := kn.Read(k.FS)
		if err != nil {
			return fmt.Errorf("%s: read %s: %w", kn.Name(), kn.Path(), err)
		}
		if sameValue(cur, v) {
			return nil
		}
		if wrote && k.BetweenWrites != nil {
			k.BetweenWrites()
		}
		wrote = true
		if err := kn.Write(k.FS, v); err != nil {
			return fmt.Errorf("%s: write %q to %s: %w", kn.Name(), v, kn.Path(), err)
		}
		if got, err := kn.Read(k.FS); err != nil || !sameValue(got, v) {
			return fmt.Errorf("%s: wrote %q to %s but it reads %q (%v)", kn.Name(), v, kn.Path(), got, err)
		}
		return nil
	}
	for _, s := range settings {
		if err := write(s.Knob, s.Value); err != nil {
			return err
		}
	}
	for _, e := range j.Entries() {
		if _, kept := next.Values[e.Name]; kept || e.Kind != EntryKnob {
			continue
		}
		kn, err := knobFromJournal(e.Name, e.Path)
		if err != nil {
			return err
		}
		if err := write(kn, e.Original); err != nil {
			return err
		}
	}
	if len(next.Values) == 0 {
		return k.removeAll(j)
	}
	return k.commit(next)
}

// removeAll forgets a fully restored profile: the committed state goes
// first, then the journal, so that a kill between the two leaves a journal
// whose recovery writes the originals (already there) and not a committed
// state without the journal that undoes it.
func (k *ProfileKeeper) removeAll(j *Journal) error {
	if err := os.Remove(filepath.Join(k.dir(), ProfileStateFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := syncDir(k.dir()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return j.Remove()
}

// sameDesired reports whether want is what st holds.
func sameDesired(want *DesiredProfile, st ProfileState) bool {
	if want == nil || want.Knobs == nil {
		return len(st.Values) == 0
	}
	if want.Profile != st.Profile || st.Knobs == nil {
		return false
	}
	a, _ := json.Marshal(want.Knobs)
	b, _ := json.Marshal(st.Knobs)
	return string(a) == string(b)
}

// SortedKnobNames lists a value map's names in order.
func SortedKnobNames(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
