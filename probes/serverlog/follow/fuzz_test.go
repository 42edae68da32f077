package follow

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// FuzzSplitter: however tail's merged stream is cut into reads, the
// splitter yields the same data and messages, and loses no byte: the data,
// the messages (with their marker and newline), and what it still holds
// make up the input.
func FuzzSplitter(f *testing.F) {
	marker := []byte("/./") // short, so that the fuzzer finds it
	f.Add([]byte("one\ntw/./usr/bin/tail: x: file truncated\nnew\n/."), uint64(1))
	f.Add([]byte("/./usr/bin/tail -c +1 -F -- /x\n/./usr/bin/tail: '/x' has appeared;  following new file\n"), uint64(7))
	f.Fuzz(func(t *testing.T, in []byte, seed uint64) {
		run := func(cuts bool) (string, []string, splitter) {
			s := splitter{marker: marker}
			var data strings.Builder
			var msgs []string
			r := rand.New(rand.NewPCG(seed, 1))
			for rest := in; len(rest) > 0; {
				n := len(rest)
				if cuts {
					n = min(n, 1+r.IntN(8))
				}
				s.split(rest[:n], func(b []byte) { data.Write(b) }, func(m []byte) {
					if !isTailMessage(m) {
						t.Fatalf("message without tail's shape: %q", m)
					}
					_ = classifyTail(tailText(m))
					msgs = append(msgs, string(m))
				})
				rest = rest[n:]
			}
			return data.String(), msgs, s
		}
		data, msgs, s := run(false)
		data2, msgs2, _ := run(true)
		if data != data2 || strings.Join(msgs, "\x00") != strings.Join(msgs2, "\x00") {
			t.Fatalf("cut into reads: data %q messages %q; whole: data %q messages %q", data2, msgs2, data, msgs)
		}
		// Every byte is accounted for, in some order: count them.
		total := len(data) + len(s.carry)
		for _, m := range msgs {
			total += len(marker) + len(m) + 1
		}
		if s.inMsg {
			total += len(marker) + len(s.msg)
		}
		if total != len(in) {
			t.Fatalf("%d bytes in, %d accounted for", len(in), total)
		}
	})
}
