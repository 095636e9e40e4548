package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func repoPath(t *testing.T, rel string) string {
	t.Helper()
	return filepath.Join("..", "..", rel)
}

// Every sample must load: they are the manifests users copy first.
func TestSamplesLoad(t *testing.T) {
	files, err := filepath.Glob(repoPath(t, "config/samples/*.yaml"))
	if err != nil || len(files) < 8 {
		t.Fatalf("expected at least 8 samples, found %d (%v)", len(files), err)
	}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		if _, err := Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// ExpectedError reads the "# expect-<kind>: message" header of an invalid
// manifest; the same files drive the API server's integration test.
func ExpectedError(t *testing.T, path, kind string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "# expect-"+kind+": "); ok {
			return rest
		}
	}
	t.Fatalf("%s has no '# expect-%s:' line", path, kind)
	return ""
}

// Each invalid manifest is refused locally with the advice its header names.
func TestInvalidManifestsRefused(t *testing.T) {
	files, err := filepath.Glob(repoPath(t, "test/manifests/invalid/*.yaml"))
	if err != nil || len(files) < 25 {
		t.Fatalf("expected at least 25 invalid manifests, found %d (%v)", len(files), err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want := ExpectedError(t, f, "local")
			_, err := Load(f)
			if err == nil {
				t.Fatalf("accepted; want an error containing %q", want)
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not contain %q", err, want)
			}
		})
	}
}
