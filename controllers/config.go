package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Config is the manager's configuration the reconciler needs. Zero fields
// take the defaults of DefaultConfig.
type Config struct {
	// Namespace is the operator's namespace: the agent DaemonSets and the
	// node Leases live there.
	Namespace string
	// AgentImage is the image of the agent container.
	AgentImage string
	// AgentImagePullPolicy of the agent container.
	AgentImagePullPolicy corev1.PullPolicy
	// AgentServiceAccount runs the agent pods.
	AgentServiceAccount string
	// AgentPriorityClass of the agent pods ("" for none).
	AgentPriorityClass string
	// AgentTolerations go on the agent pods, and a node tainted with a taint
	// they tolerate may be selected.
	AgentTolerations []corev1.Toleration
	// AgentNodeSelector restricts the nodes agents may run on: a node without
	// these labels is not selected for an experiment.
	AgentNodeSelector map[string]string
	// AgentResources of the agent container (default: requests of 10m CPU
	// and 64Mi). The workload runs in cgroups of its own, outside them.
	AgentResources *corev1.ResourceRequirements
	// AgentImagePullSecrets names Secrets in Namespace to pull the agent
	// image with.
	AgentImagePullSecrets []string
	// StateDir is the host directory of the agent's journal.
	StateDir string
	// DeadlineMargin is added to (warmup + duration) × variants × repetitions
	// before a node that has not reported is TimedOut.
	DeadlineMargin time.Duration
	// RestoreTimeout bounds the wait for the agents to report their restore
	// after an abort, completion or deletion.
	RestoreTimeout time.Duration
	// WaitRecheck is how often an experiment waiting for nodes rechecks even
	// when no event arrives (a backstop: Lease and Node events wake it first).
	WaitRecheck time.Duration
	// AllowedNodeSelector bounds the nodes any experiment may run on: a
	// Measure experiment whose nodeSelector matches a node outside it is
	// refused. Nil allows every node.
	AllowedNodeSelector labels.Selector
	// SimulationWorkers is how many analyses (predictions, sweeps, the
	// comparison of a finished run) run at once, off the reconcile loop.
	SimulationWorkers int
	// SimulationTimeout bounds one experiment's analysis; past it the
	// experiment fails with reason SimulationFailed.
	SimulationTimeout time.Duration
	// SweepJobMinJobs: a Simulate experiment's sweep with at least this many
	// simulator jobs (shapes × variants × points) runs as a Kubernetes
	// Indexed Job instead of in the manager's pool. 0 takes the default;
	// negative never uses a Job.
	SweepJobMinJobs int
	// SweepJobParallelism is how many shard pods of a sweep's Job run at
	// once, where the spec does not say (spec.simulation.parallelism).
	SweepJobParallelism int
	// SweepJobArgs are extra arguments of the shard command
	// (`schedlab simulate --shard`), e.g. --duration.
	SweepJobArgs []string
	// SimulatorServiceAccount runs a sweep Job's pods; it needs only to
	// patch ConfigMaps in Namespace.
	SimulatorServiceAccount string
	// AllowSessionNiceBelowZero lets session groups, whose tasks run in the
	// node's root cgroup beside its system services, run at nice below 0.
	AllowSessionNiceBelowZero bool
}

// DefaultConfig is the configuration the manager's flags start from.
func DefaultConfig() Config {
	return Config{
		Namespace:            "schedlab-system",
		AgentImage:           "ghcr.io/schedlab/schedlab:latest",
		AgentImagePullPolicy: corev1.PullIfNotPresent,
		AgentServiceAccount:  "schedlab-agent",
		StateDir:             "/var/lib/schedlab",
		DeadlineMargin:       5 * time.Minute,
		RestoreTimeout:       5 * time.Minute,
		WaitRecheck:          time.Minute,
		SimulationWorkers:    1,
		SimulationTimeout:    10 * time.Minute,
		// About 25 CPU-s of the manager's time at 13 ms per job.
		SweepJobMinJobs:         2000,
		SweepJobParallelism:     4,
		SimulatorServiceAccount: "schedlab-simulator",
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Namespace == "" {
		c.Namespace = d.Namespace
	}
	if c.AgentImage == "" {
		c.AgentImage = d.AgentImage
	}
	if c.AgentImagePullPolicy == "" {
		c.AgentImagePullPolicy = d.AgentImagePullPolicy
	}
	if c.AgentServiceAccount == "" {
		c.AgentServiceAccount = d.AgentServiceAccount
	}
	if c.StateDir == "" {
		c.StateDir = d.StateDir
	}
	if c.DeadlineMargin == 0 {
		c.DeadlineMargin = d.DeadlineMargin
	}
	if c.RestoreTimeout == 0 {
		c.RestoreTimeout = d.RestoreTimeout
	}
	if c.WaitRecheck == 0 {
		c.WaitRecheck = d.WaitRecheck
	}
	if c.SimulationWorkers == 0 {
		c.SimulationWorkers = d.SimulationWorkers
	}
	if c.SimulationTimeout == 0 {
		c.SimulationTimeout = d.SimulationTimeout
	}
	if c.SweepJobMinJobs == 0 {
		c.SweepJobMinJobs = d.SweepJobMinJobs
	}
	if c.SweepJobParallelism == 0 {
		c.SweepJobParallelism = d.SweepJobParallelism
	}
	if c.SimulatorServiceAccount == "" {
		c.SimulatorServiceAccount = d.SimulatorServiceAccount
	}
	return c
}
