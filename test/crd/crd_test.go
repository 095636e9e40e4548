package crd

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/schedlab/schedlab/internal/experiment"
	"github.com/schedlab/schedlab/test/envtest"
)

var (
	kubeconfig string
	kubectl    string
	root       string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	root, err = envtest.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err := envtest.StartEnv(envtest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	user, err := env.Environment.AddUser(crenvtest.User{Name: "schedlab-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "adding a kubectl user:", err)
		return 1
	}
	kc, err := user.KubeConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "schedlab-crd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kubectl = filepath.Join(env.Environment.BinaryAssetsDirectory, "kubectl")
	return m.Run()
}

// applyDryRun runs kubectl apply --dry-run=server on one file, as a user
// would, and returns its combined output.
func applyDryRun(t *testing.T, file string) (string, error) {
	t.Helper()
	cmd := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "--dry-run=server", "-f", file)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func TestSamplesAccepted(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(root, "config/samples/*.yaml"))
	n := 0
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := applyDryRun(t, f)
			if err != nil {
				t.Fatalf("kubectl apply --dry-run=server refused the sample: %v\n%s", err, out)
			}
			if !strings.Contains(out, "created (server dry run)") {
				t.Fatalf("unexpected kubectl output: %s", out)
			}
		})
	}
	if n < 8 {
		t.Fatalf("expected at least 8 samples, found %d", n)
	}
}

// TestInvalidManifestsRefused runs every file of test/manifests/invalid
// through the API server (kubectl apply --dry-run=server, as a user would)
// and through the CLI's loader (decoding, the schema's defaults and
// api/v1alpha1/validation, what schedlab run, simulate and plan and the agent
// use). Both must refuse it, each with the message of its "# expect:" line:
// what the API admits, nothing later refuses, and the other way round.
func TestInvalidManifestsRefused(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(root, "test/manifests/invalid/*.yaml"))
	if len(files) < 25 {
		t.Fatalf("expected at least 25 invalid manifests, found %d", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want := expected(t, f)
			apiOut, apiErr := applyDryRun(t, f)
			var cliErr error
			if isProfile(t, f) {
				_, cliErr = experiment.LoadProfile(f)
			} else {
				_, cliErr = experiment.Load(f)
			}
			cliOut := fmt.Sprint(cliErr)
			switch {
			case apiErr == nil && cliErr == nil:
				t.Fatalf("accepted by both the API server and the CLI; want a refusal containing %q", want)
			case apiErr == nil:
				t.Fatalf("the API server accepted what the CLI refuses:\n%s", cliOut)
			case cliErr == nil:
				t.Fatalf("the CLI accepted what the API server refuses:\n%s", apiOut)
			}
			if !strings.Contains(apiOut, want) || !strings.Contains(cliOut, want) {
				t.Fatalf("want both refusals to contain %q\nAPI server: %s\nCLI: %s", want, apiOut, cliOut)
			}
		})
	}
}

// isProfile: the manifest is a SchedProfile (checked by the profile
// validator), not a SchedExperiment.
func isProfile(t *testing.T, path string) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains("\n"+string(data), "\nkind: SchedProfile\n")
}

func expected(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "# expect: "); ok {
			return rest
		}
	}
	t.Fatalf("%s has no '# expect:' line", path)
	return ""
}

// Go clients write sub-millisecond durations as "500µs" (time.Duration's
// String): the schema must accept what metav1.Duration marshals.
func TestGoDurationsAccepted(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "micro.yaml")
	manifest := `apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: micro-durations}
spec:
  mode: Simulate
  duration: 1.5s
  warmup: 500ms
  variants: [{name: a, knobs: {baseSlice: 750µs}}]
  workload:
    groups: [{name: p, slice: 500µs, pattern: {type: LatencyProbe, interval: 250µs}}]
  simulation: {nodes: [{cpus: 2}]}
`
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := applyDryRun(t, f); err != nil {
		t.Fatalf("refused µs durations: %v\n%s", err, out)
	}
}
