package profile

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// watchAndWrite watches path, writes data to it and says whether the watch
// poked within a second.
func watchAndWrite(t *testing.T, w *fileWatch, pokes chan struct{}, path string, data []byte) bool {
	t.Helper()
	// Let the pokes of earlier writes (open with O_TRUNC, write and close
	// may come in two reads) arrive, then drop them.
	time.Sleep(600 * time.Millisecond)
	for len(pokes) > 0 {
		<-pokes
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-pokes:
		return true
	case <-time.After(time.Second):
		return false
	}
}

func startWatch(t *testing.T) (*fileWatch, chan struct{}) {
	t.Helper()
	w, err := newFileWatch()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pokes := make(chan struct{}, 16)
	go w.run(ctx, func() { pokes <- struct{}{} })
	return w, pokes
}

// TestFileWatch: a write to a watched file pokes the agent; after the file
// leaves the watched set, a write does not.
func TestFileWatch(t *testing.T) {
	w, pokes := startWatch(t)
	f := filepath.Join(t.TempDir(), "sched_autogroup_enabled")
	if err := os.WriteFile(f, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.set([]string{f}); err != nil {
		t.Fatal(err)
	}
	if !watchAndWrite(t, w, pokes, f, []byte("0\n")) {
		t.Fatal("a write to a watched file did not poke")
	}
	if err := w.set(nil); err != nil {
		t.Fatal(err)
	}
	if watchAndWrite(t, w, pokes, f, []byte("1\n")) {
		t.Error("a write to a file no longer watched poked")
	}
	if err := w.set([]string{filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("watching a missing file: no error")
	}
}

// TestFileWatchProcSys: a sysctl written through this machine's /proc
// raises an inotify event (the kernel's vfs_write → fsnotify_modify). The
// value written is the one already there.
func TestFileWatchProcSys(t *testing.T) {
	const f = "/proc/sys/kernel/sched_rr_timeslice_ms"
	b, err := os.ReadFile(f)
	if err != nil {
		t.Skipf("this kernel has no %s to watch (CONFIG_SYSCTL or the RT class missing): %v", f, err)
	}
	if os.Geteuid() != 0 {
		t.Skip("writing a sysctl needs root")
	}
	w, pokes := startWatch(t)
	if err := w.set([]string{f}); err != nil {
		t.Fatal(err)
	}
	if !watchAndWrite(t, w, pokes, f, b) {
		t.Fatalf("writing %q to %s raised no inotify event", b, f)
	}
}
