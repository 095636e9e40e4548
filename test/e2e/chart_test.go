package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/test/envtest"
)

// TestChartCopiesAreCurrent checks that the chart's copies of generated files — the CRDs in
// crds/ and the RBAC rules in files/rbac/ — are the generator's current output in config/
// (`make manifests` writes both).
func TestChartCopiesAreCurrent(t *testing.T) {
	pairs := map[string]string{
		"charts/schedlab/files/rbac/role.yaml":       "config/rbac/role.yaml",
		"charts/schedlab/files/rbac/agent_role.yaml": "config/rbac/agent_role.yaml",
	}
	crds, err := filepath.Glob(path("config", "crd", "bases", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRDs in config/crd/bases (%v)", err)
	}
	for _, c := range crds {
		pairs["charts/schedlab/crds/"+filepath.Base(c)] = "config/crd/bases/" + filepath.Base(c)
	}
	for copyPath, src := range pairs {
		want, err := os.ReadFile(path(src))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path(copyPath))
		if err != nil {
			t.Errorf("%s: %v: run `make manifests`", copyPath, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s: run `make manifests`", copyPath, src)
		}
	}
}

// TestHelmChart lints the chart, renders it with its defaults and with every optional branch
// taken, checks what the rendering says about privileges, flags and RBAC, and has a real API
// server accept every rendered object (server-side dry run). config/default (kustomize) is
// checked the same way.
func TestHelmChart(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the chart test starts an API server")
	}
	requireBinaries(t, "bin/schedlab", "bin/k8s/kubectl", "bin/k8s/kube-apiserver", "bin/k8s/etcd")
	h := helm(t)
	chart := path("charts", "schedlab")

	variants := map[string][]string{
		"defaults": nil,
		"everything": {
			"--set", "controller.replicas=2",
			"--set", "controller.image.tag=v9.9.9",
			"--set", "controller.priorityClassName=system-cluster-critical",
			"--set", "controller.nodeSelector.kubernetes\\.io/os=linux",
			"--set", "controller.tolerations[0].key=node-role.kubernetes.io/control-plane,controller.tolerations[0].operator=Exists,controller.tolerations[0].effect=NoSchedule",
			"--set", "controller.imagePullSecrets[0].name=regcred",
			"--set", "controller.extraArgs[0]=--max-concurrent-reconciles=2",
			"--set-string", "controller.metrics.service.annotations.prometheus\\.io/scrape=true",
			"--set", "agent.image.repository=registry.example/schedlab-agent,agent.image.tag=v1",
			"--set", "agent.priorityClassName=system-node-critical",
			"--set", "agent.tolerations[0].operator=Exists",
			"--set", "agent.stateDir=/var/lib/schedlab-lab",
			"--set", "agent.nodeSelector.schedlab\\.io/pool=lab,agent.nodeSelector.zone=a",
			"--set", "agent.imagePullSecrets[0].name=agentcred",
			"--set", "agent.resources.requests.cpu=20m,agent.resources.limits.memory=256Mi",
			"--set", "controller.metrics.serviceMonitor.enabled=true,controller.metrics.serviceMonitor.labels.release=prom",
			"--set", "controller.grafanaDashboard.enabled=true",
			"--set", "controller.logFormat=json",
			"--set", "commonLabels.team=kernel",
		},
		"no-metrics-existing-accounts": {
			"--set", "controller.metrics.port=0",
			"--set", "controller.serviceAccount.create=false,controller.serviceAccount.name=ops-manager",
			"--set", "agent.serviceAccount.create=false,agent.serviceAccount.name=ops-agent",
		},
	}
	rendered := map[string][]byte{}
	for name, set := range variants {
		command(t, nil, h, append([]string{"lint", "--strict", chart}, set...)...)
		rendered[name] = command(t, nil, h, append([]string{"template", "schedlab", chart, "--namespace", "schedlab-system"}, set...)...)
	}

	t.Run("rendering", func(t *testing.T) {
		checkRendering(t, rendered["defaults"])
		every := string(rendered["everything"])
		for _, want := range []string{"registry.example/schedlab-agent:v1", "--agent-node-selector=schedlab.io/pool=lab,zone=a",
			"--agent-image-pull-secrets=agentcred", `--agent-resources={\"limits\":{\"memory\":\"256Mi\"},\"requests\":{\"cpu\":\"20m\"}}`,
			"--log-format=json", "kind: ServiceMonitor", "scheme: https", "schedlab.json:"} {
			if !strings.Contains(every, want) {
				t.Errorf("the everything rendering lacks %q", want)
			}
		}
		checkDashboardConfigMap(t, rendered["everything"])
		kinds := kindsOf(t, rendered["no-metrics-existing-accounts"])
		for k := range kinds {
			if strings.HasPrefix(k, "ServiceAccount/") || strings.HasPrefix(k, "Service/") {
				t.Errorf("with serviceAccount.create=false and metrics.port=0 the chart still renders %s", k)
			}
		}
		if !kinds["ClusterRoleBinding/schedlab-agent"] {
			t.Errorf("no agent ClusterRoleBinding rendered: %v", kinds)
		}
	})

	env, err := envtest.StartEnv(envtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	user, err := env.Environment.AddUser(crenvtest.User{Name: "e2e-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	// Namespaced objects are dry-run into an existing namespace, as `helm install
	// --create-namespace` or the kustomization's Namespace would have made it.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "schedlab-system"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}

	for name, manifests := range rendered {
		t.Run("helm/"+name+"/server-dry-run", func(t *testing.T) {
			// The ServiceMonitor needs the Prometheus Operator's CRDs, which this API server
			// does not have; its rendering is checked above.
			command(t, withoutKind(t, manifests, "ServiceMonitor"), kubectl(), "--kubeconfig", kubeconfig, "apply", "--dry-run=server", "-f", "-")
		})
	}
	t.Run("helm/profile-priority-tie-policy", func(t *testing.T) {
		checkPriorityTiePolicy(t, rendered["defaults"], kubeconfig)
	})
	t.Run("helm/crds/server-dry-run", func(t *testing.T) {
		command(t, nil, kubectl(), "--kubeconfig", kubeconfig, "apply", "--dry-run=server", "-f", filepath.Join(chart, "crds"))
	})
	t.Run("kustomize/config-default/server-dry-run", func(t *testing.T) {
		out := command(t, nil, kubectl(), "kustomize", path("config", "default"))
		kinds := kindsOf(t, out)
		for _, k := range []string{"CustomResourceDefinition/schedexperiments.schedlab.io", "CustomResourceDefinition/noderuns.schedlab.io",
			"ServiceAccount/schedlab-manager", "ServiceAccount/schedlab-agent", "ClusterRole/schedlab-manager", "ClusterRole/schedlab-agent",
			"Role/schedlab-manager", "Deployment/schedlab-manager", "Service/schedlab-manager-metrics"} {
			if !kinds[k] {
				t.Errorf("kubectl kustomize config/default has no %s (has %v)", k, kinds)
			}
		}
		command(t, out, kubectl(), "--kubeconfig", kubeconfig, "apply", "--dry-run=server", "-f", "-")
	})
}

// TestHelmValuesSchema: values.schema.json refuses values a user gets wrong
// (a misspelt key, a wrong type, a value outside its set), naming the key,
// and accepts the defaults.
func TestHelmValuesSchema(t *testing.T) {
	requireBinaries(t)
	h := helm(t)
	chart := path("charts", "schedlab")
	command(t, nil, h, "lint", "--strict", chart)
	for _, c := range []struct{ set, want string }{
		{"agent.resoruces.requests.cpu=1", "resoruces"},
		{"controller.metrics.port=http", "port"},
		{"controller.logFormat=xml", "logFormat"},
		{"agent.image.pullPolicy=Sometimes", "pullPolicy"},
		{"agent.tolerations[0].operator=Maybe", "operator"},
		{"agent.stateDir=relative/dir", "stateDir"},
		{"agent.imagePullSecrets[0]=regcred", "imagePullSecrets"},
	} {
		out, err := tryCommand(nil, h, "template", "schedlab", chart, "--set", c.set)
		if err == nil {
			t.Errorf("--set %s accepted; want the schema to refuse it", c.set)
			continue
		}
		if !strings.Contains(err.Error(), "values don't meet the specifications of the schema") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %s: error does not name %s:\n%v\n%s", c.set, c.want, err, out)
		}
	}
}

// checkDashboardConfigMap: the dashboard ConfigMap holds the chart's
// dashboard JSON, which parses (its queries are checked against the exported
// metrics in package controllers).
func checkDashboardConfigMap(t *testing.T, manifests []byte) {
	t.Helper()
	for _, doc := range splitYAML(manifests) {
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal(doc, &cm); err != nil || cm.Kind != "ConfigMap" || cm.Data["schedlab.json"] == "" {
			continue
		}
		var dash map[string]any
		if err := json.Unmarshal([]byte(cm.Data["schedlab.json"]), &dash); err != nil {
			t.Fatalf("dashboard ConfigMap %s: %v", cm.Name, err)
		}
		if dash["title"] != "schedlab" || cm.Labels["grafana_dashboard"] != "1" {
			t.Errorf("dashboard ConfigMap %s: title %v labels %v", cm.Name, dash["title"], cm.Labels)
		}
		return
	}
	t.Errorf("no dashboard ConfigMap rendered")
}

// withoutKind drops the documents of one kind.
func withoutKind(t *testing.T, manifests []byte, kind string) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, doc := range splitYAML(manifests) {
		var meta metav1.TypeMeta
		mustUnmarshal(t, doc, &meta)
		if meta.Kind == kind {
			continue
		}
		out.WriteString("---\n")
		out.Write(doc)
		out.WriteString("\n")
	}
	return out.Bytes()
}

// checkRendering checks the default rendering: the manager is unprivileged and non-root, every
// flag it is given is one `schedlab manager -h` knows, POD_NAMESPACE comes from the Downward
// API, and the RBAC rules are exactly the generated ones.
func checkRendering(t *testing.T, manifests []byte) {
	t.Helper()
	var dep *appsv1.Deployment
	roles := map[string]*rbacv1.ClusterRole{}
	var nsRole *rbacv1.Role
	for _, doc := range splitYAML(manifests) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, doc)
		}
		switch meta.Kind {
		case "Deployment":
			dep = &appsv1.Deployment{}
			mustUnmarshal(t, doc, dep)
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			mustUnmarshal(t, doc, r)
			roles[r.Name] = r
		case "Role":
			r := &rbacv1.Role{}
			mustUnmarshal(t, doc, r)
			if strings.HasSuffix(r.Name, "-manager") { // not the shard pods' simulator Role
				nsRole = r
			}
		}
	}
	if dep == nil || len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("no Deployment with one container in the rendering")
	}
	c := dep.Spec.Template.Spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 ||
		(sc.Privileged != nil && *sc.Privileged) || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("manager securityContext is not non-root and unprivileged: %+v", sc)
	}
	if strings.Contains(string(manifests), "privileged: true") {
		t.Errorf("the chart renders a privileged container; only the agent DaemonSet (made by the manager) is privileged")
	}
	if len(c.Args) == 0 || c.Args[0] != "manager" {
		t.Errorf("manager args %v do not start with the manager subcommand", c.Args)
	}
	help, _ := exec.Command(path("bin", "schedlab"), "manager", "-h").CombinedOutput() // -h may exit 2
	flagRE := regexp.MustCompile(`^--?([a-z0-9-]+)`)
	for _, a := range c.Args[1:] {
		m := flagRE.FindStringSubmatch(a)
		if m == nil {
			t.Errorf("manager arg %q is not a flag", a)
			continue
		}
		if !regexp.MustCompile(`(?m)^\s+-{1,2}` + regexp.QuoteMeta(m[1]) + `\b`).Match(help) {
			t.Errorf("manager flag --%s is not in `schedlab manager -h`", m[1])
		}
	}
	var podNS bool
	for _, e := range c.Env {
		if e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" {
			podNS = true
		}
	}
	if !podNS {
		t.Errorf("manager has no POD_NAMESPACE from the Downward API: %+v", c.Env)
	}

	gen := generatedRBAC(t)
	if r := roles["schedlab-manager"]; r == nil {
		t.Errorf("no ClusterRole schedlab-manager rendered")
	} else if d := cmp.Diff(gen.managerCluster, r.Rules); d != "" {
		t.Errorf("rendered manager ClusterRole rules differ from config/rbac/role.yaml (-generated +rendered):\n%s", d)
	}
	if r := roles["schedlab-agent"]; r == nil {
		t.Errorf("no ClusterRole schedlab-agent rendered")
	} else if d := cmp.Diff(gen.agent, r.Rules); d != "" {
		t.Errorf("rendered agent ClusterRole rules differ from config/rbac/agent_role.yaml (-generated +rendered):\n%s", d)
	}
	if nsRole == nil || nsRole.Namespace != "schedlab-system" {
		t.Errorf("no Role in the release namespace rendered: %+v", nsRole)
	} else if d := cmp.Diff(gen.managerNamespaced, nsRole.Rules); d != "" {
		t.Errorf("rendered manager Role rules differ from config/rbac/role.yaml (-generated +rendered):\n%s", d)
	}
}

type rbacRules struct {
	managerCluster, managerNamespaced, agent []rbacv1.PolicyRule
}

func generatedRBAC(t *testing.T) rbacRules {
	t.Helper()
	var r rbacRules
	for _, f := range []string{"role.yaml", "agent_role.yaml"} {
		b, err := os.ReadFile(path("config", "rbac", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range splitYAML(b) {
			var meta metav1.TypeMeta
			mustUnmarshal(t, doc, &meta)
			switch {
			case meta.Kind == "ClusterRole" && f == "role.yaml":
				var cr rbacv1.ClusterRole
				mustUnmarshal(t, doc, &cr)
				r.managerCluster = cr.Rules
			case meta.Kind == "Role":
				var ro rbacv1.Role
				mustUnmarshal(t, doc, &ro)
				r.managerNamespaced = ro.Rules
			case meta.Kind == "ClusterRole":
				var cr rbacv1.ClusterRole
				mustUnmarshal(t, doc, &cr)
				r.agent = cr.Rules
			}
		}
	}
	if r.managerCluster == nil || r.managerNamespaced == nil || r.agent == nil {
		t.Fatalf("config/rbac lacks a generated role: %+v", r)
	}
	return r
}

func kindsOf(t *testing.T, manifests []byte) map[string]bool {
	t.Helper()
	kinds := map[string]bool{}
	for _, doc := range splitYAML(manifests) {
		var obj struct {
			metav1.TypeMeta   `json:",inline"`
			metav1.ObjectMeta `json:"metadata"`
		}
		mustUnmarshal(t, doc, &obj)
		kinds[obj.Kind+"/"+obj.Name] = true
	}
	return kinds
}

func mustUnmarshal(t testing.TB, doc []byte, into any) {
	t.Helper()
	if err := yaml.Unmarshal(doc, into); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
}

// checkPriorityTiePolicy: the chart's SchedProfile priority-tie policy and binding are the ones
// of config/admission/profile_priority_policy.yaml (same specs; only the names and labels differ),
// and, applied to the API server for real, refuse a profile with another's priority and
// nodeSelector, naming it, and admit one with another priority. Without
// profiles.priorityTiePolicy the chart renders neither.
func checkPriorityTiePolicy(t *testing.T, rendered []byte, kubeconfig string) {
	t.Helper()
	type object struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              map[string]any `json:"spec"`
	}
	specs := func(manifests []byte, name string) (map[string]map[string]any, []byte) {
		out := map[string]map[string]any{}
		var docs bytes.Buffer
		for _, doc := range splitYAML(manifests) {
			var o object
			mustUnmarshal(t, doc, &o)
			if strings.HasPrefix(o.Kind, "ValidatingAdmissionPolicy") && o.Name == name {
				if o.Kind == "ValidatingAdmissionPolicyBinding" {
					o.Spec["policyName"] = "<policy>"
				}
				out[o.Kind] = o.Spec
				docs.WriteString("---\n")
				docs.Write(doc)
				docs.WriteString("\n")
			}
		}
		return out, docs.Bytes()
	}
	want, err := os.ReadFile(path("config", "admission", "profile_priority_policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	wantSpecs, _ := specs(want, "schedlab-profile-priority-tie")
	gotSpecs, docs := specs(rendered, "schedlab-profile-priority-tie")
	if len(wantSpecs) != 2 {
		t.Fatalf("config/admission/profile_priority_policy.yaml: %d of the policy and its binding", len(wantSpecs))
	}
	if diff := cmp.Diff(wantSpecs, gotSpecs); diff != "" {
		t.Errorf("the chart's priority-tie policy differs from config/admission's (-kustomize +chart):\n%s", diff)
	}
	off := command(t, nil, helm(t), "template", "schedlab", path("charts", "schedlab"), "--namespace", "schedlab-system",
		"--set", "profiles.priorityTiePolicy=false")
	if got, _ := specs(off, "schedlab-profile-priority-tie"); len(got) != 0 {
		t.Errorf("profiles.priorityTiePolicy=false still renders %v", slices.Sorted(maps.Keys(got)))
	}

	kc := func(stdin []byte, args ...string) ([]byte, error) {
		return tryCommand(stdin, kubectl(), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	}
	command(t, docs, kubectl(), "--kubeconfig", kubeconfig, "apply", "-f", "-")
	t.Cleanup(func() { _, _ = kc(docs, "delete", "--ignore-not-found", "-f", "-") })
	profile := func(name string, priority int) []byte {
		return []byte(fmt.Sprintf(`apiVersion: schedlab.io/v1alpha1
kind: SchedProfile
metadata:
  name: %s
spec:
  nodeSelector:
    matchLabels:
      schedlab.io/pool: chart-test
  priority: %d
  knobs:
    autogroup: Disabled
`, name, priority))
	}
	// The API server may refuse objects for a moment after the policy
	// lands, until its informer for the param kind has synced ("paramKind
	// ... not yet synced to use for admission", seen on a quiet machine
	// 1.8 s into the test): create the first profile once that has passed.
	for deadline := time.Now().Add(60 * time.Second); ; {
		out, err := kc(profile("chart-first", 10), "create", "-f", "-")
		if err == nil {
			break
		}
		if !strings.Contains(err.Error()+string(out), "not yet synced") || time.Now().After(deadline) {
			t.Fatalf("creating the first profile: %v %s", err, out)
		}
		t.Logf("the policy's param kind is not synced yet; creating the first profile again")
		time.Sleep(200 * time.Millisecond)
	}
	t.Cleanup(func() {
		_, _ = kc(nil, "delete", "--ignore-not-found", "schedprofile", "chart-first", "chart-higher", "chart-tie")
	})
	const refused = "spec.priority: 10 is also the priority of SchedProfile chart-first, which has the same nodeSelector"
	// Enforced once the API server has loaded the policy: wait with dry runs.
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := kc(profile("chart-tie", 10), "create", "--dry-run=server", "-f", "-")
		if err != nil && strings.Contains(err.Error()+string(out), refused) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the chart's policy does not refuse a tie (last: %v %s)", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out, err := kc(profile("chart-higher", 11), "create", "-f", "-"); err != nil {
		t.Errorf("a profile with another priority was refused: %v %s", err, out)
	}
}
