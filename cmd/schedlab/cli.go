package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
	"sigs.k8s.io/yaml"

	"github.com/schedlab/schedlab/api/v1alpha1"
	"github.com/schedlab/schedlab/internal/experiment"
)

// Exit codes (documented in the root command's help and the README).
const (
	exitOK      = 0
	exitFailed  = 1 // the run, simulation or cluster call failed
	exitInvalid = 2 // usage error or invalid input
)

// exitError carries an exit code other than exitFailed.
type exitError struct {
	code  int
	usage bool // point at --help
	err   error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// invalidInput marks err as a problem with what the user gave (a manifest, a
// flag's value): exit code 2, no usage hint.
func invalidInput(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: exitInvalid, err: err}
}

// usageError marks err as a command-line mistake: exit code 2 and a pointer to
// the command's --help.
func usageError(_ *cobra.Command, err error) error {
	return &exitError{code: exitInvalid, usage: true, err: err}
}

// usagef is usageError with a formatted message.
func usagef(format string, a ...any) error {
	return usageError(nil, fmt.Errorf(format, a...))
}

// report prints err for the command that failed and returns the exit code.
func report(cmd *cobra.Command, err error, stderr io.Writer) int {
	name := "schedlab"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	code := exitFailed
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
		if ee.usage {
			fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", name, ee.err, name)
			return code
		}
	case strings.HasPrefix(err.Error(), "unknown command"):
		// cobra's own error for a mistyped subcommand.
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", name, err, name)
		return exitInvalid
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return code
}

// noArgs refuses any positional argument.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument(s) %q: this command takes flags only", args)
	}
	return nil
}

// exactArgs wants n positional arguments, described by what ("NAME").
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < n:
			return usagef("missing %s", what)
		case len(args) > n:
			return usagef("unexpected argument(s) %q: give %s only", args[n:], what)
		}
		return nil
	}
}

// outputFormat is the value of -o/--output: table, json or yaml. Set refuses
// anything else, so a bad -o is a usage error at parse time.
type outputFormat string

const (
	outputTable outputFormat = "table"
	outputJSON  outputFormat = "json"
	outputYAML  outputFormat = "yaml"
)

var outputFormats = []string{string(outputTable), string(outputJSON), string(outputYAML)}

func (o *outputFormat) String() string { return string(*o) }
func (o *outputFormat) Type() string   { return "format" }
func (o *outputFormat) Set(v string) error {
	switch outputFormat(v) {
	case outputTable, outputJSON, outputYAML:
		*o = outputFormat(v)
		return nil
	}
	return fmt.Errorf("%q: use %s", v, strings.Join(outputFormats, ", "))
}

// addOutputFlag adds -o/--output (default table) to a command that prints
// results.
func addOutputFlag(cmd *cobra.Command, o *outputFormat) {
	*o = outputTable
	cmd.Flags().VarP(o, "output", "o", "output format: "+strings.Join(outputFormats, ", "))
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return outputFormats, cobra.ShellCompDirectiveNoFileComp
	})
}

// outputDirFlag is the name of the flag of every command that writes files
// (reports, charts, calibrations): a directory.
const outputDirFlag = "output-dir"

// addOutputDirFlag adds --output-dir with what the command writes there.
func addOutputDirFlag(cmd *cobra.Command, dir *string, what string) {
	cmd.Flags().StringVar(dir, outputDirFlag, "", "directory to write "+what+" into (created if missing)")
	_ = cmd.MarkFlagDirname(outputDirFlag)
}

// printStructured writes v as indented JSON or as YAML.
func printStructured(w io.Writer, format outputFormat, v any) error {
	switch format {
	case outputYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	default:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
}

// manifestFlag is the SchedExperiment manifest, given as -f/--filename or as
// the one positional argument.
type manifestFlag struct{ file string }

func (m *manifestFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&m.file, "filename", "f", "", "SchedExperiment manifest, YAML or JSON (- for stdin); or give it as the argument")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) > 1:
			return usagef("unexpected argument(s) %q: give one manifest", args[1:])
		case len(args) == 1 && m.file != "":
			return usagef("the manifest is given twice (-f %s and %s): give one", m.file, args[0])
		}
		return nil
	}
	cmd.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 || m.file != "" {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return []string{"yaml", "yml", "json"}, cobra.ShellCompDirectiveFilterFileExt
	}
}

// path is the manifest's path from -f or the argument, or a usage error.
func (m *manifestFlag) path(args []string, what string) (string, error) {
	if len(args) == 1 {
		m.file = args[0]
	}
	if m.file == "" {
		return "", usagef("name the SchedExperiment manifest %s: give it as the argument or with -f", what)
	}
	return m.file, nil
}

// loadExperiment loads, defaults and validates the manifest named by -f or
// the argument; what completes "name the SchedExperiment manifest …". Every
// problem with the file is invalid input (exit code 2). Local commands: this
// machine (or the flags) is the node, so the fields that pick a cluster's
// nodes are not needed (experiment.LoadLocal).
func loadExperiment(m *manifestFlag, args []string, what string) (*v1alpha1.SchedExperiment, error) {
	path, err := m.path(args, what)
	if err != nil {
		return nil, err
	}
	exp, err := experiment.LoadLocal(path)
	return exp, invalidInput(err)
}

// isTerminal says whether w is a terminal: progress is drawn only there.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// addGoFlags adds a standard-library flag set (controller-runtime's
// --kubeconfig, klog's -v) to a command's flags.
func addGoFlags(cmd *cobra.Command, register func(*flag.FlagSet)) {
	gfs := flag.NewFlagSet(cmd.Name(), flag.ContinueOnError)
	register(gfs)
	cmd.Flags().AddGoFlagSet(gfs)
}

// flagChanged says whether the user gave the flag.
func flagChanged(fs *pflag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Changed
}
