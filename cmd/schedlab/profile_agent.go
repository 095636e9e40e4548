package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/schedlab/schedlab/agent/profile"
	"github.com/schedlab/schedlab/api"
	"github.com/schedlab/schedlab/internal/nodeagent"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
)

// runProfileAgent is `schedlab agent --profiles`: the long-running profile
// mode of the node agent. SIGTERM stops it and leaves the node as it is
// (the next agent adopts the journal); restoring is for when no profile
// applies any more.
func runProfileAgent(ctx context.Context, node, namespace string, interval time.Duration, opts nodeagent.Options, logCfg *textlogger.Config) error {
	if node == "" || namespace == "" {
		return usagef("--profiles needs --node (or $NODE_NAME) and --namespace (or $POD_NAMESPACE)")
	}
	logger := textlogger.NewLogger(logCfg)
	ctrl.SetLogger(logger)
	restCfg, err := config.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the cluster: %w", err)
	}
	a, err := profile.New(restCfg, api.NewScheme(), profile.Options{
		Node:      node,
		Namespace: namespace,
		Keeper:    &host.ProfileKeeper{FS: host.NewFS(opts.Root), StateDir: opts.StateDir, Log: logger.WithName("keeper")},
		Interval:  interval,
		Log:       logger.WithName("profile-agent"),
	})
	if err != nil {
		return fmt.Errorf("creating the profile agent: %w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger.Info("Starting profile agent", "node", node, "namespace", namespace, "stateDir", opts.StateDir, "interval", interval)
	if err := a.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("profile agent failed: %w", err)
	}
	return nil
}
