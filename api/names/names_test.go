package names

import (
	"regexp"
	"strings"
	"testing"
)

var (
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// fqdn is a legal DNS subdomain of n characters made of c: labels of 63
// characters joined by dots, like an EKS node's FQDN but as long as allowed.
func fqdn(n int, c string) string {
	s := strings.Repeat(strings.Repeat(c, 63)+".", 5)[:n]
	if strings.HasSuffix(s, ".") {
		panic("fqdn: pick another length")
	}
	return s
}

func TestNodeRunNamesDoNotCollide(t *testing.T) {
	if a, b := NodeRun("a-b", "c"), NodeRun("a", "b-c"); a == b {
		t.Fatalf(`NodeRun("a-b", "c") and NodeRun("a", "b-c") are both %q`, a)
	}
	long := fqdn(253, "n")
	seen := map[string]string{}
	for _, pair := range [][2]string{
		{"e", "node-1"}, {"e", "node-2"}, {"e-node", "1"},
		{fqdn(253, "e"), long}, {fqdn(253, "e"), long[:252]}, {fqdn(252, "e"), long},
		{"ip-10-0-12-34.eu-west-1.compute.internal", "x"}, {"ip-10-0-12-34", "eu-west-1.compute.internal-x"},
	} {
		n := NodeRun(pair[0], pair[1])
		if len(n) > 253 || !dnsSubdomain.MatchString(n) {
			t.Errorf("NodeRun(%d chars, %d chars) = %q (%d chars): not a DNS subdomain of at most 253 characters", len(pair[0]), len(pair[1]), n, len(n))
		}
		if prev, dup := seen[n]; dup {
			t.Errorf("NodeRun %q for %v and %s", n, pair, prev)
		}
		seen[n] = pair[0] + " on " + pair[1]
	}
}

func TestRunIDLengthSafe(t *testing.T) {
	long := NodeRun(fqdn(253, "e"), fqdn(253, "n"))
	seen := map[string]bool{}
	for _, nr := range []string{long, long[:200], NodeRun("demo", "ip-10-0-12-34.eu-west-1.compute.internal"), "a"} {
		for _, gen := range []int64{1, 2, 9223372036854775807} {
			id := RunID(nr, gen)
			if len(id) > 63 || !dnsLabel.MatchString(id) {
				t.Errorf("RunID(%d chars, %d) = %q (%d chars): not a DNS label", len(nr), gen, id, len(id))
			}
			if seen[id] {
				t.Errorf("RunID %q twice", id)
			}
			seen[id] = true
		}
	}
	if a, b := RunID("x.y", 1), RunID("x-y", 1); a == b {
		t.Errorf("RunID of x.y and x-y are both %q", a)
	}
}

// A restore-only Pod's name is a DNS label (its hostname) for any legal
// experiment and node name, and distinct per experiment and node.
func TestRestorePodNamesAreLabels(t *testing.T) {
	seen := map[string]string{}
	for _, c := range []struct{ exp, node string }{
		{"a-b", "c"}, {"a", "b-c"}, {fqdn(253, "e"), fqdn(253, "n")}, {"exp", fqdn(253, "n")}, {fqdn(253, "e"), "node"},
	} {
		n := RestorePod(c.exp, c.node)
		if len(n) > 63 || !dnsLabel.MatchString(n) {
			t.Errorf("RestorePod(%q, %q) = %q: not a DNS label", c.exp, c.node, n)
		}
		key := c.exp + "/" + c.node
		if other, dup := seen[n]; dup {
			t.Errorf("RestorePod: %q and %q both give %q", other, key, n)
		}
		seen[n] = key
	}
}
