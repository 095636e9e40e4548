// Package host is the node agent's only way to touch a node: it detects what
// the node offers (capabilities), validates a spec again, plans each variant's
// knob writes, journals every original value durably before the first write,
// applies and restores knobs, manages the workload's cgroups (v1 and v2) and
// holds the per-node lock.
//
// Every file it reads or writes goes through FS, whose root is a field: "/"
// on a node, a t.TempDir() tree in tests. Host paths in this package are
// always absolute host paths ("/proc/sys/kernel/..."); FS joins them to its
// root. No path ever comes from user input: knobs are looked up in a fixed
// catalogue, cgroups are created under schedlab/<runID>/ only.
//
// It imports the API only. Start reading at FS (fs.go), Detect (detect.go),
// the catalogue (catalogue.go) and the journal (journal.go).
package host
