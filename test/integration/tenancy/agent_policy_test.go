package tenancy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/api"
	"github.com/schedlab/schedlab/api/names"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/test/envtest"
)

const ns = "schedlab-system"

// TestAgentWritesOnlyItsOwnNodeRun: the agent of node a, with the token of
// its pod, may write the status of node a's NodeRun and is refused node b's,
// by config/admission's policy (RBAC alone would allow both).
func TestAgentWritesOnlyItsOwnNodeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cfg, c, _ := envtest.Start(t, envtest.Options{Scheme: api.NewScheme()})
	ctx := context.Background()
	root, err := envtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	create := func(obj client.Object) {
		t.Helper()
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "schedlab-agent"}})
	for _, f := range []string{"config/rbac/agent_role.yaml", "config/admission/agent_noderun_policy.yaml"} {
		for _, obj := range readObjects(t, filepath.Join(root, f)) {
			create(obj)
		}
	}
	create(&rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "schedlab-agent"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "schedlab-agent"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "schedlab-agent"}},
	})
	for _, n := range []string{"node-a", "node-b"} {
		create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		create(&v1alpha1.NodeRun{
			ObjectMeta: metav1.ObjectMeta{Name: names.NodeRun("exp", n)},
			Spec:       v1alpha1.NodeRunSpec{ExperimentName: "exp", ExperimentGeneration: 1, NodeName: n},
		})
	}
	// The agent pod of node a (bound to the node, as the scheduler would).
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent-a"},
		Spec: corev1.PodSpec{NodeName: "node-a", ServiceAccountName: "schedlab-agent",
			Containers: []corev1.Container{{Name: "agent", Image: "schedlab:test"}}},
	}
	create(pod)

	cs := kubernetes.NewForConfigOrDie(cfg)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "schedlab-agent", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting the agent pod's token: %v", err)
	}
	agentCfg := rest.AnonymousClientConfig(cfg)
	agentCfg.BearerToken = tr.Status.Token
	agent, err := client.New(agentCfg, client.Options{Scheme: api.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	writeStatus := func(node, msg string, opts ...client.SubResourceUpdateOption) error {
		nr := &v1alpha1.NodeRun{}
		if err := agent.Get(ctx, client.ObjectKey{Name: names.NodeRun("exp", node)}, nr); err != nil {
			return err
		}
		nr.Status.Message = msg
		return agent.Status().Update(ctx, nr, opts...)
	}
	const refusedFor = "an agent may write only the NodeRun of the node its pod runs on"

	// The policy is enforced once the API server has loaded it: wait with
	// dry-run writes (admission sees them; nothing is stored), so that a
	// write let through before then leaves no trace.
	deadline := time.Now().Add(60 * time.Second)
	for {
		refusal := writeStatus("node-b", "dry run by node a's agent", client.DryRunAll)
		if refusal != nil && strings.Contains(refusal.Error(), refusedFor) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node a's agent may write node b's NodeRun (last error %v): the policy is not enforced", refusal)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := writeStatus("node-b", "written by node a's agent"); err == nil || !strings.Contains(err.Error(), refusedFor) {
		t.Errorf("node a's agent writing node b's NodeRun: %v, want refused with %q", err, refusedFor)
	}
	if err := writeStatus("node-a", "written by node a's agent"); err != nil {
		t.Fatalf("node a's agent could not write its own NodeRun: %v", err)
	}
	var b v1alpha1.NodeRun
	if err := c.Get(ctx, client.ObjectKey{Name: names.NodeRun("exp", "node-b")}, &b); err != nil {
		t.Fatal(err)
	}
	if b.Status.Message != "" {
		t.Errorf("node b's NodeRun says %q: another node's agent wrote it", b.Status.Message)
	}
	// The manager (an admin here) is not the agent: the policy leaves it alone.
	b.Status.Message = "written by the manager"
	if err := c.Status().Update(ctx, &b); err != nil {
		t.Errorf("an admin's write was refused: %v", err)
	}
}

// readObjects decodes every document of a manifest file.
func readObjects(t *testing.T, path string) []client.Object {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []client.Object
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}
