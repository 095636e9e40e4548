package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/schedlab/schedlab/hack/localcluster/kubelet"
	"github.com/schedlab/schedlab/test/envtest"
)

const (
	serviceCIDR = "10.0.0.0/24"
	serviceIP   = "10.0.0.1"
)

// Options configures a local cluster. Only Dir is required.
type Options struct {
	// Dir holds everything the cluster writes: pki/, etcd/ (emptied at start: every start is a
	// new cluster), logs/<component>.log, kubeconfig, and pods/ (each container's output).
	Dir string
	// K8sBinDir holds etcd, kube-apiserver, kube-controller-manager and kube-scheduler.
	// Default: $KUBEBUILDER_ASSETS if set (as test/envtest), else <repo>/bin/k8s.
	K8sBinDir string
	// BinaryDir resolves a Pod's relative command[0] (the schedlab binary stands in for the
	// image). Default: <repo>/bin.
	BinaryDir string
	// NodeName of this machine's Node. Default: the host name, lower-cased.
	NodeName string
	// NodeLabels are added to the Node's labels.
	NodeLabels map[string]string
	// DisableKubelet runs the control plane only.
	DisableKubelet bool
	// StartTimeout bounds Start. Default: 2 minutes.
	StartTimeout time.Duration
	// Logf receives progress and fake-kubelet messages. Default: discard.
	Logf func(format string, args ...any)
}

// Cluster is a running local cluster.
type Cluster struct {
	// Dir is Options.Dir.
	Dir string
	// Kubeconfig is the path of an admin kubeconfig (user in group system:masters).
	Kubeconfig string
	// Server is the API server's URL.
	Server string
	// NodeName is the name of this machine's Node.
	NodeName string
	// K8sBinDir holds the control plane binaries (and kubectl, if built).
	K8sBinDir string
	// Config and Client reach the API server as the admin.
	Config *rest.Config
	Client kubernetes.Interface

	logf      func(string, ...any)
	procs     []*process // in start order
	kubelet   *kubelet.Kubelet
	cancel    context.CancelFunc
	stopOnce  sync.Once
	stopped   atomic.Bool
	kubeletWG sync.WaitGroup
}

// Start starts the cluster and returns once the API server is ready and, unless disabled, the
// Node is registered and Ready. On error everything started so far is stopped. ctx bounds only
// the start; the cluster runs until Stop.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	// Ports are picked free and then handed to the components, so another process can take one
	// in between; such a start is retried.
	for attempt := 1; ; attempt++ {
		c, err := start(ctx, o)
		if err == nil || attempt == 3 || ctx.Err() != nil || !strings.Contains(err.Error(), "address already in use") {
			return c, err
		}
		if o.Logf != nil {
			o.Logf("a port was taken, starting again: %v", err)
		}
	}
}

func start(ctx context.Context, o Options) (_ *Cluster, err error) {
	if o.Dir == "" {
		return nil, errors.New("localcluster: Options.Dir is required")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if o.K8sBinDir == "" {
		o.K8sBinDir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if o.K8sBinDir == "" || o.BinaryDir == "" {
		root, err := RepoRoot()
		if err != nil {
			return nil, err
		}
		if o.K8sBinDir == "" {
			o.K8sBinDir = filepath.Join(root, "bin", "k8s")
		}
		if o.BinaryDir == "" {
			o.BinaryDir = filepath.Join(root, "bin")
		}
	}
	if err := checkBinaries(o.K8sBinDir); err != nil {
		return nil, err
	}
	if o.NodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, err
		}
		o.NodeName = strings.ToLower(h)
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 2 * time.Minute
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ctx, cancelStart := context.WithTimeout(ctx, o.StartTimeout)
	defer cancelStart()

	c := &Cluster{Dir: dir, NodeName: o.NodeName, K8sBinDir: o.K8sBinDir, logf: logf}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(filepath.Join(dir, "etcd")); err != nil {
		return nil, err
	}
	logDir := filepath.Join(dir, "logs")
	p, err := newPKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("localcluster: generating certificates: %w", err)
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdPort, etcdPeerPort, apiPort := ports[0], ports[1], ports[2]
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	c.Server = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	bin := func(name string) string { return filepath.Join(o.K8sBinDir, name) }

	// etcd
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeerPort)
	etcd, err := startProcess("etcd", bin("etcd"), []string{
		"--name=default",
		"--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		"--unsafe-no-fsync=true", // a throwaway cluster: speed over durability
		"--log-level=warn",
	}, logDir)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, etcd)
	logf("started etcd on %s (log %s)", etcdURL, etcd.logPath)
	if err := waitHTTP(ctx, etcd, &http.Client{Timeout: 2 * time.Second}, etcdURL+"/health"); err != nil {
		return nil, err
	}

	// kube-apiserver
	api, err := startProcess("kube-apiserver", bin("kube-apiserver"), []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + filepath.Join(dir, "pki"),
		"--tls-cert-file=" + p.servingCertFile,
		"--tls-private-key-file=" + p.servingKey,
		"--client-ca-file=" + p.caCertFile,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.saPubFile,
		"--service-account-signing-key-file=" + p.saKeyFile,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
		// No kube-proxy or network here: keep the "kubernetes" Service's endpoints out of it
		// (a loopback address is not a valid endpoint).
		"--endpoint-reconciler-type=none",
	}, logDir)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, api)
	logf("started kube-apiserver on %s (log %s)", c.Server, api.logPath)

	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.Server, p.caCert, p.adminCertPEM, p.adminKeyPEM, ""); err != nil {
		return nil, err
	}
	c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	c.Client, err = kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	if err := waitAPIServer(ctx, api, c.Client); err != nil {
		return nil, err
	}
	logf("kube-apiserver is ready")

	// kube-controller-manager and kube-scheduler run as the admin.
	kcm, err := startProcess("kube-controller-manager", bin("kube-controller-manager"), []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--leader-elect=false",
		"--service-account-private-key-file=" + p.saKeyFile,
		"--root-ca-file=" + p.caCertFile,
		"--cluster-signing-cert-file=" + p.caCertFile,
		"--cluster-signing-key-file=" + p.caKeyFile,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--use-service-account-credentials=false",
	}, logDir)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, kcm)
	sched, err := startProcess("kube-scheduler", bin("kube-scheduler"), []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--leader-elect=false",
	}, logDir)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, sched)
	logf("started kube-controller-manager (log %s) and kube-scheduler (log %s)", kcm.logPath, sched.logPath)

	if !o.DisableKubelet {
		kl, err := kubelet.New(c.Client, kubelet.Config{
			NodeName:  o.NodeName,
			Labels:    o.NodeLabels,
			BinaryDir: o.BinaryDir,
			PodsDir:   filepath.Join(dir, "pods"),
			Server:    c.Server,
			CACert:    p.caCert,
			Logf:      logf,
		})
		if err != nil {
			return nil, err
		}
		c.kubelet = kl
		runCtx, cancel := context.WithCancel(context.Background())
		c.cancel = cancel
		c.kubeletWG.Add(1)
		go func() {
			defer c.kubeletWG.Done()
			if err := kl.Run(runCtx); err != nil {
				logf("fake kubelet stopped: %v", err)
			}
		}()
		if err := kl.WaitRegistered(ctx); err != nil {
			return nil, fmt.Errorf("localcluster: node %s did not register: %w", o.NodeName, err)
		}
		logf("node %s is registered and Ready", o.NodeName)
	}

	// The default ServiceAccount in "default" shows that kube-controller-manager works; pods
	// cannot be created before it exists (ServiceAccount admission).
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, pr := range c.procs {
			if err := pr.failure(); err != nil {
				return false, err
			}
		}
		_, err := c.Client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return nil, fmt.Errorf("localcluster: waiting for kube-controller-manager (default ServiceAccount): %w", err)
	}
	return c, nil
}

// Stop stops the fake kubelet (which stops every Pod process it started), then
// kube-scheduler, kube-controller-manager, kube-apiserver and etcd. It is safe to call twice.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		c.stopped.Store(true)
		if c.cancel != nil {
			c.cancel()
			c.kubeletWG.Wait()
		}
		for i := len(c.procs) - 1; i >= 0; i-- {
			c.procs[i].stop(15 * time.Second)
		}
		c.logf("stopped the local cluster")
	})
}

// Err reports the first control plane component that exited on its own, with its log's tail;
// nil after Stop.
func (c *Cluster) Err() error {
	if c.stopped.Load() {
		return nil
	}
	for _, p := range c.procs {
		if err := p.failure(); err != nil {
			return err
		}
	}
	return nil
}

// Done is closed when any control plane component exits.
func (c *Cluster) Done() <-chan struct{} {
	done := make(chan struct{})
	var once sync.Once
	for _, p := range c.procs {
		go func() {
			<-p.done
			once.Do(func() { close(done) })
		}()
	}
	return done
}

// Kubelet returns the fake kubelet, or nil when disabled.
func (c *Cluster) Kubelet() *kubelet.Kubelet { return c.kubelet }

// Binaries are the programs Start runs from Options.K8sBinDir.
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

func checkBinaries(dir string) error {
	var missing []string
	for _, b := range Binaries {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("localcluster: %s missing from %s: run `make k8s-bins` (or hack/build-k8s.sh) at the repository root",
			strings.Join(missing, ", "), dir)
	}
	return nil
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func waitHTTP(ctx context.Context, p *process, hc *http.Client, url string) error {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := p.failure(); err != nil {
			return false, err
		}
		resp, err := hc.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("localcluster: waiting for %s at %s: %w", p.name, url, err)
	}
	return nil
}

func waitAPIServer(ctx context.Context, p *process, cs kubernetes.Interface) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := p.failure(); err != nil {
			return false, err
		}
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Raw()
		if err != nil {
			last = err
			return false, nil
		}
		return strings.TrimSpace(string(body)) == "ok", nil
	})
	if err != nil {
		return fmt.Errorf("localcluster: waiting for kube-apiserver /readyz (last: %v): %w", last, err)
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for server with either a client certificate or a token.
func writeKubeconfig(path, server string, caPEM, certPEM, keyPEM []byte, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM, Token: token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, path)
}

// RepoRoot returns the repository root: the nearest directory at or above the
// working directory whose go.mod declares the schedlab module.
func RepoRoot() (string, error) { return envtest.RepoRoot() }
