package nodeagent

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// TestTimerLateness holds what a trace counts as the timer's part: one
// lateness per interrupt, from the earliest hard expiry it ran; timers ended
// inside their slack apart; an interrupt that found the CPU idle (pid 0)
// apart; soft-mode and unseen timers left out.
func TestTimerLateness(t *testing.T) {
	const s = int64(time.Second)
	trace := `# tracer: nop
#
 probe-10 [000] d..1. 1.000: hrtimer_start: hrtimer=a function=hrtimer_wakeup expires=1000020000 softexpires=1000000000 mode=ABS was_armed=0
 probe-11 [000] d..1. 1.000: hrtimer_start: hrtimer=b function=hrtimer_wakeup expires=1000030000 softexpires=1000010000 mode=ABS was_armed=0
 probe-12 [000] d..1. 1.000: hrtimer_start: hrtimer=c function=hrtimer_wakeup expires=1000090000 softexpires=1000015000 mode=ABS was_armed=0
 hog-20 [000] d.h1. 1.000: hrtimer_expire_entry: hrtimer=a function=hrtimer_wakeup now=1000045000
 hog-20 [000] d.h1. 1.000: hrtimer_expire_entry: hrtimer=b function=hrtimer_wakeup now=1000045000
 hog-20 [000] d.h1. 1.000: hrtimer_expire_entry: hrtimer=c function=hrtimer_wakeup now=1000045000
 probe-10 [000] d..1. 1.100: hrtimer_start: hrtimer=a function=hrtimer_wakeup expires=1100000000 softexpires=1100000000 mode=ABS was_armed=0
 <idle>-0 [000] d.h1. 1.100: hrtimer_expire_entry: hrtimer=a function=hrtimer_wakeup now=1100030000
 probe-13 [001] d..1. 1.000: hrtimer_start: hrtimer=d function=hrtimer_wakeup expires=2500000000 softexpires=2500000000 mode=ABS was_armed=0
 kworker-14 [001] d..1. 1.000: hrtimer_start: hrtimer=e function=hrtimer_wakeup expires=2500000000 softexpires=2500000000 mode=ABS|SOFT was_armed=0
 hog-21 [001] d.h1. 2.500: hrtimer_expire_entry: hrtimer=d function=hrtimer_wakeup now=2500016000
 <idle>-0 [001] ..s1. 2.600: hrtimer_expire_entry: hrtimer=e function=hrtimer_wakeup now=2600000000
 <idle>-0 [001] d.h1. 2.700: hrtimer_expire_entry: hrtimer=f function=tick_nohz_handler now=2700000000
 probe-13 [001] d..1. 2.700: hrtimer_start: hrtimer=g function=tick_nohz_handler expires=2800000000 softexpires=2800000000 mode=ABS|PINNED|HARD was_armed=0
 <idle>-0 [001] d.h1. 2.800: hrtimer_expire_entry: hrtimer=g function=tick_nohz_handler now=2800030000
`
	tl := newTimerLateness(1*s, 2*time.Second)
	for _, l := range strings.Split(trace, "\n") {
		tl.line([]byte(l))
	}
	got := tl.result(map[int]int64{0: 0, 1: 3})
	want := []v1alpha1.TimerTraceCPU{
		// a and b in one interrupt: 45-20 = 25 µs (a's), once; c early;
		// a again, 30 µs, on the idle CPU.
		{CPU: 0, Interrupts: 1, EarlyInSlack: 1, LatenessQuantilesNs: []int64{25000, 25000, 25000, 25000, 25000, 25000, 25000}, SecondMediansNs: []int64{25000},
			IdleInterrupts: 1, IdleLatenessQuantilesNs: []int64{30000, 30000, 30000, 30000, 30000, 30000, 30000}},
		// d 16 µs; e soft, f unseen, g no sleep's: left out.
		{CPU: 1, Interrupts: 1, LostEvents: 3, LatenessQuantilesNs: []int64{16000, 16000, 16000, 16000, 16000, 16000, 16000}, SecondMediansNs: []int64{0, 16000}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("per-CPU lateness (-want +got):\n%s", d)
	}
}

func TestTimerTraceBufferKB(t *testing.T) {
	// Two probes at 1 kHz for 13 s: 2*(2000+1000)*13 events, twice, 80 B.
	if got, want := timerTraceBufferKB(2000, 13*time.Second), int64(12188); got != want {
		t.Errorf("buffer %d KiB, want %d", got, want)
	}
	if got := timerTraceBufferKB(0, time.Millisecond); got != 2048 {
		t.Errorf("buffer %d KiB for nothing, want the least, 2048", got)
	}
	if got := timerTraceBufferKB(1e6, time.Hour); got != 64<<10 {
		t.Errorf("buffer %d KiB for an hour at 1 MHz, want the most, %d", got, 64<<10)
	}
}
