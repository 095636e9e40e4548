// Command schedlab is the single schedlab binary: the operator (manager), the
// node agent (agent), and the local tools (run, simulate, plan, calibrate,
// report). It is built on cobra: each subcommand lives in its own file and
// registers a constructor with register; cli.go holds what they share (the
// manifest argument, -o, --output-dir, exit codes).
//
// Exit codes: 0 success; 1 the run, the simulation or the cluster call failed;
// 2 usage error or invalid input (bad flag, extra argument, unreadable or
// invalid manifest).
//
// It may import everything; each subcommand stays thin and calls into agent/,
// controllers/, internal/experiment or internal/nodeagent.
package main
