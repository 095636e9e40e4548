package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// JournalFile is the journal's name in the state directory.
const JournalFile = "journal.json"

// Kinds of journal entries.
const (
	// EntryKnob is a knob whose original value is to be written back.
	EntryKnob = "knob"
	// EntryCgroup is a cgroup the run created: its processes are killed and
	// it is removed.
	EntryCgroup = "cgroup"
	// EntrySubtree is a cgroup v2 cgroup.subtree_control the run added +cpu
	// to: the cpu controller is disabled there again if it was not enabled.
	EntrySubtree = "subtree"
)

// JournalEntry is one change a run makes to the host, recorded before it is
// made.
type JournalEntry struct {
	Kind string `json:"kind"`
	// Name of the knob ("autogroup", "features.PLACE_LAG") or cgroup.
	Name string `json:"name"`
	// Path on the host: the knob's file, the cgroup's directory, or the
	// cgroup.subtree_control file.
	Path string `json:"path"`
	// Original value (knobs, subtree_control) before the run.
	Original string `json:"original,omitempty"`
	// CgroupVersion of a cgroup or subtree entry: v1 or v2.
	CgroupVersion string `json:"cgroupVersion,omitempty"`
	// Mount is the cgroup hierarchy the cgroup is in.
	Mount string `json:"mount,omitempty"`
}

func (e JournalEntry) key() string { return e.Kind + "\x00" + e.Name + "\x00" + e.Path }

// journalState is the journal file's content.
type journalState struct {
	RunID   string         `json:"runID"`
	PID     int            `json:"pid"`
	Started time.Time      `json:"started"`
	Entries []JournalEntry `json:"entries"`
}

// Journal records every change of a run durably before it is made, so that a
// restarted agent can undo it. It is the agent's own state, in the state
// directory (a hostPath in the cluster, a flag locally), written with the os
// package directly: it is not a host knob.
type Journal struct {
	dir string
	mu  sync.Mutex
	st  journalState
	has map[string]bool
}

// NewJournal starts an empty journal for a run; nothing is written until the
// first Record.
func NewJournal(stateDir, runID string) *Journal {
	return &Journal{
		dir: stateDir,
		st:  journalState{RunID: runID, PID: os.Getpid(), Started: time.Now().UTC()},
		has: map[string]bool{},
	}
}

// ReadJournal reads the journal left in stateDir, if any.
func ReadJournal(stateDir string) (*Journal, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, JournalFile))
	if err != nil {
		return nil, err
	}
	j := &Journal{dir: stateDir, has: map[string]bool{}}
	if err := json.Unmarshal(b, &j.st); err != nil {
		return nil, fmt.Errorf("journal %s: %w", filepath.Join(stateDir, JournalFile), err)
	}
	for _, e := range j.st.Entries {
		j.has[e.key()] = true
	}
	return j, nil
}

// RunID of the run the journal belongs to.
func (j *Journal) RunID() string { return j.st.RunID }

// Has reports whether an entry for the same kind, name and path is recorded.
func (j *Journal) Has(e JournalEntry) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.has[e.key()]
}

// Record adds the entries not yet recorded (the first original value of a
// knob is the one kept) and makes the journal durable: a temporary file,
// fsync, rename over the journal, fsync of the directory. Only after Record
// returns may the change be made.
func (j *Journal) Record(entries ...JournalEntry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	added := false
	for _, e := range entries {
		if !j.has[e.key()] {
			j.has[e.key()] = true
			j.st.Entries = append(j.st.Entries, e)
			added = true
		}
	}
	if !added {
		if _, err := os.Stat(filepath.Join(j.dir, JournalFile)); err == nil {
			return nil
		}
	}
	b, err := json.MarshalIndent(&j.st, "", "  ")
	if err != nil {
		return err
	}
	return writeDurable(j.dir, JournalFile, b)
}

// Entries are the recorded entries in the order they were recorded.
func (j *Journal) Entries() []JournalEntry {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]JournalEntry(nil), j.st.Entries...)
}

// Remove deletes the journal file once everything is restored.
func (j *Journal) Remove() error {
	err := os.Remove(filepath.Join(j.dir, JournalFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return syncDir(j.dir)
}

// writeDurable replaces dir/name with data so that after a crash the file is
// either the old or the new content, never a mix.
func writeDurable(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
