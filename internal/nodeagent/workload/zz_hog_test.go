package workload

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

func TestZZHogSwitches(t *testing.T) {
	s := startSet(t, Spec{Tasks: []Task{task("h", v1alpha1.Pattern{Type: v1alpha1.PatternHog})}})
	pid := s.PIDs()[0]
	snap := func() string {
		var out []string
		ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, e := range ents {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, e.Name()))
			var v, n string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "voluntary") {
					v = strings.Fields(l)[1]
				}
				if strings.HasPrefix(l, "nonvoluntary") {
					n = strings.Fields(l)[1]
				}
			}
			out = append(out, e.Name()+":"+v+"/"+n)
		}
		return strings.Join(out, " ")
	}
	for range 4 {
		t.Log(snap())
		time.Sleep(time.Second)
	}
}
