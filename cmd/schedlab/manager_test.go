package main

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func parseManagerFlags(t *testing.T, args ...string) (*managerFlags, error) {
	t.Helper()
	fs := flag.NewFlagSet("schedlab manager", flag.ContinueOnError)
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
		cfg.RestoreTimeout != 2*time.Minute || !f.leaderElect || f.metricsAddr != ":8080" || f.probeAddr != ":8081" || cfg.AgentServiceAccount != "schedlab-agent" {
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
