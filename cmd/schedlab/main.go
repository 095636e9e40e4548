package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// command is one subcommand. run receives the arguments after the
// subcommand's name and returns the process exit code.
type command struct {
	name    string
	summary string
	hidden  bool
	run     func(args []string) int
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("schedlab: subcommand registered twice: " + c.name)
	}
	commands[c.name] = c
}

func usage() {
	var b strings.Builder
	b.WriteString("schedlab turns CPU-scheduler tuning into experiments.\n\nUsage:\n  schedlab <command> [flags]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, commands[n].summary)
	}
	b.WriteString("\nRun 'schedlab <command> -h' for the flags of a command.\n")
	fmt.Fprint(os.Stderr, b.String())
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "schedlab: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	os.Exit(c.run(os.Args[2:]))
}
