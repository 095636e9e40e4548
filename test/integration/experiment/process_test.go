package experiment_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schedlab/schedlab/test/envtest"
)

// The manager as an OS process: the real `schedlab manager` binary, built
// from this tree by the test, run against the test's kube-apiserver with a
// kubeconfig, so that a test can kill it with SIGKILL (no deferred code, no
// lease released, nothing flushed) and start a new one.

// binaries are built once per test binary and removed by TestMain.
var binaries struct {
	mu    sync.Mutex
	dir   string
	built map[string]string // by source ("" for this tree, else a commit)
}

func removeBinaries() {
	binaries.mu.Lock()
	defer binaries.mu.Unlock()
	if binaries.dir != "" {
		_ = os.RemoveAll(binaries.dir)
	}
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// schedlabBinary builds cmd/schedlab of this tree (once) and returns its path.
func schedlabBinary(t testing.TB) string {
	t.Helper()
	return buildSchedlab(t, "")
}

// buildSchedlab builds cmd/schedlab from this tree (commit "") or from a
// commit of the repository's history (extracted with git archive), once
// per test binary.
func buildSchedlab(t testing.TB, commit string) string {
	t.Helper()
	binaries.mu.Lock()
	defer binaries.mu.Unlock()
	if p := binaries.built[commit]; p != "" {
		return p
	}
	root, err := envtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if binaries.dir == "" {
		if binaries.dir, err = os.MkdirTemp("", "schedlab-bin-"); err != nil {
			t.Fatal(err)
		}
		binaries.built = map[string]string{}
	}
	name := "schedlab"
	src := root
	if commit != "" {
		name += "-" + commit
		src = filepath.Join(binaries.dir, "src-"+commit)
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
		var tarball, stderr bytes.Buffer
		archive.Stdout, archive.Stderr = &tarball, &stderr
		if err := archive.Run(); err != nil {
			t.Fatalf("the manager of commit %s is not in this clone's history (a shallow clone? fetch it with `git fetch --unshallow`): %v: %s", commit, err, stderr.String())
		}
		untar := exec.Command("tar", "-x", "-C", src)
		untar.Stdin = &tarball
		if out, err := untar.CombinedOutput(); err != nil {
			t.Fatalf("extracting commit %s: %v: %s", commit, err, out)
		}
	}
	out := filepath.Join(binaries.dir, name)
	start := time.Now()
	// Built as `go test` builds the packages (no -trimpath), so that what
	// the test binaries compiled is reused.
	build := exec.Command(goTool(), "build", "-o", out, "./cmd/schedlab")
	build.Dir = src
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the manager (%s): %v\n%s", src, err, b)
	}
	t.Logf("built %s in %s", name, time.Since(start).Round(time.Second))
	binaries.built[commit] = out
	return out
}

// managerProcess is a running `schedlab manager`.
type managerProcess struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// managerArgs are the flags every manager process of a harness gets: the
// test's namespace and kubeconfig, no metrics or probe ports, leader
// election as the chart and kustomize deploy it.
func (h *harness) managerArgs(kubeconfig string) []string {
	return []string{"manager", "--kubeconfig=" + kubeconfig, "--namespace=" + h.ns,
		"--agent-image=schedlab:test", "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--leader-elect", "--leader-election-id=schedlab-manager",
		"--restore-timeout=5m", "--deadline-margin=1m", "--v=2"}
}

// startProcess starts the harness's manager as a process of binary.
func (h *harness) startProcess(binary string) {
	t := h.t
	t.Helper()
	h.managers++
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.Environment.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	p := &managerProcess{log: filepath.Join(dir, fmt.Sprintf("manager-%d.log", h.managers)), done: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	args := append(h.managerArgs(kubeconfig), h.opts.ProcessArgs...)
	p.cmd = exec.Command(binary, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// The manager dies with the test binary, whatever happens to it.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		_ = logf.Close()
		t.Fatalf("starting the manager: %v", err)
	}
	t.Logf("manager %d: pid %d, %s", h.managers, p.cmd.Process.Pid, strings.Join(args, " "))
	go func() {
		_ = p.cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	h.proc = p
	h.stopMgr = func() { h.signalManager(syscall.SIGTERM) }
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("manager %s (last 4 KiB):\n%s", filepath.Base(p.log), tail(b, 4096))
		}
	})
}

// signalManager sends sig to the manager process and waits until it has
// exited (30 s at most; then it is killed).
func (h *harness) signalManager(sig syscall.Signal) {
	h.t.Helper()
	p := h.proc
	if p == nil {
		return
	}
	h.proc, h.stopMgr = nil, nil
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		h.t.Errorf("the manager did not exit within 30 s of %v", sig)
	}
	h.t.Logf("manager pid %d: %v, exited: %v", p.cmd.Process.Pid, sig, p.cmd.ProcessState)
}

// killManager kills the manager process with SIGKILL.
func (h *harness) killManager() {
	h.t.Helper()
	h.signalManager(syscall.SIGKILL)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
