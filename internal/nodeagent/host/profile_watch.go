package host

import (
	"errors"
	"io/fs"
	"sort"
)

// WatchedFiles are the files, as paths on this machine (FS.Abs), of the
// knobs the profile journal records: the files a profile agent watches for
// writes, to repair drift at once instead of at its next periodic re-read.
func (k *ProfileKeeper) WatchedFiles() ([]string, error) {
	j, err := ReadJournal(k.dir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range j.Entries() {
		if e.Kind != EntryKnob || e.Path == "" {
			continue
		}
		if p := k.FS.Abs(e.Path); !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}
