package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// cliResult is one run of the command line in-process.
type cliResult struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	var out, errOut bytes.Buffer
	code := execute(args, &out, &errOut)
	return cliResult{code, out.String(), errOut.String()}
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// tinySpec simulates in a few milliseconds.
const tinySpec = `apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: tiny}
spec:
  mode: Simulate
  duration: 300ms
  warmup: 50ms
  variants: [{name: stock}]
  workload:
    groups:
    - {name: hogs, tasks: 2, pattern: {type: Hog}}
  simulation:
    seed: 1
    nodes: [{cpus: 1}]
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// subcommand describes what the conventions test expects of one subcommand.
type subcommand struct {
	name string
	// prints results: has -o table|json|yaml.
	prints bool
	// writes files: has --output-dir.
	writesFiles bool
	// takes a SchedExperiment manifest as -f or the argument.
	manifest bool
	// positional arguments it accepts at most (extra ones are refused); -1
	// for a list.
	maxArgs int
	// outputDefault is -o's default when not table (promote prints a manifest).
	outputDefault string
}

// The table of every subcommand. TestCLISubcommandTableIsComplete fails when a
// command is added without a row.
var subcommands = []subcommand{
	{name: "simulate", prints: true, manifest: true, maxArgs: 1},
	{name: "run", prints: true, writesFiles: true, manifest: true, maxArgs: 1},
	{name: "plan", prints: true, writesFiles: true, manifest: true, maxArgs: 1},
	{name: "calibrate", prints: true, writesFiles: true, maxArgs: -1},
	{name: "report", prints: true, writesFiles: true, maxArgs: 1},
	{name: "promote", prints: true, maxArgs: 1, outputDefault: "yaml"},
	{name: "get", prints: true, maxArgs: -1},
	{name: "describe", maxArgs: 1},
	{name: "watch", maxArgs: 1},
	{name: "import", prints: true, maxArgs: 2, outputDefault: "yaml"},
	{name: "manager"},
	{name: "agent"},
}

func TestCLISubcommandTableIsComplete(t *testing.T) {
	var got, want []string
	for _, c := range newRootCmd().Commands() {
		if c.Name() == "help" || c.Name() == "completion" || c.Hidden {
			continue
		}
		got = append(got, c.Name())
	}
	for _, s := range subcommands {
		want = append(want, s.name)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("subcommands %v, the conventions table has %v: add a row for every command", got, want)
	}
}

// TestCLIConventions checks, for every subcommand: help on stdout with exit
// 0; a bad flag is a short usage error with exit 2; extra arguments are
// refused with exit 2; -o accepts table, json and yaml and refuses the rest;
// file outputs are one flag, --output-dir; every flag has a description.
func TestCLIConventions(t *testing.T) {
	root := newRootCmd()
	for _, sc := range subcommands {
		t.Run(sc.name, func(t *testing.T) {
			cmd, _, err := root.Find([]string{sc.name})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range []string{"--help", "-h"} {
				r := runCLI(t, sc.name, h)
				if r.code != 0 || !strings.Contains(r.stdout, "Usage:") || r.stderr != "" {
					t.Errorf("%s %s: want usage on stdout, exit 0; got %s", sc.name, h, r)
				}
			}
			r := runCLI(t, "help", sc.name)
			if r.code != 0 || !strings.Contains(r.stdout, "schedlab "+sc.name) {
				t.Errorf("help %s: %s", sc.name, r)
			}

			r = runCLI(t, sc.name, "--no-such-flag")
			if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "unknown flag: --no-such-flag") ||
				!strings.Contains(r.stderr, "schedlab "+sc.name+" --help") || strings.Count(r.stderr, "\n") > 2 {
				t.Errorf("bad flag: want a two-line error on stderr and exit 2; got %s", r)
			}

			if sc.maxArgs >= 0 {
				args := []string{sc.name}
				for i := 0; i <= sc.maxArgs; i++ {
					args = append(args, "extra"+string(rune('a'+i)))
				}
				r = runCLI(t, args...)
				if r.code != 2 || !strings.Contains(r.stderr, "unexpected argument") {
					t.Errorf("%v: want extra arguments refused with exit 2; got %s", args, r)
				}
			}

			o := cmd.Flags().Lookup("output")
			if sc.prints != (o != nil) {
				t.Errorf("has -o/--output: %v, want %v", o != nil, sc.prints)
			}
			if o != nil {
				def := "table"
				if sc.outputDefault != "" {
					def = sc.outputDefault
				}
				if o.Shorthand != "o" || o.DefValue != def {
					t.Errorf("--output: shorthand %q default %q, want -o and %s", o.Shorthand, o.DefValue, def)
				}
				for _, v := range []string{"table", "json", "yaml"} {
					if err := o.Value.Set(v); err != nil {
						t.Errorf("-o %s refused: %v", v, err)
					}
				}
				r = runCLI(t, sc.name, "-o", "xml")
				if r.code != 2 || !strings.Contains(r.stderr, "use table, json, yaml") {
					t.Errorf("-o xml: want refused with exit 2; got %s", r)
				}
			}
			if d := cmd.Flags().Lookup(outputDirFlag); sc.writesFiles != (d != nil) {
				t.Errorf("has --%s: %v, want %v", outputDirFlag, d != nil, sc.writesFiles)
			}
			fileOut := regexp.MustCompile(`^(report|out|output-file|chart|configmap)$`)
			cmd.Flags().VisitAll(func(f *pflag.Flag) {
				if f.Usage == "" {
					t.Errorf("flag --%s has no description", f.Name)
				}
				if fileOut.MatchString(f.Name) {
					t.Errorf("flag --%s: file outputs go through --%s", f.Name, outputDirFlag)
				}
			})
			if sc.manifest {
				if f := cmd.Flags().Lookup("filename"); f == nil || f.Shorthand != "f" {
					t.Errorf("no -f/--filename")
				}
			}
		})
	}
}

// TestCLIRoot: help and no arguments print usage on stdout with exit 0;
// --version names the module version and commit; completion scripts exist;
// an unknown command is exit 2.
func TestCLIRoot(t *testing.T) {
	for _, args := range [][]string{nil, {"--help"}, {"help"}} {
		r := runCLI(t, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Available Commands:") || r.stderr != "" {
			t.Errorf("%v: %s", args, r)
		}
		if strings.Contains(r.stdout, "__worker") {
			t.Errorf("%v lists the hidden worker command", args)
		}
		if !strings.Contains(r.stdout, "Exit codes: 0 success; 1") {
			t.Errorf("%v: exit codes not documented", args)
		}
	}
	r := runCLI(t, "--version")
	if r.code != 0 || !regexp.MustCompile(`^schedlab \S+, commit \S+`).MatchString(r.stdout) {
		t.Errorf("--version: %s", r)
	}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := runCLI(t, "completion", shell)
		if r.code != 0 || len(r.stdout) < 500 || !strings.Contains(r.stdout, "schedlab") {
			t.Errorf("completion %s: exit %d, %d bytes", shell, r.code, len(r.stdout))
		}
	}
	r = runCLI(t, "simulat")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown command "simulat"`) || !strings.Contains(r.stderr, `did you mean "simulate"`) {
		t.Errorf("unknown command: %s", r)
	}
	// Completion of -o and of report's name without a cluster.
	r = runCLI(t, "__complete", "simulate", "-o", "")
	if r.code != 0 || !strings.Contains(r.stdout, "table\njson\nyaml\n") {
		t.Errorf("completing -o: %s", r)
	}
}

// TestCLIManifestArgument: the manifest is -f or the argument, with the same
// result; both at once, none, a missing file and a malformed file are exit
// 2 naming what is wrong; -o json and yaml print the same data.
func TestCLIManifestArgument(t *testing.T) {
	file := writeFile(t, "tiny.yaml", tinySpec)
	byFlag := runCLI(t, "simulate", "-f", file, "-o", "json")
	byArg := runCLI(t, "simulate", file, "-o", "json")
	if byFlag.code != 0 || byArg.code != 0 || byFlag.stdout != byArg.stdout || byFlag.stdout == "" {
		t.Fatalf("-f and argument differ:\n%s\n%s", byFlag, byArg)
	}
	asYAML := runCLI(t, "simulate", file, "-o", "yaml")
	var j, y any
	if err := json.Unmarshal([]byte(byFlag.stdout), &j); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(asYAML.stdout), &y); err != nil || asYAML.code != 0 {
		t.Fatalf("-o yaml: %v %s", err, asYAML)
	}
	jb, _ := json.Marshal(j)
	yb, _ := json.Marshal(y)
	if !bytes.Equal(jb, yb) {
		t.Errorf("-o yaml and -o json differ:\n%s\n%s", jb, yb)
	}
	table := runCLI(t, "simulate", file)
	if table.code != 0 || !strings.Contains(table.stdout, "VARIANT") {
		t.Errorf("table: %s", table)
	}

	missing := filepath.Join(t.TempDir(), "nope.yaml")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"both", []string{"simulate", "-f", file, file}, "given twice"},
		{"none", []string{"simulate"}, "give it as the argument or with -f"},
		{"missing file", []string{"simulate", missing}, "nope.yaml"},
		{"plan without a manifest", []string{"plan"}, "give it as the argument or with -f"},
		{"run without a manifest", []string{"run"}, "give it as the argument or with -f"},
		{"run --restore-only with a manifest", []string{"run", "--restore-only", file}, "takes no manifest"},
		{"plan of a spec without a sweep", []string{"plan", file}, "has no spec.sweep"},
		{"calibrate unpaired", []string{"calibrate", file}, "in pairs"},
		{"agent without experiment", []string{"agent", "--node", "n"}, "--experiment"},
		{"manager bad pull policy", []string{"manager", "--agent-image-pull-policy", "Sometimes"}, "use Always"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, c.args...)
			if r.code != 2 || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
				t.Errorf("want exit 2 and %q on stderr; got %s", c.want, r)
			}
		})
	}
}

// TestCLIBadManifests: each mistake a user makes in a manifest is exit 2 with
// an error that names the YAML path and what to change.
func TestCLIBadManifests(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown field", strings.Replace(tinySpec, "tasks: 2,", "taks: 2,", 1),
			[]string{"spec.workload.groups[0].taks", "unknown field"}},
		{"wrong type", strings.Replace(tinySpec, "tasks: 2,", "tasks: two,", 1),
			[]string{"spec.workload.groups[0].tasks"}},
		{"syntax", strings.Replace(tinySpec, "variants: [{name: stock}]", "variants: [{name: stock}", 1),
			[]string{"line"}},
		{"kind", strings.Replace(tinySpec, "kind: SchedExperiment", "kind: ConfigMap", 1),
			[]string{"kind", "ConfigMap", "SchedExperiment"}},
		{"apiVersion", strings.Replace(tinySpec, "schedlab.io/v1alpha1", "schedlab.io/v2", 1),
			[]string{"apiVersion", "schedlab.io/v1alpha1"}},
		{"no kind", strings.Replace(tinySpec, "kind: SchedExperiment\n", "", 1),
			[]string{"kind"}},
		{"YAML 1.1 boolean as a name", strings.Replace(tinySpec, "name: stock", "name: off", 1),
			[]string{"spec.variants[0].name", `"off"`}},
		{"invalid value", strings.Replace(tinySpec, "name: hogs", "name: Hogs_1", 1),
			[]string{"spec.workload.groups[0].name"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := writeFile(t, "bad.yaml", c.yaml)
			r := runCLI(t, "simulate", file)
			if r.code != 2 || r.stdout != "" {
				t.Fatalf("want exit 2; got %s", r)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("error lacks %q: %s", w, r.stderr)
				}
			}
		})
	}
}

// TestCLIExitCodeFailed: a command that cannot do its job (here: read a
// cluster there is none of) exits 1 and says how to name one.
func TestCLIExitCodeFailed(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	r := runCLI(t, "report", "some-experiment")
	if r.code != 1 || !strings.Contains(r.stderr, "--kubeconfig") || strings.Contains(r.stderr, "KUBERNETES_MASTER") {
		t.Errorf("report without a cluster: %s", r)
	}
}

// TestCLIProgressOnlyOnTerminal: plan writes no progress (no carriage
// returns) when stderr is not a terminal.
func TestCLIProgressOnlyOnTerminal(t *testing.T) {
	file := writeFile(t, "plan.yaml", planSpec)
	r := runCLI(t, "plan", file, "--duration", "300ms")
	if r.code != 0 || strings.Contains(r.stderr, "\r") || strings.Contains(r.stdout, "\r") {
		t.Errorf("plan to a pipe: %q", r)
	}
}

// A negative --duration is a usage error, not a prediction of the spec's
// duration that silently ignores the flag.
func TestSimulateRefusesNegativeDuration(t *testing.T) {
	r := runCLI(t, "simulate", "-f", "../../config/samples/group-fairness.yaml", "--duration", "-1s")
	if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "--duration -1s: use a positive duration") {
		t.Fatalf("simulate --duration -1s: %+v", r)
	}
}
