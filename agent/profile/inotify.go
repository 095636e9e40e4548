package profile

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fileWatch wakes the agent when a knob file it holds is written.
//
// A write to a sysctl or debugfs file goes through vfs_write, which raises
// IN_MODIFY and IN_CLOSE_WRITE on the file's inode (fsnotify_modify; seen
// on Linux 6.18 for /proc/sys with `sysctl -w` and a shell redirect). It
// does so only for writes through the same mount's inode: /proc/sys of
// another procfs mount (a container's own /proc) is another inode and
// raises nothing here, and neither does a change made inside the kernel.
// So the watch repairs drift at once where it can, and the periodic
// re-read (Options.Interval) stays the bound on how long drift lasts.
type fileWatch struct {
	fd      int
	watched map[string]int // path → watch descriptor; used by one goroutine
}

func newFileWatch() (*fileWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	return &fileWatch{fd: fd, watched: map[string]int{}}, nil
}

// set watches exactly paths: new ones are added, the rest dropped.
func (w *fileWatch) set(paths []string) error {
	want := map[string]bool{}
	var errs []error
	for _, p := range paths {
		want[p] = true
		if _, ok := w.watched[p]; ok {
			continue
		}
		wd, err := unix.InotifyAddWatch(w.fd, p, unix.IN_MODIFY|unix.IN_CLOSE_WRITE)
		if err != nil {
			errs = append(errs, fmt.Errorf("inotify watch %s: %w", p, err))
			continue
		}
		w.watched[p] = wd
	}
	for p, wd := range w.watched {
		if !want[p] {
			_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
			delete(w.watched, p)
		}
	}
	return errors.Join(errs...)
}

// run calls poke after every batch of events until ctx is done, then
// closes the watch.
func (w *fileWatch) run(ctx context.Context, poke func()) {
	defer unix.Close(w.fd)
	buf := make([]byte, 4096)
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
	for ctx.Err() == nil {
		n, err := unix.Poll(fds, 250)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if n <= 0 || fds[0].Revents&unix.POLLIN == 0 {
			continue
		}
		written := false
		for {
			m, err := unix.Read(w.fd, buf)
			if m <= 0 || err != nil {
				break
			}
			written = written || hasWrite(buf[:m])
		}
		// Removing a watch raises IN_IGNORED: no reason for a pass.
		if written {
			poke()
		}
	}
}

// hasWrite says whether a read of inotify events holds a write.
func hasWrite(b []byte) bool {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		if ev.Mask&(unix.IN_MODIFY|unix.IN_CLOSE_WRITE) != 0 {
			return true
		}
		b = b[min(len(b), unix.SizeofInotifyEvent+int(ev.Len)):]
	}
	return false
}
