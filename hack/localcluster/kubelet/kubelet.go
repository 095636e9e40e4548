package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// Version is reported as the Node's kubelet version.
const Version = "v1.37.2"

// Config configures the fake kubelet. NodeName, BinaryDir and PodsDir are required.
type Config struct {
	// NodeName is the name the Node registers with.
	NodeName string
	// Labels are added to the Node's standard labels (hostname, os, arch).
	Labels map[string]string
	// BinaryDir resolves a relative command[0], and holds the binary named after the image
	// for a container without command; an absolute command[0] is used as is.
	BinaryDir string
	// PodsDir holds a directory per Pod: the containers' output (<container>.log), the Pod's
	// kubeconfig, and the working directory of containers that set none.
	PodsDir string
	// Server and CACert are written into each Pod's kubeconfig; Server also gives
	// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT.
	Server string
	CACert []byte
	// LeaseDuration of the heartbeat Lease (default 40s), renewed every RenewInterval
	// (default 10s). Node status is refreshed every StatusInterval (default 1m).
	LeaseDuration, RenewInterval, StatusInterval time.Duration
	// Logf receives what the kubelet does. Default: discard.
	Logf func(format string, args ...any)
}

// Kubelet is a fake kubelet. Create it with New and run it with Run.
type Kubelet struct {
	cs  kubernetes.Interface
	cfg Config

	registered     chan struct{}
	registeredOnce sync.Once

	mu      sync.Mutex
	workers map[types.UID]*podWorker
	stopped bool
	wg      sync.WaitGroup
}

// New returns a fake kubelet that uses cs, which needs rights to nodes, leases, pods,
// pods/status, serviceaccounts/token, configmaps and secrets (a cluster admin has them).
func New(cs kubernetes.Interface, cfg Config) (*Kubelet, error) {
	if cfg.NodeName == "" || cfg.BinaryDir == "" || cfg.PodsDir == "" {
		return nil, errors.New("kubelet: NodeName, BinaryDir and PodsDir are required")
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = 40 * time.Second
	}
	if cfg.RenewInterval == 0 {
		cfg.RenewInterval = 10 * time.Second
	}
	if cfg.StatusInterval == 0 {
		cfg.StatusInterval = time.Minute
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	bin, err := filepath.Abs(cfg.BinaryDir)
	if err != nil {
		return nil, err
	}
	cfg.BinaryDir = bin
	if err := os.MkdirAll(cfg.PodsDir, 0o755); err != nil {
		return nil, err
	}
	return &Kubelet{cs: cs, cfg: cfg, registered: make(chan struct{}), workers: map[types.UID]*podWorker{}}, nil
}

// PodDir is the directory of a Pod's files: its kubeconfig and, for each container,
// <container>.log with the container's stdout and stderr (appended across restarts).
func (k *Kubelet) PodDir(pod *corev1.Pod) string {
	return filepath.Join(k.cfg.PodsDir, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
}

// LogPath is the file with a container's output.
func (k *Kubelet) LogPath(pod *corev1.Pod, container string) string {
	return filepath.Join(k.PodDir(pod), container+".log")
}

// WaitRegistered returns once the Node exists and reports Ready.
func (k *Kubelet) WaitRegistered(ctx context.Context) error {
	select {
	case <-k.registered:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run registers the Node, keeps it Ready and runs the Pods bound to it until ctx is done. Then
// it stops every process it started (SIGTERM, then SIGKILL after 10s) and returns. Pods are
// left in the API as they are.
func (k *Kubelet) Run(ctx context.Context) error {
	for {
		err := k.register(ctx)
		if err == nil {
			break
		}
		k.cfg.Logf("kubelet: registering node %s: %v", k.cfg.NodeName, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	k.registeredOnce.Do(func() { close(k.registered) })
	k.cfg.Logf("kubelet: registered node %s", k.cfg.NodeName)

	var hb sync.WaitGroup
	hb.Add(1)
	go func() {
		defer hb.Done()
		k.heartbeat(ctx)
	}()

	factory := informers.NewSharedInformerFactoryWithOptions(k.cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", k.cfg.NodeName).String()
		}))
	podInformer := factory.Core().V1().Pods().Informer()
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.podChanged(ctx, obj) },
		UpdateFunc: func(_, obj any) { k.podChanged(ctx, obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				k.podGone(pod.UID)
			}
		},
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()

	k.mu.Lock()
	k.stopped = true
	k.mu.Unlock()
	k.wg.Wait() // each worker kills its processes when ctx is done
	hb.Wait()
	return nil
}

func (k *Kubelet) podChanged(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	w, ok := k.workers[pod.UID]
	if !ok {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			if pod.DeletionTimestamp == nil {
				return // finished before this kubelet saw it: nothing to run
			}
		}
		w = newPodWorker(k, pod)
		k.workers[pod.UID] = w
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			w.run(ctx)
			k.mu.Lock()
			delete(k.workers, pod.UID)
			k.mu.Unlock()
		}()
	}
	w.update(pod)
}

func (k *Kubelet) podGone(uid types.UID) {
	k.mu.Lock()
	w := k.workers[uid]
	k.mu.Unlock()
	if w != nil {
		w.markGone()
	}
}

// register creates or updates the Node and writes its status.
func (k *Kubelet) register(ctx context.Context) error {
	labels := map[string]string{
		corev1.LabelHostname:   k.cfg.NodeName,
		corev1.LabelOSStable:   runtime.GOOS,
		corev1.LabelArchStable: runtime.GOARCH,
	}
	for key, v := range k.cfg.Labels {
		labels[key] = v
	}
	node, err := k.cs.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		node, err = k.cs.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Labels: labels},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating node: %w", err)
		}
	case err != nil:
		return err
	default:
		changed := false
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		for key, v := range labels {
			if node.Labels[key] != v {
				node.Labels[key] = v
				changed = true
			}
		}
		if node.Spec.Unschedulable {
			node.Spec.Unschedulable = false
			changed = true
		}
		if changed {
			if node, err = k.cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("updating node: %w", err)
			}
		}
	}
	if err := k.updateNodeStatus(ctx, node); err != nil {
		return err
	}
	return k.renewLease(ctx, node)
}

func (k *Kubelet) heartbeat(ctx context.Context) {
	renew := time.NewTicker(k.cfg.RenewInterval)
	defer renew.Stop()
	status := time.NewTicker(k.cfg.StatusInterval)
	defer status.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			node, err := k.cs.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
			if err == nil {
				err = k.renewLease(ctx, node)
			}
			if err != nil && ctx.Err() == nil {
				k.cfg.Logf("kubelet: renewing node lease: %v", err)
			}
		case <-status.C:
			node, err := k.cs.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
			if err == nil {
				err = k.updateNodeStatus(ctx, node)
			}
			if err != nil && ctx.Err() == nil {
				k.cfg.Logf("kubelet: updating node status: %v", err)
			}
		}
	}
}

func (k *Kubelet) renewLease(ctx context.Context, node *corev1.Node) error {
	leases := k.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: k.cfg.NodeName, Namespace: corev1.NamespaceNodeLease,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(k.cfg.NodeName),
				LeaseDurationSeconds: ptr.To(int32(k.cfg.LeaseDuration / time.Second)),
				RenewTime:            &now,
			},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.HolderIdentity = ptr.To(k.cfg.NodeName)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(k.cfg.LeaseDuration / time.Second))
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

func (k *Kubelet) updateNodeStatus(ctx context.Context, node *corev1.Node) error {
	node = node.DeepCopy()
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memTotal(), resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(k.cfg.PodsDir, &fs); err == nil {
		capacity[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(fs.Blocks)*fs.Bsize, resource.BinarySI)
	}
	node.Status.Capacity = capacity
	node.Status.Allocatable = capacity.DeepCopy()
	node.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
		{Type: corev1.NodeHostName, Address: k.cfg.NodeName},
	}
	node.Status.NodeInfo = nodeInfo()
	node.Status.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}}
	want := []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "fake kubelet is posting ready status"},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
	}
	for i := range want {
		want[i].LastHeartbeatTime = now
		want[i].LastTransitionTime = now
		for _, old := range node.Status.Conditions {
			if old.Type == want[i].Type && old.Status == want[i].Status {
				want[i].LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	node.Status.Conditions = want
	_, err := k.cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("updating node status: %w", err)
	}
	return nil
}

func nodeInfo() corev1.NodeSystemInfo {
	var u syscall.Utsname
	_ = syscall.Uname(&u)
	return corev1.NodeSystemInfo{
		MachineID:               readTrim("/etc/machine-id"),
		SystemUUID:              readTrim("/sys/class/dmi/id/product_uuid"),
		BootID:                  readTrim("/proc/sys/kernel/random/boot_id"),
		KernelVersion:           utsString(u.Release[:]),
		OSImage:                 osImage(),
		ContainerRuntimeVersion: "localprocess://" + Version,
		KubeletVersion:          Version,
		OperatingSystem:         runtime.GOOS,
		Architecture:            runtime.GOARCH,
	}
}

func utsString(b []int8) string {
	var s strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		s.WriteByte(byte(c))
	}
	return s.String()
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func osImage() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return runtime.GOOS
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			if u, err := strconv.Unquote(v); err == nil {
				return u
			}
			return strings.Trim(v, `"'`)
		}
	}
	return runtime.GOOS
}

// memTotal returns MemTotal from /proc/meminfo in bytes.
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

func numCPU() int { return runtime.NumCPU() }

func resourceQuantity(v int64, binary bool) *resource.Quantity {
	if binary {
		return resource.NewQuantity(v, resource.BinarySI)
	}
	return resource.NewQuantity(v, resource.DecimalSI)
}
