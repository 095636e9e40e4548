package host

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// Changes are what one run does to the host: knob writes and cgroups, each
// journalled before it is made, and how each was restored.
type Changes struct {
	FS      FS
	Journal *Journal
	Log     logr.Logger

	mu      sync.Mutex
	records map[string]*v1alpha1.KnobRecord
	order   []string
}

// NewChanges starts the changes of a run, journalled in j.
func NewChanges(fsys FS, j *Journal, log logr.Logger) *Changes {
	return &Changes{FS: fsys, Journal: j, Log: log, records: map[string]*v1alpha1.KnobRecord{}}
}

func (ch *Changes) record(name string) *v1alpha1.KnobRecord {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	r, ok := ch.records[name]
	if !ok {
		r = &v1alpha1.KnobRecord{Name: name}
		ch.records[name] = r
		ch.order = append(ch.order, name)
	}
	return r
}

// noteSet records the value a change set.
func (ch *Changes) noteSet(e JournalEntry, set string) {
	r := ch.record(e.Name)
	if r.Original == "" {
		switch e.Kind {
		case EntryCgroup:
			r.Original = "absent"
		case EntryProcesses:
			r.Original = "none"
		default:
			r.Original = e.Original
		}
	}
	r.Set = set
}

// Apply sets the knobs: it reads each current value, journals every
// original value durably (before the first write), then writes only the
// knobs whose value differs, and reads each back. On an error the caller
// restores (Restore): whatever was written is in the journal.
func (ch *Changes) Apply(settings []Setting) error {
	current := make([]string, len(settings))
	var entries []JournalEntry
	for i, s := range settings {
		v, err := s.Knob.Read(ch.FS)
		if err != nil {
			return fmt.Errorf("%s: read %s: %w", s.Knob.Name(), s.Knob.Path(), err)
		}
		current[i] = v
		entries = append(entries, JournalEntry{Kind: EntryKnob, Name: s.Knob.Name(), Path: s.Knob.Path(), Original: v})
	}
	if err := ch.Journal.Record(entries...); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	for i, s := range settings {
		e := entries[i]
		// The original is the journal's: the first value seen in this run.
		for _, je := range ch.Journal.Entries() {
			if je.key() == e.key() {
				e = je
			}
		}
		ch.noteSet(e, s.Value)
		if sameValue(current[i], s.Value) {
			continue
		}
		if err := s.Knob.Write(ch.FS, s.Value); err != nil {
			if _, choice := s.Knob.(choiceKnob); choice && errors.Is(err, unix.EINVAL) {
				// The kernel does not offer this choice (a preemption
				// model it was not built with): the variant cannot run
				// here. Nothing was written.
				return &UnsupportedError{Reason: fmt.Sprintf("%s: the kernel refused %q (%s does not offer it)", s.Knob.Name(), s.Value, s.Knob.Path())}
			}
			return fmt.Errorf("%s: write %q to %s: %w", s.Knob.Name(), s.Value, s.Knob.Path(), err)
		}
		got, err := s.Knob.Read(ch.FS)
		if err != nil {
			return fmt.Errorf("%s: read back %s: %w", s.Knob.Name(), s.Knob.Path(), err)
		}
		if !sameValue(got, s.Value) {
			return fmt.Errorf("%s: wrote %q to %s but it reads %q", s.Knob.Name(), s.Value, s.Knob.Path(), got)
		}
		ch.Log.V(1).Info("Set knob", "knob", s.Knob.Name(), "from", current[i], "to", s.Value)
	}
	return nil
}

// Restore undoes every journalled change in reverse order: cgroups are
// emptied and removed, subtree_control and knobs get their original values
// back (written only where they differ), each read back and recorded. It is
// idempotent and keeps going past failures, returning them all.
func (ch *Changes) Restore() error {
	return restoreEntries(ch.FS, ch.Journal.Entries(), ch.record, ch.Log)
}

// Records are the restore records of every change, in the order first made.
func (ch *Changes) Records() []v1alpha1.KnobRecord {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	out := make([]v1alpha1.KnobRecord, 0, len(ch.order))
	for _, n := range ch.order {
		out = append(out, *ch.records[n])
	}
	return out
}

// AllRestored reports whether every record is OK.
func (ch *Changes) AllRestored() bool {
	for _, r := range ch.Records() {
		if !r.OK {
			return false
		}
	}
	return true
}

func restoreEntries(fsys FS, entries []JournalEntry, record func(string) *v1alpha1.KnobRecord, log logr.Logger) error {
	var errs []error
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Kind == EntryTraceInstance {
			// The agent's own tracefs instance: removed, not a knob of
			// the node's, so no record (the window reports its trace).
			if path.Base(path.Dir(e.Path)) != "instances" {
				errs = append(errs, fmt.Errorf("journal: %s is no tracefs instance", e.Path))
				continue
			}
			if err := removeTraceInstance(fsys, e.Path); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		r := record(e.Name)
		switch e.Kind {
		case EntryCgroup:
			if r.Original == "" {
				r.Original = "absent"
			}
			err := restoreCgroup(fsys, e)
			if errors.Is(err, errKeptParent) {
				r.Restored, r.OK = "kept: it holds other cgroups", true
				continue
			}
			if err != nil {
				errs = append(errs, err)
				r.Restored, r.OK = "present", false
				continue
			}
			r.Restored, r.OK = "absent", true
		case EntrySubtree:
			if r.Original == "" {
				r.Original = e.Original
			}
			got, err := restoreSubtree(fsys, e)
			r.Restored = got
			r.OK = err == nil && !strings.Contains(" "+got+" ", " cpu ") == !strings.Contains(" "+e.Original+" ", " cpu ")
			if err != nil {
				errs = append(errs, err)
			}
		case EntryProcesses:
			if r.Original == "" {
				r.Original = "none"
			}
			if err := killMarked(fsys, e.Original, 10*time.Second); err != nil {
				errs = append(errs, err)
				r.Restored, r.OK = "alive", false
				continue
			}
			r.Restored, r.OK = "none", true
		case EntryKnob:
			if r.Original == "" {
				r.Original = e.Original
			}
			k, err := knobFromJournal(e.Name, e.Path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			got, err := restoreKnob(fsys, k, e.Original)
			r.Restored = got
			r.OK = err == nil && sameValue(got, e.Original)
			if err != nil {
				errs = append(errs, err)
			} else if !r.OK {
				errs = append(errs, fmt.Errorf("%s: restored %q but it reads %q", e.Name, e.Original, got))
			}
			log.V(1).Info("Restored knob", "knob", e.Name, "value", got, "ok", r.OK)
		default:
			errs = append(errs, fmt.Errorf("journal: unknown entry kind %q", e.Kind))
		}
	}
	return errors.Join(errs...)
}

func restoreKnob(fsys FS, k Knob, original string) (string, error) {
	cur, err := k.Read(fsys)
	if err != nil {
		return "", fmt.Errorf("%s: read %s: %w", k.Name(), k.Path(), err)
	}
	if sameValue(cur, original) {
		return cur, nil
	}
	if err := k.Write(fsys, original); err != nil {
		return cur, fmt.Errorf("%s: write %q to %s: %w", k.Name(), original, k.Path(), err)
	}
	return k.Read(fsys)
}

// RecoverJournal restores whatever a previous run left in stateDir's
// journal (it crashed, was killed, or its node rebooted mid-run) and then
// removes the journal. A starting agent calls it, holding the lock, before
// anything else. No journal: nothing to do, no records.
func RecoverJournal(fsys FS, stateDir string, log logr.Logger) ([]v1alpha1.KnobRecord, error) {
	j, err := ReadJournal(stateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	log.Info("Restoring the journal of an earlier run", "run", j.RunID(), "pid", j.st.PID, "entries", len(j.st.Entries))
	ch := NewChanges(fsys, j, log)
	if err := ch.Restore(); err != nil {
		return ch.Records(), fmt.Errorf("restoring the journal of run %q (kept at %s): %w", j.RunID(), stateDir+"/"+JournalFile, err)
	}
	if err := j.Remove(); err != nil {
		return ch.Records(), err
	}
	return ch.Records(), nil
}

// NoteWorkers journals the workers marked SCHEDLAB_WORKER=<prefix>… so
// that a restarted agent kills any survivor. Call it before starting them.
func (ch *Changes) NoteWorkers(prefix string) error {
	e := ProcessesEntry(prefix)
	if err := ch.Journal.Record(e); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	ch.noteSet(e, "started")
	return nil
}
