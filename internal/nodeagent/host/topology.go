package host

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

const cpuSysfs = "/sys/devices/system/cpu"

// DetectTopology reads how the online CPUs share cores, last-level caches
// and packages, from the files the kernel's own topology code fills
// (Documentation/admin-guide/cputopology.rst, Documentation/ABI/testing/
// sysfs-devices-system-cpu):
//
//	cpuN/topology/physical_package_id          the package (socket)
//	cpuN/topology/core_cpus_list               the SMT siblings (thread_siblings_list before 5.7)
//	cpuN/cache/indexK/{level,type,shared_cpu_list}  the caches; the LLC is the highest level
//
// It returns the topology when it is regular — every package with the same
// number of LLCs, every LLC inside one package with the same number of
// cores, every core with the same number of threads — and otherwise nil;
// the string says what was read, assumed, or why nil. Without cache files
// (some virtual machines have none) each package is taken as one LLC.
func DetectTopology(fsys FS, online []int) (*v1alpha1.NodeTopology, string) {
	if len(online) == 0 {
		return nil, "no online CPUs listed"
	}
	isOnline := map[int]bool{}
	for _, c := range online {
		isOnline[c] = true
	}
	pkgOf := map[int]int{}
	coreOf := map[int]string{} // CPU → its sibling set (canonical list)
	llcOf := map[int]string{}  // CPU → its LLC's CPU set
	llcLevel := 0
	noCache := 0
	for _, c := range online {
		dir := fmt.Sprintf("%s/cpu%d", cpuSysfs, c)
		pkg, err := readInt(fsys, dir+"/topology/physical_package_id")
		if err != nil {
			return nil, fmt.Sprintf("cpu%d: %v", c, err)
		}
		pkgOf[c] = pkg
		sib, err := readCPUSet(fsys, dir+"/topology/core_cpus_list", isOnline)
		if err != nil {
			sib, err = readCPUSet(fsys, dir+"/topology/thread_siblings_list", isOnline)
		}
		if err != nil {
			return nil, fmt.Sprintf("cpu%d: SMT siblings: %v", c, err)
		}
		coreOf[c] = sib
		set, level, err := lastLevelCache(fsys, dir+"/cache", isOnline)
		switch {
		case err != nil:
			return nil, fmt.Sprintf("cpu%d: %v", c, err)
		case set == "":
			noCache++
		default:
			llcOf[c] = set
			if llcLevel != 0 && level != llcLevel {
				return nil, fmt.Sprintf("not regular: the last-level cache is L%d on some CPUs and L%d on cpu%d", llcLevel, level, c)
			}
			llcLevel = level
		}
	}
	source := fmt.Sprintf("sysfs: LLC = the L%d cache (cache/index*/shared_cpu_list)", llcLevel)
	switch {
	case noCache == len(online):
		for _, c := range online {
			llcOf[c] = "pkg" + strconv.Itoa(pkgOf[c])
		}
		source = "sysfs: no cache information (cpuN/cache is absent), so each package is taken as one LLC"
	case noCache > 0:
		return nil, "not regular: some CPUs list caches and some do not"
	}

	// Count and check: cores inside LLCs inside packages, all alike.
	llcPkg := map[string]int{}
	coreLLC := map[string]string{}
	coreThreads := map[string]int{}
	for _, c := range online {
		l, core := llcOf[c], coreOf[c]
		if p, ok := llcPkg[l]; ok && p != pkgOf[c] {
			return nil, fmt.Sprintf("not regular: the LLC of cpu%d spans packages %d and %d", c, p, pkgOf[c])
		}
		llcPkg[l] = pkgOf[c]
		if cl, ok := coreLLC[core]; ok && cl != l {
			return nil, fmt.Sprintf("not regular: the SMT siblings of cpu%d (%s) are in different LLCs", c, core)
		}
		coreLLC[core] = l
		coreThreads[core]++
	}
	threads := -1
	for core, n := range coreThreads {
		if want := strings.Count(core, ",") + 1; n != want {
			return nil, fmt.Sprintf("not regular: core %s lists %d siblings but %d are online", core, want, n)
		}
		if threads >= 0 && n != threads {
			return nil, fmt.Sprintf("not regular: cores have %d and %d threads (a hybrid CPU, or SMT off on some cores)", threads, n)
		}
		threads = n
	}
	llcsPerPkg := map[int]int{}
	for _, p := range llcPkg {
		llcsPerPkg[p]++
	}
	llcs := -1
	for p, n := range llcsPerPkg {
		if llcs >= 0 && n != llcs {
			return nil, fmt.Sprintf("not regular: packages have %d and %d LLCs (package %d)", llcs, n, p)
		}
		llcs = n
	}
	coresPerLLC := map[string]int{}
	for _, l := range coreLLC {
		coresPerLLC[l]++
	}
	cores := -1
	for _, n := range coresPerLLC {
		if cores >= 0 && n != cores {
			return nil, fmt.Sprintf("not regular: LLCs hold %d and %d cores", cores, n)
		}
		cores = n
	}
	t := &v1alpha1.NodeTopology{Sockets: int32(len(llcsPerPkg)), LLCsPerSocket: int32(llcs), ThreadsPerCore: int32(threads)}
	source += fmt.Sprintf("; %d package(s) × %d LLC(s) × %d core(s) × %d thread(s) = %d CPUs; one NUMA node per package assumed",
		t.Sockets, t.LLCsPerSocket, cores, t.ThreadsPerCore, len(online))
	return t, source
}

// lastLevelCache returns the CPU set of the highest-level data or unified
// cache of a CPU and its level, or "" when the CPU lists no caches.
func lastLevelCache(fsys FS, dir string, online map[int]bool) (string, int, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return "", 0, nil // no cache directory
	}
	best, bestLevel := "", 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "index") {
			continue
		}
		idx := dir + "/" + e.Name()
		level, err := readInt(fsys, idx+"/level")
		if err != nil {
			return "", 0, err
		}
		typ, err := fsys.ReadFile(idx + "/type")
		if err != nil {
			return "", 0, err
		}
		if strings.TrimSpace(string(typ)) == "Instruction" || level <= bestLevel {
			continue
		}
		set, err := readCPUSet(fsys, idx+"/shared_cpu_list", online)
		if err != nil {
			return "", 0, err
		}
		best, bestLevel = set, level
	}
	return best, bestLevel, nil
}

func readInt(fsys FS, path string) (int, error) {
	b, err := fsys.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// readCPUSet reads a CPU list file and returns its online CPUs in canonical
// form ("0,8"), an identity for the set.
func readCPUSet(fsys FS, path string, online map[int]bool) (string, error) {
	b, err := fsys.ReadFile(path)
	if err != nil {
		return "", err
	}
	cpus, err := parseCPUList(string(b))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	var on []string
	sort.Ints(cpus)
	for _, c := range cpus {
		if online[c] {
			on = append(on, strconv.Itoa(c))
		}
	}
	if len(on) == 0 {
		return "", fmt.Errorf("%s lists no online CPU", path)
	}
	return strings.Join(on, ","), nil
}
