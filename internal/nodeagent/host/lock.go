package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// LockFile is the lock's name in the state directory.
const LockFile = "lock"

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
// directory, with the holder written in it. The kernel drops it when the
// holder dies, however it dies.
type Lock struct {
	f    *os.File
	path string
}

// ErrBusy is returned (wrapped, naming the holder) when another run holds
// the lock.
var ErrBusy = errors.New("node is busy")

// AcquireLock takes the node's lock for runID, or fails at once naming the
// holder.
func AcquireLock(stateDir, runID string) (*Lock, error) {
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
	b, _ := json.Marshal(Holder{PID: os.Getpid(), RunID: runID, Started: time.Now().UTC()})
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt(b, 0)
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
	}
	return &Lock{f: f, path: path}, nil
}

// Release drops the lock. The file stays (removing it would race with a
// second run opening it).
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := l.f.Close() // closing the only descriptor releases the flock
	l.f = nil
	return err
}
