package envtest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// ModulePath is the module whose go.mod marks the repository root.
const ModulePath = "github.com/schedlab/schedlab"

// Binaries are the programs envtest needs in the binary directory (kubectl is optional).
var Binaries = []string{"etcd", "kube-apiserver"}

// Options tunes the control plane. The zero value is what most tests want.
type Options struct {
	// Scheme for the returned client. Default: client-go's scheme (built-in types only);
	// pass a scheme with the schedlab API added to work with its objects.
	Scheme *runtime.Scheme
	// CRDDirectoryPaths to install. Default (nil): <repo>/config/crd/bases (absent or empty is
	// fine). A non-nil empty slice installs none.
	CRDDirectoryPaths []string
	// BinaryAssetsDirectory holds etcd, kube-apiserver and kubectl. Default: $KUBEBUILDER_ASSETS
	// if set, else <repo>/bin/k8s.
	BinaryAssetsDirectory string
	// APIServerFlags are extra kube-apiserver flags (name without dashes => value).
	APIServerFlags map[string]string
	// StartTimeout bounds the start of etcd and kube-apiserver. Default: 3 minutes (a loaded
	// 2-CPU machine needs more than controller-runtime's 20s default).
	StartTimeout time.Duration
	// Logger is handed to controller-runtime's log.SetLogger, which keeps only the first logger
	// it is given: a test binary that calls ctrl.SetLogger before Start keeps its own. Default:
	// errors and level-0 messages to stderr.
	Logger logr.Logger
	// AttachControlPlaneOutput copies etcd and kube-apiserver output to this process's stdout
	// and stderr; useful when the control plane fails to start.
	AttachControlPlaneOutput bool
}

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Client is a controller-runtime client built from Config and Options.Scheme.
	Client client.Client
	// Environment is the underlying controller-runtime environment.
	Environment *crenvtest.Environment
}

// Stop stops kube-apiserver and etcd and removes their data. It is safe to call twice.
func (e *Env) Stop() error {
	if e == nil || e.Environment == nil {
		return nil
	}
	env := e.Environment
	e.Environment = nil
	return env.Stop()
}

// Start starts a control plane for one test (or a benchmark) and fails tb at once if it cannot.
// The returned stop function is also registered with tb.Cleanup, so calling it is optional.
func Start(tb testing.TB, opts ...Options) (*rest.Config, client.Client, func()) {
	tb.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	env, err := StartEnv(o)
	if err != nil {
		tb.Fatal(err)
	}
	stop := func() {
		if err := env.Stop(); err != nil {
			tb.Errorf("stopping envtest control plane: %v", err)
		}
	}
	tb.Cleanup(stop)
	return env.Config, env.Client, stop
}

// StartEnv starts a control plane without a testing.TB, for TestMain. The caller must Stop it.
func StartEnv(o Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	binDir := o.BinaryAssetsDirectory
	if binDir == "" {
		binDir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if binDir == "" {
		binDir = filepath.Join(root, "bin", "k8s")
	}
	if err := checkBinaries(binDir); err != nil {
		return nil, err
	}
	crdPaths := o.CRDDirectoryPaths
	if crdPaths == nil {
		crdPaths = []string{filepath.Join(root, "config", "crd", "bases")}
	}
	scheme := o.Scheme
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}

	logger := o.Logger
	if logger.GetSink() == nil {
		logger = funcr.New(func(prefix, args string) {
			fmt.Fprintln(os.Stderr, prefix, args)
		}, funcr.Options{})
	}
	ctrllog.SetLogger(logger)
	timeout := o.StartTimeout
	if timeout == 0 {
		timeout = 3 * time.Minute
	}

	useExisting := false
	env := &crenvtest.Environment{
		Scheme:                   scheme,
		CRDDirectoryPaths:        crdPaths,
		ErrorIfCRDPathMissing:    false,
		BinaryAssetsDirectory:    binDir,
		UseExistingCluster:       &useExisting,
		AttachControlPlaneOutput: o.AttachControlPlaneOutput,
		ControlPlaneStartTimeout: timeout,
		ControlPlaneStopTimeout:  time.Minute,
	}
	// KUBEBUILDER_ASSETS wins over BinaryAssetsDirectory inside controller-runtime; point both at
	// the directory checked above so that the binaries run are the ones checked.
	env.ControlPlane.Etcd = &crenvtest.Etcd{Path: filepath.Join(binDir, "etcd")}
	api := &crenvtest.APIServer{Path: filepath.Join(binDir, "kube-apiserver")}
	api.Configure().Set("allow-privileged", "true")
	for k, v := range o.APIServerFlags {
		api.Configure().Set(k, v)
	}
	env.ControlPlane.APIServer = api
	env.ControlPlane.KubectlPath = filepath.Join(binDir, "kubectl")

	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("starting envtest control plane from %s: %w", binDir, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating client for envtest control plane: %w", err)
	}
	return &Env{Config: cfg, Client: c, Environment: env}, nil
}

func checkBinaries(dir string) error {
	var missing []string
	for _, b := range Binaries {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("envtest: %s missing from %s: run `make k8s-bins` (or hack/build-k8s.sh) at the repository root to build the control plane binaries",
			strings.Join(missing, ", "), dir)
	}
	return nil
}

// RepoRoot returns the repository root: the nearest directory at or above the working
// directory whose go.mod declares ModulePath.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if modulePathOf(filepath.Join(dir, "go.mod")) == ModulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("envtest: no go.mod of " + ModulePath + " at or above the working directory")
		}
		dir = parent
	}
}

func modulePathOf(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
