package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/schedlab/schedlab/controllers"
	"github.com/schedlab/schedlab/controllers/analysis"
)

func init() {
	register(command{name: "manager", summary: "run the operator (controller manager) in a cluster", run: runManager})
}

// managerFlags are the manager's settings.
type managerFlags struct {
	metricsAddr, probeAddr string
	leaderElect            bool
	leaderElectionID       string
	maxConcurrent          int
	tolerationsJSON        string
	pullPolicy             string
	cfg                    controllers.Config
}

func (f *managerFlags) register(fs *flag.FlagSet) {
	d := controllers.DefaultConfig()
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = d.Namespace
	}
	config.RegisterFlags(fs) // --kubeconfig; else $KUBECONFIG, else in-cluster
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "address the Prometheus metrics endpoint binds to; 0 disables it")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address the /healthz and /readyz probes bind to")
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "elect a leader so that only one manager replica is active")
	fs.StringVar(&f.leaderElectionID, "leader-election-id", "schedlab-manager", "name of the leader-election Lease in the operator's namespace")
	fs.IntVar(&f.maxConcurrent, "max-concurrent-reconciles", 1, "SchedExperiments reconciled at once")
	fs.StringVar(&f.cfg.Namespace, "namespace", ns, "the operator's namespace: agent DaemonSets and node Leases live there ($POD_NAMESPACE when set)")
	fs.StringVar(&f.cfg.AgentImage, "agent-image", d.AgentImage, "image of the node agent")
	fs.StringVar(&f.pullPolicy, "agent-image-pull-policy", string(d.AgentImagePullPolicy), "pull policy of the node agent image: Always, IfNotPresent or Never")
	fs.StringVar(&f.tolerationsJSON, "agent-tolerations", "", `tolerations of the agent pods as a JSON list, e.g. '[{"operator":"Exists"}]'; nodes with taints they tolerate may be selected`)
	fs.StringVar(&f.cfg.AgentPriorityClass, "agent-priority-class", "", "priority class of the agent pods")
	fs.StringVar(&f.cfg.AgentServiceAccount, "agent-service-account", d.AgentServiceAccount, "service account of the agent pods")
	fs.StringVar(&f.cfg.StateDir, "state-dir", d.StateDir, "host directory of the agents' journals")
	fs.DurationVar(&f.cfg.DeadlineMargin, "deadline-margin", d.DeadlineMargin, "time added to (warmup + duration) × variants × repetitions before a silent node is TimedOut")
	fs.DurationVar(&f.cfg.RestoreTimeout, "restore-timeout", d.RestoreTimeout, "longest wait for the agents to report their restore after a run ends, an abort or a deletion")
	fs.DurationVar(&f.cfg.WaitRecheck, "wait-recheck", d.WaitRecheck, "how often an experiment waiting for locked nodes rechecks without an event")
}

func (f *managerFlags) config() (controllers.Config, error) {
	c := f.cfg
	c.AgentImagePullPolicy = corev1.PullPolicy(f.pullPolicy)
	switch c.AgentImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return c, fmt.Errorf("--agent-image-pull-policy %q: use Always, IfNotPresent or Never", f.pullPolicy)
	}
	if f.tolerationsJSON != "" {
		if err := json.Unmarshal([]byte(f.tolerationsJSON), &c.AgentTolerations); err != nil {
			return c, fmt.Errorf("--agent-tolerations: %w", err)
		}
	}
	return c, nil
}

func runManager(args []string) int {
	fs := flag.NewFlagSet("schedlab manager", flag.ContinueOnError)
	var f managerFlags
	f.register(fs)
	logCfg := textlogger.NewConfig()
	logCfg.AddFlags(fs) // -v, --vmodule
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctrl.SetLogger(textlogger.NewLogger(logCfg))
	log := ctrl.Log.WithName("manager")
	cfg, err := f.config()
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedlab manager:", err)
		return 2
	}
	restCfg, err := config.GetConfig()
	if err != nil {
		log.Error(err, "Finding the cluster")
		return 1
	}
	inNamespace := map[string]cache.Config{cfg.Namespace: {}}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                        controllers.NewScheme(),
		Metrics:                       metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              f.leaderElectionID,
		LeaderElectionNamespace:       cfg.Namespace,
		LeaderElectionReleaseOnCancel: true,
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&appsv1.DaemonSet{}:     {Namespaces: inNamespace},
			&coordinationv1.Lease{}: {Namespaces: inNamespace},
			&corev1.ConfigMap{}:     {Namespaces: inNamespace},
		}},
	})
	if err != nil {
		log.Error(err, "Creating the manager")
		return 1
	}
	m, err := controllers.NewMetrics(metrics.Registry)
	if err != nil {
		log.Error(err, "Registering metrics")
		return 1
	}
	ctx := ctrl.SetupSignalHandler()
	r := &controllers.SchedExperimentReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("schedlab-controller"),
		Clock:    clock.RealClock{},
		Analyzer: analysis.Analyzer{},
		Config:   cfg,
		Metrics:  m,
	}
	if err := r.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: f.maxConcurrent}); err != nil {
		log.Error(err, "Setting up the SchedExperiment controller")
		return 1
	}
	pr := &controllers.SchedProfileReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("schedlab-controller"),
		Clock:    clock.RealClock{},
		Config:   cfg,
	}
	if err := pr.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 1}); err != nil {
		log.Error(err, "Setting up the SchedProfile controller")
		return 1
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "Adding the health check")
		return 1
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "Adding the readiness check")
		return 1
	}
	log.Info("Starting manager", "namespace", cfg.Namespace, "agentImage", cfg.AgentImage, "leaderElection", f.leaderElect)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "Running the manager")
		return 1
	}
	return 0
}
