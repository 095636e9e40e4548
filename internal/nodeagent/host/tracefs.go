package host

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// EntryTraceInstance is a tracefs instance the run created (its own name
// under tracefs instances/): it is removed.
const EntryTraceInstance = "traceinstance"

// tracefsDirs are where tracefs is looked for, the first that has an
// instances directory: its own mount point, then its place under debugfs.
var tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// TraceInstance is a tracefs instance of the agent's: its own ring buffer,
// events, clock and on/off switch, apart from the top-level trace and every
// other instance, which it never touches.
type TraceInstance struct {
	fsys FS
	// Dir is the instance's directory on the host.
	Dir string
}

// TraceStats are one CPU's ring buffer counters (per_cpu/cpuN/stats).
type TraceStats struct {
	// Entries still in the buffer, and Overrun: events overwritten
	// (overwrite mode); Dropped: events refused when the buffer was full
	// (no overwrite).
	Entries, Overrun, Dropped int64
}

// OpenTraceInstance creates the tracefs instance name, journalled first so
// that an agent that dies with it leaves it to the next one to remove
// (restoreEntries), with tracing off, the trace clock "mono" (the clock
// the timer events' expiries and now are in, CLOCK_MONOTONIC), bufferKB of
// ring buffer per CPU and the events (SYSTEM/EVENT) enabled. A leftover of
// the same name (a crashed agent of the same run id) is removed first.
// tracefs absent, not writable or refused (kernel lockdown in
// confidentiality mode refuses tracefs) is an *UnsupportedError naming why.
func (ch *Changes) OpenTraceInstance(name string, events []string, bufferKB int64) (*TraceInstance, error) {
	root, err := findTracefs(ch.FS)
	if err != nil {
		return nil, err
	}
	t := &TraceInstance{fsys: ch.FS, Dir: path.Join(root, "instances", name)}
	e := JournalEntry{Kind: EntryTraceInstance, Name: "tracefs instance " + name, Path: t.Dir}
	if err := ch.Journal.Record(e); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if exists(ch.FS, t.Dir) {
		if err := removeTraceInstance(ch.FS, t.Dir); err != nil {
			return nil, err
		}
	}
	if err := ch.FS.Mkdir(t.Dir); err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EROFS) {
			return nil, &UnsupportedError{Reason: fmt.Sprintf("tracefs instance %s cannot be created (%v): tracefs read-only, not ours to write, or kernel lockdown", t.Dir, err)}
		}
		return nil, fmt.Errorf("creating tracefs instance: %w", err)
	}
	set := func(file, v string) error {
		if err := ch.FS.WriteFile(path.Join(t.Dir, file), []byte(v)); err != nil {
			return fmt.Errorf("tracefs instance %s: writing %q to %s: %w", name, v, file, err)
		}
		return nil
	}
	steps := [][2]string{{"tracing_on", "0"}, {"trace_clock", "mono"}, {"buffer_size_kb", strconv.FormatInt(bufferKB, 10)}}
	for _, ev := range events {
		steps = append(steps, [2]string{path.Join("events", ev, "enable"), "1"})
	}
	for _, s := range steps {
		if err := set(s[0], s[1]); err != nil {
			return nil, errors.Join(err, removeTraceInstance(ch.FS, t.Dir))
		}
	}
	return t, nil
}

// findTracefs is the first of tracefsDirs with an instances directory.
func findTracefs(fsys FS) (string, error) {
	for _, d := range tracefsDirs {
		if fi, err := fsys.Stat(path.Join(d, "instances")); err == nil && fi.IsDir() {
			return d, nil
		}
	}
	return "", &UnsupportedError{Reason: "tracefs is not mounted (no instances directory under " + strings.Join(tracefsDirs, " or ") + ")"}
}

// On starts recording.
func (t *TraceInstance) On() error {
	return t.fsys.WriteFile(path.Join(t.Dir, "tracing_on"), []byte("1"))
}

// Off stops recording.
func (t *TraceInstance) Off() error {
	return t.fsys.WriteFile(path.Join(t.Dir, "tracing_on"), []byte("0"))
}

// ReadTrace hands every line of the instance's trace file (the buffer as
// text, read without consuming it) to f. Read with tracing off: a reader
// of a recording buffer takes the CPU of what it records.
func (t *TraceInstance) ReadTrace(f func(line []byte)) error {
	file, err := os.Open(t.fsys.Abs(path.Join(t.Dir, "trace")))
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f(sc.Bytes())
	}
	return sc.Err()
}

// Stats are the instance's ring buffer counters by CPU.
func (t *TraceInstance) Stats() (map[int]TraceStats, error) {
	des, err := t.fsys.ReadDir(path.Join(t.Dir, "per_cpu"))
	if err != nil {
		return nil, err
	}
	out := map[int]TraceStats{}
	for _, de := range des {
		c, err := strconv.Atoi(strings.TrimPrefix(de.Name(), "cpu"))
		if err != nil || !strings.HasPrefix(de.Name(), "cpu") {
			continue
		}
		b, err := t.fsys.ReadFile(path.Join(t.Dir, "per_cpu", de.Name(), "stats"))
		if err != nil {
			return nil, err
		}
		out[c] = parseTraceStats(string(b))
	}
	return out, nil
}

// parseTraceStats reads a per_cpu stats file ("entries: N", "overrun: N",
// "dropped events: N", ...).
func parseTraceStats(s string) TraceStats {
	var st TraceStats
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch strings.TrimSpace(k) {
		case "entries":
			st.Entries = n
		case "overrun":
			st.Overrun = n
		case "dropped events":
			st.Dropped = n
		}
	}
	return st
}

// Remove stops the instance and removes it (its buffer and events go
// with it). The journal entry stays: restoring it finds it absent.
func (t *TraceInstance) Remove() error { return removeTraceInstance(t.fsys, t.Dir) }

// removeTraceInstance stops and removes the instance at dir; absent is
// done. tracefs refuses to remove an instance with an open file (EBUSY).
func removeTraceInstance(fsys FS, dir string) error {
	if !exists(fsys, dir) {
		return nil
	}
	_ = fsys.WriteFile(path.Join(dir, "tracing_on"), []byte("0"))
	if err := fsys.Rmdir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing tracefs instance %s: %w", dir, err)
	}
	return nil
}
