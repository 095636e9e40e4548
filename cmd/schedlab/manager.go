package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/schedlab/schedlab/api"
	"github.com/schedlab/schedlab/controllers"
	"github.com/schedlab/schedlab/controllers/analysis"
)

func init() { register("manager", newManagerCmd) }

func newManagerCmd() *cobra.Command {
	var f managerFlags
	logCfg := textlogger.NewConfig()
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "run the operator (controller manager) in a cluster",
		Long: `Runs the SchedExperiment controller: it selects and locks nodes, runs the simulator,
starts the agent DaemonSet for Measure experiments and writes the results into status.
The cluster comes from --kubeconfig, $KUBECONFIG, or the Pod's service account.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runManager(&f, logCfg)
		},
	}
	f.register(cmd.Flags())
	addGoFlags(cmd, func(fs *flag.FlagSet) {
		config.RegisterFlags(fs) // --kubeconfig; else $KUBECONFIG, else in-cluster
		logCfg.AddFlags(fs)      // -v, --vmodule
	})
	return cmd
}

// managerFlags are the manager's settings.
type managerFlags struct {
	metricsAddr, probeAddr string
	metricsSecure          bool
	metricsCertDir         string
	leaderElect            bool
	leaderElectionID       string
	maxConcurrent          int
	tolerationsJSON        string
	resourcesJSON          string
	pullPolicy             string
	logFormat              string
	cfg                    controllers.Config
	allowedNodeSelector    string
}

func (f *managerFlags) register(fs *pflag.FlagSet) {
	d := controllers.DefaultConfig()
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = d.Namespace
	}
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8443", "address the Prometheus metrics endpoint binds to; 0 disables it")
	fs.BoolVar(&f.metricsSecure, "metrics-secure", true, "serve metrics over HTTPS, to clients that authenticate with a bearer token allowed to get /metrics (TokenReview and SubjectAccessReview); false serves plain HTTP to anyone")
	fs.StringVar(&f.metricsCertDir, "metrics-cert-dir", "", "directory of tls.crt and tls.key for the metrics endpoint (default: a self-signed certificate made at start)")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text (klog) or json (one JSON object per line)")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address the /healthz and /readyz probes bind to")
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "elect a leader so that only one manager replica is active")
	fs.StringVar(&f.leaderElectionID, "leader-election-id", "schedlab-manager", "name of the leader-election Lease in the operator's namespace")
	fs.IntVar(&f.maxConcurrent, "max-concurrent-reconciles", 1, "SchedExperiments reconciled at once")
	fs.StringVar(&f.cfg.Namespace, "namespace", ns, "the operator's namespace: agent DaemonSets and node Leases live there ($POD_NAMESPACE when set)")
	fs.StringVar(&f.cfg.AgentImage, "agent-image", d.AgentImage, "image of the node agent")
	fs.StringVar(&f.pullPolicy, "agent-image-pull-policy", string(d.AgentImagePullPolicy), "pull policy of the node agent image: Always, IfNotPresent or Never")
	fs.StringVar(&f.tolerationsJSON, "agent-tolerations", "", `tolerations of the agent pods as a JSON list, e.g. '[{"operator":"Exists"}]'; nodes with taints they tolerate may be selected`)
	fs.StringVar(&f.cfg.AgentPriorityClass, "agent-priority-class", "", "priority class of the agent pods")
	fs.StringToStringVar(&f.cfg.AgentNodeSelector, "agent-node-selector", nil, "node labels the agent pods require, as key=value pairs; nodes without them are not selected for an experiment")
	fs.StringVar(&f.resourcesJSON, "agent-resources", "", `resources of the agent container as JSON, e.g. '{"requests":{"cpu":"10m","memory":"64Mi"},"limits":{"memory":"256Mi"}}' (default: requests of 10m CPU and 64Mi)`)
	fs.StringSliceVar(&f.cfg.AgentImagePullSecrets, "agent-image-pull-secrets", nil, "Secrets in the operator's namespace to pull the agent image with (comma-separated or repeated)")
	fs.StringVar(&f.cfg.AgentServiceAccount, "agent-service-account", d.AgentServiceAccount, "service account of the agent pods")
	fs.StringVar(&f.cfg.StateDir, "state-dir", d.StateDir, "host directory of the agents' journals")
	fs.DurationVar(&f.cfg.DeadlineMargin, "deadline-margin", d.DeadlineMargin, "time added to (warmup + duration) × variants × repetitions before a silent node is TimedOut")
	fs.DurationVar(&f.cfg.RestoreTimeout, "restore-timeout", d.RestoreTimeout, "longest wait for the agents to report their restore after a run ends, an abort or a deletion")
	fs.DurationVar(&f.cfg.WaitRecheck, "wait-recheck", d.WaitRecheck, "how often an experiment waiting for locked nodes rechecks without an event")
	fs.StringVar(&f.allowedNodeSelector, "allowed-node-selector", "", `label selector every experiment's nodes must match, e.g. "schedlab.io/pool in (lab,bench)"; an experiment whose nodeSelector matches another node is refused ("" allows every node)`)
	fs.IntVar(&f.cfg.SimulationWorkers, "simulation-workers", d.SimulationWorkers, "analyses (predictions, sweeps, comparisons) run at once, off the reconcile loop")
	fs.DurationVar(&f.cfg.SimulationTimeout, "simulation-timeout", d.SimulationTimeout, "longest one experiment's analysis may take before it fails with reason SimulationFailed")
	fs.IntVar(&f.cfg.SweepJobMinJobs, "sweep-job-min-jobs", d.SweepJobMinJobs, "a Simulate sweep with at least this many simulator jobs (shapes × variants × points) runs as an Indexed Job of shard pods instead of in the manager; negative: never")
	fs.IntVar(&f.cfg.SweepJobParallelism, "sweep-job-parallelism", d.SweepJobParallelism, "shard pods of a sweep's Indexed Job run at once, where spec.simulation.parallelism does not say")
	fs.StringVar(&f.cfg.SimulatorServiceAccount, "simulator-service-account", d.SimulatorServiceAccount, "service account of a sweep Job's shard pods (patches ConfigMaps in the operator's namespace)")
	fs.BoolVar(&f.cfg.AllowSessionNiceBelowZero, "allow-session-nice-below-zero", false, "let session groups (tasks in the node's root cgroup) run at nice below 0")
}

func (f *managerFlags) config() (controllers.Config, error) {
	c := f.cfg
	c.AgentImagePullPolicy = corev1.PullPolicy(f.pullPolicy)
	switch c.AgentImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return c, fmt.Errorf("--agent-image-pull-policy %q: use Always, IfNotPresent or Never", f.pullPolicy)
	}
	if f.allowedNodeSelector != "" {
		sel, err := labels.Parse(f.allowedNodeSelector)
		if err != nil {
			return c, fmt.Errorf("--allowed-node-selector: %w", err)
		}
		c.AllowedNodeSelector = sel
	}
	if f.tolerationsJSON != "" {
		if err := strictJSON(f.tolerationsJSON, &c.AgentTolerations); err != nil {
			return c, fmt.Errorf("--agent-tolerations: %w", err)
		}
	}
	if f.resourcesJSON != "" {
		c.AgentResources = &corev1.ResourceRequirements{}
		if err := strictJSON(f.resourcesJSON, c.AgentResources); err != nil {
			return c, fmt.Errorf("--agent-resources: %w", err)
		}
	}
	switch f.logFormat {
	case "text", "json":
	default:
		return c, fmt.Errorf("--log-format %q: use text or json", f.logFormat)
	}
	return c, nil
}

func runManager(f *managerFlags, logCfg *textlogger.Config) error {
	cfg, err := f.config()
	if err != nil {
		return usageError(nil, err)
	}
	ctrl.SetLogger(newLogger(f.logFormat, logCfg))
	log := ctrl.Log.WithName("manager")
	restCfg, err := config.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the cluster: %w", err)
	}
	inNamespace := map[string]cache.Config{cfg.Namespace: {}}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                        api.NewScheme(),
		Metrics:                       f.metricsOptions(),
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              f.leaderElectionID,
		LeaderElectionNamespace:       cfg.Namespace,
		LeaderElectionReleaseOnCancel: true,
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&appsv1.DaemonSet{}:     {Namespaces: inNamespace},
			&coordinationv1.Lease{}: {Namespaces: inNamespace},
			&corev1.ConfigMap{}:     {Namespaces: inNamespace},
			&batchv1.Job{}:          {Namespaces: inNamespace},
		}},
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	m, err := controllers.NewMetrics(metrics.Registry)
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	r := &controllers.SchedExperimentReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("schedlab-controller"),
		Clock:    clock.RealClock{},
		Analyzer: m.TimedAnalyzer(analysis.Analyzer{}),
		Config:   cfg,
		Metrics:  m,
	}
	if err := r.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: f.maxConcurrent}); err != nil {
		return fmt.Errorf("setting up the SchedExperiment controller: %w", err)
	}
	pr := &controllers.SchedProfileReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("schedlab-controller"),
		Clock:    clock.RealClock{},
		Config:   cfg,
	}
	if err := pr.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 1}); err != nil {
		return fmt.Errorf("setting up the SchedProfile controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	log.Info("Starting manager", "namespace", cfg.Namespace, "agentImage", cfg.AgentImage, "leaderElection", f.leaderElect)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	return nil
}

// metricsOptions serve /metrics over HTTPS behind controller-runtime's
// authentication and authorization filter (the caller's bearer token is
// checked with a TokenReview, its right to get /metrics with a
// SubjectAccessReview), or over plain HTTP with --metrics-secure=false.
func (f *managerFlags) metricsOptions() metricsserver.Options {
	o := metricsserver.Options{BindAddress: f.metricsAddr, SecureServing: f.metricsSecure}
	if f.metricsSecure {
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
		if f.metricsCertDir != "" {
			o.CertDir, o.CertName, o.KeyName = f.metricsCertDir, "tls.crt", "tls.key"
		}
	}
	return o
}

// strictJSON decodes a flag's JSON value, refusing unknown fields.
func strictJSON(s string, v any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// newLogger is klog's text logger, or with --log-format=json a logger that
// writes one JSON object per line to stderr, at the same -v verbosity.
func newLogger(format string, cfg *textlogger.Config) logr.Logger {
	if format != "json" {
		return textlogger.NewLogger(cfg)
	}
	v, _ := strconv.Atoi(cfg.Verbosity().String())
	return funcr.NewJSON(func(obj string) { fmt.Fprintln(os.Stderr, obj) },
		funcr.Options{LogTimestamp: true, LogCaller: funcr.None, Verbosity: v})
}
