package follow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// streamOut collects what StreamFile writes.
type streamOut struct {
	mu sync.Mutex
	b  []byte
}

func (s *streamOut) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

// tokens reads the stream as the Follower does: "DATA <bytes>" for the
// file's bytes between two messages, "RESET <reason> <notice>" or "NOTICE
// <class>" for each message by what classifyTail makes of it, "QUIET" for
// a quiet one (shown only with quiet), "MSG <text>" for any other.
func (s *streamOut) tokens(marker []byte, quiet bool) []string {
	s.mu.Lock()
	b := slices.Clone(s.b)
	s.mu.Unlock()
	var out []string
	var data strings.Builder
	flush := func() {
		if data.Len() > 0 {
			out = append(out, "DATA "+data.String())
			data.Reset()
		}
	}
	sp := splitter{marker: marker}
	sp.split(b, func(d []byte) { data.Write(d) }, func(m []byte) {
		ev := classifyTail(tailText(m))
		switch {
		case ev.reset != "":
			flush()
			out = append(out, strings.TrimSpace("RESET "+ev.reset+" "+string(ev.notice)))
		case ev.notice != "":
			flush()
			out = append(out, "NOTICE "+string(ev.notice))
		case ev.quiet:
			if quiet {
				flush()
				out = append(out, "QUIET")
			}
		default:
			flush()
			out = append(out, "MSG "+tailText(m))
		}
	})
	flush()
	return out
}

// runStream runs StreamFile on path until the test ends.
func runStream(t *testing.T, o StreamOptions) (*streamOut, []byte) {
	t.Helper()
	if o.Marker == nil {
		o.Marker = nonceMarker()
	}
	if o.Poll == 0 {
		o.Poll = 5 * time.Millisecond
	}
	if o.Keepalive == 0 {
		o.Keepalive = time.Hour
	}
	out := &streamOut{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- StreamFile(ctx, out, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("StreamFile = %v, want nil at the end of ctx", err)
		}
	})
	return out, o.Marker
}

// waitTokens waits until the stream reads as one of wants, and fails the
// test with what it reads after a deadline.
func waitTokens(t *testing.T, out *streamOut, marker []byte, wants ...[]string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := out.tokens(marker, false)
		for _, w := range wants {
			if slices.Equal(got, w) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream reads\n  %q\nwant one of\n  %q", got, wants)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil { // O_TRUNC, the same inode: like cp over it
		t.Fatal(err)
	}
}

func TestStreamFileFromOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	writeFile(t, path, "l1\nl2\nl3\n")
	out, m := runStream(t, StreamOptions{Path: path, Offset: 3, Anchor: []byte("l1\n")})
	waitTokens(t, out, m, []string{"DATA l2\nl3\n"})
	appendFile(t, path, "l4 partial")
	waitTokens(t, out, m, []string{"DATA l2\nl3\nl4 partial"})

	// Bytes before the offset that are not the reader's: rewritten
	// while nobody watched; read from 0.
	path2 := filepath.Join(t.TempDir(), "b.log")
	writeFile(t, path2, "new1\nnew2\n")
	out2, m2 := runStream(t, StreamOptions{Path: path2, Offset: 3, Anchor: []byte("l1\n")})
	waitTokens(t, out2, m2, []string{"RESET truncated", "DATA new1\nnew2\n"})

	// An offset past the end: truncated.
	out3, m3 := runStream(t, StreamOptions{Path: path2, Offset: 400})
	waitTokens(t, out3, m3, []string{"RESET truncated", "DATA new1\nnew2\n"})
}

func TestStreamFileTruncationAndRewrites(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string
	}{
		{"shorter", "aaaa\nbbbb\n", "c\n"},
		{"same size", "aaaa\nbbbb\n", "cccc\ndddd\n"},
		{"larger (cp over the log)", joinLines(genLines("old", 50)), joinLines(genLines("new", 2000))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.log")
			writeFile(t, path, tc.old)
			out, m := runStream(t, StreamOptions{Path: path})
			waitTokens(t, out, m, []string{"DATA " + tc.old})
			writeFile(t, path, tc.new)
			waitTokens(t, out, m, []string{"DATA " + tc.old, "RESET truncated", "DATA " + tc.new})
		})
	}
}

func TestStreamFileRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.log")
	writeFile(t, path, "old1\n")
	out, m := runStream(t, StreamOptions{Path: path, Poll: 50 * time.Millisecond})
	waitTokens(t, out, m, []string{"DATA old1\n"})
	// The server's last lines go to the old file just before the rename:
	// they come before the Reset.
	appendFile(t, path, "old2\n")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, "new1\n")
	waitTokens(t, out, m,
		[]string{"DATA old1\nold2\n", "RESET replaced", "DATA new1\n"},
		// A poll between the rename and the new file: missing, then it appears.
		[]string{"DATA old1\nold2\n", "NOTICE missing", "RESET rotated appeared", "DATA new1\n"})
}

func TestStreamFileMissingAndNotAFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "later.log")
	out, m := runStream(t, StreamOptions{Path: path})
	waitTokens(t, out, m, []string{"NOTICE missing"})
	time.Sleep(50 * time.Millisecond) // many polls: said once
	waitTokens(t, out, m, []string{"NOTICE missing"})
	writeFile(t, path, "first\n")
	waitTokens(t, out, m, []string{"NOTICE missing", "RESET rotated appeared", "DATA first\n"})
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitTokens(t, out, m, []string{"NOTICE missing", "RESET rotated appeared", "DATA first\n", "NOTICE missing"})
	// A FIFO is not opened (it would block, or take the writer's bytes).
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	waitTokens(t, out, m, []string{"NOTICE missing", "RESET rotated appeared", "DATA first\n", "NOTICE missing", "NOTICE not-a-file"})
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, "again\n")
	waitTokens(t, out, m,
		[]string{"NOTICE missing", "RESET rotated appeared", "DATA first\n", "NOTICE missing", "NOTICE not-a-file", "RESET rotated appeared", "DATA again\n"},
		// A poll while nothing was there.
		[]string{"NOTICE missing", "RESET rotated appeared", "DATA first\n", "NOTICE missing", "NOTICE not-a-file", "NOTICE missing", "RESET rotated appeared", "DATA again\n"})
}

func TestStreamFileKeepalive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.log")
	writeFile(t, path, "x\n")
	out, m := runStream(t, StreamOptions{Path: path, Keepalive: 20 * time.Millisecond})
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := out.tokens(m, true)
		if len(got) >= 3 {
			if got[0] != "DATA x\n" || got[1] != "QUIET" || got[2] != "QUIET" {
				t.Fatalf("stream %q, want the data then keepalives", got)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream %q: no keepalives", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// failWriter fails every write, as a closed SSH session's stdout does.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, syscall.EPIPE }

func TestStreamFileEndsWhenTheReaderIsGone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone.log") // missing: only the notice and keepalives are written
	done := make(chan error, 1)
	go func() {
		done <- StreamFile(context.Background(), failWriter{}, StreamOptions{Path: path, Marker: nonceMarker(), Poll: 5 * time.Millisecond, Keepalive: 10 * time.Millisecond})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("StreamFile = %v, want EPIPE", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("StreamFile did not end when its writes failed")
	}
}

func TestStreamFileRejectsBadOptions(t *testing.T) {
	for _, o := range []StreamOptions{
		{Marker: nonceMarker()},
		{Path: "/x", Offset: -1, Marker: nonceMarker()},
		{Path: "/x"},
		{Path: "/x", Marker: []byte("/./")},
		{Path: "/x", Marker: []byte("/usr/bin/tail/././././")},
	} {
		out := &streamOut{}
		err := StreamFile(context.Background(), out, o)
		if err == nil || len(out.b) > 0 {
			t.Errorf("StreamFile(%+v) = %v after writing %q, want an error and nothing written", o, err, out.b)
		}
	}
}

func TestStrerrorIsGlibcs(t *testing.T) {
	_, err := os.Open(filepath.Join(t.TempDir(), "none"))
	if got := strerror(err); got != "No such file or directory" {
		t.Errorf("strerror(ENOENT) = %q", got)
	}
	if got := strerror(fmt.Errorf("x: %w", syscall.EACCES)); got != "Permission denied" {
		t.Errorf("strerror(EACCES) = %q", got)
	}
}
