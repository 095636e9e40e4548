package v1alpha1

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 10, "abcdefg..."},
		// "µ" is two bytes: a cut at byte 6 would split it.
		{"p99 1µs late", 9, "p99 1..."},
		{"µµµµ", 5, "µ..."},
	} {
		got := Truncate(c.in, c.n)
		if got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
		if len(got) > c.n || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q: %d bytes or invalid UTF-8", c.in, c.n, got, len(got))
		}
	}
	long := strings.Repeat("wake-up 70 µs; ", 5000)
	if got := Truncate(long, 32768); len(got) > 32768 || !utf8.ValidString(got) || !strings.HasSuffix(got, "...") {
		t.Errorf("a long message truncated to %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
	}
}
