package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/api"
	"github.com/schedlab/schedlab/api/v1alpha1"
)

// clusterFlags are kubectl's connection flags (--kubeconfig, --context,
// --server, --token, …) from cli-runtime, for the commands that read the
// cluster. SchedExperiments and NodeRuns are cluster-scoped: no --namespace.
type clusterFlags struct {
	cf *genericclioptions.ConfigFlags
}

func newClusterFlags() *clusterFlags {
	cf := genericclioptions.NewConfigFlags(true)
	cf.Namespace = nil
	return &clusterFlags{cf: cf}
}

func (k *clusterFlags) register(cmd *cobra.Command) { k.cf.AddFlags(cmd.Flags()) }

var errNoCluster = errors.New("no cluster to read: no kubeconfig ($KUBECONFIG or ~/.kube/config) and not running in a cluster; give --kubeconfig FILE (and --context NAME)")

// restConfig is the connection the flags name, or says how to name one.
func (k *clusterFlags) restConfig() (*rest.Config, error) {
	// Without a kubeconfig, client-go falls back to http://localhost:8080:
	// say instead that there is no cluster to read.
	raw, err := k.cf.ToRawKubeConfigLoader().RawConfig()
	noServer := k.cf.APIServer == nil || *k.cf.APIServer == ""
	if err == nil && len(raw.Clusters) == 0 && noServer && os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		return nil, errNoCluster
	}
	cfg, err := k.cf.ToRESTConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errNoCluster
		}
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	return cfg, nil
}

// client connects to the cluster, or says how to name one.
func (k *clusterFlags) client() (client.Client, error) {
	cfg, err := k.restConfig()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: api.NewScheme()})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	return c, nil
}

// completeExperiments completes a SchedExperiment name from the cluster.
func (k *clusterFlags) completeExperiments(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := k.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list v1alpha1.SchedExperimentList
	if err := c.List(ctx, &list); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, 0, len(list.Items))
	for _, e := range list.Items {
		names = append(names, e.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// notFound turns a missing object into invalid input (exit code 2): the
// user named something that is not there.
func notFound(err error) error {
	if apierrors.IsNotFound(err) {
		return invalidInput(err)
	}
	return err
}
