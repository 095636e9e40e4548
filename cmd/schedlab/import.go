package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/api/v1alpha1/validation"
	"github.com/schedlab/schedlab/internal/rtapp"
)

func init() { register("import", newImportCmd) }

func newImportCmd() *cobra.Command {
	out := outputYAML
	var name string
	cmd := &cobra.Command{
		Use:   "import rt-app FILE.json",
		Short: "convert an rt-app workload description into SchedExperiment manifests",
		Long: `Converts an rt-app JSON description (threads of run/timer events, instances, policies,
priorities, phases) into SchedExperiment manifests: one per phase, in order, as a YAML stream
(a file without phases gives one). A thread of run + timer becomes a Periodic group, run
alone a Hog, a timer alone a LatencyProbe. What schedlab cannot represent (sleep without a
timer, runtime, barriers, locks, real-time policies, affinity, …) is refused with the JSON
path of the first such key. The manifests have no nodeSelector: add one for a cluster.`,
		Example: `  schedlab import rt-app ramp.json > ramp.yaml
  schedlab import rt-app periodic.json -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := exactArgs(2, "the format (rt-app) and FILE.json")(cmd, args); err != nil {
				return err
			}
			if args[0] != "rt-app" {
				return usagef("unknown format %q: schedlab imports rt-app", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return importRTApp(cmd.OutOrStdout(), args[1], name, out)
		},
	}
	cmd.Flags().VarP(&out, "output", "o", "output format: yaml (a stream, one manifest per phase), json (a list) or table (a summary)")
	cmd.Flags().StringVar(&name, "name", "", "name of the experiment(s) (default: the file's base name)")
	return cmd
}

func importRTApp(w io.Writer, file, name string, out outputFormat) error {
	f, err := os.Open(file)
	if err != nil {
		return invalidInput(err)
	}
	defer f.Close()
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	exps, err := rtapp.Convert(f, name)
	if err != nil {
		return invalidInput(fmt.Errorf("%s: %w", file, err))
	}
	// What comes out must be a valid experiment (for this machine: no
	// nodeSelector).
	for _, e := range exps {
		spec := e.Spec.DeepCopy()
		spec.Default()
		if errs := validation.ValidateLocalSpec(spec, field.NewPath("spec")); len(errs) > 0 {
			return fmt.Errorf("%s: the converted experiment %s is not valid (a bug of the converter): %w", file, e.Name, errs.ToAggregate())
		}
	}
	switch out {
	case outputJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(exps)
	case outputTable:
		fmt.Fprintf(w, "%-24s %-10s %-16s %5s %-12s %10s %10s\n", "EXPERIMENT", "DURATION", "GROUP", "TASKS", "PATTERN", "RUN", "PERIOD")
		for _, e := range exps {
			for _, g := range e.Spec.Workload.Groups {
				run, period := "-", "-"
				switch g.Pattern.Type {
				case v1alpha1.PatternPeriodic:
					run, period = g.Pattern.Run.Duration.String(), g.Pattern.Period.Duration.String()
				case v1alpha1.PatternLatencyProbe:
					period = g.Pattern.Interval.Duration.String()
				}
				fmt.Fprintf(w, "%-24s %-10s %-16s %5d %-12s %10s %10s\n", e.Name, e.Spec.Duration.Duration, g.Name, g.TaskCount(), g.Pattern.Type, run, period)
			}
		}
		return nil
	}
	for i, e := range exps {
		b, err := yaml.Marshal(e)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(w, "---")
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
