package host

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// cpuFiles is what sysfs shows for one CPU: package, SMT siblings and its
// caches (level, type, shared_cpu_list), in index order.
type cpuFiles struct {
	pkg    int
	sibs   string
	caches [][3]string
}

// writeSysfs writes the topology and cache files of cpus 0..len-1 under a
// temporary root; oldNames writes thread_siblings_list instead of
// core_cpus_list (kernels before 5.7).
func writeSysfs(t *testing.T, cpus []cpuFiles, oldNames bool) FS {
	t.Helper()
	root := t.TempDir()
	w := func(p, content string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for c, f := range cpus {
		d := fmt.Sprintf("/sys/devices/system/cpu/cpu%d", c)
		w(d+"/topology/physical_package_id", fmt.Sprint(f.pkg))
		w(d+"/topology/core_id", "0")
		if oldNames {
			w(d+"/topology/thread_siblings_list", f.sibs)
		} else {
			w(d+"/topology/core_cpus_list", f.sibs)
			w(d+"/topology/thread_siblings_list", f.sibs)
		}
		for i, cache := range f.caches {
			idx := fmt.Sprintf("%s/cache/index%d/", d, i)
			w(idx+"level", cache[0])
			w(idx+"type", cache[1])
			w(idx+"shared_cpu_list", cache[2])
		}
	}
	return NewFS(root)
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// xeon2S is the enumeration of a two-socket Intel Xeon Gold 6130 (16 cores
// × 2 threads per socket, one L3 per socket): the BIOS lists every core's
// first thread socket by socket (cpu0-15 socket 0, cpu16-31 socket 1),
// then the second threads in the same order (cpu32-63), so the siblings of
// cpu n are n and n+32, and socket 0's L3 is shared by 0-15,32-47.
func xeon2S() []cpuFiles {
	var out []cpuFiles
	for c := 0; c < 64; c++ {
		core := c % 32
		pkg := core / 16
		l3 := fmt.Sprintf("%d-%d,%d-%d", pkg*16, pkg*16+15, pkg*16+32, pkg*16+47)
		sib := fmt.Sprintf("%d,%d", core, core+32)
		out = append(out, cpuFiles{pkg: pkg, sibs: sib, caches: [][3]string{
			{"1", "Data", sib}, {"1", "Instruction", sib}, {"2", "Unified", sib}, {"3", "Unified", l3},
		}})
	}
	return out
}

// epyc7302P is a one-socket AMD EPYC 7302P: 16 cores × 2 threads in 4
// CCDs of 2 CCXs, each CCX 2 cores with its own 16 MB L3 (8 LLCs);
// siblings are n and n+16, so CCX k shares its L3 over 2k-2k+1,2k+16-2k+17.
func epyc7302P() []cpuFiles {
	var out []cpuFiles
	for c := 0; c < 32; c++ {
		core := c % 16
		ccx := core / 2
		sib := fmt.Sprintf("%d,%d", core, core+16)
		l3 := fmt.Sprintf("%d-%d,%d-%d", 2*ccx, 2*ccx+1, 2*ccx+16, 2*ccx+17)
		out = append(out, cpuFiles{pkg: 0, sibs: sib, caches: [][3]string{
			{"1", "Data", sib}, {"1", "Instruction", sib}, {"2", "Unified", sib}, {"3", "Unified", l3},
		}})
	}
	return out
}

func TestDetectTopologyFixtures(t *testing.T) {
	for _, c := range []struct {
		name   string
		cpus   []cpuFiles
		online []int
		old    bool
		want   *v1alpha1.NodeTopology
		why    string // in the source string
	}{
		{"two-socket Xeon, SMT", xeon2S(), seq(64), false, &v1alpha1.NodeTopology{Sockets: 2, LLCsPerSocket: 1, ThreadsPerCore: 2}, "L3"},
		{"two-socket Xeon, pre-5.7 names", xeon2S(), seq(64), true, &v1alpha1.NodeTopology{Sockets: 2, LLCsPerSocket: 1, ThreadsPerCore: 2}, "16 core(s)"},
		{"EPYC 7302P, 8 CCXs", epyc7302P(), seq(32), false, &v1alpha1.NodeTopology{Sockets: 1, LLCsPerSocket: 8, ThreadsPerCore: 2}, "2 core(s)"},
		// SMT switched off (nosmt): the second threads are offline.
		{"EPYC 7302P, nosmt", epyc7302P(), seq(16), false, &v1alpha1.NodeTopology{Sockets: 1, LLCsPerSocket: 8, ThreadsPerCore: 1}, "× 1 thread(s)"},
		// One socket's second threads offline: cores differ.
		{"Xeon, half the siblings offline", xeon2S(), append(seq(48), []int{}...), false, nil, "threads"},
		// A guest with no cache directory (as this project's development VM).
		{"VM without caches", []cpuFiles{{0, "0", nil}, {0, "1", nil}}, seq(2), false, &v1alpha1.NodeTopology{Sockets: 1, LLCsPerSocket: 1, ThreadsPerCore: 1}, "no cache information"},
		// A hybrid CPU: 2 P-cores with SMT and 4 E-cores without, one L3.
		{"hybrid P+E cores", []cpuFiles{
			{0, "0-1", [][3]string{{"3", "Unified", "0-7"}}}, {0, "0-1", [][3]string{{"3", "Unified", "0-7"}}},
			{0, "2-3", [][3]string{{"3", "Unified", "0-7"}}}, {0, "2-3", [][3]string{{"3", "Unified", "0-7"}}},
			{0, "4", [][3]string{{"3", "Unified", "0-7"}}}, {0, "5", [][3]string{{"3", "Unified", "0-7"}}},
			{0, "6", [][3]string{{"3", "Unified", "0-7"}}}, {0, "7", [][3]string{{"3", "Unified", "0-7"}}},
		}, seq(8), false, nil, "hybrid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, src := DetectTopology(writeSysfs(t, c.cpus, c.old), c.online)
			switch {
			case c.want == nil && got != nil:
				t.Fatalf("got %+v, want nil (%s)", *got, src)
			case c.want != nil && (got == nil || *got != *c.want):
				t.Fatalf("got %+v (%s), want %+v", got, src, *c.want)
			}
			if !strings.Contains(src, c.why) {
				t.Errorf("source %q does not say %q", src, c.why)
			}
		})
	}
}

// This machine's sysfs, checked against /proc/cpuinfo (an independent
// report of the same kernel data, x86): the packages ("physical id") and
// the threads per core ("siblings" / "cpu cores").
func TestDetectTopologyThisMachine(t *testing.T) {
	fsys := NewFS("/")
	b, err := fsys.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatal(err)
	}
	online, err := parseCPUList(string(b))
	if err != nil {
		t.Fatal(err)
	}
	got, src := DetectTopology(fsys, online)
	t.Logf("%+v: %s", got, src)
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pkgs := map[string]bool{}
	siblings, cores := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "physical id":
			pkgs[v] = true
		case "siblings":
			fmt.Sscan(v, &siblings)
		case "cpu cores":
			fmt.Sscan(v, &cores)
		}
	}
	if len(pkgs) == 0 || siblings == 0 || cores == 0 {
		t.Fatalf("/proc/cpuinfo has no physical id/siblings/cpu cores lines to compare with (not x86?)")
	}
	if got == nil {
		t.Fatalf("no topology for this machine: %s", src)
	}
	if int(got.Sockets) != len(pkgs) || int(got.ThreadsPerCore) != siblings/cores {
		t.Errorf("sysfs says %d sockets × %d threads per core, /proc/cpuinfo %d packages × %d/%d", got.Sockets, got.ThreadsPerCore, len(pkgs), siblings, cores)
	}
	if n := int(got.Sockets * got.LLCsPerSocket * got.ThreadsPerCore); len(online)%n != 0 {
		t.Errorf("%d online CPUs are not a multiple of %d", len(online), n)
	}
	caps, err := Detect(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if got.SocketCount()*got.LLCsPerSocketCount()*got.ThreadsPerCoreCount() == 1 {
		if caps.Topology != nil {
			t.Errorf("flat machine: capabilities carry topology %+v, want none", *caps.Topology)
		}
	} else if caps.Topology == nil || *caps.Topology != *got {
		t.Errorf("capabilities topology %+v, want %+v", caps.Topology, *got)
	}
	if caps.TopologySource != src {
		t.Errorf("capabilities topologySource %q, want %q", caps.TopologySource, src)
	}
}

// A vendor kernel's scheduler sysctl is reported with its value; mainline's
// are not, nor are other sysctls.
func TestNonMainlineSchedSysctls(t *testing.T) {
	root := t.TempDir()
	for name, v := range map[string]string{
		"sched_autogroup_enabled": "1\n", "sched_rt_runtime_us": "950000\n", "sched_schedstats": "0\n",
		"sched_vcpu_pack": "15\n", "sched_pelt_multiplier": "4\n", "numa_balancing": "0\n",
	} {
		if err := os.MkdirAll(filepath.Join(root, "proc/sys/kernel"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "proc/sys/kernel", name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "proc/sys/kernel/sched_domain/cpu0"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := nonMainlineSchedSysctls(NewFS(root))
	if want := []string{"sched_pelt_multiplier=4", "sched_vcpu_pack=15"}; !slices.Equal(got, want) {
		t.Errorf("nonMainlineSchedSysctls = %q, want %q", got, want)
	}
	if got := nonMainlineSchedSysctls(NewFS(t.TempDir())); got != nil {
		t.Errorf("a node without /proc/sys/kernel listed %q", got)
	}
}

// The CPU is named from the first processor's block of /proc/cpuinfo.
func TestCPUModel(t *testing.T) {
	for _, c := range []struct{ cpuinfo, want string }{
		{"processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2694.853\n\nprocessor\t: 1\nmodel name\t: other\ncpu MHz\t\t: 1.000\n", "AMD EPYC, 2694.853 MHz"},
		{"processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n\n", "0xd0c"},
		{"processor\t: 0\n", ""},
	} {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "proc/cpuinfo"), []byte(c.cpuinfo), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := cpuModel(NewFS(root)); got != c.want {
			t.Errorf("cpuModel(%q) = %q, want %q", c.cpuinfo, got, c.want)
		}
	}
	if got := cpuModel(NewFS(t.TempDir())); got != "" {
		t.Errorf("no /proc/cpuinfo: %q", got)
	}
}
