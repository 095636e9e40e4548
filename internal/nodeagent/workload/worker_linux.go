package workload

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// nanotime is CLOCK_MONOTONIC in nanoseconds, read through the vDSO as the
// Go runtime does (cyclictest reads the same clock the same way).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// threadCPU is this thread's CPU time (CLOCK_THREAD_CPUTIME_ID). A raw
// system call: it does not block, so the Go scheduler need not know.
func threadCPU() int64 {
	var ts unix.Timespec
	unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

var sink uint64

// busy burns a little CPU without touching memory the compiler can drop.
func busy(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
}

// spinCPU runs until this thread has consumed ns of CPU time: CPU time, not
// wall time, so a preempted task still does all of its work.
func spinCPU(ns int64) {
	if ns <= 0 {
		return
	}
	end := threadCPU() + ns
	for threadCPU() < end {
		busy(100)
	}
}

// sleepUntil sleeps to an absolute CLOCK_MONOTONIC deadline.
func sleepUntil(deadline int64) {
	ts := unix.NsecToTimespec(deadline)
	for {
		if err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil); err != unix.EINTR {
			return
		}
	}
}

// ctrl is a worker's end of its control socket.
type ctrl struct {
	mu  sync.Mutex
	enc *json.Encoder
	dec *json.Decoder
}

func (c *ctrl) send(m msg) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enc.Encode(m)
}

func (c *ctrl) recv() (msg, error) {
	var m msg
	err := c.dec.Decode(&m)
	return m, err
}

// recorder holds what a task counts over the window.
type recorder struct {
	mu      sync.Mutex
	hist    *Histogram
	ops     int64
	periods int64
	misses  int64
}

func (r *recorder) latency(ns int64) {
	r.mu.Lock()
	r.hist.Record(ns)
	r.mu.Unlock()
}

func (r *recorder) count(ops, periods, misses int64) {
	r.mu.Lock()
	r.ops += ops
	r.periods += periods
	r.misses += misses
	r.mu.Unlock()
}

func (r *recorder) reset() {
	r.mu.Lock()
	r.hist.Reset()
	r.ops, r.periods, r.misses = 0, 0, 0
	r.mu.Unlock()
}

func (r *recorder) report() (msg, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := r.hist.MarshalBinary()
	if err != nil {
		return msg{}, err
	}
	return msg{T: msgEnded, Hist: b, Ops: r.ops, Periods: r.periods, Misses: r.misses}, nil
}

// WorkerMain is the hidden `schedlab __worker <json>` mode; args are the
// arguments after "__worker". It returns the exit code (a worker normally
// never returns: it is killed).
func WorkerMain(args []string) int {
	// The work runs on this goroutine, locked to this thread for the life of
	// the process; the thread's id goes to the parent, which reads its
	// counters.
	runtime.LockOSThread()
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "schedlab worker: "+format+"\n", a...)
		return 2
	}
	if len(args) != 1 {
		return fail("usage: schedlab %s <json>", WorkerArg)
	}
	var cfg workerConfig
	if err := json.Unmarshal([]byte(args[0]), &cfg); err != nil {
		return fail("bad configuration: %v", err)
	}
	// Die with the parent; and if it died before we could ask, go now.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fail("prctl(PR_SET_PDEATHSIG): %v", err)
	}
	if os.Getppid() != cfg.ParentPID {
		return fail("parent %d is gone", cfg.ParentPID)
	}
	f := os.NewFile(ctrlFD, "control")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return fail("control socket: %v", err)
	}
	c := &ctrl{enc: json.NewEncoder(conn), dec: json.NewDecoder(conn)}
	switch cfg.Mode {
	case "task":
		return runTask(cfg, c)
	case "session":
		return runSession(cfg, c)
	}
	return fail("unknown mode %q", cfg.Mode)
}

func runTask(cfg workerConfig, c *ctrl) int {
	report := func(err error) int {
		_ = c.send(msg{T: msgError, Err: err.Error()})
		return 1
	}
	if err := applySchedAllThreads(cfg.Nice, cfg.Policy, cfg.SliceNs); err != nil {
		return report(err)
	}
	if cfg.Pattern == v1alpha1.PatternPingPong {
		for _, fd := range []int{peerReadFD, peerWrFD} {
			if err := unix.SetNonblock(fd, false); err != nil {
				return report(fmt.Errorf("PingPong pipe fd %d: %w", fd, err))
			}
		}
	}
	if err := c.send(msg{T: msgReady, PID: os.Getpid(), TID: unix.Gettid()}); err != nil {
		return 1
	}
	if m, err := c.recv(); err != nil || m.T != msgGo {
		return 1 // the parent changed its mind
	}
	placed, err := placement()
	if err != nil {
		return report(err)
	}
	rec := &recorder{hist: NewHistogram()}
	go serve(c, rec)
	if err := c.send(msg{T: msgRunning, Placed: placed}); err != nil {
		return 1
	}
	work(cfg, rec)
	return 0
}

// serve answers the parent's begin and end until the control socket closes,
// which means the parent is stopping us or gone: then exit.
func serve(c *ctrl, rec *recorder) {
	for {
		m, err := c.recv()
		if err != nil {
			os.Exit(0)
		}
		switch m.T {
		case msgBegin:
			rec.reset()
			err = c.send(msg{T: msgBegun})
		case msgEnd:
			var r msg
			if r, err = rec.report(); err != nil {
				r = msg{T: msgError, Err: err.Error()}
			}
			err = c.send(r)
		default:
			err = c.send(msg{T: msgError, Err: "unexpected message " + m.T})
		}
		if err != nil {
			os.Exit(0)
		}
	}
}

// work runs the pattern forever.
func work(cfg workerConfig, rec *recorder) {
	switch cfg.Pattern {
	case v1alpha1.PatternHog:
		for {
			busy(1 << 16)
		}
	case v1alpha1.PatternPeriodic:
		periodic(cfg.RunNs, cfg.PeriodNs, rec)
	case v1alpha1.PatternLatencyProbe:
		latencyProbe(cfg.IntervalNs, rec)
	case v1alpha1.PatternPingPong:
		pingPong(cfg.Initiator, cfg.RunNs, rec)
	case v1alpha1.PatternBurst:
		burst(cfg.MeanRunNs, cfg.MeanSleepNs, cfg.Seed, rec)
	}
}

// periodic runs runNs of CPU time every periodNs from an absolute start.
// Wakeup latency is the wake-up's lateness against the period boundary; a
// period is missed when its run finishes after the period's end. A run that
// overruns into later periods skips them (each counted as a missed period)
// and the next run starts at the next boundary.
func periodic(runNs, periodNs int64, rec *recorder) {
	b := nanotime() + periodNs
	for {
		sleepUntil(b)
		rec.latency(nanotime() - b)
		spinCPU(runNs)
		f := nanotime()
		var miss int64
		if f > b+periodNs {
			miss = 1
		}
		next := b + periodNs
		var skipped int64
		if f >= next {
			skipped = (f - b) / periodNs // boundaries b+P … b+kP passed while running
			next = b + (skipped+1)*periodNs
		}
		rec.count(1, 1+skipped, miss+skipped)
		b = next
	}
}

// latencyProbe sleeps to absolute deadlines every intervalNs and records
// how late it woke (like cyclictest's clock_nanosleep mode). Deadlines
// already passed on waking are skipped, not queued.
func latencyProbe(intervalNs int64, rec *recorder) {
	d := nanotime() + intervalNs
	for {
		sleepUntil(d)
		now := nanotime()
		rec.latency(now - d)
		rec.count(1, 0, 0)
		d += intervalNs
		for d <= now {
			d += intervalNs
		}
	}
}

// pingPong exchanges CLOCK_MONOTONIC timestamps with the partner over two
// blocking pipes. Each side records its own wakeup latency: from the
// partner's write (the timestamp it sent) to its own return from read. The
// initiator counts round trips.
func pingPong(initiator bool, runNs int64, rec *recorder) {
	var buf [8]byte
	write := func() {
		binary.LittleEndian.PutUint64(buf[:], uint64(nanotime()))
		if err := writeFull(peerWrFD, buf[:]); err != nil {
			os.Exit(1) // the partner is gone: the run is over
		}
	}
	read := func() {
		if err := readFull(peerReadFD, buf[:]); err != nil {
			os.Exit(1)
		}
		rec.latency(nanotime() - int64(binary.LittleEndian.Uint64(buf[:])))
	}
	if initiator {
		for {
			write()
			read()
			rec.count(1, 0, 0)
			spinCPU(runNs)
		}
	}
	for {
		read()
		spinCPU(runNs)
		write()
	}
}

func readFull(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Read(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("end of file")
		}
		b = b[n:]
	}
	return nil
}

func writeFull(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// burst runs and sleeps for exponentially distributed times (CPU time for
// the run), drawn from a generator seeded by seed. Wakeup latency is the
// lateness of each sleep's end; ops are bursts completed.
func burst(meanRunNs, meanSleepNs int64, seed uint64, rec *recorder) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for {
		spinCPU(int64(r.ExpFloat64() * float64(meanRunNs)))
		d := nanotime() + int64(r.ExpFloat64()*float64(meanSleepNs))
		sleepUntil(d)
		rec.latency(nanotime() - d)
		rec.count(1, 0, 0)
	}
}

// runSession is the leader of one setsid session (the parent started it with
// Setsid and moved it to the root cgroup): on "spawn" it forks the session's
// tasks, which inherit its session (so its autogroup) and its cgroup, then
// reaps them. On "kill", or when the control socket closes, it SIGKILLs and
// reaps them.
func runSession(cfg workerConfig, c *ctrl) int {
	if m, err := c.recv(); err != nil || m.T != msgSpawn {
		return 1
	}
	exe, err := os.Executable()
	if err != nil {
		_ = c.send(msg{T: msgError, Err: err.Error()})
		return 1
	}
	var cmds []*exec.Cmd
	killAll := func() {
		for _, cmd := range cmds {
			_ = cmd.Process.Kill()
		}
		for _, cmd := range cmds {
			_ = cmd.Wait()
		}
	}
	pids := make([]int, 0, len(cfg.Children))
	for _, ch := range cfg.Children {
		ch.Config.ParentPID = os.Getpid()
		cmd := exec.Command(exe, WorkerArg, ch.Config.marshal())
		cmd.Env = os.Environ()
		cmd.Stderr = os.Stderr
		for _, fd := range ch.FDs {
			cmd.ExtraFiles = append(cmd.ExtraFiles, os.NewFile(uintptr(fd), "inherited"))
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			killAll()
			_ = c.send(msg{T: msgError, Err: fmt.Sprintf("starting session task: %v", err)})
			return 1
		}
		cmds = append(cmds, cmd)
		pids = append(pids, cmd.Process.Pid)
	}
	for _, ch := range cfg.Children {
		for _, fd := range ch.FDs {
			_ = unix.Close(fd)
		}
	}
	if err := c.send(msg{T: msgSpawned, PIDs: pids}); err != nil {
		killAll()
		return 1
	}
	for {
		m, err := c.recv()
		if err != nil || m.T == msgKill {
			killAll()
			if err == nil {
				_ = c.send(msg{T: msgKilled})
			}
			return 0
		}
	}
}

// placement records where this worker is, on its work thread, before work.
func placement() (*Placement, error) {
	p := &Placement{PID: os.Getpid()}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("reading /proc/self/cgroup: %w", err)
	}
	p.Cgroup = string(cg)
	if ag, err := os.ReadFile("/proc/self/autogroup"); err == nil {
		p.Autogroup = strings.TrimSpace(string(ag))
	}
	if p.Session, err = unix.Getsid(0); err != nil {
		return nil, fmt.Errorf("getsid: %w", err)
	}
	if p.Sched, err = ReadSched(unix.Gettid()); err != nil {
		return nil, err
	}
	return p, nil
}
