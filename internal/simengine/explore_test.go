package simengine

import (
	"runtime"
	"testing"
)

func flatMixed() Input {
	flat := benchMixed64()
	for i := range flat.Groups {
		flat.Groups[i].Session = "s"
		flat.Groups[i].Replicas = 0
		flat.Groups[i].CPUWeight = 0
	}
	flat.Groups[0].Tasks = 176
	flat.Groups[1].Tasks = 128
	flat.Groups[2].Tasks = 64
	flat.Groups[3].Tasks = 16
	flat.Groups[4].Tasks = 64
	flat.Knobs.Autogroup = boolp(false)
	return flat
}

func TestExplore(t *testing.T) {
	runtime.LockOSThread()
	for i := 0; i < 6; i++ {
		mustRun(t, flatMixed())
	}
}
