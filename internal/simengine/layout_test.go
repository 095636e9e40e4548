package simengine

import (
	"testing"
	"unsafe"
)

// TestHotLayout checks the cache-line layout of the structs the event loop
// walks (see BENCHMARKS.md): each is a whole number of 64-byte lines, so
// that an array element's lines start where its fields were placed, and the
// fields of the hot paths share the first line.
func TestHotLayout(t *testing.T) {
	const line = 64
	sizes := []struct {
		name string
		size uintptr
		want uintptr
	}{
		{"entity", unsafe.Sizeof(entity{}), 2 * line},
		{"cfsRq", unsafe.Sizeof(cfsRq{}), 3 * line},
		{"task", unsafe.Sizeof(task{}), 5 * line},
		{"cpuState", unsafe.Sizeof(cpuState{}), 4 * line},
		{"treeNode", unsafe.Sizeof(treeNode{}), line / 2},
	}
	for _, s := range sizes {
		if s.size != s.want {
			t.Errorf("%s is %d bytes, want %d: a field was added or moved; keep the hot fields in the first line and adjust the padding", s.name, s.size, s.want)
		}
	}
	var e entity
	var r cfsRq
	var k task
	var c cpuState
	first := []struct {
		name string
		end  uintptr // offset of the field's last byte
	}{
		{"entity.vruntime", unsafe.Offsetof(e.vruntime) + 7},
		{"entity.sumExec", unsafe.Offsetof(e.sumExec) + 7},
		{"entity.task", unsafe.Offsetof(e.task) + 3},
		{"entity.onRq", unsafe.Offsetof(e.onRq)},
		{"entity.delayed", unsafe.Offsetof(e.delayed)},
		{"entity.protectOK", unsafe.Offsetof(e.protectOK)},
		{"entity.protect", unsafe.Offsetof(e.protect) + 7},
		{"cfsRq.currStart", unsafe.Offsetof(r.currStart) + 7},
		{"cfsRq.leftV", unsafe.Offsetof(r.leftV) + 7},
		{"cfsRq.avgLoad", unsafe.Offsetof(r.avgLoad) + 7},
		{"cfsRq.hNr", unsafe.Offsetof(r.hNr) + 3},
		{"cfsRq.onList (second line)", unsafe.Offsetof(r.onList) - line},
		{"task.rq", unsafe.Offsetof(k.rq) + 3},
		{"task.wakeAt", unsafe.Offsetof(k.wakeAt) + 7},
		{"task.pl", unsafe.Offsetof(k.pl) + unsafe.Sizeof(k.pl) - 1},
		{"cpuState.ttwuPending", unsafe.Offsetof(c.ttwuPending) + 3},
		{"cpuState.busyNs", unsafe.Offsetof(c.busyNs) + 7},
	}
	for _, f := range first {
		if f.end >= line {
			t.Errorf("%s ends at byte %d, outside the first cache line", f.name, f.end)
		}
	}
}

// task.rq caches the queue of the task's entity (placeTaskOnCPU sets both,
// and nothing else moves a task's entity): after runs with migrations the
// two agree for every task.
func TestTaskQueueCache(t *testing.T) {
	for _, sch := range bothSchedulers {
		s := startedSim(t, goldenInput(sch))
		first := make([]int32, len(s.tasks))
		for i := range s.tasks {
			first[i] = s.tasks[i].cpu
		}
		moved := 0
		end := s.end
		for step := int64(1); step <= 4; step++ {
			s.end = end * step / 4
			s.loop()
			for i := range s.tasks {
				k := &s.tasks[i]
				if got, want := k.rq, s.ents[k.se].rq; got != want {
					t.Fatalf("%s: task %d at %d ns: task.rq = %d, its entity's queue is %d", sch, i, s.now, got, want)
				}
				if k.cpu != first[i] {
					moved++
				}
			}
		}
		if moved == 0 {
			t.Fatalf("%s: no task changed CPU, so the cache was never tested", sch)
		}
	}
}
