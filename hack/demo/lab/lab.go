package lab

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/api"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/hack/localcluster/cluster"
	"github.com/schedlab/schedlab/internal/nodeagent"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
)

// Namespace is the operator's namespace in the lab.
const Namespace = "schedlab-system"

// PoolLabel is the label the lab's Node carries; experiments select it with
// nodeSelector: {matchLabels: {schedlab.io/pool: lab}}.
const PoolLabel = "schedlab.io/pool"

//go:embed fake-runtime-policy.yaml
var fakeRuntimePolicy []byte

// Options configure a lab. Dir and Manifests are required.
type Options struct {
	// Dir holds the cluster's files, the agent's state directory, the manager's kubeconfig and log.
	Dir string
	// RepoRoot has bin/schedlab and bin/k8s. Default: found from the working directory.
	RepoRoot string
	// Manifests install schedlab minus the manager Deployment: the CRDs, the ServiceAccounts
	// schedlab-manager and schedlab-agent in Namespace, and their RBAC (for example the chart
	// rendered with controller.replicas=0, or config/crd and config/rbac).
	Manifests []byte
	// ManagerArgs are added to the manager's flags.
	ManagerArgs []string
	// Logf receives progress. Default: discard.
	Logf func(format string, args ...any)
}

// Lab is a running lab.
type Lab struct {
	Cluster *cluster.Cluster
	// Client reaches the API server as an admin, with schedlab's types.
	Client client.Client
	// Dir is Options.Dir; StateDir is the agents' state directory (their journal) under it.
	Dir, StateDir string
	// ManagerLog is the manager's output.
	ManagerLog string
	// CPUs is the Node's CPU capacity.
	CPUs int

	root    string
	logf    func(string, ...any)
	manager *exec.Cmd
	exited  chan struct{}
}

// Scheme has the built-in types and schedlab's.
func Scheme() *runtime.Scheme { return api.NewScheme() }

// Start starts the cluster, installs schedlab and starts the manager. On error, everything
// started is stopped.
func Start(ctx context.Context, o Options) (_ *Lab, err error) {
	if o.Dir == "" || len(o.Manifests) == 0 {
		return nil, errors.New("lab: Options.Dir and Options.Manifests are required")
	}
	if o.RepoRoot == "" {
		if o.RepoRoot, err = cluster.RepoRoot(); err != nil {
			return nil, err
		}
	}
	l := &Lab{Dir: o.Dir, StateDir: filepath.Join(o.Dir, "agent-state"), ManagerLog: filepath.Join(o.Dir, "manager.log"), root: o.RepoRoot, logf: o.Logf}
	if l.logf == nil {
		l.logf = func(string, ...any) {}
	}
	if err := os.MkdirAll(l.StateDir, 0o700); err != nil {
		return nil, err
	}
	c, err := cluster.Start(ctx, cluster.Options{
		Dir:        filepath.Join(o.Dir, "cluster"),
		K8sBinDir:  filepath.Join(o.RepoRoot, "bin", "k8s"),
		BinaryDir:  filepath.Join(o.RepoRoot, "bin"),
		NodeLabels: map[string]string{PoolLabel: "lab"},
		Logf:       l.logf,
	})
	if err != nil {
		return nil, err
	}
	l.Cluster = c
	defer func() {
		if err != nil {
			l.Stop()
		}
	}()
	if l.Client, err = client.New(c.Config, client.Options{Scheme: Scheme()}); err != nil {
		return nil, err
	}
	var node corev1.Node
	if err := l.Client.Get(ctx, client.ObjectKey{Name: c.NodeName}, &node); err != nil {
		return nil, err
	}
	l.CPUs = int(node.Status.Capacity.Cpu().Value())

	if err := l.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil {
		return nil, err
	}
	if _, err := l.Kubectl(ctx, o.Manifests, "apply", "--server-side", "-f", "-"); err != nil {
		return nil, fmt.Errorf("lab: installing schedlab: %w", err)
	}
	if _, err := l.Kubectl(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/schedexperiments.schedlab.io", "crd/noderuns.schedlab.io", "crd/schedprofiles.schedlab.io"); err != nil {
		return nil, err
	}
	if err := l.installFakeRuntime(ctx); err != nil {
		return nil, err
	}
	if err := l.startManager(ctx, o.ManagerArgs); err != nil {
		return nil, err
	}
	return l, nil
}

// Kubectl runs bin/k8s/kubectl against the cluster as the admin and returns its output.
func (l *Lab) Kubectl(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(l.root, "bin", "k8s", "kubectl"), append([]string{"--kubeconfig", l.Cluster.Kubeconfig}, args...)...)
	cmd.Dir = l.root
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("kubectl %s: %w: %s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes(), nil
}

// installFakeRuntime applies fake-runtime-policy.yaml and waits until the API server enforces it.
func (l *Lab) installFakeRuntime(ctx context.Context) error {
	if _, err := l.Kubectl(ctx, fakeRuntimePolicy, "apply", "-f", "-"); err != nil {
		return err
	}
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-probe", Namespace: Namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "schedlab-agent"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "schedlab:lab", Args: []string{"agent", "--root", "/host"}}}},
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p := probe.DeepCopy()
		if err := l.Client.Create(ctx, p, client.DryRunAll); err != nil {
			return false, nil
		}
		c := p.Spec.Containers[0]
		return slices.Equal(c.Command, []string{"schedlab"}) && slices.Equal(c.Args, []string{"agent", "--root", "/"}), nil
	})
	if err != nil {
		return fmt.Errorf("lab: the fake-runtime MutatingAdmissionPolicy is not enforced: %w", err)
	}
	return nil
}

// startManager runs bin/schedlab manager with a token of the schedlab-manager ServiceAccount.
func (l *Lab) startManager(ctx context.Context, extra []string) error {
	tr, err := l.Cluster.Client.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, "schedlab-manager",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("lab: token for the manager ServiceAccount: %w", err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["lab"] = &clientcmdapi.Cluster{Server: l.Cluster.Server, CertificateAuthorityData: l.Cluster.Config.CAData}
	kc.AuthInfos["schedlab-manager"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "schedlab-manager"}
	kc.CurrentContext = "lab"
	kubeconfig := filepath.Join(l.Dir, "manager.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		return err
	}
	out, err := os.Create(l.ManagerLog)
	if err != nil {
		return err
	}
	args := append([]string{"manager",
		"--kubeconfig", kubeconfig,
		"--namespace", Namespace,
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		"--agent-image=schedlab:lab",
		"--agent-service-account=schedlab-agent",
		"--state-dir", l.StateDir,
	}, extra...)
	cmd := exec.Command(filepath.Join(l.root, "bin", "schedlab"), args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return err
	}
	l.manager, l.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); out.Close(); close(l.exited) }()
	select {
	case <-l.exited:
		b, _ := os.ReadFile(l.ManagerLog)
		return fmt.Errorf("lab: the manager exited at once:\n%s", b)
	case <-time.After(2 * time.Second):
	}
	l.logf("started schedlab manager (pid %d, log %s)", cmd.Process.Pid, l.ManagerLog)
	return nil
}

// Stop stops the manager (SIGTERM, then SIGKILL after 20s) and the cluster, whose fake kubelet
// stops every Pod process. It returns an error when the manager had to be killed.
func (l *Lab) Stop() error {
	var err error
	if l.manager != nil {
		_ = syscall.Kill(-l.manager.Process.Pid, syscall.SIGTERM)
		select {
		case <-l.exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-l.manager.Process.Pid, syscall.SIGKILL)
			<-l.exited
			err = errors.New("lab: the manager did not stop within 20s of SIGTERM and was killed")
		}
		l.manager = nil
	}
	if l.Cluster != nil {
		l.Cluster.Stop()
	}
	return err
}

// KustomizeManifests renders config/crd and config/rbac with bin/k8s/kubectl kustomize: what
// Options.Manifests needs when the chart (and helm) is not at hand.
func KustomizeManifests(ctx context.Context, root string) ([]byte, error) {
	var manifests []byte
	for _, dir := range []string{"config/crd", "config/rbac"} {
		out, err := exec.CommandContext(ctx, filepath.Join(root, "bin", "k8s", "kubectl"), "kustomize", filepath.Join(root, dir)).Output()
		if err != nil {
			return nil, fmt.Errorf("kubectl kustomize %s: %w", dir, err)
		}
		manifests = append(append(manifests, out...), []byte("\n---\n")...)
	}
	return manifests, nil
}

// DeleteAll deletes every SchedProfile and SchedExperiment and waits up to timeout for them to
// be gone: their finalizers hold them until the agents have restored this machine.
func (l *Lab) DeleteAll(ctx context.Context, timeout time.Duration) error {
	for _, obj := range []client.Object{&v1alpha1.SchedProfile{}, &v1alpha1.SchedExperiment{}} {
		if err := l.Client.DeleteAllOf(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("lab: deleting every %T: %w", obj, err)
		}
	}
	var left []string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		left = nil
		var ps v1alpha1.SchedProfileList
		var es v1alpha1.SchedExperimentList
		if err := l.Client.List(ctx, &ps); err != nil {
			return false, nil
		}
		if err := l.Client.List(ctx, &es); err != nil {
			return false, nil
		}
		for _, p := range ps.Items {
			left = append(left, "SchedProfile "+p.Name)
		}
		for _, e := range es.Items {
			left = append(left, "SchedExperiment "+e.Name)
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("lab: still there after %s: %s", timeout, strings.Join(left, ", "))
	}
	return nil
}

// RestoreHost restores whatever the agents journalled in the lab's state directory and did not
// restore themselves (they were stopped before they could): an experiment's journal and the
// profile mode's journal.
func (l *Lab) RestoreHost() error {
	if _, err := nodeagent.RestoreOnly(nodeagent.Options{StateDir: l.StateDir, RunID: "lab-stop", LockWait: time.Minute}); err != nil {
		return err
	}
	k := &host.ProfileKeeper{FS: host.NewFS("/"), StateDir: l.StateDir}
	_, err := k.Keep(nil)
	return err
}
