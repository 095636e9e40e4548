package kubelet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

const (
	maxBackoff        = 30 * time.Second
	shutdownGrace     = 10 * time.Second // when the kubelet itself stops
	defaultPodGrace   = 30 * time.Second
	containerIDScheme = "localprocess://"
)

// podWorker owns one Pod: its processes and its status. One goroutine (run) does all the work;
// informer events and process exits only record what happened and wake it.
type podWorker struct {
	k      *Kubelet
	notify chan struct{}

	mu   sync.Mutex
	pod  *corev1.Pod // latest seen
	gone bool        // deleted from the API

	// owned by the run goroutine
	dir        string
	kubeconfig string
	env        map[string][]corev1.EnvVar
	initCs     []*container
	cs         []*container
	startTime  *metav1.Time
	nextWake   time.Time
	lastErr    string
}

// container is one container's process and history. Fields written by the exit goroutine are
// guarded by podWorker.mu.
type container struct {
	spec    corev1.Container
	sidecar bool // an init container with restartPolicy Always

	cmd          *exec.Cmd
	running      bool
	startedAt    metav1.Time
	exited       bool
	exitCode     int32
	signal       string
	finishedAt   metav1.Time
	restartCount int32
	lastTerm     *corev1.ContainerStateTerminated
	nextStart    time.Time
	waiting      string // reason, when it cannot start
	waitingMsg   string
}

func newPodWorker(k *Kubelet, pod *corev1.Pod) *podWorker {
	w := &podWorker{k: k, notify: make(chan struct{}, 1), pod: pod}
	w.dir = k.PodDir(pod)
	for _, c := range pod.Spec.InitContainers {
		w.initCs = append(w.initCs, &container{spec: c,
			sidecar: c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways})
	}
	for _, c := range pod.Spec.Containers {
		w.cs = append(w.cs, &container{spec: c})
	}
	return w
}

// update records the latest Pod; an older version (an informer event behind our own status
// write) is ignored.
func (w *podWorker) update(pod *corev1.Pod) {
	w.mu.Lock()
	if !olderVersion(pod.ResourceVersion, w.pod.ResourceVersion) {
		w.pod = pod
	}
	w.mu.Unlock()
	w.wake()
}

// olderVersion compares resource versions, which kube-apiserver backed by etcd serves as
// integers; anything else is never taken as older.
func olderVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}

func (w *podWorker) markGone() {
	w.mu.Lock()
	w.gone = true
	w.mu.Unlock()
	w.wake()
}

func (w *podWorker) wake() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

func (w *podWorker) snapshot() (*corev1.Pod, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod, w.gone
}

func (w *podWorker) logf(format string, args ...any) {
	pod, _ := w.snapshot()
	w.k.cfg.Logf("kubelet: pod %s/%s: "+format, append([]any{pod.Namespace, pod.Name}, args...)...)
}

// run syncs the Pod whenever something happens, until the Pod is gone or ctx is done.
func (w *podWorker) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if done := w.sync(ctx); done {
			return
		}
		wait := time.Hour
		if !w.nextWake.IsZero() {
			wait = max(time.Until(w.nextWake), 10*time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			w.killAll(shutdownGrace, nil)
			return
		case <-w.notify:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// sync does one round of work; it returns true when the worker is done with the Pod.
func (w *podWorker) sync(ctx context.Context) bool {
	pod, gone := w.snapshot()
	w.nextWake = time.Time{}
	if gone {
		w.killAll(2*time.Second, nil)
		return true
	}
	if pod.DeletionTimestamp != nil {
		w.terminate(ctx, pod)
		return true
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		if !w.anyRunning() {
			return false
		}
	}
	if err := w.prepare(ctx, pod); err != nil {
		w.lastErr = err.Error()
		w.logf("preparing: %v", err)
		w.nextWake = time.Now().Add(2 * time.Second)
	} else {
		w.lastErr = ""
		w.startContainers(pod)
	}
	w.writeStatus(ctx)
	return false
}

// prepare makes the Pod's directory, its kubeconfig and the containers' environment once.
func (w *podWorker) prepare(ctx context.Context, pod *corev1.Pod) error {
	if w.env != nil {
		return nil
	}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return err
	}
	if ptr.Deref(pod.Spec.AutomountServiceAccountToken, true) && w.kubeconfig == "" {
		sa := pod.Spec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		tr, err := w.k.cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{
				ExpirationSeconds: ptr.To[int64](24 * 3600),
				BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("requesting a token for ServiceAccount %s: %w", sa, err)
		}
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: w.k.cfg.Server, CertificateAuthorityData: w.k.cfg.CACert}
		cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
		cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: sa, Namespace: pod.Namespace}
		cfg.CurrentContext = "local"
		path := filepath.Join(w.dir, "kubeconfig")
		if err := clientcmd.WriteToFile(*cfg, path); err != nil {
			return err
		}
		w.kubeconfig = path
	}
	env := map[string][]corev1.EnvVar{}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		vars, err := w.containerEnv(ctx, pod, &c)
		if err != nil {
			return fmt.Errorf("container %s: %w", c.Name, err)
		}
		env[c.Name] = vars
	}
	w.env = env
	now := metav1.Now()
	w.startTime = &now
	return nil
}

// startContainers runs init containers in order, then the containers, and restarts what the
// restart policy says to restart.
func (w *podWorker) startContainers(pod *corev1.Pod) {
	for _, c := range w.initCs {
		w.mu.Lock()
		running, exited, code := c.running, c.exited, c.exitCode
		w.mu.Unlock()
		switch {
		case c.sidecar:
			if !running && !w.backingOff(c) {
				w.startProcess(pod, c)
			}
			continue
		case running:
			return
		case exited && code == 0:
			continue
		case exited && pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
			return // the Pod failed
		case c.cmd == nil || exited:
			if !w.backingOff(c) {
				w.startProcess(pod, c)
			}
			return
		}
	}
	for _, c := range w.cs {
		w.mu.Lock()
		running, exited, code := c.running, c.exited, c.exitCode
		w.mu.Unlock()
		if running || c.waiting == "CreateContainerError" {
			continue
		}
		restart := c.cmd == nil
		if exited {
			switch pod.Spec.RestartPolicy {
			case corev1.RestartPolicyAlways, "":
				restart = true
			case corev1.RestartPolicyOnFailure:
				restart = code != 0
			}
		}
		if restart && !w.backingOff(c) {
			w.startProcess(pod, c)
		}
	}
}

func (w *podWorker) backingOff(c *container) bool {
	if c.nextStart.IsZero() || !time.Now().Before(c.nextStart) {
		return false
	}
	if w.nextWake.IsZero() || c.nextStart.Before(w.nextWake) {
		w.nextWake = c.nextStart
	}
	return true
}

func (w *podWorker) startProcess(pod *corev1.Pod, c *container) {
	env := w.env[c.spec.Name]
	argv, err := w.argv(c.spec, env)
	if err != nil {
		c.waiting, c.waitingMsg = "CreateContainerError", err.Error()
		w.logf("container %s: %v", c.spec.Name, err)
		return
	}
	logPath := filepath.Join(w.dir, c.spec.Name+".log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.waiting, c.waitingMsg = "CreateContainerError", err.Error()
		return
	}
	defer out.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = w.processEnv(env)
	cmd.Dir = w.dir
	if wd := c.spec.WorkingDir; wd != "" {
		if fi, err := os.Stat(wd); err == nil && fi.IsDir() {
			cmd.Dir = wd
		}
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so that SIGTERM and SIGKILL reach everything it started; and death
	// with the kubelet, so that no workload outlives the harness.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		c.waiting, c.waitingMsg = "RunContainerError", err.Error()
		c.exited, c.exitCode, c.finishedAt = true, 128, metav1.Now()
		c.nextStart = time.Now().Add(w.backoff(c))
		w.logf("container %s: %v", c.spec.Name, err)
		return
	}
	w.mu.Lock()
	if c.cmd != nil { // a restart: keep what happened last time
		c.restartCount++
		c.lastTerm = c.terminated()
	}
	c.cmd, c.running, c.exited, c.signal = cmd, true, false, ""
	c.startedAt = metav1.Now()
	c.waiting, c.waitingMsg = "", ""
	w.mu.Unlock()
	w.logf("started container %s: pid %d: %s (output in %s)", c.spec.Name, cmd.Process.Pid, strings.Join(argv, " "), logPath)
	go func() {
		err := cmd.Wait()
		code, sig := int32(0), ""
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code, sig = 128+int32(ws.Signal()), ws.Signal().String()
			} else {
				code = int32(ee.ExitCode())
			}
		} else if err != nil {
			code = 128
		}
		w.mu.Lock()
		c.running, c.exited, c.exitCode, c.signal, c.finishedAt = false, true, code, sig, metav1.Now()
		c.nextStart = time.Now().Add(w.backoff(c))
		w.mu.Unlock()
		w.logf("container %s exited with code %d", c.spec.Name, code)
		w.wake()
	}()
}

// backoff is the crash-loop delay before the next start: 1s doubling to 30s, reset after a run
// of 10 minutes.
func (w *podWorker) backoff(c *container) time.Duration {
	if time.Since(c.startedAt.Time) > 10*time.Minute {
		return 0
	}
	d := time.Second << min(c.restartCount, 5)
	return min(d, maxBackoff)
}

func (c *container) terminated() *corev1.ContainerStateTerminated {
	reason := "Completed"
	if c.exitCode != 0 {
		reason = "Error"
	}
	t := &corev1.ContainerStateTerminated{
		ExitCode: c.exitCode, Reason: reason, StartedAt: c.startedAt, FinishedAt: c.finishedAt,
		ContainerID: containerIDScheme + strconv.Itoa(c.cmd.Process.Pid),
	}
	if c.signal != "" {
		t.Message = "killed by " + c.signal
	}
	return t
}

func (w *podWorker) argv(spec corev1.Container, env []corev1.EnvVar) ([]string, error) {
	vars := map[string]string{}
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	command := spec.Command
	if len(command) == 0 {
		// The image's entrypoint: the binary named after the image.
		name := imageBinary(spec.Image)
		if name == "" {
			return nil, fmt.Errorf("no command and no image name to stand for the entrypoint")
		}
		command = []string{name}
	}
	var argv []string
	for _, a := range append(append([]string{}, command...), spec.Args...) {
		argv = append(argv, expand(a, vars))
	}
	if !filepath.IsAbs(argv[0]) {
		argv[0] = filepath.Join(w.k.cfg.BinaryDir, argv[0])
	}
	if _, err := os.Stat(argv[0]); err != nil {
		return nil, fmt.Errorf("command %s: %w", argv[0], err)
	}
	return argv, nil
}

// imageBinary returns the name of the binary that stands in for an image's entrypoint: the
// last path element of the image name without tag or digest ("ghcr.io/x/schedlab:v1" and
// "schedlab:dev" give "schedlab").
func imageBinary(image string) string {
	name, _, _ := strings.Cut(image, "@")
	name = name[strings.LastIndex(name, "/")+1:]
	name, _, _ = strings.Cut(name, ":")
	return name
}

func (w *podWorker) processEnv(env []corev1.EnvVar) []string {
	out := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:" + w.k.cfg.BinaryDir,
		"HOME=/root",
		"HOSTNAME=" + w.k.cfg.NodeName,
	}
	if host, port, ok := strings.Cut(strings.TrimPrefix(w.k.cfg.Server, "https://"), ":"); ok {
		out = append(out, "KUBERNETES_SERVICE_HOST="+host, "KUBERNETES_SERVICE_PORT="+port)
	}
	if w.kubeconfig != "" {
		out = append(out, "KUBECONFIG="+w.kubeconfig)
	}
	for _, e := range env {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}

// containerEnv resolves a container's envFrom and env, in Kubernetes' order, with $(VAR)
// references to earlier variables expanded.
func (w *podWorker) containerEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container) ([]corev1.EnvVar, error) {
	var out []corev1.EnvVar
	vars := map[string]string{}
	set := func(name, value string) {
		if _, ok := vars[name]; ok {
			for i := range out {
				if out[i].Name == name {
					out[i].Value = value
				}
			}
		} else {
			out = append(out, corev1.EnvVar{Name: name, Value: value})
		}
		vars[name] = value
	}
	core := w.k.cs.CoreV1()
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, err := core.ConfigMaps(pod.Namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) && ptr.Deref(from.ConfigMapRef.Optional, false) {
					continue
				}
				return nil, err
			}
			for k, v := range cm.Data {
				set(from.Prefix+k, v)
			}
		case from.SecretRef != nil:
			s, err := core.Secrets(pod.Namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) && ptr.Deref(from.SecretRef.Optional, false) {
					continue
				}
				return nil, err
			}
			for k, v := range s.Data {
				set(from.Prefix+k, string(v))
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, vars))
			continue
		}
		v, skip, err := w.envValueFrom(ctx, pod, c, e.ValueFrom)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if !skip {
			set(e.Name, v)
		}
	}
	return out, nil
}

func (w *podWorker) envValueFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, from *corev1.EnvVarSource) (string, bool, error) {
	core := w.k.cs.CoreV1()
	switch {
	case from.FieldRef != nil:
		v, err := fieldValue(pod, w.k.cfg.NodeName, from.FieldRef.FieldPath)
		return v, false, err
	case from.ResourceFieldRef != nil:
		v, err := w.resourceValue(c, from.ResourceFieldRef)
		return v, false, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm, err := core.ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil {
			if v, ok := cm.Data[ref.Key]; ok {
				return v, false, nil
			}
			err = fmt.Errorf("key %s not in ConfigMap %s", ref.Key, ref.Name)
		}
		if ptr.Deref(ref.Optional, false) {
			return "", true, nil
		}
		return "", false, err
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		s, err := core.Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil {
			if v, ok := s.Data[ref.Key]; ok {
				return string(v), false, nil
			}
			err = fmt.Errorf("key %s not in Secret %s", ref.Key, ref.Name)
		}
		if ptr.Deref(ref.Optional, false) {
			return "", true, nil
		}
		return "", false, err
	}
	return "", false, errors.New("unsupported valueFrom")
}

// fieldValue resolves a downward API field path.
func fieldValue(pod *corev1.Pod, nodeName, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return nodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs":
		return "127.0.0.1", nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if rest, ok := strings.CutPrefix(path, prefix+"['"); ok {
			if key, ok := strings.CutSuffix(rest, "']"); ok {
				return m[key], nil
			}
		}
	}
	return "", fmt.Errorf("unsupported fieldPath %q", path)
}

// resourceValue resolves limits.cpu, requests.memory and the like, as the kubelet does: a
// missing limit is the node's allocatable, and the value is rounded up to the divisor.
func (w *podWorker) resourceValue(c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok {
		switch name {
		case "cpu":
			q = *resourceQuantity(int64(numCPU()), false)
		case "memory":
			q = *resourceQuantity(memTotal(), false)
		default:
			return "0", nil
		}
	}
	div := ref.Divisor
	if div.IsZero() {
		div = *resourceQuantity(1, false)
	}
	if name == "cpu" {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(div.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(div.Value()))), 10), nil
}

// expand replaces $(VAR) with the variable's value as Kubernetes does: $$ is a literal $, and
// a reference to an unknown variable stays as written.
func expand(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func (w *podWorker) anyRunning() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range append(append([]*container{}, w.initCs...), w.cs...) {
		if c.running {
			return true
		}
	}
	return false
}

// killAll sends SIGTERM to every running container's process group, waits up to grace (or
// until wake reports the Pod gone), then sends SIGKILL and waits for the processes to end.
func (w *podWorker) killAll(grace time.Duration, wake <-chan struct{}) {
	w.signalAll(syscall.SIGTERM)
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for w.anyRunning() {
		select {
		case <-deadline.C:
			w.signalAll(syscall.SIGKILL)
			for w.anyRunning() {
				time.Sleep(20 * time.Millisecond)
			}
			return
		case <-wake:
			if _, gone := w.snapshot(); gone {
				deadline.Reset(0)
			}
		case <-tick.C:
		}
	}
	// The main processes are gone; take any children they left behind with them.
	w.signalAll(syscall.SIGKILL)
}

func (w *podWorker) signalAll(sig syscall.Signal) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range append(append([]*container{}, w.initCs...), w.cs...) {
		if c.cmd != nil && c.cmd.Process != nil && (c.running || sig == syscall.SIGKILL) {
			_ = syscall.Kill(-c.cmd.Process.Pid, sig)
		}
	}
}

// terminate stops the Pod's processes within its grace period, reports the final status and
// deletes the Pod with grace period 0 so the API server removes it.
func (w *podWorker) terminate(ctx context.Context, pod *corev1.Pod) {
	grace := defaultPodGrace
	if pod.DeletionGracePeriodSeconds != nil {
		grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	if w.anyRunning() {
		w.logf("terminating: SIGTERM, then SIGKILL after %s", grace)
	}
	w.killAll(grace, w.notify)
	if _, gone := w.snapshot(); gone {
		return
	}
	w.writeStatus(ctx)
	err := w.k.cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		w.logf("deleting: %v", err)
	}
	w.logf("terminated and deleted")
}

// writeStatus computes the Pod's status from its processes and writes it if it changed.
func (w *podWorker) writeStatus(ctx context.Context) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, _ := w.snapshot()
		status := w.status(pod)
		if apiequality.Semantic.DeepEqual(status, pod.Status) {
			return nil
		}
		p := pod.DeepCopy()
		p.Status = status
		updated, err := w.k.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, gerr := w.k.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); gerr == nil && fresh.UID == p.UID {
				w.update(fresh)
			}
			return err
		}
		if err != nil {
			return err
		}
		w.update(updated)
		return nil
	})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		w.logf("updating status: %v", err)
	}
}

func (w *podWorker) status(pod *corev1.Pod) corev1.PodStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := corev1.PodStatus{
		HostIP:    "127.0.0.1",
		HostIPs:   []corev1.HostIP{{IP: "127.0.0.1"}},
		PodIP:     "127.0.0.1",
		PodIPs:    []corev1.PodIP{{IP: "127.0.0.1"}},
		StartTime: pod.Status.StartTime,
		QOSClass:  pod.Status.QOSClass,
	}
	if s.StartTime == nil {
		s.StartTime = w.startTime
	}
	initDone := true
	initFailed := false
	for _, c := range w.initCs {
		cs := w.containerStatus(c)
		s.InitContainerStatuses = append(s.InitContainerStatuses, cs)
		switch {
		case c.sidecar:
			initDone = initDone && c.running
		case c.exited && c.exitCode == 0:
		default:
			initDone = false
			if c.exited && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
				initFailed = true
			}
		}
	}
	allReady, anyActive, anyFailed, allExited := true, false, false, true
	for _, c := range w.cs {
		cs := w.containerStatus(c)
		s.ContainerStatuses = append(s.ContainerStatuses, cs)
		allReady = allReady && cs.Ready
		if c.running {
			anyActive = true
		}
		if !c.exited {
			allExited = false
		}
		if c.exited && c.exitCode != 0 {
			anyFailed = true
		}
		willRestart := c.exited && (pod.Spec.RestartPolicy == corev1.RestartPolicyAlways || pod.Spec.RestartPolicy == "" ||
			(pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && c.exitCode != 0))
		if willRestart {
			allExited = false
		}
	}
	switch {
	case initFailed:
		s.Phase = corev1.PodFailed
	case !initDone:
		s.Phase = corev1.PodPending
	case anyActive || !allExited:
		s.Phase = corev1.PodRunning
		if !anyActive && !w.anyStarted() {
			s.Phase = corev1.PodPending
		}
	case anyFailed:
		s.Phase = corev1.PodFailed
	default:
		s.Phase = corev1.PodSucceeded
	}
	if w.lastErr != "" && s.Phase == corev1.PodPending {
		s.Reason, s.Message = "", w.lastErr
	}
	ready := allReady && s.Phase == corev1.PodRunning
	s.Conditions = conditions(pod.Status.Conditions, map[corev1.PodConditionType]bool{
		corev1.PodReadyToStartContainers: w.env != nil,
		corev1.PodInitialized:            initDone,
		corev1.ContainersReady:           ready,
		corev1.PodReady:                  ready,
	})
	return s
}

func (w *podWorker) anyStarted() bool {
	for _, c := range w.cs {
		if c.cmd != nil {
			return true
		}
	}
	return false
}

// containerStatus reports one container. Called with w.mu held.
func (w *podWorker) containerStatus(c *container) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{
		Name:         c.spec.Name,
		Image:        c.spec.Image,
		ImageID:      containerIDScheme + c.spec.Image,
		RestartCount: c.restartCount,
		Ready:        c.running,
		Started:      ptr.To(c.running),
	}
	if c.lastTerm != nil {
		cs.LastTerminationState.Terminated = c.lastTerm
	}
	switch {
	case c.running:
		cs.ContainerID = containerIDScheme + strconv.Itoa(c.cmd.Process.Pid)
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: c.startedAt}
	case c.exited && c.cmd != nil:
		t := c.terminated()
		cs.ContainerID = t.ContainerID
		cs.State.Terminated = t
	case c.waiting != "":
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: c.waiting, Message: c.waitingMsg}
	default:
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	}
	return cs
}

// conditions sets the managed conditions and keeps the others (PodScheduled and the like),
// keeping lastTransitionTime when a status did not change.
func conditions(old []corev1.PodCondition, managed map[corev1.PodConditionType]bool) []corev1.PodCondition {
	var out []corev1.PodCondition
	seen := map[corev1.PodConditionType]bool{}
	now := metav1.Now()
	for _, c := range old {
		v, ok := managed[c.Type]
		if !ok {
			out = append(out, c)
			continue
		}
		seen[c.Type] = true
		st := corev1.ConditionFalse
		if v {
			st = corev1.ConditionTrue
		}
		if c.Status != st {
			c.Status, c.LastTransitionTime, c.LastProbeTime = st, now, metav1.Time{}
		}
		out = append(out, c)
	}
	for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		if seen[t] {
			continue
		}
		st := corev1.ConditionFalse
		if managed[t] {
			st = corev1.ConditionTrue
		}
		out = append(out, corev1.PodCondition{Type: t, Status: st, LastTransitionTime: now})
	}
	return out
}
