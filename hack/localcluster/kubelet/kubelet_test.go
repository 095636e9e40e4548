package kubelet_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/schedlab/schedlab/hack/localcluster/kubelet"
	"github.com/schedlab/schedlab/test/envtest"
)

// TestPodLifecycle runs the fake kubelet against a real kube-apiserver (envtest: no scheduler or
// controllers, so Pods are created bound to the Node) and checks phases, exit codes, command
// resolution, the environment, and termination with SIGTERM, grace period and SIGKILL.
func TestPodLifecycle(t *testing.T) {
	cfg, _, _ := envtest.Start(t, envtest.Options{CRDDirectoryPaths: []string{}})
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	binDir, podsDir := t.TempDir(), t.TempDir()
	script := "#!/bin/sh\necho \"hello $1 from $POD_NAME on $NODE_NAME\"\n"
	if err := os.WriteFile(filepath.Join(binDir, "hello"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	kl, err := kubelet.New(cs, kubelet.Config{NodeName: "node-a", BinaryDir: binDir, PodsDir: podsDir, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopKubelet := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = kl.Run(runCtx)
	}()
	defer func() {
		stopKubelet()
		<-done
	}()
	if err := kl.WaitRegistered(ctx); err != nil {
		t.Fatal(err)
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Status.NodeInfo.KernelVersion == "" || node.Status.Capacity.Cpu().IsZero() || node.Status.Capacity.Memory().IsZero() {
		t.Errorf("node status lacks kernel version, cpu or memory: %+v", node.Status)
	}
	if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "node-a", metav1.GetOptions{}); err != nil {
		t.Errorf("node lease: %v", err)
	}

	ns := "default"
	newPod := func(name string, policy corev1.RestartPolicy, grace int64, command ...string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{
				NodeName:                      "node-a",
				RestartPolicy:                 policy,
				TerminationGracePeriodSeconds: ptr.To(grace),
				AutomountServiceAccountToken:  ptr.To(false), // envtest runs no token controller
				Containers: []corev1.Container{{
					Name: "main", Image: "ignored", Command: command,
					Env: []corev1.EnvVar{
						{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
						{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
					},
				}},
			},
		}
	}
	create := func(pod *corev1.Pod) *corev1.Pod {
		t.Helper()
		pod, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pod
	}
	mkPod := func(name string, policy corev1.RestartPolicy, grace int64, command ...string) *corev1.Pod {
		t.Helper()
		return create(newPod(name, policy, grace, command...))
	}
	waitPhase := func(name string, phase corev1.PodPhase) *corev1.Pod {
		t.Helper()
		var pod *corev1.Pod
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			pod = p
			return p.Status.Phase == phase, nil
		})
		if err != nil {
			t.Fatalf("pod %s: waiting for phase %s: %v; status %+v", name, phase, err, pod.Status)
		}
		return pod
	}

	t.Run("relative command succeeds", func(t *testing.T) {
		pod := mkPod("hello", corev1.RestartPolicyNever, 30, "hello", "world")
		got := waitPhase(pod.Name, corev1.PodSucceeded)
		st := got.Status.ContainerStatuses[0].State.Terminated
		if st == nil || st.ExitCode != 0 || st.Reason != "Completed" {
			t.Errorf("container state = %+v, want terminated with exit code 0", got.Status.ContainerStatuses[0].State)
		}
		out, err := os.ReadFile(filepath.Join(podsDir, ns+"_hello_"+string(pod.UID), "main.log"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "hello world from hello on node-a\n"; string(out) != want {
			t.Errorf("output = %q, want %q", out, want)
		}
	})

	t.Run("no command runs the binary named after the image", func(t *testing.T) {
		pod := newPod("entrypoint", corev1.RestartPolicyNever, 30)
		pod.Spec.Containers[0].Image = "registry.example/team/hello:v1"
		pod.Spec.Containers[0].Args = []string{"image"}
		pod = create(pod)
		waitPhase(pod.Name, corev1.PodSucceeded)
		out, err := os.ReadFile(filepath.Join(podsDir, ns+"_"+pod.Name+"_"+string(pod.UID), "main.log"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "hello image from entrypoint on node-a\n"; string(out) != want {
			t.Errorf("output = %q, want %q", out, want)
		}
	})

	t.Run("exit code fails the pod", func(t *testing.T) {
		pod := mkPod("fails", corev1.RestartPolicyNever, 30, "/bin/sh", "-c", "exit 3")
		got := waitPhase(pod.Name, corev1.PodFailed)
		if st := got.Status.ContainerStatuses[0].State.Terminated; st == nil || st.ExitCode != 3 {
			t.Errorf("container state = %+v, want terminated with exit code 3", got.Status.ContainerStatuses[0].State)
		}
	})

	t.Run("restart policy OnFailure restarts", func(t *testing.T) {
		// Fails on the first run, succeeds on the second (the marker file survives).
		marker := filepath.Join(t.TempDir(), "ran")
		pod := mkPod("retry", corev1.RestartPolicyOnFailure, 30, "/bin/sh", "-c",
			"if [ -e "+marker+" ]; then exit 0; fi; touch "+marker+"; exit 1")
		got := waitPhase(pod.Name, corev1.PodSucceeded)
		if n := got.Status.ContainerStatuses[0].RestartCount; n != 1 {
			t.Errorf("restartCount = %d, want 1", n)
		}
	})

	t.Run("deletion escalates to SIGKILL after the grace period", func(t *testing.T) {
		pod := mkPod("stubborn", corev1.RestartPolicyAlways, 2, "/bin/sh", "-c", "trap '' TERM; while true; do sleep 0.1; done")
		got := waitPhase(pod.Name, corev1.PodRunning)
		pid := strings.TrimPrefix(got.Status.ContainerStatuses[0].ContainerID, "localprocess://")
		start := time.Now()
		if err := cs.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			t.Fatalf("pod not removed: %v", err)
		}
		if d := time.Since(start); d < 2*time.Second {
			t.Errorf("pod removed after %s, before its 2s grace period", d)
		}
		if _, err := os.Stat("/proc/" + pid); err == nil {
			if b, _ := os.ReadFile("/proc/" + pid + "/stat"); !strings.Contains(string(b), ") Z") {
				t.Errorf("process %s still running after the pod was removed", pid)
			}
		}
	})
}
