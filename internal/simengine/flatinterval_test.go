package simengine

import "testing"

// TestFlatBalanceIntervalDoubles: sched_balance_rq() (v6.18) doubles
// sd->balance_interval, up to sd->max_interval (2 × sd_weight ms), each time
// a periodic pass finds the domain balanced, and get_sd_balance_interval()
// multiplies it by busy_factor on a busy CPU, in jiffies less one. Two hogs,
// one on each of two CPUs (HZ 250), leave the domain balanced: a busy CPU
// balances every 60 ms, not every 32 ms. The flat model had kept the
// interval at sd_weight ms × busy_factor, which in the validation's mixed
// scenario balanced twice as often and split the ping-pong pair more often
// than the node did (VALIDATION.md, seventeenth session).
func TestFlatBalanceIntervalDoubles(t *testing.T) {
	s := startedSim(t, Input{Node: Node{CPUs: 2, HZ: 250, Kernel: "6.18.44"}, DurationNs: 3e9, Seed: 1,
		Groups: []Group{{Name: "hogs", Tasks: 2}}})
	if s.tasks[0].cpu == s.tasks[1].cpu {
		t.Fatalf("two hogs forked onto one CPU (cpu%d)", s.tasks[0].cpu)
	}
	passes := 0
	last := s.cpus[0].lastBalance
	var gaps []int64
	for s.now < 2e9 {
		s.end = s.now + 4_000_000
		s.loop()
		if lb := s.cpus[0].lastBalance; lb != last {
			if s.now > 200_000_000 && last != never {
				passes++
				gaps = append(gaps, lb-last)
			}
			last = lb
		}
	}
	for _, g := range gaps {
		if g != 60_000_000 {
			t.Errorf("a busy CPU of a balanced two-CPU domain balanced %d ms after the pass before, want 60 (2 × sd_weight ms × busy_factor = 16 jiffies, less one)", g/1_000_000)
			break
		}
	}
	if passes < 25 || passes > 32 {
		t.Errorf("%d periodic balances on CPU0 in 1.8 s, want about 30 (every 60 ms)", passes)
	}
	if bi := s.cpus[0].balanceInterval; bi != 4 {
		t.Errorf("sd->balance_interval %d ms after balanced passes, want max_interval 4", bi)
	}
}
