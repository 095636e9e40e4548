package names

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

const (
	// AgentAppName is the app.kubernetes.io/name of the agent DaemonSet and its pods.
	AgentAppName = "schedlab-agent"
	// ManagedByLabel marks the objects schedlab manages.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of ManagedByLabel.
	ManagedByValue = "schedlab"
	// AppNameLabel is the well-known app name label.
	AppNameLabel = "app.kubernetes.io/name"
	// GenerationLabel carries the experiment generation a DaemonSet runs.
	GenerationLabel = "schedlab.io/generation"
	// SimulatorAppName is the app.kubernetes.io/name of a sweep's Indexed
	// Job and its ConfigMaps.
	SimulatorAppName = "schedlab-simulator"
	// SweepOfLabel on a sweep's Job and ConfigMaps carries the experiment's
	// name (as a label value).
	SweepOfLabel = "schedlab.io/sweep-of"
	// ResultsOfLabel on the ConfigMaps holding an experiment's full results
	// carries the experiment's name (as a label value).
	ResultsOfLabel = "schedlab.io/results-of"
	// HolderAnnotation on a node Lease names the experiment that holds it,
	// for people; the holderIdentity is what the controller compares.
	HolderAnnotation = "schedlab.io/holder"

	maxDNSLabel   = 63
	maxDNSSubName = 253
	hashLen       = 10
)

// Shorten returns s when it has at most max characters, else a prefix of s
// and a hash of all of s, max characters in all, so that distinct long names
// stay distinct.
func Shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:])[:hashLen]
	prefix := strings.TrimRight(s[:max-hashLen-1], "-.")
	return prefix + "-" + h
}

// LabelValue makes a name usable as a label value (at most 63 characters).
func LabelValue(name string) string { return Shorten(name, maxDNSLabel) }

// NodeRun is the name of the NodeRun of experiment on node: the two joined,
// then a hash of the pair, so that no two pairs share a name ("a-b" on node
// "c" and "a" on node "b-c" differ) and any legal experiment and node name
// (253 characters each) gives a legal name.
func NodeRun(experiment, node string) string {
	return withHash(experiment+"-"+node, experiment+"/"+node, maxDNSSubName)
}

// RunID is the agent's id of one run of a NodeRun's generation: the name of
// its cgroup directory and journal entries. It is a DNS label (no dots, at
// most 63 characters, well within the kernel's 255 for a file name) and
// carries a hash of the NodeRun name and generation, so distinct runs never
// share one.
func RunID(nodeRun string, generation int64) string {
	gen := fmt.Sprintf("-g%d", generation)
	readable := strings.ReplaceAll(nodeRun, ".", "-")
	return withHash(readable, nodeRun+gen, maxDNSLabel-len(gen)) + gen
}

// withHash is a prefix of readable, a '-' and a hash of key, at most max
// characters, starting and ending with a letter or digit.
func withHash(readable, key string, max int) string {
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:])[:hashLen]
	n := max - hashLen - 1
	if len(readable) > n {
		readable = readable[:n]
	}
	readable = strings.TrimRight(readable, "-.")
	if readable == "" {
		return h
	}
	return readable + "-" + h
}

// DaemonSet is the name of the agent DaemonSet of an experiment. Pod names
// derive from it, so it is kept to a DNS label with room for the suffix.
func DaemonSet(experiment string) string {
	return Shorten("schedlab-agent-"+experiment, maxDNSLabel-6)
}

// RestorePod is the name of the restore-only Pod the controller runs on a
// node whose agent went away without reporting its restore.
func RestorePod(experiment, node string) string {
	readable := strings.ReplaceAll("schedlab-restore-"+experiment+"-"+node, ".", "-")
	return withHash(readable, experiment+"/"+node, maxDNSLabel)
}

// SweepJob is the name of the Indexed Job that simulates an experiment's
// sweep. It is kept short enough for the Job's pod names and its job-name
// label (63), and for the shard ConfigMaps' names (SweepShard).
func SweepJob(experiment string) string {
	return Shorten("schedlab-sweep-"+experiment, maxDNSLabel-11)
}

// SweepInput is the name of the ConfigMap that holds the manifest a sweep
// Job's pods simulate.
func SweepInput(job string) string { return job + "-input" }

// FullResults is the name of the i-th ConfigMap of an experiment's full
// results (status.fullResults).
func FullResults(experiment string, i int) string {
	return fmt.Sprintf("%s-%d", Shorten("schedlab-results-"+experiment, maxDNSSubName-4), i)
}

// SweepShard is the name of the ConfigMap shard i of a sweep Job's pods
// writes.
func SweepShard(job string, i int) string { return fmt.Sprintf("%s-%d", job, i) }

// Lease is the name of the Lease that locks node.
func Lease(node string) string { return Shorten("schedlab-node-"+node, maxDNSSubName) }

// LeaseHolder is the holderIdentity an experiment writes into the Leases it holds.
func LeaseHolder(experiment, uid string) string { return experiment + "/" + uid }

// SplitLeaseHolder splits a holderIdentity into experiment name and UID.
func SplitLeaseHolder(holder string) (experiment, uid string, ok bool) {
	i := strings.LastIndexByte(holder, '/')
	if i <= 0 || i == len(holder)-1 {
		return "", "", false
	}
	return holder[:i], holder[i+1:], true
}
