package host

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/schedlab/schedlab/api/v1alpha1"
)

// ReasonLockedDown is the capability reason for a debugfs knob that kernel
// lockdown forbids.
const ReasonLockedDown = "locked down (kernel lockdown forbids debugfs)"

// Cgroup versions as NodeCapabilities reports them.
const (
	CgroupV1 = "v1"
	CgroupV2 = "v2"
)

// Detect describes the node: CPUs and their topology (DetectTopology),
// kernel, scheduler, tick, preemption model, the cpu controller's cgroup hierarchy, every catalogue knob (exists,
// readable, writable, value, reason) and the scheduler features. It changes
// nothing: writability is probed by opening for write and closing.
func Detect(fsys FS) (*v1alpha1.NodeCapabilities, error) {
	c := &v1alpha1.NodeCapabilities{}

	if b, err := fsys.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		cpus, err := parseCPUList(string(b))
		if err != nil {
			return nil, fmt.Errorf("online CPUs: %w", err)
		}
		c.CPUs = int32(len(cpus))
		c.Topology, c.TopologySource = DetectTopology(fsys, cpus)
		if c.Topology.IsFlat() {
			c.Topology = nil // flat: the simulator's default shape
		}
		if len(c.TopologySource) > 512 {
			c.TopologySource = c.TopologySource[:512]
		}
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		var allowed []int
		for i := 0; i < len(set)*64; i++ {
			if set.IsSet(i) {
				allowed = append(allowed, i)
			}
		}
		c.AllowedCPUs = formatCPUList(allowed)
		if c.CPUs == 0 {
			c.CPUs = int32(len(allowed))
		}
	}

	kv, release, err := kernelRelease(fsys)
	if err != nil {
		return nil, err
	}
	c.KernelVersion = release
	c.Scheduler = kv.Scheduler()

	mounts, err := readMounts(fsys)
	if err != nil {
		return nil, err
	}
	c.CgroupVersion, c.CgroupCPUPath = cpuController(fsys, mounts)
	debugfsMounted := false
	for _, m := range mounts {
		if m.Mountpoint == debugfsDir && m.FSType == "debugfs" {
			debugfsMounted = true
		}
	}

	for _, e := range catalogue(kv) {
		c.Knobs = append(c.Knobs, probeKnob(fsys, e, debugfsMounted))
	}

	cfg := readKernelConfig(fsys)
	if hz, err := strconv.Atoi(cfg["CONFIG_HZ"]); err == nil {
		c.HZ = int32(hz)
	}
	c.Preempt = preemptModel(fsys, c.Knobs, cfg)
	c.Features, c.FeaturesSource = detectFeatures(fsys, kv, c.Knobs)
	c.NonMainlineSchedSysctls = nonMainlineSchedSysctls(fsys)
	c.CPUModel = cpuModel(fsys)
	return c, nil
}

// cpuModel names the CPU as /proc/cpuinfo does: the first processor's
// "model name" (x86) or "Hardware"/"CPU part" (arm64), with its "cpu MHz"
// where given, as "AMD EPYC, 2694.853 MHz"; "" when none is listed. With
// the kernel release it tells one host from another: a virtual machine's
// node figures move with the host under it.
func cpuModel(fsys FS) string {
	b, err := fsys.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	var name, mhz string
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			if name != "" && strings.TrimSpace(line) == "" {
				break // the first processor's block ends
			}
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "model name", "Hardware", "CPU part":
			if name == "" {
				name = v
			}
		case "cpu MHz":
			if mhz == "" {
				mhz = v
			}
		}
	}
	if name == "" {
		return ""
	}
	if mhz != "" {
		name += ", " + mhz + " MHz"
	}
	if len(name) > 128 {
		name = name[:128]
	}
	return name
}

// mainlineSchedSysctls are the kernel.sched_* sysctls mainline kernels
// have had, 4.x to 6.18 (kernel/sched/core.c, fair.c, rt.c, deadline.c,
// topology.c, autogroup.c; kernel/sysctl.c before 6.x moved them;
// arch/x86 for sched_itmt_enabled). The CFS tunables of sched_latency_ns
// and its kin left /proc/sys for debugfs in 5.13.
var mainlineSchedSysctls = map[string]bool{
	"sched_autogroup_enabled": true, "sched_cfs_bandwidth_slice_us": true, "sched_child_runs_first": true,
	"sched_deadline_period_max_us": true, "sched_deadline_period_min_us": true, "sched_energy_aware": true,
	"sched_rr_timeslice_ms": true, "sched_rt_period_us": true, "sched_rt_runtime_us": true, "sched_schedstats": true,
	"sched_util_clamp_max": true, "sched_util_clamp_min": true, "sched_util_clamp_min_rt_default": true,
	"sched_itmt_enabled": true, "sched_latency_ns": true, "sched_min_granularity_ns": true,
	"sched_wakeup_granularity_ns": true, "sched_migration_cost_ns": true, "sched_nr_migrate": true,
	"sched_tunable_scaling": true, "sched_domain": true, "sched_time_avg_ms": true, "sched_shares_window_ns": true,
	"sched_numa_balancing_scan_delay_ms": true, "sched_numa_balancing_scan_period_min_ms": true,
	"sched_numa_balancing_scan_period_max_ms": true, "sched_numa_balancing_scan_size_mb": true,
}

// maxNonMainlineSysctls bounds the list a node reports.
const maxNonMainlineSysctls = 16

// nonMainlineSchedSysctls lists the kernel.sched_* sysctls of this node
// that no mainline kernel has, as "name=value" ("name" alone when it cannot
// be read), sorted: a vendor's scheduler changes, which the simulator (a
// model of mainline fair.c) does not know. A node that reports any
// measures a scheduler the predictions may not describe.
func nonMainlineSchedSysctls(fsys FS) []string {
	ents, err := fsys.ReadDir("/proc/sys/kernel")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "sched_") || mainlineSchedSysctls[name] {
			continue
		}
		if b, err := fsys.ReadFile("/proc/sys/kernel/" + name); err == nil && !e.IsDir() {
			name += "=" + strings.Join(strings.Fields(string(b)), " ")
		}
		out = append(out, v1alpha1.Truncate(name, 128))
	}
	sort.Strings(out)
	if len(out) > maxNonMainlineSysctls {
		out = out[:maxNonMainlineSysctls]
	}
	return out
}

// kernelRelease reads the kernel release from procfs (so test trees can set
// it), falling back to uname.
func kernelRelease(fsys FS) (KernelVersion, string, error) {
	release := ""
	if b, err := fsys.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		release = strings.TrimSpace(string(b))
	} else {
		var u unix.Utsname
		if err := unix.Uname(&u); err != nil {
			return KernelVersion{}, "", fmt.Errorf("kernel version: %w", err)
		}
		release = unix.ByteSliceToString(u.Release[:])
	}
	kv, err := ParseKernelVersion(release)
	return kv, release, err
}

func readMounts(fsys FS) ([]*mountinfo.Info, error) {
	b, err := fsys.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("mounts: %w", err)
	}
	mounts, err := mountinfo.GetMountsFromReader(bytes.NewReader(b), nil)
	if err != nil {
		return nil, err
	}
	// An agent in a container sees the host's file systems under its root
	// (/host/sys/fs/cgroup): mount points are made host paths again.
	if root := filepath.Clean(fsys.Root()); root != "/" {
		for _, m := range mounts {
			if rel, ok := strings.CutPrefix(m.Mountpoint, root+"/"); ok {
				m.Mountpoint = "/" + rel
			}
		}
	}
	return mounts, nil
}

// cpuController finds the hierarchy of the cpu controller: cgroup v2 when
// the unified hierarchy offers "cpu" in its cgroup.controllers, else the v1
// hierarchy mounted with the cpu option.
func cpuController(fsys FS, mounts []*mountinfo.Info) (version, path string) {
	for _, m := range mounts {
		if m.FSType != "cgroup2" {
			continue
		}
		if b, err := fsys.ReadFile(m.Mountpoint + "/cgroup.controllers"); err == nil {
			for _, f := range strings.Fields(string(b)) {
				if f == "cpu" {
					return CgroupV2, m.Mountpoint
				}
			}
		}
	}
	for _, m := range mounts {
		if m.FSType != "cgroup" {
			continue
		}
		for _, o := range strings.Split(m.VFSOptions, ",") {
			if o == "cpu" {
				return CgroupV1, m.Mountpoint
			}
		}
	}
	return "", ""
}

// probeKnob fills a capability without changing anything.
func probeKnob(fsys FS, e catalogueEntry, debugfsMounted bool) v1alpha1.KnobCapability {
	k := e.knob
	kc := v1alpha1.KnobCapability{Name: k.Name(), Path: k.Path()}
	onDebugfs := strings.HasPrefix(k.Path(), debugfsDir+"/")
	if _, err := fsys.Stat(k.Path()); err != nil {
		switch {
		case e.absent != "":
			kc.Reason = e.absent
		case onDebugfs && !debugfsMounted:
			kc.Reason = "debugfs is not mounted at " + debugfsDir
		case errors.Is(err, fs.ErrNotExist):
			kc.Reason = "not in this kernel (no " + k.Path() + ")"
		default:
			kc.Reason = err.Error()
		}
		return kc
	}
	kc.Exists = true
	v, err := k.Read(fsys)
	switch {
	case err == nil:
		kc.Readable = true
		kc.Value = v
	case onDebugfs && isPerm(err):
		kc.Reason = ReasonLockedDown
	default:
		kc.Reason = "not readable: " + err.Error()
	}
	err = fsys.ProbeWrite(k.Path())
	switch {
	case err == nil:
		kc.Writable = true
	case onDebugfs && isPerm(err):
		kc.Reason = ReasonLockedDown
	case kc.Reason == "":
		kc.Reason = "not writable: " + err.Error()
	}
	return kc
}

// readKernelConfig reads /proc/config.gz into CONFIG_X → value ("y", "250").
func readKernelConfig(fsys FS) map[string]string {
	cfg := map[string]string{}
	b, err := fsys.ReadFile("/proc/config.gz")
	if err != nil {
		return cfg
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return cfg
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return cfg
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && strings.HasPrefix(k, "CONFIG_") {
			cfg[k] = strings.Trim(v, `"`)
		}
	}
	return cfg
}

// preemptModel is the current preemption model: the debugfs preempt file
// where readable; else, on a dynamic-preemption kernel, preempt= on the
// command line or the configured default; else the configured model; else
// unknown ("").
func preemptModel(fsys FS, knobs []v1alpha1.KnobCapability, cfg map[string]string) v1alpha1.PreemptModel {
	for _, k := range knobs {
		if k.Name == KnobPreempt && k.Readable {
			if m := preemptFromName(k.Value); m != "" {
				return m
			}
		}
	}
	if cfg["CONFIG_PREEMPT_DYNAMIC"] == "y" {
		if b, err := fsys.ReadFile("/proc/cmdline"); err == nil {
			for _, f := range strings.Fields(string(b)) {
				if v, ok := strings.CutPrefix(f, "preempt="); ok {
					if m := preemptFromName(v); m != "" {
						return m
					}
				}
			}
		}
	}
	switch {
	case cfg["CONFIG_PREEMPT_RT"] == "y":
		return v1alpha1.PreemptFull
	case cfg["CONFIG_PREEMPT_LAZY"] == "y":
		return v1alpha1.PreemptLazy
	case cfg["CONFIG_PREEMPT"] == "y":
		return v1alpha1.PreemptFull
	case cfg["CONFIG_PREEMPT_VOLUNTARY"] == "y":
		return v1alpha1.PreemptVoluntary
	case cfg["CONFIG_PREEMPT_NONE"] == "y":
		return v1alpha1.PreemptNone
	}
	return ""
}

func preemptFromName(s string) v1alpha1.PreemptModel {
	for _, m := range []v1alpha1.PreemptModel{v1alpha1.PreemptNone, v1alpha1.PreemptVoluntary, v1alpha1.PreemptFull, v1alpha1.PreemptLazy} {
		if strings.EqualFold(string(m), strings.TrimSpace(s)) {
			return m
		}
	}
	return ""
}

// featureNames are the kernel's scheduler feature names in bit order
// (kernel/sched/features.h), by kernel major.minor, for decoding the
// sysctl_sched_features bitmask where only /sys/kernel/debug/sched/debug is
// readable. Only verified tables belong here; a kernel without one gets the
// raw bitmask in FeaturesSource and no names.
var featureNames = map[string][]string{}

// detectFeatures reads the scheduler features: the debugfs features file, or
// the sysctl_sched_features bitmask of the sched debug file, or says why not.
func detectFeatures(fsys FS, kv KernelVersion, knobs []v1alpha1.KnobCapability) (map[string]bool, string) {
	why := ""
	for _, k := range knobs {
		if k.Name == KnobFeatures {
			if k.Readable {
				return parseFeatures(k.Value), featuresPath
			}
			why = featuresPath + ": " + k.Reason
		}
	}
	b, err := fsys.ReadFile(schedDebugPath)
	if err != nil {
		if isPerm(err) {
			return nil, why + "; " + schedDebugPath + ": " + ReasonLockedDown
		}
		return nil, why + "; " + schedDebugPath + " not readable"
	}
	mask, ok := sysctlSchedFeatures(string(b))
	if !ok {
		return nil, why + "; no sysctl_sched_features line in " + schedDebugPath
	}
	names, ok := featureNames[kv.String()]
	if !ok {
		return nil, fmt.Sprintf("%s; sysctl_sched_features = %#x in %s, but no verified feature name table for kernel %s", why, mask, schedDebugPath, kv)
	}
	m := decodeFeatures(mask, names)
	return m, fmt.Sprintf("sysctl_sched_features = %#x in %s, decoded with the kernel %s names", mask, schedDebugPath, kv)
}

// sysctlSchedFeatures finds "  .sysctl_sched_features : 99674079".
func sysctlSchedFeatures(s string) (uint64, bool) {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != ".sysctl_sched_features" {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		return n, err == nil
	}
	return 0, false
}

func decodeFeatures(mask uint64, names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for i, n := range names {
		m[n] = mask&(1<<uint(i)) != 0
	}
	return m
}

// parseCPUList parses "0-3,8,10-11".
func parseCPUList(s string) ([]int, error) {
	var out []int
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("cpu list %q: %w", s, err)
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

// formatCPUList formats CPUs as "0-3,8".
func formatCPUList(cpus []int) string {
	sort.Ints(cpus)
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Capability finds a knob's capability by name.
func Capability(c *v1alpha1.NodeCapabilities, name string) (v1alpha1.KnobCapability, bool) {
	for _, k := range c.Knobs {
		if k.Name == name {
			return k, true
		}
	}
	return v1alpha1.KnobCapability{}, false
}
