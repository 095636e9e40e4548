package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedlab/schedlab/hack/localcluster/cluster"
)

// repoRoot is the repository's root directory.
var repoRoot string

func TestMain(m *testing.M) {
	root, err := cluster.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	repoRoot = root
	os.Exit(m.Run())
}

func path(elem ...string) string { return filepath.Join(append([]string{repoRoot}, elem...)...) }

// requireBinaries fails the test, naming the make target that builds them, when a binary the
// test runs is missing.
func requireBinaries(t testing.TB, bins ...string) {
	t.Helper()
	var missing []string
	for _, b := range bins {
		if fi, err := os.Stat(path(b)); err != nil || fi.IsDir() {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%s missing: run `make build k8s-bins` (or `make test`, which builds them first)", strings.Join(missing, ", "))
	}
}

// command runs name with args in the repository root and returns its standard output; it fails
// the test with the output when the command fails.
func command(t testing.TB, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	out, err := tryCommand(stdin, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v", filepath.Base(name), strings.Join(args, " "), err)
	}
	return out
}

func tryCommand(stdin []byte, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = repoRoot
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%w\nstdout:\n%s\nstderr:\n%s", err, tail(stdout.String(), 60), tail(stderr.String(), 60))
	}
	return stdout.Bytes(), nil
}

var (
	helmOnce sync.Once
	helmErr  error
)

// helm returns bin/helm, building it from hack/helm (pinned there) when it is missing or older
// than hack/helm/go.mod. The first build takes minutes; Go's build cache makes later ones cheap.
func helm(t testing.TB) string {
	t.Helper()
	bin := path("bin", "helm")
	helmOnce.Do(func() {
		mod, err := os.Stat(path("hack", "helm", "go.mod"))
		if err != nil {
			helmErr = err
			return
		}
		if fi, err := os.Stat(bin); err == nil && fi.ModTime().After(mod.ModTime()) {
			return
		}
		t.Logf("building helm from hack/helm into bin/helm (the first time takes a few minutes)")
		_, helmErr = tryCommand(nil, "bash", path("hack", "helm", "build.sh"), bin)
	})
	if helmErr != nil {
		t.Fatalf("building helm: %v", helmErr)
	}
	return bin
}

func kubectl() string { return path("bin", "k8s", "kubectl") }

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[... %d lines]", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// splitYAML splits a multi-document YAML stream into its non-empty documents.
func splitYAML(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), b...), []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}
