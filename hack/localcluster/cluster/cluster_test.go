package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/schedlab/schedlab/hack/localcluster/cluster"
)

// TestDaemonSetRunsAsLocalProcess starts the whole local cluster and checks the fake kubelet
// end to end: a DaemonSet of /bin/sleep becomes a Running Pod on this machine's Node, backed by
// a real process with the Pod's environment, and deleting the DaemonSet stops the process and
// removes the Pod. It needs bin/k8s (make k8s-bins) and fails, not skips, without it.
func TestDaemonSetRunsAsLocalProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Options{Dir: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()

	// The kubeconfig file works on its own.
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)

	node, err := cs.CoreV1().Nodes().Get(ctx, c.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node: %v", err)
	}
	var uts syscall.Utsname
	_ = syscall.Uname(&uts)
	if got := node.Status.NodeInfo.KernelVersion; got == "" || !strings.HasPrefix(utsRelease(uts), got) {
		t.Errorf("node kernelVersion = %q, want uname -r %q", got, utsRelease(uts))
	}
	if cpu := node.Status.Capacity.Cpu().Value(); cpu < 1 {
		t.Errorf("node cpu capacity = %d, want at least 1", cpu)
	}
	if !nodeReady(node) {
		t.Errorf("node conditions = %+v, want Ready=True", node.Status.Conditions)
	}
	lease, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, c.NodeName, metav1.GetOptions{})
	if err != nil || lease.Spec.RenewTime == nil {
		t.Errorf("node lease: %v, %+v", err, lease)
	}

	ns := "localcluster-test"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "sleeper"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "sleeper", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					Containers: []corev1.Container{{
						Name:    "sleep",
						Image:   "ignored.example/sleep:1",
						Command: []string{"/bin/sleep", "300"},
						Env: []corev1.EnvVar{
							{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
							{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
							{Name: "GREETING", Value: "hello $(POD_NAMESPACE)"},
						},
					}},
				},
			},
		},
	}
	if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var pod corev1.Pod
	if err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := c.Err(); err != nil {
			return false, err
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=sleeper"})
		if err != nil || len(pods.Items) != 1 {
			return false, nil
		}
		pod = pods.Items[0]
		return pod.Status.Phase == corev1.PodRunning && len(pod.Status.ContainerStatuses) == 1 &&
			pod.Status.ContainerStatuses[0].State.Running != nil && podReady(&pod), nil
	}); err != nil {
		t.Fatalf("waiting for a Running, Ready pod of the DaemonSet: %v; last seen: phase %q status %+v", err, pod.Status.Phase, pod.Status)
	}
	if pod.Spec.NodeName != c.NodeName {
		t.Errorf("pod on node %q, want %q", pod.Spec.NodeName, c.NodeName)
	}
	pid := pidOf(t, pod.Status.ContainerStatuses[0].ContainerID)
	cmdline := readProc(t, pid, "cmdline")
	if got, want := strings.ReplaceAll(strings.TrimRight(cmdline, "\x00"), "\x00", " "), "/bin/sleep 300"; got != want {
		t.Errorf("process %d runs %q, want %q", pid, got, want)
	}
	environ := strings.Split(readProc(t, pid, "environ"), "\x00")
	for _, want := range []string{
		"NODE_NAME=" + c.NodeName, "POD_NAMESPACE=" + ns, "POD_NAME=" + pod.Name, "GREETING=hello " + ns,
	} {
		if !contains(environ, want) {
			t.Errorf("process environment lacks %q: %q", want, environ)
		}
	}
	if !hasPrefix(environ, "KUBECONFIG=") {
		t.Errorf("process environment lacks KUBECONFIG (the ServiceAccount's kubeconfig): %q", environ)
	}

	// A Pod's processes reach the API server as the Pod's ServiceAccount.
	whoami, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "whoami", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "kubectl", Image: "ignored",
				Command: []string{filepath.Join(c.K8sBinDir, "kubectl"), "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, whoami.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		whoami = p
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	}); err != nil {
		t.Fatalf("waiting for the whoami pod to finish: %v", err)
	}
	out, _ := os.ReadFile(c.Kubelet().LogPath(whoami, "kubectl"))
	if want := "system:serviceaccount:" + ns + ":default"; whoami.Status.Phase != corev1.PodSucceeded || string(out) != want {
		t.Errorf("whoami pod: phase %s, output %q; want Succeeded and %q", whoami.Status.Phase, out, want)
	}

	// Deleting the DaemonSet deletes the Pod; the kubelet stops the process and finalizes it.
	if err := cs.AppsV1().DaemonSets(ns).Delete(ctx, ds.Name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
	}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("waiting for the pod to be removed: %v", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return !alive(pid), nil
	}); err != nil {
		t.Errorf("process %d of the deleted pod is still running", pid)
	}

	// Stopping the cluster stops the processes of the pods still running.
	if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "sleeper2", Namespace: ns}, Spec: ds.Spec,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=sleeper"})
		if err != nil || len(pods.Items) != 1 || len(pods.Items[0].Status.ContainerStatuses) != 1 ||
			pods.Items[0].Status.ContainerStatuses[0].State.Running == nil {
			return false, nil
		}
		pid = pidOf(t, pods.Items[0].Status.ContainerStatuses[0].ContainerID)
		return true, nil
	}); err != nil {
		t.Fatalf("waiting for the second DaemonSet's pod to run: %v", err)
	}
	c.Stop()
	if alive(pid) {
		t.Errorf("process %d still running after Stop", pid)
	}
	if err := c.Err(); err != nil {
		t.Errorf("Err() after Stop = %v, want nil", err)
	}
}

func utsRelease(u syscall.Utsname) string {
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func pidOf(t *testing.T, containerID string) int {
	t.Helper()
	s, ok := strings.CutPrefix(containerID, "localprocess://")
	pid, err := strconv.Atoi(s)
	if !ok || err != nil {
		t.Fatalf("containerID %q is not localprocess://<pid>", containerID)
	}
	return pid
}

func readProc(t *testing.T, pid int, file string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		t.Fatalf("reading /proc/%d/%s: %v", pid, file, err)
	}
	return string(b)
}

// alive reports whether pid is a live process (a zombie counts as gone).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(after, "Z")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hasPrefix(list []string, p string) bool {
	for _, x := range list {
		if strings.HasPrefix(x, p) {
			return true
		}
	}
	return false
}
