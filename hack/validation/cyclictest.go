package main

import (
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/schedlab/schedlab/internal/cyclictest"
)

// RefRun is one run of cyclictest stored beside the schedlab runs: a
// directory holding cyclictest.txt (what `cyclictest -h N` printed), and if
// they were kept, start (the time it started, RFC 3339) and loadavg (a copy
// of /proc/loadavg just before). The directory's name is the run's variant
// ("autogroup-on", "autogroup-off"): runs are pooled by it.
type RefRun struct {
	Dir, Variant, Start, Load string
	H                         *cyclictest.Histogram
}

// refThresholdsUs are the late-fraction thresholds of the table, in µs.
var refThresholdsUs = [3]int{100, 1000, 10000}

// findRefRuns reads every cyclictest.txt under root, in the order of their
// start (then their path).
func findRefRuns(root string) ([]*RefRun, error) {
	var out []*RefRun
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cyclictest.txt" {
			return err
		}
		dir := filepath.Dir(p)
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h, err := cyclictest.Parse(f)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		r := &RefRun{Variant: filepath.Base(dir), H: h}
		if r.Dir, err = filepath.Rel(root, dir); err != nil {
			return err
		}
		if b, err := os.ReadFile(filepath.Join(dir, "start")); err == nil {
			r.Start = strings.TrimSpace(string(b))
		}
		if b, err := os.ReadFile(filepath.Join(dir, "loadavg")); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				r.Load = f[0]
			}
		}
		out = append(out, r)
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Start != out[j].Start {
			return out[i].Start < out[j].Start
		}
		return out[i].Dir < out[j].Dir
	})
	return out, err
}

// refCell is a fraction with its count: "0.0113 (226)".
func refCell(k, n int64) string {
	return fmt.Sprintf("%.4f (%d)", float64(k)/float64(n), k)
}

// WriteCyclictest prints the reference runs one by one, then pooled per
// variant.
func WriteCyclictest(w io.Writer, refs []*RefRun) {
	fmt.Fprintln(w, "| run | variant | load at start | wake-ups | p50 / p99 µs | beyond 100 µs (count) | beyond 1 ms | beyond 10 ms |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	type pool struct {
		n int64    // wake-ups
		k [3]int64 // of them beyond each threshold
	}
	pools := map[string]*pool{}
	var variants []string
	for _, r := range refs {
		n := r.H.Total()
		p := pools[r.Variant]
		if p == nil {
			p = &pool{}
			pools[r.Variant] = p
			variants = append(variants, r.Variant)
		}
		cells := make([]string, 3)
		p.n += n
		for i, us := range refThresholdsUs {
			k := r.H.Beyond(us)
			p.k[i] += k
			cells[i] = refCell(k, n)
		}
		start := r.Dir
		if r.Start != "" {
			start = r.Start
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %s / %s | %s | %s | %s |\n", start, r.Variant, r.Load, n,
			quantileUs(r.H.Quantile(0.5)), quantileUs(r.H.Quantile(0.99)), cells[0], cells[1], cells[2])
	}
	fmt.Fprintln(w)
	for _, v := range variants {
		p := pools[v]
		fmt.Fprintf(w, "Pooled, %s: %d wake-ups; beyond 100 µs %s, beyond 1 ms %s, beyond 10 ms %s.\n", v, p.n,
			refCell(p.k[0], p.n), refCell(p.k[1], p.n), refCell(p.k[2], p.n))
	}
}

// quantileUs prints a histogram quantile; beyond the histogram it says so.
func quantileUs(us float64) string {
	if math.IsInf(us, 1) {
		return "overflow"
	}
	return fmt.Sprintf("%.0f", us)
}
