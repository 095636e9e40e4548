package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/schedlab/schedlab/agent"
	"github.com/schedlab/schedlab/api"
	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/nodeagent"
)

func init() { register("agent", newAgentCmd) }

func newAgentCmd() *cobra.Command {
	var (
		experiment, node string
		opts             nodeagent.Options
		progress         time.Duration
		profiles         bool
		namespace        string
		interval         time.Duration
		restoreOnly      bool
	)
	logCfg := textlogger.NewConfig()
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "run the node agent of an experiment or of the node's SchedProfiles (in an agent DaemonSet)",
		Long: `Runs one node's part of a Measure experiment: it waits for the node's NodeRun, runs the
variants in real cgroups, writes progress and results into the NodeRun's status, and
restores the node. The operator starts it in the agent DaemonSet.

With --profiles it runs long: it keeps the SchedProfile that wins on this node applied,
repairs drift and restores the node when none applies.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if profiles {
				return runProfileAgent(cmd.Context(), node, namespace, interval, opts, logCfg)
			}
			if experiment == "" || node == "" {
				return usagef("--experiment and --node (or $NODE_NAME) are required")
			}
			logger := textlogger.NewLogger(logCfg)
			ctrl.SetLogger(logger)
			opts.Log = logger.WithName("nodeagent")
			restCfg, err := config.GetConfig()
			if err != nil {
				return fmt.Errorf("finding the cluster: %w", err)
			}
			a, err := agent.New(restCfg, api.NewScheme(), agent.Options{
				Experiment:       experiment,
				Node:             node,
				Runner:           agent.NodeAgentRunner{Options: opts},
				ProgressInterval: progress,
				Log:              logger.WithName("agent"),
				RestoreOnly:      restoreOnly,
			})
			if err != nil {
				return fmt.Errorf("creating the agent: %w", err)
			}
			// SIGTERM (the DaemonSet is deleted) cancels the run: the node agent
			// restores the node and the agent writes the restore record before it
			// exits.
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			logger.Info("Starting agent", "experiment", experiment, "node", node, "stateDir", opts.StateDir, "root", opts.Root)
			if err := a.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("agent failed: %w", err)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&experiment, "experiment", "", "name of the SchedExperiment to serve (required)")
	fs.StringVar(&node, "node", os.Getenv("NODE_NAME"), "name of this node (default $NODE_NAME, from the Downward API)")
	fs.StringVar(&opts.StateDir, "state-dir", nodeagent.DefaultStateDir, "directory of the journal and the node lock (a hostPath)")
	fs.StringVar(&opts.Root, "root", "/", "the host's root directory as the agent sees it")
	fs.StringVar(&opts.WorkerBinary, "worker-binary", "", "schedlab binary re-executed as workload workers (default: this binary)")
	fs.Float64Var(&opts.NoiseThreshold, "noise-threshold", 0, "CPUs used by anything but the workload above which a window is noisy and re-run (0: 5% of the CPUs, at least 0.1)")
	fs.IntVar(&opts.MaxAttempts, "max-attempts", v1alpha1.WindowAttempts, "attempts per window while it is noisy (the manager's deadline counts the default)")
	fs.DurationVar(&opts.LockWait, "lock-wait", 2*time.Minute, "wait this long for another run holding this node (a local schedlab run, say) to finish, instead of failing at once")
	fs.BoolVar(&profiles, "profiles", false, "run in profile mode: keep the SchedProfile that wins on this node applied, repair drift, restore when none applies (long-running)")
	fs.StringVar(&namespace, "namespace", os.Getenv("POD_NAMESPACE"), "profile mode: the operator's namespace, where the node Leases are")
	fs.DurationVar(&interval, "check-interval", 5*time.Second, "profile mode: how often the knobs are re-read for drift")
	fs.BoolVar(&restoreOnly, "restore-only", false, "replay this node's journal, report the restore into the NodeRun and exit (non-zero while a knob could not be restored); the operator runs it in a restore-only Pod on a node whose agent went away")
	fs.DurationVar(&progress, "progress-interval", 5*time.Second, "least time between two progress writes to the NodeRun")
	addGoFlags(cmd, func(fs *flag.FlagSet) {
		config.RegisterFlags(fs)
		logCfg.AddFlags(fs)
	})
	return cmd
}
