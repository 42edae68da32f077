package git

import (
	"bytes"
	"fmt"
	"testing"
)

// bigStatus is status script output for a checkout with n dirty files
// (every third untracked) and 20 reflog entries: a large SGLang checkout
// mid-debugging.
func bigStatus(n int) []byte {
	var b bytes.Buffer
	b.WriteString("9aef32eb363d0e33e176b1e465db46e34256a2e4\x1f9aef32e\x1f1764450000\x1fTest\x1fInitial\n\x1e\x1e\nmain\n\x1e\x1e\norigin/main\n0\t2\n\x1e\x1e\n\x1e\x1e\n")
	for i := range n {
		if i%3 == 0 {
			fmt.Fprintf(&b, "?? python/sglang/srt/new_%d.py\x00", i)
		} else {
			fmt.Fprintf(&b, " M python/sglang/srt/layers/file_%d.py\x00", i)
		}
	}
	b.WriteString("\x1e\x1e\n")
	for i := range n {
		if i%3 != 0 {
			fmt.Fprintf(&b, "%d\t%d\tpython/sglang/srt/layers/file_%d.py\x00", i%50, i%7, i)
		}
	}
	b.WriteString("\x1e\x1e\n802ecc5f227223312f80fff25f6f364750ff89aa\x1f1764450100\x1fOn main: try LL128\x00\x1e\x1e\n")
	for range 20 {
		b.WriteString("9aef32eb363d0e33e176b1e465db46e34256a2e4\x1f9aef32e\x1fHEAD@{1764450200}\x1fpull: Fast-forward\x00")
	}
	b.WriteString("\x1e\x1e\n")
	return b.Bytes()
}

func BenchmarkParseStatus(b *testing.B) {
	for _, n := range []int{10, 1000} {
		in := bigStatus(n)
		if _, err := ParseStatus(in); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseStatus(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
