package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// The cache is keyed by what a replay depends on: two campaigns (the same
// relative paths inside), two builds, other replicas or host pauses never
// share an entry; the same inputs always do.
func TestCacheKey(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "schedlab")
	write := func(s string) {
		if err := os.WriteFile(bin, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("build A")
	key := func(o options) string {
		t.Helper()
		o.schedlab = bin
		k, err := cacheKey(&o)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	a := key(options{root: filepath.Join(dir, "runs", "2026-12-07-2150")})
	if !strings.HasPrefix(a, "2026-12-07-2150-") {
		t.Errorf("key %q does not start with the campaign's name", a)
	}
	if again := key(options{root: filepath.Join(dir, "runs", "2026-12-07-2150")}); again != a {
		t.Errorf("the same inputs give %q and %q", a, again)
	}
	for name, o := range map[string]options{
		"another campaign":  {root: filepath.Join(dir, "runs", "2026-12-07-1624")},
		"a same-named tree": {root: filepath.Join(dir, "other", "2026-12-07-2150")},
		"other replicas":    {root: filepath.Join(dir, "runs", "2026-12-07-2150"), replicas: 32},
		"host pauses": {root: filepath.Join(dir, "runs", "2026-12-07-2150"),
			pauses: &v1alpha1.NodeConstants{HostPausesPerHour: 200}},
	} {
		if k := key(o); k == a {
			t.Errorf("%s shares the key %q", name, k)
		}
	}
	write("build B")
	if b := key(options{root: filepath.Join(dir, "runs", "2026-12-07-2150")}); b == a {
		t.Errorf("another build at the same path shares the key %q", b)
	}
	if _, err := cacheKey(&options{schedlab: filepath.Join(dir, "missing"), root: dir}); err == nil {
		t.Error("a missing binary gives a key")
	}
}
