package follow

import (
	"bytes"
	"errors"
	"io"
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
	// The agent's (StreamFile's) messages: no path before "tail: ".
	f.Add([]byte("part/./tail: flightdeck agent follow: alive\nial\n/./tail: '/x' has been replaced;  following new file\n"), uint64(9))
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

// FuzzLaunchLine: however the agent's stdout is cut into reads, launchLine
// passes on exactly what follows its first line when that line is the
// launch line, and otherwise fails with errNoLaunch (or the stream ends
// before the line does), passing nothing.
func FuzzLaunchLine(f *testing.F) {
	f.Add([]byte("{\"t\":\"launch\",\"pid\":42}\nline 1\n/./tail: x: file truncated\n"), uint64(1))
	f.Add([]byte("{\"t\":\"launch\",\"pid\":42}\n"), uint64(2))
	f.Add([]byte("Welcome to the host!\n{\"t\":\"launch\",\"pid\":42}\n"), uint64(3))
	f.Add([]byte("{\"t\":\"launch\""), uint64(4))
	f.Fuzz(func(t *testing.T, in []byte, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 2))
		l := &launchLine{r: &cutReader{in: in, r: r}}
		got, err := io.ReadAll(l)
		first, rest, found := bytes.Cut(in, []byte{'\n'})
		switch {
		case found && bytes.HasPrefix(first, launchPrefix) && len(first) <= 256:
			if err != nil || !bytes.Equal(got, rest) {
				t.Fatalf("got %q, %v; want %q", got, err, rest)
			}
			if l.after.Load() != int64(len(rest)) {
				t.Fatalf("after = %d, want %d", l.after.Load(), len(rest))
			}
		case len(got) > 0:
			t.Fatalf("passed %q on from a stream without the launch line first", got)
		case found && !errors.Is(err, errNoLaunch):
			t.Fatalf("error %v, want errNoLaunch", err)
		}
	})
}

// cutReader reads in in random pieces of 1 to 16 bytes.
type cutReader struct {
	in []byte
	r  *rand.Rand
}

func (c *cutReader) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1+c.r.IntN(16))], c.in)
	c.in = c.in[n:]
	return n, nil
}
