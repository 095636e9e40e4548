package simengine

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestValidationDocTable checks VALIDATION.md's current table: at least 8
// scenarios, each a file the campaign ran (testdata/validation or
// config/samples), every difference the predicted less the measured CPU,
// every verdict the one its figures give under the rules the document
// states (CPU within 0.03; a late fraction within a factor 2 when its
// measured count is 10 or more, else judged on Poisson intervals of the
// counts), and a measured count behind every fraction.
func TestValidationDocTable(t *testing.T) {
	b, err := os.ReadFile("VALIDATION.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := docTableRows(t, string(b))
	if len(rows) == 0 {
		t.Fatal(`no rows under "### The table" in VALIDATION.md`)
	}
	scenarios := map[string]bool{}
	scenario := ""
	for _, c := range rows {
		if len(c) != 14 {
			t.Fatalf("row of %d cells, want 14: %q", len(c), c)
		}
		if c[0] != "" {
			scenario = c[0]
		}
		if scenario == "" {
			t.Fatalf("a row before the first scenario: %q", c)
		}
		if !scenarios[scenario] {
			scenarios[scenario] = true
			found := false
			for _, p := range []string{filepath.Join("testdata", "validation", scenario+".yaml"), filepath.Join("..", "..", "config", "samples", scenario+".yaml")} {
				if _, err := os.Stat(p); err == nil {
					found = true
				}
			}
			if !found {
				t.Errorf("scenario %s: no testdata/validation/%[1]s.yaml nor config/samples/%[1]s.yaml", scenario)
			}
		}
		where := scenario + "/" + c[1] + "/" + c[2]
		meas := docNum(t, where, strings.Split(c[4], " ± ")[0])
		pred := docNum(t, where, strings.Split(c[5], " (")[0])
		diff := docNum(t, where, c[6])
		if math.Abs(diff-(pred-meas)) > 0.0011 {
			t.Errorf("%s: difference %+.3f, but predicted %.3f − measured %.3f = %+.3f", where, diff, pred, meas, pred-meas)
		}
		if want := verdict(math.Abs(diff) <= 0.03); c[7] != want {
			t.Errorf("%s: CPU verdict %q for a difference of %+.3f, want %q", where, c[7], diff, want)
		}
		for i, th := range []string{"100 µs", "1 ms", "10 ms"} {
			cell := c[11+i]
			if cell == "" {
				continue
			}
			m := docLateCell.FindStringSubmatch(cell)
			if m == nil {
				t.Errorf("%s beyond %s: cell %q is not \"measured (count) / predicted: verdict rule\"", where, th, cell)
				continue
			}
			mf, k, pf := docNum(t, where, m[1]), docNum(t, where, m[2]), docNum(t, where, m[3])
			simK, simN, got, rule := m[4], m[5]+m[6], m[7], m[8]
			switch {
			case rule == "(both 0)":
				if k != 0 || pf != 0 || got != "holds" {
					t.Errorf("%s beyond %s: %q, but measured %.0f events, predicted %g", where, th, cell, k, pf)
				}
			case k >= 10 && rule != "×2", k < 10 && !strings.HasPrefix(rule, "(Poisson"):
				t.Errorf("%s beyond %s: measured count %.0f judged by %q; the factor 2 applies from 10 events", where, th, k, rule)
			case simN != "" && mf > 0:
				// The counts' exact 95 % intervals, as rates per wake-up,
				// must overlap: the measured wake-ups are k / mf, the
				// simulated ones as printed (two figures: judge only off
				// the boundary).
				nm := k / mf
				ns := docNum(t, where, m[5]) * map[string]float64{"": 1, "k": 1e3, "M": 1e6}[m[6]]
				mlo, mhi := docPoisson95(k)
				plo, phi := docPoisson95(docNum(t, where, simK))
				mlo, mhi, plo, phi = mlo/nm, mhi/nm, plo/ns, phi/ns
				near := func(a, b float64) bool { return a > 0 && b > 0 && math.Abs(a/b-1) < 0.03 }
				if !near(mlo, phi) && !near(plo, mhi) {
					if want := verdict(mlo <= phi && plo <= mhi); got != want {
						t.Errorf("%s beyond %s: %q, but the measured rate's interval [%.3g, %.3g] and the predicted [%.3g, %.3g] say %q", where, th, cell, mlo, mhi, plo, phi, want)
					}
				}
			case rule == "×2":
				// Rounded figures: judge only where the ratio is not on
				// a boundary.
				r := pf / mf
				if mf > 0 && math.Abs(r-2) > 0.02 && math.Abs(r-0.5) > 0.01 {
					if want := verdict(r >= 0.5 && r <= 2); got != want {
						t.Errorf("%s beyond %s: %q for %.4g against %.4g (ratio %.2f), want %q", where, th, got, pf, mf, r, want)
					}
				}
			}
		}
	}
	if len(scenarios) < 8 {
		t.Errorf("%d scenarios in the table, want at least 8", len(scenarios))
	}
}

// docLateCell is a late-fraction cell: "measured (count) / predicted:
// verdict ×2", or below 10 measured events "measured (count) / predicted
// (predicted count of N simulated): verdict (Poisson)", or "…: holds (both 0)".
var docLateCell = regexp.MustCompile(`^([0-9.]+) \(([0-9]+)\) / ([0-9.]+)(?: \(([0-9]+) of ([0-9.]+)([kM]?) simulated\))?: (holds|\*\*misses\*\*) (×2|\(Poisson[^)]*\)|\(both 0\))$`)

// docPoisson95 is the exact (Garwood) 95 % interval of a Poisson mean from
// an observed count k, as the table's Poisson rule takes it: the mean lo
// with P(X ≥ k) = 0.025 and the mean hi with P(X ≤ k) = 0.025 (the
// χ² quantiles of hack/validation, found here by bisection on the Poisson
// CDF so that the package stays on the standard library).
func docPoisson95(k float64) (lo, hi float64) {
	cdf := func(n int, mu float64) float64 { // P(X ≤ n)
		var p float64
		for i := 0; i <= n; i++ {
			lg, _ := math.Lgamma(float64(i) + 1)
			p += math.Exp(float64(i)*math.Log(mu) - mu - lg)
		}
		return p
	}
	solve := func(f func(mu float64) float64) float64 { // f increasing in mu
		a, b := 0.0, 2*k+20
		for range 200 {
			m := (a + b) / 2
			if f(m) < 0 {
				a = m
			} else {
				b = m
			}
		}
		return (a + b) / 2
	}
	n := int(k)
	if n > 0 {
		lo = solve(func(mu float64) float64 { return 1 - cdf(n-1, mu) - 0.025 })
	}
	hi = solve(func(mu float64) float64 { return 0.025 - cdf(n, mu) })
	return lo, hi
}

func verdict(ok bool) string {
	if ok {
		return "holds"
	}
	return "**misses**"
}

func docNum(t *testing.T, where, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(s), "+"), 64)
	if err != nil {
		t.Fatalf("%s: %q is not a number", where, s)
	}
	return v
}

// docTableRows are the cells of the first table under "### The table".
func docTableRows(t *testing.T, doc string) [][]string {
	_, after, ok := strings.Cut(doc, "\n### The table")
	if !ok {
		t.Fatal(`VALIDATION.md has no "### The table" section`)
	}
	var rows [][]string
	header := true
	for _, line := range strings.Split(after, "\n")[1:] {
		if strings.HasPrefix(line, "#") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		if header {
			if strings.HasPrefix(line, "|---") {
				header = false
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	return rows
}
