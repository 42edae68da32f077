package serverlog

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog/synthlog"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// TestMappedSourceCutsLinesLikeScanLines: the blocks of a mapped input,
// and of what follows the mapping (the file read on: its unterminated last
// line, lines appended since), are the lines that blockSource gives for the
// whole input.
func TestMappedSourceCutsLinesLikeScanLines(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 3000 {
		var data []byte
		for range r.IntN(30) {
			data = append(data, bytes.Repeat([]byte{'a' + byte(r.IntN(26))}, r.IntN(60))...)
			if r.IntN(4) > 0 {
				data = append(data, '\n')
			}
		}
		mapped := r.IntN(len(data) + 1)
		maxLine := 1 + r.IntN(50)
		target := 1 + r.IntN(100)
		sizes := []int{1 + r.IntN(70), r.IntN(3), 1 + r.IntN(200)}
		src := mappedSource{m: data[:mapped], maxLine: maxLine,
			rest: blockSource{r: &chunkReader{data: data[mapped:], sizes: sizes}, maxLine: maxLine}}
		var got []byte
		var b block
		for {
			err := src.next(&b, target)
			if len(b.data) > 0 && b.data[len(b.data)-1] != '\n' {
				t.Fatalf("round %d: block %q does not end a line", round, b.data)
			}
			got = append(got, b.data...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if want := cutLines(data, maxLine); !bytes.Equal(got, want) {
			t.Fatalf("round %d (mapped %d, maxLine %d, target %d):\n got %q\nwant %q\n  in %q", round, mapped, maxLine, target, got, want, data)
		}
	}
}

// mappedLog writes a log of a few MiB (more than minMapBytes): the
// generated log, every fixture, a line over MaxLineBytes, and a last line
// without a newline.
func mappedLog(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := synthlog.Write(&buf, 3<<20); err != nil {
		t.Fatal(err)
	}
	for _, data := range fixtureTexts(t) {
		buf.Write(data)
		buf.WriteByte('\n')
	}
	buf.WriteString("torch.OutOfMemoryError: CUDA out of memory. ")
	buf.Write(bytes.Repeat([]byte("A"), MaxLineBytes+5000))
	buf.WriteString("\n[2025-11-11 04:06:27] Decode batch, #running-req: 46, gen throughput (token/s): 1447.08, #queue-req: 0, \nlast line Killed")
	return buf.Bytes()
}

func writeTemp(t *testing.T, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestWriteJSONLMappedFile: a regular file, read through its mapping from
// its current offset (page-aligned or not), gives the output of the same
// bytes read with read(2).
func TestWriteJSONLMappedFile(t *testing.T) {
	data := mappedLog(t)
	f := writeTemp(t, data)
	if mf := mapFile(f); mf == nil {
		t.Skip("no memory mapping on this system")
	} else {
		mf.unmap()
	}
	for _, off := range []int64{0, 4096, 12345} {
		var want, got bytes.Buffer
		if err := WriteJSONL(&want, bytes.NewReader(data[off:])); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSONL(&got, f); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("offset %d: mapped output differs (%d and %d bytes)", off, got.Len(), want.Len())
		}
	}
}

// TestMappedFileTruncated: a file cut short while it is mapped gives
// ErrInputShrank, not a crash (the pages past the new end fault) and not
// a silent result (the rest of the last page reads as zeros).
func TestMappedFileTruncated(t *testing.T) {
	data := mappedLog(t)
	for _, size := range []int64{0, 1 << 20, int64(len(data)) - 100} {
		f := writeTemp(t, data)
		mf := mapFile(f)
		if mf == nil {
			t.Skip("no memory mapping on this system")
		}
		if err := os.Truncate(f.Name(), size); err != nil {
			t.Fatal(err)
		}
		err := writeJSONLMapped(io.Discard, mf)
		mf.unmap()
		if !errors.Is(err, ErrInputShrank) {
			t.Errorf("truncated to %d: err = %v, want ErrInputShrank", size, err)
		}
	}
	// The scan without the JSON writer the same way.
	f := writeTemp(t, data)
	mf := mapFile(f)
	if err := os.Truncate(f.Name(), 1<<20); err != nil {
		t.Fatal(err)
	}
	src, err := mf.source(MaxLineBytes)
	if err != nil {
		t.Fatal(err)
	}
	_, err = scanSource(src, faultGuard{mf}, func(event.Payload) {}, nil, 2, scanBlockSize)
	mf.unmap()
	if !errors.Is(err, ErrInputShrank) {
		t.Errorf("scan of a truncated file: err = %v, want ErrInputShrank", err)
	}
}

// TestFaultGuardPassesOtherPanics: a panic that is not a fault in the
// mapping is not taken for a truncated file.
func TestFaultGuardPassesOtherPanics(t *testing.T) {
	f := writeTemp(t, mappedLog(t))
	mf := mapFile(f)
	if mf == nil {
		t.Skip("no memory mapping on this system")
	}
	defer mf.unmap()
	defer func() {
		if r := recover(); r == nil {
			t.Error("the nil dereference was swallowed")
		}
	}()
	var p *block
	_ = faultGuard{mf}.run(func() { _ = p.lines })
}
