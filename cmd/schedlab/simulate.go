package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
	"github.com/schedlab/schedlab/internal/nodeagent/host"
)

func init() { register("simulate", newSimulateCmd) }

func newSimulateCmd() *cobra.Command {
	var (
		m     manifestFlag
		out   outputFormat
		shard string
		toCM  string
		sf    shapeFlags
	)
	cmd := &cobra.Command{
		Use:   "simulate [-f] EXPERIMENT.yaml",
		Short: "predict an experiment's metrics with the scheduler simulator",
		Long: `Predicts every variant's metrics (CPU, share, wake-up latency, context switches, ops/s)
with the scheduler simulator, for the node shapes of spec.simulation.nodes, the shape
given by the flags, or this machine's shape.`,
		Example: `  schedlab simulate config/samples/weights-100-200-400.yaml
  schedlab simulate -f config/samples/desktop-interactivity.yaml --cpus 8 --scheduler cfs -o json
  schedlab simulate -f config/samples/wakeup-heavy-vs-hogs.yaml --cpus 32 --topology 2x2x2
  schedlab simulate -f config/samples/capacity-plan.yaml --shard 0/4 > shard-0.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if shard != "" {
				return simulateShard(cmd.Context(), cmd.OutOrStdout(), &m, args, shard, toCM, &sf)
			}
			if toCM != "" {
				return usageError(cmd, errors.New("--to-configmap goes with --shard"))
			}
			return simulate(cmd.OutOrStdout(), &m, args, out, &sf)
		},
	}
	m.register(cmd)
	addOutputFlag(cmd, &out)
	cmd.Flags().StringVar(&shard, "shard", "", "i/n: simulate only shard i (0-based) of n of spec.sweep's grid and print JSON for 'schedlab plan --merge' (job/n: i from JOB_COMPLETION_INDEX)")
	cmd.Flags().StringVar(&toCM, "to-configmap", "", "NAMESPACE/JOB: with --shard i/n, write the shard into the ConfigMap JOB-i (gzipped JSON) of the cluster this pod runs in, instead of printing it (a sweep's Indexed Job)")
	sf.register(cmd.Flags())
	return cmd
}

// shapeFlags are the node-shape flags that simulate and plan share.
type shapeFlags struct {
	cpus      int
	scheduler string
	hz        int
	preempt   string
	topology  string
	seed      int64
	duration  time.Duration
	// calibration is a calibration file (schedlab calibrate) for the
	// shapes it names.
	calibration string
}

func (f *shapeFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.cpus, "cpus", 0, "CPUs of the node shape to simulate (overrides spec.simulation.nodes)")
	fs.StringVar(&f.scheduler, "scheduler", "", "scheduler family: eevdf or cfs")
	fs.IntVar(&f.hz, "hz", 0, "tick rate: 100, 250, 300 or 1000")
	fs.StringVar(&f.preempt, "preempt", "", "preemption model: none, voluntary, full or lazy")
	fs.StringVar(&f.topology, "topology", "", "CPU topology SOCKETSxLLCSxTHREADS, e.g. 2x2x2 (2 sockets, 2 LLCs per socket, SMT2), or flat")
	fs.Int64Var(&f.seed, "seed", -1, "simulator seed (overrides spec.simulation.seed)")
	fs.StringVar(&f.calibration, "calibration", "", "calibration file (from schedlab calibrate) used for the shapes it names")
	fs.DurationVar(&f.duration, "duration", 0, fmt.Sprintf("simulated window (default: the spec's duration, at most %s)", experiment.MaxSimulatedDuration))
}

// shapes resolves the node shapes to simulate: flags override
// spec.simulation.nodes; with neither, this machine's shape.
func (f *shapeFlags) shapes(spec *v1alpha1.SchedExperimentSpec) ([]v1alpha1.NodeShape, error) {
	overridden := f.cpus != 0 || f.scheduler != "" || f.hz != 0 || f.preempt != "" || f.topology != ""
	if spec.Simulation != nil && len(spec.Simulation.Nodes) > 0 && !overridden {
		return spec.Simulation.Nodes, nil
	}
	base := localShape()
	if spec.Simulation != nil && len(spec.Simulation.Nodes) > 0 {
		base = spec.Simulation.Nodes[0]
	}
	if f.cpus != 0 {
		if f.cpus < 1 || f.cpus > 1024 {
			return nil, fmt.Errorf("--cpus %d: use 1..1024", f.cpus)
		}
		base.CPUs = int32(f.cpus)
	}
	base, err := f.applyTo(base)
	if err != nil {
		return nil, err
	}
	return []v1alpha1.NodeShape{base}, nil
}

func (f *shapeFlags) options() (experiment.PredictOptions, error) {
	if f.duration < 0 {
		return experiment.PredictOptions{}, usagef("--duration %s: use a positive duration (leave it out for the spec's, at most %s)", f.duration, experiment.MaxSimulatedDuration)
	}
	o := experiment.PredictOptions{Duration: f.duration}
	if f.seed >= 0 {
		s := uint64(f.seed)
		o.Seed = &s
	}
	if f.calibration != "" {
		cf, err := experiment.LoadCalibrationFile(f.calibration)
		if err != nil {
			return o, fmt.Errorf("--calibration: %w", err)
		}
		o.Calibration = experiment.CalibrationMap(cf.Shapes)
	}
	return o, nil
}

// localShape is this machine's shape: what the agent would detect here,
// through the one capabilities → shape translation (CPUs, kernel, HZ,
// preemption model); from the CPU count and uname alone where detection
// fails.
func localShape() v1alpha1.NodeShape {
	if caps, err := host.Detect(host.NewFS("/")); err == nil && caps.CPUs > 0 {
		return experiment.ShapeFromCapabilities(caps)
	}
	var u unix.Utsname
	release := ""
	if err := unix.Uname(&u); err == nil {
		release = unix.ByteSliceToString(u.Release[:])
	}
	return experiment.ShapeForKernel(int32(runtime.NumCPU()), release)
}

func simulate(w io.Writer, m *manifestFlag, args []string, out outputFormat, sf *shapeFlags) error {
	exp, err := loadExperiment(m, args, "to simulate")
	if err != nil {
		return err
	}
	shapes, err := sf.shapes(&exp.Spec)
	if err != nil {
		return invalidInput(err)
	}
	opts, err := sf.options()
	if err != nil {
		return err
	}
	preds, err := experiment.Predict(&exp.Spec, shapes, opts)
	if err != nil {
		return err
	}
	rep := experiment.SimulationReport(&exp.Spec, preds)
	if out != outputTable {
		return printStructured(w, out, rep)
	}
	names := make([]string, len(shapes))
	for i, s := range shapes {
		names[i] = experiment.ShapeName(s)
	}
	fmt.Fprintf(w, "%s: predicted by the simulator for %s\n\n", exp.Name, strings.Join(names, ", "))
	return rep.WriteTable(w)
}
