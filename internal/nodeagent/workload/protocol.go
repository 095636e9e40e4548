package workload

import (
	"encoding/json"
	"fmt"
	"math"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// workerConfig is what a worker is told on its command line, as JSON:
// `schedlab __worker <json>`.
type workerConfig struct {
	RunID     string `json:"runID"`
	ParentPID int    `json:"parentPID"`
	// Mode is "task" (one workload task) or "session" (the leader of a
	// setsid session that forks the session's tasks).
	Mode string `json:"mode"`

	Pattern    v1alpha1.PatternType `json:"pattern,omitempty"`
	RunNs      int64                `json:"runNs,omitempty"`
	PeriodNs   int64                `json:"periodNs,omitempty"`
	IntervalNs int64                `json:"intervalNs,omitempty"`
	// PhaseNs > 0 puts a LatencyProbe's deadlines on the interval's grid
	// plus PhaseNs (see Task.PhaseNs).
	PhaseNs     int64 `json:"phaseNs,omitempty"`
	MeanRunNs   int64 `json:"meanRunNs,omitempty"`
	MeanSleepNs int64 `json:"meanSleepNs,omitempty"`
	// Server: the size of the replica's shared queue (fd srvFD) and the
	// service-time distribution (svcFixed, svcExponential, svcLognormal;
	// μ and σ of a lognormal's logarithm).
	ServerBytes   int64   `json:"serverBytes,omitempty"`
	ServiceKind   int64   `json:"serviceKind,omitempty"`
	ServiceMeanNs int64   `json:"serviceMeanNs,omitempty"`
	ServiceMu     float64 `json:"serviceMu,omitempty"`
	ServiceSigma  float64 `json:"serviceSigma,omitempty"`
	// Initiator is true for the PingPong side that starts round trips.
	Initiator bool   `json:"initiator,omitempty"`
	Seed      uint64 `json:"seed,omitempty"`
	// Slot is the task's slot in the shared counters (fd shmFD).
	Slot int `json:"slot"`
	// Perturb runs the work as an ordinary goroutine (see Task.Perturb).
	Perturb bool `json:"perturb,omitempty"`
	// NodeSlot is the slot of the page every worker shares (a Hog's
	// coverage of wall time, pause_linux.go); 0 for other patterns.
	// NoPauseWatch runs a Hog without its pause detector (Task.NoPauseWatch).
	NodeSlot     int  `json:"nodeSlot,omitempty"`
	NoPauseWatch bool `json:"noPauseWatch,omitempty"`

	Nice    *int   `json:"nice,omitempty"`
	Policy  string `json:"policy,omitempty"`
	SliceNs int64  `json:"sliceNs,omitempty"`
	// TimerSlackNs is the work thread's timer slack; 0 keeps the default.
	TimerSlackNs int64 `json:"timerSlackNs,omitempty"`
	// CPUs is the worker's CPU affinity; empty keeps every CPU.
	CPUs []int32 `json:"cpus,omitempty"`

	// Children (session mode): each child's config and the leader's file
	// descriptors that become the child's fds 3, 4, 5 ….
	Children []sessionChild `json:"children,omitempty"`
}

type sessionChild struct {
	Config workerConfig `json:"config"`
	FDs    []int        `json:"fds"`
}

// File descriptors of a worker: the control socket, the shared counters,
// and for PingPong the pipe it reads its partner from and the pipe it writes
// to.
const (
	ctrlFD     = 3
	shmFD      = 4
	peerReadFD = 5
	peerWrFD   = 6
)

// msg is one control message, one JSON object per line, in either direction.
type msg struct {
	T    string `json:"t"`
	PID  int    `json:"pid,omitempty"`
	TID  int    `json:"tid,omitempty"`
	PIDs []int  `json:"pids,omitempty"`
	Err  string `json:"err,omitempty"`
	// Placed is sent with "running".
	Placed *Placement `json:"placed,omitempty"`
}

// Message types.
const (
	msgReady   = "ready"   // worker → parent: placed itself; pid, tid of the work thread
	msgError   = "error"   // worker → parent: cannot go on; err
	msgGo      = "go"      // parent → worker: start working
	msgRunning = "running" // worker → parent: working (placed); nothing more is said until the end
	msgSpawn   = "spawn"   // parent → session leader: fork the children
	msgSpawned = "spawned" // session leader → parent: pids
	msgKill    = "kill"    // parent → session leader: SIGKILL and reap the children
	msgKilled  = "killed"  // session leader → parent
)

// taskConfig turns a Task into its worker's configuration, validating the
// pattern's parameters again (the agent never trusts the API server).
func taskConfig(t Task, runID string, index int) (workerConfig, error) {
	c := workerConfig{RunID: runID, Mode: "task", Pattern: t.Pattern.Type, Nice: t.Nice, Policy: t.Policy, SliceNs: t.SliceNs, TimerSlackNs: t.TimerSlackNs, CPUs: t.CPUs, Seed: t.Seed, Slot: index, Perturb: t.Perturb, NoPauseWatch: t.NoPauseWatch}
	ns := func(name string, d *metav1.Duration, lo, hi int64) (int64, error) {
		if d == nil {
			return 0, fmt.Errorf("task %d (%s/%d/%d): %s pattern needs %s", index, t.Group, t.Replica, t.Index, t.Pattern.Type, name)
		}
		v := d.Nanoseconds()
		if v < lo || v > hi {
			return 0, fmt.Errorf("task %d (%s/%d/%d): %s %dns is outside %d..%dns", index, t.Group, t.Replica, t.Index, name, v, lo, hi)
		}
		return v, nil
	}
	p := t.Pattern
	var err error
	if t.PhaseNs != 0 && p.Type != v1alpha1.PatternLatencyProbe {
		return c, fmt.Errorf("task %d (%s): a phase applies to a LatencyProbe only, not to %s", index, t.Group, p.Type)
	}
	switch p.Type {
	case v1alpha1.PatternHog:
	case v1alpha1.PatternPeriodic:
		if c.RunNs, err = ns("run", p.Run, 1e3, 1e9); err != nil {
			return c, err
		}
		if c.PeriodNs, err = ns("period", p.Period, 100e3, 10e9); err != nil {
			return c, err
		}
		if c.RunNs >= c.PeriodNs {
			return c, fmt.Errorf("task %d (%s): Periodic run %dns must be shorter than period %dns", index, t.Group, c.RunNs, c.PeriodNs)
		}
	case v1alpha1.PatternLatencyProbe:
		if c.IntervalNs, err = ns("interval", p.Interval, 50e3, 1e9); err != nil {
			return c, err
		}
		if t.PhaseNs < 0 || t.PhaseNs >= c.IntervalNs {
			return c, fmt.Errorf("task %d (%s): phase %dns must be within 0..%dns (the interval)", index, t.Group, t.PhaseNs, c.IntervalNs)
		}
		c.PhaseNs = t.PhaseNs
	case v1alpha1.PatternPingPong:
		if p.Run != nil {
			if c.RunNs, err = ns("run", p.Run, 1e3, 1e9); err != nil {
				return c, err
			}
		}
	case v1alpha1.PatternBurst:
		if c.MeanRunNs, err = ns("meanRun", p.MeanRun, 10e3, 10e9); err != nil {
			return c, err
		}
		if c.MeanSleepNs, err = ns("meanSleep", p.MeanSleep, 10e3, 10e9); err != nil {
			return c, err
		}
	case v1alpha1.PatternServer:
		// The fanout against the replica's tasks is checked with the
		// whole Spec (validate).
		if errs := p.ServerErrors(MaxTasks); len(errs) > 0 {
			return c, fmt.Errorf("task %d (%s): pattern%s: %s", index, t.Group, errs[0].Field, errs[0].Msg)
		}
		c.ServiceMeanNs = p.Service.Mean.Nanoseconds()
		switch p.Service.Distribution {
		case v1alpha1.ServiceExponential:
			c.ServiceKind = svcExponential
		case v1alpha1.ServiceLognormal:
			c.ServiceKind = svcLognormal
			var ok bool
			if c.ServiceMu, c.ServiceSigma, ok = lognormalParams(float64(c.ServiceMeanNs), float64(p.Service.P99.Nanoseconds())); !ok {
				return c, fmt.Errorf("task %d (%s): no lognormal has mean %s and p99 %s", index, t.Group, p.Service.Mean.Duration, p.Service.P99.Duration)
			}
		}
		// An idle worker sleeps to its next arrival on a timer: without a
		// slack of its own, the wake-up comes at the arrival, as a network
		// interrupt's would.
		if c.TimerSlackNs == 0 {
			c.TimerSlackNs = 1
		}
	default:
		return c, fmt.Errorf("task %d (%s): unknown pattern %q", index, t.Group, p.Type)
	}
	switch t.Policy {
	case "", string(v1alpha1.PolicyOther), string(v1alpha1.PolicyBatch), string(v1alpha1.PolicyIdle):
	default:
		return c, fmt.Errorf("task %d (%s): unknown policy %q (Other, Batch or Idle)", index, t.Group, t.Policy)
	}
	if t.Nice != nil && (*t.Nice < -20 || *t.Nice > 19) {
		return c, fmt.Errorf("task %d (%s): nice %d is outside -20..19", index, t.Group, *t.Nice)
	}
	if t.TimerSlackNs < 0 || t.TimerSlackNs > 100e6 {
		return c, fmt.Errorf("task %d (%s): timer slack %dns is outside 1ns..100ms", index, t.Group, t.TimerSlackNs)
	}
	for _, cpu := range t.CPUs {
		if cpu < 0 || cpu > v1alpha1.MaxCPUID {
			return c, fmt.Errorf("task %d (%s): CPU %d is outside 0..%d", index, t.Group, cpu, v1alpha1.MaxCPUID)
		}
	}
	if t.SliceNs != 0 && (t.SliceNs < 100e3 || t.SliceNs > 100e6) {
		return c, fmt.Errorf("task %d (%s): slice %dns is outside 100us..100ms", index, t.Group, t.SliceNs)
	}
	return c, nil
}

// Service-time distributions of a Server task as small integers for the
// work loop.
const (
	svcFixed = iota
	svcExponential
	svcLognormal
)

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

// lognormalParams returns μ and σ of the lognormal with the given mean and
// 99th percentile (mean = e^(μ+σ²/2), p99 = e^(μ+z99·σ), the smaller root
// σ = z99 − √(z99² − 2 ln(p99/mean))), as the simulator draws it.
func lognormalParams(mean, p99 float64) (mu, sigma float64, ok bool) {
	if mean <= 0 || p99 <= mean {
		return 0, 0, false
	}
	d := z99*z99 - 2*math.Log(p99/mean)
	if d < 0 {
		return 0, 0, false
	}
	sigma = z99 - math.Sqrt(d)
	return math.Log(mean) - sigma*sigma/2, sigma, true
}

func (c workerConfig) marshal() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // plain data: cannot fail
	}
	return string(b)
}
