package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"

	"github.com/spf13/cobra"

	"github.com/schedlab/schedlab/internal/nodeagent/workload"
)

// constructors of the subcommands, added by each file's init.
var constructors = map[string]func() *cobra.Command{}

// register adds a subcommand. name must be the command's Use word.
func register(name string, newCmd func() *cobra.Command) {
	if _, dup := constructors[name]; dup {
		panic("schedlab: subcommand registered twice: " + name)
	}
	constructors[name] = newCmd
}

// commit is the git commit, set with -ldflags "-X main.commit=…" when the
// binary is built without VCS stamping.
var commit = ""

// version is the module version and the commit from the build information.
func version() string {
	v, rev, modified := "(devel)", commit, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = " (modified)"
				}
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("%s, commit %s%s", v, rev, modified)
}

// newRootCmd builds the whole command tree.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "schedlab",
		Short: "schedlab turns CPU-scheduler tuning into experiments",
		Long: `schedlab turns CPU-scheduler tuning into experiments: it predicts a SchedExperiment's
metrics with a scheduler simulator, measures them on this machine or on a cluster's
nodes, and plans capacity from a sweep.

Exit codes: 0 success; 1 the run, simulation or cluster call failed;
2 usage error or invalid input (bad flag, extra argument, invalid manifest).`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q", args[0])
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %q?)", s[0])
			}
			return usagef("%s", msg)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	root.SetVersionTemplate("schedlab {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError(c, err)
	})
	names := make([]string, 0, len(constructors))
	for n := range constructors {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := constructors[n]()
		if c.Name() != n {
			panic("schedlab: subcommand " + n + " has Use " + c.Use)
		}
		root.AddCommand(c)
	}
	return root
}

// execute runs the command line args (without the program name) and returns
// the exit code. Errors go to stderr, one line, with a pointer to --help for
// usage errors.
func execute(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	return report(cmd, err, stderr)
}

func main() {
	// The workload's worker processes (`schedlab __worker <json>`, started
	// by package workload) skip cobra: they start many times a second and
	// their argument is not a command line.
	if len(os.Args) > 1 && os.Args[1] == workload.WorkerArg {
		os.Exit(workload.WorkerMain(os.Args[2:]))
	}
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
}
