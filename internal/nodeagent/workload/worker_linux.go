package workload

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// The work thread.
//
// A worker's work thread must do only its pattern: every sleep or block
// that is not the pattern's, and every CPU cycle of another thread of the
// worker, changes what the kernel sees (wake-up placement, lag, the group's
// load) and so what is measured. An ordinary goroutine cannot promise that:
// the Go runtime preempts a goroutine that runs for 10 ms (sysmon, async
// preemption) and passes its P round its other threads, which wake for it;
// and with GOMAXPROCS=1 the control goroutine could run only on the work
// thread's P, so the locked work thread slept whenever the control path had
// something to do — a Hog measured ~61 voluntary switches per second that
// way, and cgroup weights 100/400/100 came out 0.61-0.83/1.00/0.17-0.37
// instead of 0.50/1.00/0.50. So:
//
//  1. The work loop leaves the Go scheduler for good: it calls the runtime's
//     entersyscallblock, which hands the thread's P to the rest of the
//     runtime, and never returns. To the runtime the goroutine is in a
//     system call that does not end; nothing preempts it, nothing waits for
//     it to reach a safe point, no P is ever handed back. From there on the
//     loop may call only functions that never grow the stack (go:nosplit,
//     assembly, intrinsics — the runtime throws on any other) and must not
//     allocate: it uses raw system calls, the vDSO clock, and atomic adds
//     into shared memory.
//  2. GOGC=off in the worker's environment: no garbage collection, so no
//     stop-the-world that would wait for a goroutine which never stops and
//     no stack scan of a stack that is in use. The worker allocates only
//     while it starts.
//  3. The window's counters live in memory shared with the parent (see
//     shm_linux.go): the parent reads them without asking the worker, so
//     the worker's control goroutine sleeps on its socket through the whole
//     run (and a starved worker still reports). With GOMAXPROCS=1 and that
//     one P idle, the runtime's monitor thread (sysmon) parks too: the
//     worker's other threads use ~0 CPU and wake ~never in a window, which
//     the parent checks every window (TaskStats.SideCPUNs, SideSwitches).
//
// Task.Perturb skips step 1: the loop then runs as an ordinary goroutine,
// which is what the invariants must catch (a test does).

// nanotime is CLOCK_MONOTONIC in nanoseconds, read through the vDSO as the
// Go runtime does (cyclictest reads the same clock the same way). go:nosplit
// in the runtime.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// entersyscallblock tells the runtime that this goroutine enters a blocking
// system call: it gives up its P at once. See step 1 above.
//
//go:linkname entersyscallblock runtime.entersyscallblock
func entersyscallblock()

// threadCPU is this thread's CPU time (CLOCK_THREAD_CPUTIME_ID): a raw
// system call (CPU-time clocks are not in the vDSO).
//
//go:nosplit
func threadCPU() int64 {
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Sec*1e9 + ts.Nsec
}

var sink uint64

// busy burns a little CPU without touching memory the compiler can drop.
//
//go:nosplit
func busy(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
}

// spinCPU runs until this thread has consumed ns of CPU time: CPU time, not
// wall time, so a preempted task still does all of its work.
//
//go:nosplit
func spinCPU(ns int64) {
	if ns <= 0 {
		return
	}
	end := threadCPU() + ns
	for threadCPU() < end {
		busy(100)
	}
}

// sleepUntil sleeps to an absolute CLOCK_MONOTONIC deadline and counts the
// sleep as one of the pattern's blocks.
//
//go:nosplit
func sleepUntil(s *slot, deadline int64) {
	atomic.AddInt64(&s[slotBlocks], 1)
	ts := syscall.Timespec{Sec: deadline / 1e9, Nsec: deadline % 1e9}
	for {
		_, _, e := syscall.RawSyscall6(syscall.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if e != syscall.EINTR {
			return
		}
	}
}

// exit ends the process from the work loop (os.Exit may grow the stack).
//
//go:nosplit
func exit(code int) {
	syscall.RawSyscall(syscall.SYS_EXIT_GROUP, uintptr(code), 0, 0)
}

// ctrl is a worker's end of its control socket.
type ctrl struct {
	enc *json.Encoder
	dec *json.Decoder
}

func (c *ctrl) send(m msg) error { return c.enc.Encode(m) }

func (c *ctrl) recv() (msg, error) {
	var m msg
	err := c.dec.Decode(&m)
	return m, err
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

// setupTask applies the task's own attributes to this process before its
// work starts. Every per-task attribute is applied here, and only here: on
// the work thread (which is the thread reporting "ready"), before the parent
// places the worker in its cgroup. Attributes the kernel keeps per thread
// and copies to new threads (nice, policy, slice, timer slack) are set on
// every thread, so threads the Go runtime starts later get them too.
func setupTask(cfg workerConfig) error {
	if err := applySchedAllThreads(cfg.Nice, cfg.Policy, cfg.SliceNs); err != nil {
		return err
	}
	return applyAffinityAllThreads(cfg.CPUs)
}

// counters is the work thread's slot, and server a Server task's shared
// queue; package variables so that the memory stays reachable whatever the
// work loop's frame holds.
var (
	counters *slot
	shared   *nodePage
	server   *srvHdr
)

func runTask(cfg workerConfig, c *ctrl) int {
	report := func(err error) int {
		_ = c.send(msg{T: msgError, Err: err.Error()})
		return 1
	}
	if err := setupTask(cfg); err != nil {
		return report(err)
	}
	// Timer slack is per thread: set it on this one, the work thread.
	if cfg.TimerSlackNs > 0 {
		if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(cfg.TimerSlackNs), 0, 0, 0); err != nil {
			return report(fmt.Errorf("prctl(PR_SET_TIMERSLACK, %d): %w", cfg.TimerSlackNs, err))
		}
	}
	if cfg.Pattern == v1alpha1.PatternPingPong {
		for _, fd := range []int{peerReadFD, peerWrFD} {
			if err := unix.SetNonblock(fd, false); err != nil {
				return report(fmt.Errorf("PingPong pipe fd %d: %w", fd, err))
			}
		}
	}
	s, err := mapSlot(shmFD, cfg.Slot)
	if err != nil {
		return report(err)
	}
	var node *nodePage
	if cfg.NodeSlot > 0 {
		ns, err := mapSlot(shmFD, cfg.NodeSlot)
		if err != nil {
			return report(err)
		}
		node = (*nodePage)(unsafe.Pointer(ns))
	}
	_ = unix.Close(shmFD)
	counters, shared = s, node
	var srv *srvHdr
	if cfg.Pattern == v1alpha1.PatternServer {
		if srv, err = mapSrv(srvFD, cfg.ServerBytes); err != nil {
			return report(err)
		}
		_ = unix.Close(srvFD)
		server = srv
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
	// From here the control goroutine only waits for the socket to close
	// (the parent stopping us, or gone): it has nothing else to do.
	go func() {
		for {
			if _, err := c.recv(); err != nil {
				os.Exit(0)
			}
		}
	}()
	if err := c.send(msg{T: msgRunning, Placed: placed}); err != nil {
		return 1
	}
	l := loop{pattern: patternCode(cfg.Pattern), runNs: cfg.RunNs, periodNs: cfg.PeriodNs, intervalNs: cfg.IntervalNs, phaseNs: cfg.PhaseNs,
		meanRunNs: cfg.MeanRunNs, meanSleepNs: cfg.MeanSleepNs, initiator: cfg.Initiator, rng: cfg.Seed ^ 0x9e3779b97f4a7c15,
		srv: srv, node: node, watch: cfg.NodeSlot > 0 && !cfg.NoPauseWatch, slot: cfg.Slot, tasks: cfg.NodeSlot, sw: srvWorker{kind: cfg.ServiceKind, meanNs: cfg.ServiceMeanNs, mu: cfg.ServiceMu, sigma: cfg.ServiceSigma, rng: cfg.Seed ^ 0x2545f4914f6cdd1d}}
	if cfg.Perturb {
		l.run(s)
	} else {
		l.detachAndRun(s)
	}
	return 0
}

// Patterns as small integers for the work loop (no strings there).
const (
	patHog = iota + 1
	patPeriodic
	patProbe
	patPingPong
	patBurst
	patServer
)

func patternCode(p v1alpha1.PatternType) int {
	switch p {
	case v1alpha1.PatternHog:
		return patHog
	case v1alpha1.PatternPeriodic:
		return patPeriodic
	case v1alpha1.PatternLatencyProbe:
		return patProbe
	case v1alpha1.PatternPingPong:
		return patPingPong
	case v1alpha1.PatternBurst:
		return patBurst
	case v1alpha1.PatternServer:
		return patServer
	}
	return 0
}

// loop is a pattern's parameters, plain data.
type loop struct {
	pattern                     int
	runNs, periodNs, intervalNs int64
	phaseNs                     int64
	meanRunNs, meanSleepNs      int64
	initiator                   bool
	rng                         uint64
	srv                         *srvHdr
	sw                          srvWorker
	// node is the page the workers share; watch runs a Hog with its
	// pause detector (pause_linux.go).
	node  *nodePage
	watch bool
	// slot is this task's index in the Set, tasks the Set's size.
	slot, tasks int
}

// detachAndRun leaves the Go scheduler (step 1 above) and runs the pattern
// forever. It must not return: the runtime believes this goroutine is still
// inside the call.
//
//go:nosplit
func (l *loop) detachAndRun(s *slot) {
	entersyscallblock()
	l.run(s)
	exit(3) // not reached: the patterns loop forever
}

// run runs the pattern forever.
//
//go:nosplit
func (l *loop) run(s *slot) {
	atomic.StoreInt64(&s[slotState], 1)
	switch l.pattern {
	case patHog:
		if l.watch {
			hogWatching(s, l.node, l.slot, l.tasks)
		}
		hog()
	case patPeriodic:
		periodic(s, l.runNs, l.periodNs)
	case patProbe:
		latencyProbe(s, l.intervalNs, l.phaseNs)
	case patPingPong:
		pingPong(s, l.initiator, l.runNs)
	case patBurst:
		burst(s, l.meanRunNs, l.meanSleepNs, &l.rng)
	case patServer:
		serve(s, l.srv, &l.sw)
	}
	exit(3)
}

// hog spins forever: no call, no memory traffic but its own register.
//
//go:nosplit
func hog() {
	x := sink
	for {
		for i := 0; i < 1<<20; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink = x
	}
}

// periodic runs runNs of CPU time every periodNs from an absolute start.
// Wakeup latency is the wake-up's lateness against the period boundary; a
// period is missed when its run finishes after the period's end. A run that
// overruns into later periods skips them (each counted as a missed period)
// and the next run starts at the next boundary.
//
//go:nosplit
func periodic(s *slot, runNs, periodNs int64) {
	b := nanotime() + periodNs
	atomic.StoreInt64(&s[slotGrid], b)
	for {
		sleepUntil(s, b)
		recordLatency(s, nanotime()-b)
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
		atomic.AddInt64(&s[slotOps], 1)
		atomic.AddInt64(&s[slotPeriods], 1+skipped)
		atomic.AddInt64(&s[slotMisses], miss+skipped)
		b = next
	}
}

// latencyProbe sleeps to absolute deadlines every intervalNs and records
// how late it woke (like cyclictest's clock_nanosleep mode). Deadlines
// already passed on waking are skipped, not queued. With phaseNs > 0 the
// deadlines lie on the interval's grid plus phaseNs (Task.PhaseNs).
//
//go:nosplit
func latencyProbe(s *slot, intervalNs, phaseNs int64) {
	d := firstDeadline(nanotime(), intervalNs, phaseNs)
	atomic.StoreInt64(&s[slotGrid], d)
	for {
		sleepUntil(s, d)
		now := nanotime()
		recordLatency(s, now-d)
		atomic.AddInt64(&s[slotOps], 1)
		d += intervalNs
		for d <= now {
			d += intervalNs
		}
	}
}

// firstDeadline is a probe's first deadline: an interval after now, or
// with phaseNs > 0 the first grid point (a multiple of intervalNs plus
// phaseNs) at least an interval after now.
//
//go:nosplit
func firstDeadline(now, intervalNs, phaseNs int64) int64 {
	d := now + intervalNs
	if phaseNs > 0 {
		d = (d/intervalNs+1)*intervalNs + phaseNs
	}
	return d
}

// pingPong exchanges CLOCK_MONOTONIC timestamps with the partner over two
// blocking pipes. Each side records its own wakeup latency: from the
// partner's write (the timestamp it sent) to its own return from read. The
// initiator counts round trips. A partner that is gone ends the process.
//
//go:nosplit
func pingPong(s *slot, initiator bool, runNs int64) {
	var buf [8]byte
	if initiator {
		for {
			pipeWrite(&buf)
			pipeRead(s, &buf)
			atomic.AddInt64(&s[slotOps], 1)
			spinCPU(runNs)
		}
	}
	for {
		pipeRead(s, &buf)
		spinCPU(runNs)
		pipeWrite(&buf)
	}
}

//go:nosplit
func pipeWrite(buf *[8]byte) {
	*(*int64)(unsafe.Pointer(buf)) = nanotime()
	for off := 0; off < len(buf); {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, peerWrFD, uintptr(unsafe.Pointer(&buf[off])), uintptr(len(buf)-off))
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			exit(1) // the partner is gone: the run is over
		}
		off += int(n)
	}
}

//go:nosplit
func pipeRead(s *slot, buf *[8]byte) {
	atomic.AddInt64(&s[slotBlocks], 1)
	for off := 0; off < len(buf); {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, peerReadFD, uintptr(unsafe.Pointer(&buf[off])), uintptr(len(buf)-off))
		if e == syscall.EINTR {
			continue
		}
		if e != 0 || n == 0 {
			exit(1)
		}
		off += int(n)
	}
	recordLatency(s, nanotime()-*(*int64)(unsafe.Pointer(buf)))
}

// burst runs and sleeps for exponentially distributed times (CPU time for
// the run), drawn from a generator seeded by the task's seed. Wakeup
// latency is the lateness of each sleep's end; ops are bursts completed.
//
//go:nosplit
func burst(s *slot, meanRunNs, meanSleepNs int64, rng *uint64) {
	for {
		spinCPU(expDraw(rng, meanRunNs))
		d := nanotime() + expDraw(rng, meanSleepNs)
		sleepUntil(s, d)
		recordLatency(s, nanotime()-d)
		atomic.AddInt64(&s[slotOps], 1)
	}
}

// expDraw is an exponentially distributed duration of the given mean:
// -mean·ln(u) for u uniform in (0, 1], from a splitmix64 generator.
//
//go:nosplit
func expDraw(state *uint64, mean int64) int64 {
	*state += 0x9e3779b97f4a7c15
	z := *state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	u := (float64(z>>11) + 1) / (1 << 53) // (0, 1]
	return int64(-lnNosplit(u) * float64(mean))
}

// lnNosplit is the natural logarithm of x > 0, without a call: x = m·2^k
// with m in [√½, √2), ln m = 2·atanh(s) = 2(s + s³/3 + s⁵/5 + …) for
// s = (m-1)/(m+1), |s| ≤ 0.172; 12 terms leave an error below 1e-16.
//
//go:nosplit
func lnNosplit(x float64) float64 {
	b := math.Float64bits(x)
	k := int64(b>>52&0x7ff) - 1023
	m := math.Float64frombits(b&^(0x7ff<<52) | 1023<<52) // in [1, 2)
	if m > math.Sqrt2 {
		m /= 2
		k++
	}
	s := (m - 1) / (m + 1)
	s2 := s * s
	sum, term := 0.0, s
	for i := 1; i <= 23; i += 2 {
		sum += term / float64(i)
		term *= s2
	}
	return 2*sum + float64(k)*math.Ln2
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
