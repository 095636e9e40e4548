package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/controllers"
	"github.com/schedlab/schedlab/internal/experiment"
	"github.com/schedlab/schedlab/internal/promote"
)

func init() {
	register(command{name: "promote", summary: "print a SchedProfile manifest of a completed experiment's winning variant", run: runPromote})
}

func runPromote(args []string) int {
	fs := flag.NewFlagSet("schedlab promote", flag.ContinueOnError)
	config.RegisterFlags(fs)
	var o promote.Options
	fs.StringVar(&o.Variant, "variant", "", "variant to promote (default: the experiment's best variant)")
	fs.StringVar(&o.Name, "name", "", "name of the SchedProfile (default: EXPERIMENT-VARIANT)")
	fs.BoolVar(&o.Force, "force", false, "promote a variant that was not significantly better")
	output := fs.String("o", "yaml", "output format: yaml or json")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: schedlab promote EXPERIMENT|REPORT.json [flags]\n\nPrints a SchedProfile manifest for the winning variant of a completed SchedExperiment (from the cluster), or of a local run (the report.json of schedlab run --report).\n\nFlags:")
		fs.PrintDefaults()
	}
	var name string
	for {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		if name != "" {
			fmt.Fprintln(os.Stderr, "schedlab promote: one experiment only")
			return 2
		}
		name, args = fs.Arg(0), fs.Args()[1:]
	}
	if name == "" {
		fs.Usage()
		return 2
	}
	if *output != "yaml" && *output != "json" {
		fmt.Fprintf(os.Stderr, "schedlab promote: -o %q: use yaml or json\n", *output)
		return 2
	}
	src, err := promoteSource(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedlab promote:", err)
		return 1
	}
	p, err := promote.Profile(src, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedlab promote:", err)
		return 1
	}
	var b []byte
	if *output == "json" {
		b, err = json.MarshalIndent(promote.Manifest(p), "", "  ")
		b = append(b, '\n')
	} else {
		b, err = yaml.Marshal(promote.Manifest(p))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedlab promote:", err)
		return 1
	}
	_, _ = os.Stdout.Write(b)
	return 0
}

// promoteSource reads a report.json when name is a file ending in .json,
// else the SchedExperiment of that name from the cluster.
func promoteSource(name string) (*promote.Source, error) {
	if strings.HasSuffix(name, ".json") {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		var r experiment.Report
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: not a schedlab run report: %w", name, err)
		}
		return promote.FromReport(&r)
	}
	cfg, err := config.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("finding the cluster: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var exp v1alpha1.SchedExperiment
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &exp); err != nil {
		return nil, err
	}
	return promote.FromExperiment(&exp)
}
