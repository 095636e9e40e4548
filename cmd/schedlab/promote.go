package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
	"github.com/schedlab/schedlab/internal/promote"
)

func init() { register("promote", newPromoteCmd) }

func newPromoteCmd() *cobra.Command {
	var o promote.Options
	out := outputYAML
	kube := newClusterFlags()
	cmd := &cobra.Command{
		Use:   "promote EXPERIMENT|REPORT.json",
		Short: "print a SchedProfile manifest of a completed experiment's winning variant",
		Long: `Prints a SchedProfile manifest for the winning variant of a completed SchedExperiment (from
the cluster), or of a local run (the report.json that schedlab run --output-dir writes).`,
		Example: `  schedlab promote group-fairness | kubectl apply -f -
  schedlab promote out/report.json --variant autogroup-off -o json`,
		Args: exactArgs(1, "the experiment's NAME or a report.json"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == outputTable {
				return usagef("-o table: a SchedProfile manifest is printed as yaml or json")
			}
			src, err := promoteSource(cmd.Context(), kube, args[0])
			if err != nil {
				return err
			}
			p, err := promote.Profile(src, o)
			if err != nil {
				return err
			}
			return printStructured(cmd.OutOrStdout(), out, promote.Manifest(p))
		},
		ValidArgsFunction: kube.completeExperiments,
	}
	kube.register(cmd)
	cmd.Flags().VarP(&out, "output", "o", "output format of the manifest: yaml or json")
	cmd.Flags().StringVar(&o.Variant, "variant", "", "variant to promote (default: the experiment's best variant)")
	cmd.Flags().StringVar(&o.Name, "name", "", "name of the SchedProfile (default: EXPERIMENT-VARIANT)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "promote a variant that was not significantly better")
	return cmd
}

// promoteSource reads a report.json when name is a file ending in .json,
// else the SchedExperiment of that name from the cluster.
func promoteSource(ctx context.Context, kube *clusterFlags, name string) (*promote.Source, error) {
	if strings.HasSuffix(name, ".json") {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, invalidInput(err)
		}
		var r experiment.Report
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, invalidInput(fmt.Errorf("%s: not a schedlab run report: %w", name, err))
		}
		return promote.FromReport(&r)
	}
	c, err := kube.client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var exp v1alpha1.SchedExperiment
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &exp); err != nil {
		return nil, notFound(fmt.Errorf("SchedExperiment %s: %w", name, err))
	}
	return promote.FromExperiment(&exp)
}
