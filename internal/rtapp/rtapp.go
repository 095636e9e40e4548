// Package rtapp turns an rt-app workload description (JSON) into schedlab
// SchedExperiments.
//
// rt-app (github.com/scheduler-tools/rt-app) describes threads as sequences of
// events (run, sleep, timer, barrier, lock, …), optionally in phases that run
// one after the other, each a number of loops. schedlab's groups run one
// steady pattern each, concurrently, for the experiment's duration, so:
//
//   - a thread (or phase) of exactly one run and one timer, in either order,
//     is a Periodic group: run = the run's µs of CPU time, period = the
//     timer's period (absolute boundaries, as rt-app's timer keeps them);
//   - a thread of one run and nothing else, looping, is a Hog;
//   - a thread of one timer and nothing else is a LatencyProbe of that
//     interval;
//   - instance is the group's tasks; policy SCHED_OTHER, SCHED_BATCH and
//     SCHED_IDLE become Other, Batch and Idle, and priority of an Other or
//     Batch thread its nice value;
//   - phases become one experiment each, in order (a YAML stream): the k-th
//     experiment holds every thread's k-th phase, and lasts that phase's
//     loops × period, which must be the same for every thread that has one.
//     LISA's periodic, ramp and step workloads (phases of run + timer) so
//     convert without loss.
//
// Everything else — sleep without a timer (a duty cycle whose period
// drifts), runtime (wall-clock running), barriers, locks, signals, memory
// and I/O events, forks, real-time and deadline policies, CPU affinity,
// task groups, delays — has no schedlab equivalent and is refused, naming
// the JSON path of the first such key.
package rtapp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// PathError is a problem at one JSON path of the rt-app file.
type PathError struct {
	Path string // e.g. tasks.thread0.phases.p1.sleep
	Msg  string
}

func (e *PathError) Error() string { return e.Path + ": " + e.Msg }

func errAt(path, format string, a ...any) error {
	return &PathError{Path: path, Msg: fmt.Sprintf(format, a...)}
}

// object is a JSON object with its keys in file order (rt-app's event order
// is the order of the keys). rt-app's parser (json-c) keeps a repeated key
// as a second event, so keys may repeat here too.
type object struct {
	keys []string
	vals []any
}

// get is the first value of key k.
func (o *object) get(k string) (any, bool) {
	for i, key := range o.keys {
		if key == k {
			return o.vals[i], true
		}
	}
	return nil, false
}

// parse reads one JSON value keeping object key order; numbers stay
// json.Number.
func parse(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				v, err := parse(dec)
				if err != nil {
					return nil, err
				}
				o.keys = append(o.keys, k)
				o.vals = append(o.vals, v)
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			var a []any
			for dec.More() {
				v, err := parse(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token()
			return a, err
		}
	}
	return tok, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func asObject(v any, path string) (*object, error) {
	o, ok := v.(*object)
	if !ok {
		return nil, errAt(path, "want an object")
	}
	return o, nil
}

func asInt(v any, path string) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, errAt(path, "want an integer")
	}
	i, err := n.Int64()
	if err != nil {
		return 0, errAt(path, "want an integer, got %s", n)
	}
	return i, nil
}

func asString(v any, path string) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", errAt(path, "want a string")
	}
	return s, nil
}

// eventKind is the event an rt-app key names: rt-app matches keys by
// prefix, so "run0" and "run_a" are runs, and "runtime" is checked first.
var eventPrefixes = []string{"runtime", "run", "sleep", "timer", "barrier", "lock", "unlock", "wait", "signal", "broad", "sync",
	"suspend", "resume", "mem", "iorun", "yield", "fork"}

func eventKind(key string) string {
	for _, p := range eventPrefixes {
		if strings.HasPrefix(key, p) {
			return p
		}
	}
	return ""
}

// phase is one steady pattern of a thread.
type phase struct {
	path    string
	pattern v1alpha1.Pattern
	loops   int64 // -1: forever
	period  time.Duration
}

type thread struct {
	name     string
	path     string
	instance int32
	policy   v1alpha1.SchedPolicy
	nice     *int32
	phases   []phase
}

// events reads the events of a thread or phase object (its other keys are
// checked by the caller) into a pattern.
func events(o *object, path string, skip map[string]bool, instance int32) (v1alpha1.Pattern, time.Duration, error) {
	var run, timer *time.Duration
	var runKey, timerKey string
	for ki, k := range o.keys {
		if skip[k] {
			continue
		}
		kp := join(path, k)
		switch eventKind(k) {
		case "run":
			if run != nil {
				return v1alpha1.Pattern{}, 0, errAt(kp, "a second run event (after %s): schedlab groups run one steady pattern; split the thread or use phases", runKey)
			}
			us, err := asInt(o.vals[ki], kp)
			if err != nil {
				return v1alpha1.Pattern{}, 0, err
			}
			if us <= 0 {
				return v1alpha1.Pattern{}, 0, errAt(kp, "run must be a positive number of µs")
			}
			d := time.Duration(us) * time.Microsecond
			run, runKey = &d, k
		case "timer":
			if timer != nil {
				return v1alpha1.Pattern{}, 0, errAt(kp, "a second timer event (after %s)", timerKey)
			}
			to, err := asObject(o.vals[ki], kp)
			if err != nil {
				return v1alpha1.Pattern{}, 0, err
			}
			var period int64
			for ti, tk := range to.keys {
				tp := join(kp, tk)
				switch tk {
				case "ref":
					ref, err := asString(to.vals[ti], tp)
					if err != nil {
						return v1alpha1.Pattern{}, 0, err
					}
					if instance > 1 && !strings.HasPrefix(ref, "unique") {
						return v1alpha1.Pattern{}, 0, errAt(tp, "timer %q is shared by the thread's %d instances (rt-app chains their wake-ups on it); schedlab's tasks each have their own timer: name it \"unique…\"", ref, instance)
					}
				case "period":
					if period, err = asInt(to.vals[ti], tp); err != nil {
						return v1alpha1.Pattern{}, 0, err
					}
				case "mode":
					m, err := asString(to.vals[ti], tp)
					if err != nil {
						return v1alpha1.Pattern{}, 0, err
					}
					if m != "absolute" {
						return v1alpha1.Pattern{}, 0, errAt(tp, "timer mode %q: schedlab's periodic boundaries are absolute (drift-free); only \"absolute\" converts", m)
					}
				default:
					return v1alpha1.Pattern{}, 0, errAt(tp, "unknown timer key (ref, period, mode)")
				}
			}
			if period <= 0 {
				return v1alpha1.Pattern{}, 0, errAt(join(kp, "period"), "a timer needs a positive period in µs")
			}
			d := time.Duration(period) * time.Microsecond
			timer, timerKey = &d, k
		case "runtime":
			return v1alpha1.Pattern{}, 0, errAt(kp, "runtime (wall-clock running) has no schedlab equivalent: schedlab runs CPU time; use run")
		case "sleep":
			return v1alpha1.Pattern{}, 0, errAt(kp, "sleep without a timer is a duty cycle whose period drifts with every delay; schedlab's Periodic needs a timer: replace it by timer {ref, period: run+sleep}")
		case "":
			return v1alpha1.Pattern{}, 0, errAt(kp, "%s has no schedlab equivalent (a phase holds loop and run/timer events)", k)
		default:
			return v1alpha1.Pattern{}, 0, errAt(kp, "the %s event has no schedlab equivalent", eventKind(k))
		}
	}
	dur := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	switch {
	case run != nil && timer != nil:
		if *run >= *timer {
			return v1alpha1.Pattern{}, 0, errAt(join(path, runKey), "run %v is not shorter than the timer's period %v: a Periodic run must fit in its period", *run, *timer)
		}
		return v1alpha1.Pattern{Type: v1alpha1.PatternPeriodic, Run: dur(*run), Period: dur(*timer)}, *timer, nil
	case run != nil:
		return v1alpha1.Pattern{Type: v1alpha1.PatternHog}, *run, nil
	case timer != nil:
		return v1alpha1.Pattern{Type: v1alpha1.PatternLatencyProbe, Interval: dur(*timer)}, *timer, nil
	}
	return v1alpha1.Pattern{}, 0, errAt(path, "no run or timer event: nothing to convert")
}

var threadKeys = map[string]bool{"instance": true, "loop": true, "policy": true, "priority": true, "phases": true}

func readThread(name string, v any, path, defaultPolicy string) (*thread, error) {
	o, err := asObject(v, path)
	if err != nil {
		return nil, err
	}
	th := &thread{name: name, path: path, instance: 1}
	policy := defaultPolicy
	loop := int64(-1)
	var prio *int64
	for ki, k := range o.keys {
		kp := join(path, k)
		switch k {
		case "instance":
			n, err := asInt(o.vals[ki], kp)
			if err != nil {
				return nil, err
			}
			if n < 1 || n > 512 {
				return nil, errAt(kp, "instance %d: a group has 1..512 tasks", n)
			}
			th.instance = int32(n)
		case "loop":
			if loop, err = asInt(o.vals[ki], kp); err != nil {
				return nil, err
			}
			if loop == 0 || loop < -1 {
				return nil, errAt(kp, "loop %d: use -1 (forever) or a positive count", loop)
			}
		case "policy":
			if policy, err = asString(o.vals[ki], kp); err != nil {
				return nil, err
			}
		case "priority":
			p, err := asInt(o.vals[ki], kp)
			if err != nil {
				return nil, err
			}
			prio = &p
		case "phases":
		default:
			if eventKind(k) == "" {
				return nil, errAt(kp, "%s has no schedlab equivalent (known: instance, loop, policy, priority, phases and events)", k)
			}
		}
	}
	switch policy {
	case "", "SCHED_OTHER":
		th.policy = v1alpha1.PolicyOther
	case "SCHED_BATCH":
		th.policy = v1alpha1.PolicyBatch
	case "SCHED_IDLE":
		th.policy = v1alpha1.PolicyIdle
	default:
		return nil, errAt(join(path, "policy"), "%s: schedlab runs fair-class tasks only (SCHED_OTHER, SCHED_BATCH, SCHED_IDLE)", policy)
	}
	if prio != nil {
		if th.policy == v1alpha1.PolicyIdle {
			return nil, errAt(join(path, "priority"), "SCHED_IDLE has no priority")
		}
		if *prio < -20 || *prio > 19 {
			return nil, errAt(join(path, "priority"), "%d: a SCHED_OTHER priority is a nice value, -20..19", *prio)
		}
		n := int32(*prio)
		th.nice = &n
	}
	if pv, ok := o.get("phases"); ok {
		for _, k := range o.keys {
			if k != "phases" && !threadKeys[k] {
				return nil, errAt(join(path, k), "events beside phases: put them in a phase")
			}
		}
		pp := join(path, "phases")
		po, err := asObject(pv, pp)
		if err != nil {
			return nil, err
		}
		if len(po.keys) > 1 && loop != 1 {
			return nil, errAt(join(path, "loop"), "a thread of %d phases must run them once (loop 1): each phase becomes one experiment of a sequence", len(po.keys))
		}
		for pi, k := range po.keys {
			ph, err := readPhase(po.vals[pi], join(pp, k), loop, th.instance)
			if err != nil {
				return nil, err
			}
			th.phases = append(th.phases, ph)
		}
		if len(th.phases) == 0 {
			return nil, errAt(pp, "no phases")
		}
		return th, nil
	}
	pat, period, err := events(o, path, threadKeys, th.instance)
	if err != nil {
		return nil, err
	}
	th.phases = []phase{{path: path, pattern: pat, loops: loop, period: period}}
	return th, nil
}

func readPhase(v any, path string, threadLoop int64, instance int32) (phase, error) {
	o, err := asObject(v, path)
	if err != nil {
		return phase{}, err
	}
	loops := int64(1)
	if lv, ok := o.get("loop"); ok {
		if loops, err = asInt(lv, join(path, "loop")); err != nil {
			return phase{}, err
		}
		if loops == 0 || loops < -1 {
			return phase{}, errAt(join(path, "loop"), "loop %d: use -1 (forever) or a positive count", loops)
		}
	}
	if threadLoop == -1 && loops > 0 {
		loops = -1 // a single phase repeated forever
	} else if threadLoop > 1 && loops > 0 {
		loops *= threadLoop
	}
	pat, period, err := events(o, path, map[string]bool{"loop": true}, instance)
	if err != nil {
		return phase{}, err
	}
	return phase{path: path, pattern: pat, loops: loops, period: period}, nil
}

// stripComments blanks /* … */ and // … comments outside strings (rt-app's
// JSON parser, json-c, accepts them), keeping every newline so that line
// numbers stay right.
func stripComments(b []byte) []byte {
	out := append([]byte(nil), b...)
	inStr := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			j := bytes.Index(out[i+2:], []byte("*/"))
			end := len(out)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			for k := i; k < end; k++ {
				if out[k] != '\n' {
					out[k] = ' '
				}
			}
			i = end - 1
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		}
	}
	// json-c also accepts a comma before a closing brace or bracket.
	for i := 0; i < len(out); i++ {
		if out[i] == '"' {
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
			continue
		}
		if out[i] == ',' {
			j := i + 1
			for j < len(out) && (out[j] == ' ' || out[j] == '\t' || out[j] == '\n' || out[j] == '\r') {
				j++
			}
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// dnsName makes s a lowercase DNS label.
func dnsName(s string) string {
	n := strings.Trim(nonName.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if n == "" {
		n = "x"
	}
	if len(n) > 50 {
		n = strings.TrimRight(n[:50], "-")
	}
	return n
}

// Convert reads an rt-app JSON description and returns one SchedExperiment
// per phase (one for a file without phases), named name (name-p1, -p2, …
// for a sequence).
func Convert(r io.Reader, name string) ([]*v1alpha1.SchedExperiment, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	raw = stripComments(raw)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	root, err := parse(dec)
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(raw[:min(int(se.Offset), len(raw))], []byte("\n"))
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		return nil, fmt.Errorf("not an rt-app JSON file: %v", err)
	}
	ro, err := asObject(root, "(top)")
	if err != nil {
		return nil, err
	}
	var (
		duration      time.Duration
		defaultPolicy = "SCHED_OTHER"
		tasks         *object
	)
	for ri, k := range ro.keys {
		switch k {
		case "tasks":
			if tasks, err = asObject(ro.vals[ri], k); err != nil {
				return nil, err
			}
		case "global":
			g, err := asObject(ro.vals[ri], k)
			if err != nil {
				return nil, err
			}
			for gi, gk := range g.keys {
				gp := join(k, gk)
				switch gk {
				case "duration":
					s, err := asInt(g.vals[gi], gp)
					if err != nil {
						return nil, err
					}
					if s > 0 {
						duration = time.Duration(s) * time.Second
					}
				case "default_policy":
					if defaultPolicy, err = asString(g.vals[gi], gp); err != nil {
						return nil, err
					}
				case "calibration", "logdir", "log_basename", "log_size", "lock_pages", "ftrace", "gnuplot", "io_device", "mem_buffer_size", "cumulative_slack", "pi_enabled":
					// How rt-app calibrates, logs and traces itself:
					// nothing of the workload.
				default:
					return nil, errAt(gp, "unknown global key")
				}
			}
		default:
			return nil, errAt(k, "unknown top-level key (tasks, global)")
		}
	}
	if tasks == nil || len(tasks.keys) == 0 {
		return nil, errAt("tasks", "no threads")
	}
	var threads []*thread
	seen := map[string]string{}
	phases := 0
	for ti, k := range tasks.keys {
		th, err := readThread(k, tasks.vals[ti], join("tasks", k), defaultPolicy)
		if err != nil {
			return nil, err
		}
		g := dnsName(k)
		if other, dup := seen[g]; dup {
			return nil, errAt(join("tasks", k), "its group name %q is also %s's", g, other)
		}
		seen[g] = k
		threads = append(threads, th)
		phases = max(phases, len(th.phases))
	}
	base := dnsName(name)
	var out []*v1alpha1.SchedExperiment
	for p := 0; p < phases; p++ {
		exp := &v1alpha1.SchedExperiment{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "SchedExperiment"},
			ObjectMeta: metav1.ObjectMeta{Name: base},
			Spec:       v1alpha1.SchedExperimentSpec{Variants: []v1alpha1.Variant{{Name: "stock"}}},
		}
		if phases > 1 {
			exp.Name = fmt.Sprintf("%s-p%d", base, p+1)
		}
		var d time.Duration
		var dFrom string
		for _, th := range threads {
			if p >= len(th.phases) {
				continue
			}
			ph := th.phases[p]
			g := v1alpha1.Group{Name: dnsName(th.name), Nice: th.nice, Pattern: &ph.pattern}
			if th.instance != 1 {
				n := th.instance
				g.Tasks = &n
			}
			if th.policy != v1alpha1.PolicyOther {
				g.Policy = th.policy
			}
			exp.Spec.Workload.Groups = append(exp.Spec.Workload.Groups, g)
			if ph.loops > 0 {
				pd := time.Duration(ph.loops) * ph.period
				if d != 0 && pd != d {
					return nil, errAt(join(ph.path, "loop"), "this phase lasts %v but %s lasts %v: phases of one step must last as long", pd, dFrom, d)
				}
				d, dFrom = pd, ph.path
			}
		}
		switch {
		case d == 0 && duration > 0:
			d = duration
		case d == 0:
			d = 10 * time.Second
		case duration > 0 && phases == 1 && duration < d:
			d = duration // rt-app stops every thread at global.duration
		}
		exp.Spec.Duration = metav1.Duration{Duration: d}
		if d < 2*time.Second {
			// The default warmup (1 s) would not fit a short phase.
			exp.Spec.Warmup = &metav1.Duration{Duration: d / 5}
		}
		out = append(out, exp)
	}
	return out, nil
}
