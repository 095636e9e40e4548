package simengine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestOutputDigest hashes what the simulator gives for a fixed set of
// inputs (digestInputs): the JSON of each result, and for many of them the
// trace, every scheduling event in order. A change meant to leave the
// output alone (speed work: a layout, a cache, a cheaper way to compute the
// same thing) must leave the digest alone too; the golden tests see only
// two inputs' summaries.
//
// The whole's digest is kept in testdata/output.digest, and the test fails
// when the output hashes otherwise. A change that is meant to move the
// output (a model change) regenerates it deliberately, as the golden
// files, with the reason in its commit:
//
//	SIMENGINE_DIGEST=update go test -run OutputDigest ./internal/simengine/
//
// SIMENGINE_DIGEST=print prints the digest of each part and of the whole
// without judging; SIMENGINE_DIGEST=<a hex digest> judges against that.
// -short leaves it out (it takes about 10 s of CPU: the traces of the
// 64-CPU benchmark inputs are long).
func TestOutputDigest(t *testing.T) {
	const file = "testdata/output.digest"
	want := os.Getenv("SIMENGINE_DIGEST")
	if want == "" {
		if testing.Short() {
			t.Skip("-short: hashes the output of 716 inputs")
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v: regenerate it with SIMENGINE_DIGEST=update", err)
		}
		want = strings.TrimSpace(string(b))
	}
	parts := digestInputs()
	sums := make([][]byte, len(parts))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				sums[i] = digestPart(parts[i])
			}
		}()
	}
	for i := range parts {
		next <- i
	}
	close(next)
	wg.Wait()
	all := sha256.New()
	groups := map[string]hash.Hash{}
	var order []string
	for i, p := range parts {
		all.Write(sums[i])
		g, ok := groups[p.set]
		if !ok {
			g = sha256.New()
			groups[p.set] = g
			order = append(order, p.set)
		}
		g.Write(sums[i])
		if p.set == "bench" || p.set == "golden" || p.set == "variants" {
			t.Logf("%-10s %-28s %x", p.set, p.name, sums[i][:8])
		}
	}
	for _, name := range order {
		t.Logf("%-10s (all)                         %x", name, groups[name].Sum(nil)[:8])
	}
	got := hex.EncodeToString(all.Sum(nil))
	t.Logf("digest of %d inputs: %s", len(parts), got)
	switch want {
	case "print":
	case "update":
		if err := os.WriteFile(file, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		if want != got {
			t.Fatalf("output digest %s, want %s: the simulator's output changed; if that is meant (a model change), regenerate %s with SIMENGINE_DIGEST=update and say why in the commit", got, want, file)
		}
	}
}

// digestCase is one input of the digest, traced or not.
type digestCase struct {
	set, name string
	in        Input
	trace     bool
}

// digestPart is the hash of one input's trace (if asked) and result JSON,
// or of its error.
func digestPart(p digestCase) []byte {
	h := sha256.New()
	in := p.in
	if p.trace {
		in.Trace = h
	}
	r, err := Run(in)
	if err != nil {
		fmt.Fprintf(h, "error: %v\n", err)
		return h.Sum(nil)
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	h.Write(b)
	return h.Sum(nil)
}

// digestKernels are the kernel releases the fuzz inputs cycle through.
var digestKernels = []string{"", "5.15", "6.1", "6.6", "6.12", "6.14.9", "6.17", "6.18", "6.18.45", "6.19"}

// digestInputs is the fixed set: the benchmark inputs, the golden inputs,
// the PingPong benchmark under several kernels and with jitter, host
// pauses and vCPU stalls, a Server input, and 700 fuzz inputs from a
// seeded stream over the kernels of digestKernels (every fourth traced,
// every seventh on an SMT topology).
func digestInputs() []digestCase {
	var cs []digestCase
	for _, b := range []struct {
		name string
		in   Input
	}{
		{"a Hogs8CPU60s", benchHogs8()},
		{"b Mixed64CPU512", benchMixed64()},
		{"c PingPong2CPU4Pairs", benchPingPong2()},
		{"d Hogs8CPU60sTopology", benchHogs8Topo()},
		{"e Mixed64CPU512Topology", benchMixed64Topo()},
		{"f Mixed64CPU512HZ1000", benchMixed64Issue()},
	} {
		cs = append(cs, digestCase{set: "bench", name: b.name, in: b.in, trace: true})
	}
	for _, sch := range bothSchedulers {
		cs = append(cs, digestCase{set: "golden", name: string(sch), in: goldenInput(sch), trace: true})
	}
	for _, k := range []string{"6.1", "6.6", "6.17", "6.18.45"} {
		in := benchPingPong2()
		in.Node.Kernel = k
		if k == "6.1" {
			in.Node.Scheduler = CFS
		}
		cs = append(cs, digestCase{set: "variants", name: "c kernel " + k, in: in, trace: true})
	}
	jit := benchPingPong2()
	jit.Groups[0].Pattern.RunJitterNs = 2e3
	cs = append(cs, digestCase{set: "variants", name: "c jitter", in: jit, trace: true})
	hp := benchPingPong2()
	hp.Node.Constants = pauses20ms(5)
	cs = append(cs, digestCase{set: "variants", name: "c host pauses", in: hp, trace: true})
	vs := benchPingPong2()
	vs.Node.Constants = stalls20ms(5)
	cs = append(cs, digestCase{set: "variants", name: "c vCPU stalls", in: vs, trace: true})
	srv := serverInput(2, 4, 3000, "Exponential", 300_000)
	srv.WarmupNs, srv.DurationNs = 1e8, 1e9
	cs = append(cs, digestCase{set: "variants", name: "server", in: srv, trace: true})
	rnd := uint64(0x5eed)
	for i := 0; i < 700; i++ {
		data := make([]byte, 64)
		for j := 0; j < len(data); j += 8 {
			v := splitmix64(&rnd)
			for k := 0; k < 8; k++ {
				data[j+k] = byte(v >> (8 * k))
			}
		}
		in := fuzzInput(data)
		k := digestKernels[i%len(digestKernels)]
		in.Node.Kernel = k
		if k == "5.15" || k == "6.1" {
			in.Node.Scheduler = CFS
		}
		if i%7 == 0 {
			in.Node.CPUs = 2 * max(1, in.Node.CPUs/2)
			in.Node.Topology = Topology{ThreadsPerCore: 2}
		}
		cs = append(cs, digestCase{set: "fuzz", name: fmt.Sprint(i), in: in, trace: i%4 == 0})
	}
	return cs
}
