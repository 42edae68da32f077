package synthlog

import (
	"bytes"
	"errors"
	"testing"
)

func TestWriteCountsAndRepeats(t *testing.T) {
	var a, b bytes.Buffer
	st, err := Write(&a, 3<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(&b, 3<<20); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two logs of one size differ")
	}
	data := a.Bytes()
	if st.Bytes != int64(len(data)) || st.Bytes < 3<<20 || st.Bytes > 3<<20+512 {
		t.Errorf("Stats.Bytes %d, wrote %d, asked 3 MiB", st.Bytes, len(data))
	}
	if n := bytes.Count(data, []byte("\n")); st.Lines != n || data[len(data)-1] != '\n' {
		t.Errorf("Stats.Lines %d, wrote %d lines", st.Lines, n)
	}
	if n := bytes.Count(data, []byte("gen throughput")); st.Decode != n {
		t.Errorf("Stats.Decode %d, %d lines with gen throughput", st.Decode, n)
	}
	if n := bytes.Count(data, []byte("Prefill batch")); st.Prefill != n {
		t.Errorf("Stats.Prefill %d, %d prefill lines", st.Prefill, n)
	}
	// The mix of the 540 MB log: about 165 bytes a line, most of
	// them decode lines.
	if per := st.Bytes / int64(st.Lines); per < 150 || per > 180 {
		t.Errorf("%d bytes a line", per)
	}
	if st.Decode < st.Lines/2 {
		t.Errorf("%d decode lines of %d", st.Decode, st.Lines)
	}
	for _, want := range []string{"The server is fired up and ready to roll!", "accept len: ", "Decode batch, ", "Decode batch. ", "cache hit rate: "} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("no %q in the log", want)
		}
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n += len(p); w.n > 1<<20 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestWriteError(t *testing.T) {
	if _, err := Write(&failWriter{}, 8<<20); err == nil || err.Error() != "disk full" {
		t.Errorf("err = %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"540MB": 540e6, "1GiB": 1 << 30, "4 KiB": 4096, "100": 100, "2kB": 2000, "7B": 7} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MB", "-5MB", "0", "1.5GB", "12XB", "99999999999GiB"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}
