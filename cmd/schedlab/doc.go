// Command schedlab is the single schedlab binary: the operator (manager), the
// node agent (agent), and the local tools (run, simulate, plan). Each
// subcommand lives in its own file and registers itself with register; this
// file only dispatches.
//
// It may import everything; each subcommand stays thin and calls into agent/,
// controllers/, internal/experiment or internal/nodeagent.
package main
