package nodeagent

import (
	"testing"
	"time"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func TestNoiseSources(t *testing.T) {
	ms := time.Millisecond
	before := map[int]procCPU{
		10: {name: "kdamond.0", start: 5, cpu: 100 * ms},
		11: {name: "worker", start: 7, cpu: 0},
		12: {name: "go", start: 9, cpu: 500 * ms},     // ended; pid 12 reused below
		13: {name: "idle-ish", start: 9, cpu: 1 * ms}, // too little to name
		14: {name: "sshd", start: 3, cpu: 0},
		15: {name: "compile", start: 20, cpu: 0},
	}
	after := map[int]procCPU{
		10: {name: "kdamond.0", start: 5, cpu: 300 * ms}, // 0.2 s in 2 s: 0.1 CPU
		11: {name: "worker", start: 7, cpu: 1900 * ms},   // a worker: never named
		12: {name: "link", start: 40, cpu: 120 * ms},     // born in the window: all of it, 0.06
		13: {name: "idle-ish", start: 9, cpu: 11 * ms},   // 0.005: below the floor
		14: {name: "sshd", start: 3, cpu: 40 * ms},       // 0.02
		15: {name: "compile", start: 20, cpu: 80 * ms},   // 0.04
		16: {name: "new", start: 41, cpu: 30 * ms},       // 0.015, fourth: cut
	}
	got := noiseSources(before, after, map[int]bool{11: true}, 2)
	want := []v1alpha1.NoiseSource{{Name: "kdamond.0", PID: 10, CPU: 0.1}, {Name: "link", PID: 12, CPU: 0.06}, {Name: "compile", PID: 15, CPU: 0.04}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("source %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if s := FormatNoiseSources(got); s != "kdamond.0 (pid 10) 0.100, link (pid 12) 0.060, compile (pid 15) 0.040" {
		t.Errorf("FormatNoiseSources = %q", s)
	}
	if got := noiseSources(before, after, nil, 0); got != nil {
		t.Errorf("a window of no length named %+v", got)
	}
}
