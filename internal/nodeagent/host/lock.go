package host

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"
)

// LockFile is the lock's name in the state directory.
const LockFile = "lock"

// NodeLockDir is locked too, so that runs with different state directories
// on one node (two `schedlab run --state-dir`, tests) still exclude each
// other: every agent sees it, it always exists, and locking it changes
// nothing on the node.
const NodeLockDir = "/sys/fs/cgroup"

// Holder says who holds a node's lock.
type Holder struct {
	PID     int       `json:"pid"`
	RunID   string    `json:"runID"`
	Started time.Time `json:"started"`
}

func (h Holder) String() string {
	return fmt.Sprintf("run %q (pid %d, started %s)", h.RunID, h.PID, h.Started.Format(time.RFC3339))
}

// Lock is the one-run-per-node lock: flock(2) on a file in the state
// directory, with the holder written in it, and on NodeLockDir. The kernel
// drops both when the holder dies, however it dies.
type Lock struct {
	f, node *os.File
}

// ErrBusy is returned (wrapped, naming the holder) when another run holds
// the lock.
var ErrBusy = errors.New("node is busy")

// AcquireLock takes the node's lock for runID. When another run holds it,
// it polls for up to timeout (0: once) and then fails naming the holder.
func AcquireLock(fsys FS, stateDir, runID string, timeout time.Duration) (*Lock, error) {
	var l *Lock
	var busy error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var err error
		l, err = tryLock(fsys, stateDir, runID)
		if errors.Is(err, ErrBusy) {
			busy = err
			return false, nil
		}
		return err == nil, err
	})
	if busy != nil && wait.Interrupted(err) {
		return nil, busy // timed out: name the holder
	}
	return l, err
}

func tryLock(fsys FS, stateDir, runID string) (*Lock, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	path := filepath.Join(stateDir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			holder := "an unknown holder"
			var h Holder
			if b, rerr := os.ReadFile(path); rerr == nil && json.Unmarshal(b, &h) == nil {
				holder = h.String()
			}
			return nil, fmt.Errorf("%w: %s holds %s; wait for it to finish or stop it", ErrBusy, holder, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	l := &Lock{f: f}
	node, err := os.OpenFile(fsys.Abs(NodeLockDir), os.O_RDONLY|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// No /sys/fs/cgroup (a test tree without one): the state
		// directory's lock is the only one.
	case err != nil:
		l.Release()
		return nil, fmt.Errorf("node lock: %w", err)
	default:
		if err := unix.Flock(int(node.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			node.Close()
			l.Release()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("%w: %s holds the node lock on %s (a run with another state directory); wait for it to finish or stop it", ErrBusy, nodeLockHolder(fsys, fsys.Abs(NodeLockDir)), NodeLockDir)
			}
			return nil, fmt.Errorf("node lock %s: %w", NodeLockDir, err)
		}
		l.node = node
	}
	b, _ := json.Marshal(Holder{PID: os.Getpid(), RunID: runID, Started: time.Now().UTC()})
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt(b, 0)
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			l.Release()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
	}
	return l, nil
}

// nodeLockHolder names the process holding the flock on dir, from
// /proc/locks.
func nodeLockHolder(fsys FS, dir string) string {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return "another process"
	}
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	b, err := fsys.ReadFile("/proc/locks")
	if err != nil {
		return "another process"
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 6 && f[1] == "FLOCK" && f[5] == id {
			cmd, _ := fsys.ReadFile("/proc/" + f[4] + "/cmdline")
			return fmt.Sprintf("process %s (%s)", f[4], strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
		}
	}
	return "another process"
}

// Release drops the lock. The file stays (removing it would race with a
// second run opening it).
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	var err error
	if l.node != nil {
		err = l.node.Close()
		l.node = nil
	}
	if l.f != nil {
		_ = l.f.Truncate(0)
		err = errors.Join(err, l.f.Close()) // closing the only descriptor releases the flock
		l.f = nil
	}
	return err
}
