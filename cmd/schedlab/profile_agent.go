package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/schedlab/schedlab/agent/profile"
	"github.com/schedlab/schedlab/controllers"
	"github.com/schedlab/schedlab/internal/nodeagent"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
)

// runProfileAgent is `schedlab agent --profiles`: the long-running profile
// mode of the node agent. SIGTERM stops it and leaves the node as it is
// (the next agent adopts the journal); restoring is for when no profile
// applies any more.
func runProfileAgent(node, namespace string, interval time.Duration, opts nodeagent.Options, logCfg *textlogger.Config) int {
	if node == "" || namespace == "" {
		fmt.Fprintln(os.Stderr, "schedlab agent --profiles: --node (or $NODE_NAME) and --namespace (or $POD_NAMESPACE) are required")
		return 2
	}
	logger := textlogger.NewLogger(logCfg)
	ctrl.SetLogger(logger)
	restCfg, err := config.GetConfig()
	if err != nil {
		logger.Error(err, "Finding the cluster")
		return 1
	}
	a, err := profile.New(restCfg, controllers.NewScheme(), profile.Options{
		Node:      node,
		Namespace: namespace,
		Keeper:    &host.ProfileKeeper{FS: host.NewFS(opts.Root), StateDir: opts.StateDir, Log: logger.WithName("keeper")},
		Interval:  interval,
		Log:       logger.WithName("profile-agent"),
	})
	if err != nil {
		logger.Error(err, "Creating the profile agent")
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger.Info("Starting profile agent", "node", node, "namespace", namespace, "stateDir", opts.StateDir, "interval", interval)
	if err := a.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		logger.Error(err, "Profile agent failed")
		return 1
	}
	return 0
}
