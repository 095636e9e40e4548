package workload

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// MaxTasks is the most tasks a Spec may have, as in the CRD schema.
const MaxTasks = 512

// Timeouts of the control protocol, which is spoken only while workers
// start and stop (windows need no message). On a heavily overloaded machine
// (load 60 on 2 CPUs) start-up answers took up to 10 s, hence the room.
const (
	startTimeout = 30 * time.Second
	msgTimeout   = 30 * time.Second
	reapTimeout  = 5 * time.Second
)

// proc is one process the Set started or had started: a task's worker or a
// session leader.
type proc struct {
	task   int       // index in Spec.Tasks; -1 for a session leader
	cmd    *exec.Cmd // nil for a session's task (its leader forked it)
	pid    int
	tid    int    // the work thread
	start  uint64 // start time from /proc/<pid>/stat: pid+start name it for good
	conn   net.Conn
	enc    *json.Encoder
	dec    *json.Decoder
	base   procCounters
	baseAt time.Time // the middle of the reading of base
	slot   *slot
	slotAt slotSnap
	// pauseAt is a Hog's pause detector counters at Begin.
	pauseAt pauseSnap
	placed  Placement
	leader  *proc // for a session's task
}

func (p *proc) send(m msg) error {
	_ = p.conn.SetWriteDeadline(time.Now().Add(msgTimeout))
	if err := p.enc.Encode(m); err != nil {
		return fmt.Errorf("%s: sending %s: %w", p, m.T, err)
	}
	return nil
}

func (p *proc) recv(want string, timeout time.Duration) (msg, error) {
	_ = p.conn.SetReadDeadline(time.Now().Add(timeout))
	var m msg
	if err := p.dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%s: waiting for %s: %w", p, want, err)
	}
	if m.T == msgError {
		return m, fmt.Errorf("%s: %s", p, m.Err)
	}
	if m.T != want {
		return m, fmt.Errorf("%s: got %q, want %q", p, m.T, want)
	}
	return m, nil
}

func (p *proc) String() string {
	if p.task < 0 {
		return fmt.Sprintf("session leader %d", p.pid)
	}
	return fmt.Sprintf("worker %d (pid %d)", p.task, p.pid)
}

// Set is a running workload.
type Set struct {
	spec    Spec
	runID   string
	fs      procfs.FS
	mu      sync.Mutex
	tasks   []*proc // by Spec.Tasks index; nil until known
	leaders []*proc
	began   time.Time
	open    bool
	stopped bool
	stopErr error
	unhook  func() bool
	connMu  sync.Mutex
	conns   []net.Conn // every control socket, for aborting a Start
	spawner *spawner
	shm     *shm // every task's counters, slot i for Spec.Tasks[i]; then the node page
	// hogs counts the Hog tasks that watch for host pauses; coveredAt is
	// the node page's coverage count at Begin.
	hogs      int
	coveredAt int64
}

// spawner forks every worker of a Set from one OS thread that is reserved
// for it while the Set lives. Linux sends the parent-death signal when the
// *thread* that forked a child exits, not the process; forking from
// whatever thread the caller's goroutine happens to be on would kill the
// workers early if that thread ever went away (a goroutine that exits while
// locked to its thread takes the thread with it).
//
// When Stop closes the spawner the thread is unlocked and goes back to the
// runtime, never ended: the runtime may have run other goroutines on it
// before it was locked, and the children they forked with a parent-death
// signal would die with it. Ending it did that: the reference harness's
// load spinners, started earlier from the same thread, were killed in the
// middle of the next measured window.
type spawner struct {
	reqs chan spawnReq
	once sync.Once
}

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

func newSpawner() *spawner {
	sp := &spawner{reqs: make(chan spawnReq)}
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for r := range sp.reqs {
			r.err <- r.cmd.Start()
		}
	}()
	return sp
}

func (sp *spawner) start(cmd *exec.Cmd) error {
	r := spawnReq{cmd: cmd, err: make(chan error, 1)}
	sp.reqs <- r
	return <-r.err
}

func (sp *spawner) close() { sp.once.Do(func() { close(sp.reqs) }) }

// RunID is the value of SCHEDLAB_WORKER in every worker's environment.
func (s *Set) RunID() string { return s.runID }

// PIDs are the workers' process ids, by Spec.Tasks index.
func (s *Set) PIDs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, len(s.tasks))
	for i, p := range s.tasks {
		if p != nil {
			out[i] = p.pid
		}
	}
	return out
}

// Placements are where each worker was (cgroup, session, autogroup,
// scheduling attributes) after "go" and before its work began, by
// Spec.Tasks index.
func (s *Set) Placements() []Placement {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Placement, len(s.tasks))
	for i, p := range s.tasks {
		if p != nil {
			out[i] = p.placed
		}
	}
	return out
}

// Start spawns every worker, places it (session and root cgroup, or its
// cgroup; nice, policy, slice) and then lets it work; it returns when every
// worker runs. On error everything started is stopped. When ctx ends — now
// or later — the workers are stopped (Stop is still to be called for its
// error).
func Start(ctx context.Context, spec Spec) (*Set, error) {
	cfgs, err := validate(spec)
	if err != nil {
		return nil, err
	}
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		return nil, fmt.Errorf("workload: opening /proc: %w", err)
	}
	// One slot per task and one more: the page every worker shares.
	mem, err := newShm(len(spec.Tasks) + 1)
	if err != nil {
		return nil, err
	}
	s := &Set{spec: spec, runID: spec.RunID, fs: fs, tasks: make([]*proc, len(spec.Tasks)), spawner: newSpawner(), shm: mem}
	for i := range cfgs {
		if cfgs[i].Pattern == v1alpha1.PatternHog {
			cfgs[i].NodeSlot = len(spec.Tasks)
			if !cfgs[i].NoPauseWatch {
				s.hogs++
			}
		}
	}
	if s.runID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		s.runID = hex.EncodeToString(b[:])
	}
	// Cancelling ctx while starting cuts every control socket's wait short.
	abort := context.AfterFunc(ctx, func() {
		s.connMu.Lock()
		defer s.connMu.Unlock()
		for _, c := range s.conns {
			_ = c.SetDeadline(time.Now())
		}
	})
	err = s.start(ctx, cfgs)
	abort()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		if serr := s.Stop(); serr != nil {
			err = errors.Join(err, serr)
		}
		return nil, err
	}
	s.unhook = context.AfterFunc(ctx, func() { _ = s.Stop() })
	return s, nil
}

func validate(spec Spec) ([]workerConfig, error) {
	if spec.WorkerBinary == "" {
		return nil, errors.New("workload: no worker binary")
	}
	if len(spec.Tasks) == 0 || len(spec.Tasks) > MaxTasks {
		return nil, fmt.Errorf("workload: %d tasks, want 1..%d", len(spec.Tasks), MaxTasks)
	}
	cfgs := make([]workerConfig, len(spec.Tasks))
	for i, t := range spec.Tasks {
		c, err := taskConfig(t, spec.RunID, i)
		if err != nil {
			return nil, fmt.Errorf("workload: %w", err)
		}
		if t.Session != "" && t.CgroupProcs != "" {
			return nil, fmt.Errorf("workload: task %d (%s) has both a session and a cgroup", i, t.Group)
		}
		if t.Pattern.Type == v1alpha1.PatternPingPong {
			j := t.Peer
			if j < 0 || j >= len(spec.Tasks) || j == i || spec.Tasks[j].Peer != i || spec.Tasks[j].Pattern.Type != v1alpha1.PatternPingPong {
				return nil, fmt.Errorf("workload: PingPong task %d (%s) has no partner that names it back (peer %d)", i, t.Group, j)
			}
			c.Initiator = i < j
		} else if t.Peer >= 0 {
			return nil, fmt.Errorf("workload: task %d (%s) is %s but has a peer", i, t.Group, t.Pattern.Type)
		}
		cfgs[i] = c
	}
	// A Server replica's tasks share one queue: the same pattern in every
	// one, and a fanout no larger than their number.
	for _, r := range serverReplicas(spec) {
		first := spec.Tasks[r[0]].Pattern
		for _, i := range r[1:] {
			if !reflect.DeepEqual(spec.Tasks[i].Pattern, first) {
				return nil, fmt.Errorf("workload: Server task %d (%s/%d) has another pattern than its replica's first task", i, spec.Tasks[i].Group, spec.Tasks[i].Replica)
			}
		}
		if first.Fanout != nil && int(*first.Fanout) > len(r) {
			return nil, fmt.Errorf("workload: Server replica %s/%d has fanout %d but only %d tasks", spec.Tasks[r[0]].Group, spec.Tasks[r[0]].Replica, *first.Fanout, len(r))
		}
	}
	return cfgs, nil
}

// serverReplicas lists the tasks of every Server replica (same Group and
// Replica), in Spec order.
func serverReplicas(spec Spec) [][]int {
	at := map[[2]any]int{}
	var out [][]int
	for i, t := range spec.Tasks {
		if t.Pattern.Type != v1alpha1.PatternServer {
			continue
		}
		k := [2]any{t.Group, t.Replica}
		j, ok := at[k]
		if !ok {
			j = len(out)
			at[k] = j
			out = append(out, nil)
		}
		out[j] = append(out[j], i)
	}
	return out
}

// newServerStates creates every Server replica's shared queue and sets its
// size in its tasks' configurations; srvOf[i] is task i's queue file.
func newServerStates(spec Spec, cfgs []workerConfig, keep func(*os.File) *os.File) (map[int]*os.File, error) {
	srvOf := map[int]*os.File{}
	for _, r := range serverReplicas(spec) {
		t := spec.Tasks[r[0]]
		p := srvParams{rate: int64(*t.Pattern.Rate), periodic: t.Pattern.Arrivals == v1alpha1.ArrivalsPeriodic,
			fanout: 1, queue: DefaultServerQueue, tasks: int64(len(r)), seed: t.Seed}
		if t.Pattern.Fanout != nil {
			p.fanout = int64(*t.Pattern.Fanout)
		}
		if t.Pattern.Queue != nil {
			p.queue = int64(*t.Pattern.Queue)
		}
		fd, size, err := newSrvState(p)
		if err != nil {
			return nil, err
		}
		f := keep(os.NewFile(uintptr(fd), "server"))
		for _, i := range r {
			srvOf[i] = f
			cfgs[i].ServerBytes = size
		}
	}
	return srvOf, nil
}

// env is every worker's whole environment. GOMAXPROCS=1: one P, which the
// work thread gives up for good, so the runtime's own threads have one idle
// P and park. GOGC=off: no garbage collection, which would stop the world
// and wait for a work thread that never stops (worker_linux.go says more).
func (s *Set) env() []string {
	return []string{WorkerEnv + "=" + s.runID, "GOMAXPROCS=1", "GOGC=off", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
}

func (s *Set) start(ctx context.Context, cfgs []workerConfig) error {
	// Files that are the workers' ends; closed here once all are started.
	var childFiles []*os.File
	defer func() {
		for _, f := range childFiles {
			f.Close()
		}
	}()
	keep := func(f *os.File) *os.File { childFiles = append(childFiles, f); return f }
	shmDup, err := unix.FcntlInt(uintptr(s.shm.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("workload: duplicating the counters' fd: %w", err)
	}
	shmFile := keep(os.NewFile(uintptr(shmDup), "counters"))

	srvOf, err := newServerStates(s.spec, cfgs, keep)
	if err != nil {
		return err
	}

	// PingPong pipes: pipeTo[i] is the pipe task i writes to its partner.
	type pipe struct{ r, w *os.File }
	pipeTo := map[int]pipe{}
	for i, t := range s.spec.Tasks {
		if t.Pattern.Type != v1alpha1.PatternPingPong {
			continue
		}
		var fds [2]int
		if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil { // blocking on purpose
			return fmt.Errorf("workload: pipe: %w", err)
		}
		pipeTo[i] = pipe{keep(os.NewFile(uintptr(fds[0]), "pingpong-r")), keep(os.NewFile(uintptr(fds[1]), "pingpong-w"))}
	}
	// files returns a task's fds 3, 4, 5 …, and makes the parent's end of its
	// control socket.
	files := func(i int) ([]*os.File, *proc, error) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, nil, fmt.Errorf("workload: socketpair: %w", err)
		}
		pf := os.NewFile(uintptr(fds[0]), "control")
		conn, err := net.FileConn(pf)
		pf.Close()
		if err != nil {
			unix.Close(fds[1])
			return nil, nil, fmt.Errorf("workload: control socket: %w", err)
		}
		s.connMu.Lock()
		s.conns = append(s.conns, conn)
		s.connMu.Unlock()
		if ctx.Err() != nil {
			_ = conn.SetDeadline(time.Now())
		}
		p := &proc{task: i, conn: conn, enc: json.NewEncoder(conn), dec: json.NewDecoder(conn)}
		out := []*os.File{keep(os.NewFile(uintptr(fds[1]), "control-child"))}
		if i >= 0 {
			p.slot = s.shm.slot(i)
			out = append(out, shmFile)
		}
		if i >= 0 && s.spec.Tasks[i].Pattern.Type == v1alpha1.PatternPingPong {
			out = append(out, pipeTo[s.spec.Tasks[i].Peer].r, pipeTo[i].w)
		}
		if f := srvOf[i]; i >= 0 && f != nil {
			out = append(out, f) // srvFD
		}
		return out, p, nil
	}

	// Session leaders, one per distinct session, each with its tasks.
	sessions := map[string][]int{}
	var order []string
	for i, t := range s.spec.Tasks {
		if t.Session != "" {
			if _, ok := sessions[t.Session]; !ok {
				order = append(order, t.Session)
			}
			sessions[t.Session] = append(sessions[t.Session], i)
		}
	}
	for _, name := range order {
		lcfg := workerConfig{RunID: s.runID, ParentPID: os.Getpid(), Mode: "session"}
		lfiles, leader, err := files(-1)
		if err != nil {
			return err
		}
		var members []*proc
		for _, i := range sessions[name] {
			f, p, err := files(i)
			if err != nil {
				return err
			}
			p.leader = leader
			s.tasks[i] = p
			members = append(members, p)
			var fds []int
			for _, x := range f {
				fds = append(fds, ctrlFD+len(lfiles))
				lfiles = append(lfiles, x)
			}
			cfgs[i].RunID = s.runID
			lcfg.Children = append(lcfg.Children, sessionChild{Config: cfgs[i], FDs: fds})
		}
		leader.cmd = s.command(lcfg, lfiles, &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL})
		if err := s.spawner.start(leader.cmd); err != nil {
			return fmt.Errorf("workload: starting the leader of session %q: %w", name, err)
		}
		leader.pid = leader.cmd.Process.Pid
		leader.start, _, _ = procStart(leader.pid)
		s.leaders = append(s.leaders, leader)
		if s.spec.RootProcs != "" {
			if err := joinCgroup(s.spec.RootProcs, leader.pid); err != nil {
				return fmt.Errorf("workload: session %q: %w", name, err)
			}
		}
		if err := leader.send(msg{T: msgSpawn}); err != nil {
			return err
		}
		m, err := leader.recv(msgSpawned, startTimeout)
		if err != nil {
			return err
		}
		if len(m.PIDs) != len(members) {
			return fmt.Errorf("workload: %s spawned %d tasks, want %d", leader, len(m.PIDs), len(members))
		}
		for k, p := range members {
			p.pid = m.PIDs[k]
			p.start, _, _ = procStart(p.pid)
		}
	}

	// Every other task directly, each in its own process group.
	for i, t := range s.spec.Tasks {
		if t.Session != "" {
			continue
		}
		f, p, err := files(i)
		if err != nil {
			return err
		}
		s.tasks[i] = p
		cfgs[i].RunID = s.runID
		cfgs[i].ParentPID = os.Getpid()
		p.cmd = s.command(cfgs[i], f, &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL})
		if err := s.spawner.start(p.cmd); err != nil {
			return fmt.Errorf("workload: starting worker %d (%s): %w", i, t.Group, err)
		}
		p.pid = p.cmd.Process.Pid
		p.start, _, _ = procStart(p.pid)
	}
	for _, f := range childFiles {
		f.Close()
	}
	childFiles = nil

	// Ready (scheduling attributes applied), then the cgroup, then go.
	for i, p := range s.tasks {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("workload: starting: %w", err)
		}
		m, err := p.recv(msgReady, startTimeout)
		if err != nil {
			return fmt.Errorf("workload: %w", err)
		}
		if m.PID != p.pid {
			return fmt.Errorf("workload: %s reports pid %d", p, m.PID)
		}
		p.tid = m.TID
		if cg := s.spec.Tasks[i].CgroupProcs; cg != "" {
			if err := joinCgroup(cg, p.pid); err != nil {
				return fmt.Errorf("workload: worker %d (%s): %w", i, s.spec.Tasks[i].Group, err)
			}
		}
	}
	for _, p := range s.tasks {
		if err := p.send(msg{T: msgGo}); err != nil {
			return fmt.Errorf("workload: %w", err)
		}
	}
	for _, p := range s.tasks {
		m, err := p.recv(msgRunning, startTimeout)
		if err != nil {
			return fmt.Errorf("workload: %w", err)
		}
		if m.Placed != nil {
			p.placed = *m.Placed
		}
	}
	return nil
}

func (s *Set) command(cfg workerConfig, files []*os.File, attr *syscall.SysProcAttr) *exec.Cmd {
	cmd := exec.Command(s.spec.WorkerBinary, WorkerArg, cfg.marshal())
	cmd.Env = s.env()
	cmd.ExtraFiles = files
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = attr
	return cmd
}

// joinCgroup moves a process into a cgroup by writing its pid to the
// cgroup's procs file; for a v1 "tasks" file every thread is written.
func joinCgroup(procsFile string, pid int) error {
	ids := []int{pid}
	if filepath.Base(procsFile) == "tasks" {
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil {
			return fmt.Errorf("listing threads of %d: %w", pid, err)
		}
		ids = ids[:0]
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				ids = append(ids, tid)
			}
		}
	}
	f, err := os.OpenFile(procsFile, os.O_WRONLY, 0) // never create
	if err != nil {
		return fmt.Errorf("joining cgroup: %w", err)
	}
	defer f.Close()
	for _, id := range ids {
		if _, err := f.WriteString(strconv.Itoa(id)); err != nil {
			return fmt.Errorf("joining cgroup %s with %d: %w", procsFile, id, err)
		}
	}
	return nil
}

// Begin opens the measured window: it reads every worker's scheduler
// counters (from /proc) and its pattern's counters (from shared memory).
// Nothing is asked of the workers: they need no CPU time for it.
func (s *Set) Begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("workload: Begin after Stop")
	}
	t0 := time.Now()
	for i, p := range s.tasks {
		// The pattern's counters before the thread's, here, and after them
		// at End: a sleep that falls between the two readings is then
		// counted in the window's blocks and never only in its voluntary
		// switches, so an edge never looks like a perturbation.
		r0 := time.Now()
		p.slotAt = readSlot(p.slot)
		p.pauseAt = readPauseSnap(p.slot)
		if p.slotAt.state != 1 {
			return fmt.Errorf("workload: begin: %s has not started its work loop", p)
		}
		c, err := readCounters(s.fs, p.pid, p.tid)
		if err != nil {
			return fmt.Errorf("workload: begin: %w", err)
		}
		p.base, p.baseAt = c, midpoint(r0)
		if afterTaskRead != nil {
			afterTaskRead(false, i)
		}
	}
	for _, l := range s.leaders {
		c, err := readCounters(s.fs, l.pid, 0)
		if err != nil {
			return fmt.Errorf("workload: begin: %w", err)
		}
		l.base = c
	}
	// Reading many workers' counters takes a while on a loaded machine, and
	// the reader may be starved halfway (a captured CPU gives the agent as
	// little as it gives starved hogs: the readings of one task and the next
	// were seen a second apart). Every task's rates are therefore taken over
	// its own window, from its reading here to its reading at End; the Set's
	// window runs from the middle of one whole reading to the middle of the
	// other.
	s.began = midpoint(t0)
	s.coveredAt = readCovered(s.shm.node(len(s.tasks)))
	s.open = true
	return nil
}

// End closes the measured window and returns every task's statistics over
// it, in Spec.Tasks order. Like Begin it asks nothing of the workers.
func (s *Set) End() (*Window, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, errors.New("workload: End after Stop")
	}
	if !s.open {
		return nil, errors.New("workload: End without Begin")
	}
	s.open = false
	w := &Window{Tasks: make([]TaskStats, len(s.tasks))}
	if s.hogs > 0 {
		w.Pauses = &HostPauses{Hogs: s.hogs, ObservedNs: (readCovered(s.shm.node(len(s.tasks))) - s.coveredAt) * BucketNs}
	}
	var recs []pauseRecord
	t0 := time.Now()
	for i, p := range s.tasks {
		r0 := time.Now()
		c, err := readCounters(s.fs, p.pid, p.tid)
		if err != nil {
			return nil, fmt.Errorf("workload: end: %w", err)
		}
		d := c.sub(p.base)
		now := readSlot(p.slot)
		own := midpoint(r0).Sub(p.baseAt)
		if afterTaskRead != nil {
			afterTaskRead(true, i)
		}
		hist, ops, periods, misses, blocks := now.since(p.slotAt)
		if w.Pauses != nil && s.spec.Tasks[i].Pattern.Type == v1alpha1.PatternHog && !s.spec.Tasks[i].NoPauseWatch {
			ps := readPauseSnap(p.slot)
			r, lost := pausesSince(p.slot, p.pauseAt, ps)
			recs = append(recs, r...)
			w.Pauses.Lost += lost
			w.Pauses.OffGaps += ps.offGaps - p.pauseAt.offGaps
			// Its work thread's CPU time: the time it watched its vCPU.
			w.Pauses.HogCPUNs += max(d.cpuNs-d.sideCPUNs, 0)
			hist = NewHistogram() // a Hog's histogram words hold its log
		}
		t := s.spec.Tasks[i]
		w.Tasks[i] = TaskStats{Group: t.Group, Replica: t.Replica, Index: t.Index, PID: p.pid, Pattern: t.Pattern.Type, Window: own,
			CPUNs: d.cpuNs, RunDelayNs: d.runDelayNs, Voluntary: d.voluntary, Involuntary: d.involuntary,
			Blocks: blocks, SideCPUNs: d.sideCPUNs, SideSwitches: d.sideSwitches,
			Latency: hist, Ops: ops, Periods: periods, Misses: misses,
			Arrivals: now.arrivals - p.slotAt.arrivals, Dropped: now.dropped - p.slotAt.dropped}
		// The grid's first deadline, read here rather than at Begin: a
		// worker stores it just after it marks its loop started.
		switch {
		case t.Pattern.Type == v1alpha1.PatternLatencyProbe && t.Pattern.Interval != nil:
			w.Tasks[i].GridNs = t.Pattern.Interval.Nanoseconds()
		case t.Pattern.Type == v1alpha1.PatternPeriodic && t.Pattern.Period != nil:
			w.Tasks[i].GridNs = t.Pattern.Period.Nanoseconds()
		}
		if w.Tasks[i].GridNs > 0 {
			w.Tasks[i].FirstDeadlineNs = atomic.LoadInt64(&p.slot[slotGrid])
		}
	}
	for _, l := range s.leaders {
		c, err := readCounters(s.fs, l.pid, 0)
		if err != nil {
			return nil, fmt.Errorf("workload: end: %w", err)
		}
		d := c.sub(l.base)
		// A session leader's threads count as side threads of its first task.
		for i, p := range s.tasks {
			if p.leader == l {
				w.Tasks[i].SideCPUNs += d.sideCPUNs
				w.Tasks[i].SideSwitches += d.sideSwitches
				break
			}
		}
	}
	w.Duration = midpoint(t0).Sub(s.began)
	if w.Pauses != nil {
		w.Pauses.Pauses, w.Pauses.VCPUStalls, w.Pauses.ShortStalls = splitStalls(mergePauses(recs))
	}
	return w, nil
}

// midpoint is the middle of the time from t0 to now.
func midpoint(t0 time.Time) time.Time { return t0.Add(time.Since(t0) / 2) }

// afterTaskRead, when set (by tests), runs after Begin (end false) or End
// (end true) read task i's counters: a test stalls the reader there, as a
// starved agent is.
var afterTaskRead func(end bool, i int)

// Stop SIGKILLs every worker and session leader, reaps them, and checks
// through /proc that none survives (by pid and start time, and by the run id
// in every process's environment). It may be called any number of times,
// also after errors; later calls return the first call's result.
func (s *Set) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return s.stopErr
	}
	s.stopped = true
	if s.unhook != nil {
		s.unhook()
	}
	var errs []error
	// A session's tasks first: their leader reaps them.
	for _, p := range s.tasks {
		if p != nil && p.leader != nil && p.pid > 0 && alive(p.pid, p.start) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	for _, l := range s.leaders {
		if l.send(msg{T: msgKill}) == nil {
			_, _ = l.recv(msgKilled, reapTimeout) // the leader has reaped its tasks
		}
	}
	// Then every process group we made: each direct worker's, each session's.
	for _, p := range append(append([]*proc{}, s.tasks...), s.leaders...) {
		if p == nil || p.cmd == nil || p.cmd.Process == nil {
			continue
		}
		if err := syscall.Kill(-p.pid, syscall.SIGKILL); err != nil {
			_ = p.cmd.Process.Kill()
		}
	}
	for _, p := range append(append([]*proc{}, s.tasks...), s.leaders...) {
		if p == nil {
			continue
		}
		if p.cmd != nil && p.cmd.Process != nil {
			_ = p.cmd.Wait() // "signal: killed" is the expected outcome
		}
		if p.conn != nil {
			p.conn.Close()
		}
	}
	// Verify: nothing we started is alive, and nothing carries our run id.
	deadline := time.Now().Add(reapTimeout)
	for _, p := range append(append([]*proc{}, s.tasks...), s.leaders...) {
		if p == nil || p.pid <= 0 {
			continue
		}
		for alive(p.pid, p.start) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if alive(p.pid, p.start) {
			errs = append(errs, fmt.Errorf("workload: %s survived SIGKILL", p))
		}
	}
	s.spawner.close()
	s.shm.close()
	s.shm = nil
	left, err := Survivors(s.runID)
	if err != nil {
		errs = append(errs, err)
	}
	for _, pid := range left {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		errs = append(errs, fmt.Errorf("workload: process %d of run %s survived; killed it", pid, s.runID))
	}
	s.stopErr = errors.Join(errs...)
	return s.stopErr
}

// Survivors lists the live (not zombie) processes whose environment carries
// SCHEDLAB_WORKER=<runID>: workers of that run that are still around.
func Survivors(runID string) ([]int, error) {
	if runID == "" {
		return nil, errors.New("workload: empty run id")
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("workload: listing /proc: %w", err)
	}
	mark := []byte(WorkerEnv + "=" + runID + "\x00")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, mark...)) {
			continue
		}
		if _, state, ok := procStart(pid); ok && state != 'Z' && state != 'X' {
			out = append(out, pid)
		}
	}
	return out, nil
}
