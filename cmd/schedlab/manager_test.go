package main

import (
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
)

func parseManagerFlags(t *testing.T, args ...string) (*managerFlags, error) {
	t.Helper()
	fs := pflag.NewFlagSet("schedlab manager", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f managerFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return &f, nil
}

func TestManagerFlags(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "ops")
	f, err := parseManagerFlags(t,
		"--agent-image=registry.example/schedlab:v1", "--agent-tolerations", `[{"key":"bench","operator":"Exists","effect":"NoSchedule"}]`,
		"--agent-priority-class=system-node-critical", "--restore-timeout=2m", "--leader-elect")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Namespace != "ops" || cfg.AgentImage != "registry.example/schedlab:v1" || cfg.AgentPriorityClass != "system-node-critical" ||
		cfg.RestoreTimeout != 2*time.Minute || !f.leaderElect || f.metricsAddr != ":8443" || !f.metricsSecure || f.probeAddr != ":8081" || cfg.AgentServiceAccount != "schedlab-agent" {
		t.Errorf("config %+v flags %+v", cfg, f)
	}
	want := []corev1.Toleration{{Key: "bench", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	if diff := cmp.Diff(want, cfg.AgentTolerations); diff != "" {
		t.Errorf("tolerations (-want +got):\n%s", diff)
	}
}

func TestManagerFlagsDefaultNamespace(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	f, err := parseManagerFlags(t)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, _ := f.config(); cfg.Namespace != "schedlab-system" {
		t.Errorf("namespace %q, want schedlab-system", cfg.Namespace)
	}
}

func TestManagerFlagsRefuseBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--agent-tolerations", `{"key":"not a list"}`},
		{"--agent-image-pull-policy", "Sometimes"},
		{"--agent-resources", `{"request":{"cpu":"1"}}`},
		{"--agent-resources", `{"requests":{"cpu":"lots"}}`},
		{"--log-format", "xml"},
	} {
		f, err := parseManagerFlags(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.config(); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// The chart's agent settings reach the agent DaemonSet through these flags.
func TestManagerAgentFlags(t *testing.T) {
	f, err := parseManagerFlags(t, "--agent-node-selector", "pool=lab,zone=a", "--agent-image-pull-secrets", "reg1,reg2",
		"--agent-resources", `{"requests":{"cpu":"20m"},"limits":{"memory":"256Mi"}}`, "--log-format=json", "--metrics-secure=false")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"pool": "lab", "zone": "a"}, cfg.AgentNodeSelector); diff != "" {
		t.Errorf("node selector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"reg1", "reg2"}, cfg.AgentImagePullSecrets); diff != "" {
		t.Errorf("pull secrets (-want +got):\n%s", diff)
	}
	if r := cfg.AgentResources; r == nil || r.Requests.Cpu().String() != "20m" || r.Limits.Memory().String() != "256Mi" {
		t.Errorf("resources %+v", r)
	}
	if o := f.metricsOptions(); o.SecureServing || o.FilterProvider != nil {
		t.Errorf("--metrics-secure=false still serves securely")
	}
	f2, _ := parseManagerFlags(t)
	if o := f2.metricsOptions(); !o.SecureServing || o.FilterProvider == nil || o.BindAddress != ":8443" {
		t.Errorf("default metrics options %+v: want HTTPS on :8443 behind the authn/authz filter", o)
	}
}
