package driver

// The in-process compare-and-swap of `agent lock` against lockScript: the
// same versions, the same checksum as cksum(1), and one mutex.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
)

func TestCksumIsPOSIXCksum(t *testing.T) {
	if _, err := exec.LookPath("cksum"); err != nil {
		t.Skip("no cksum(1)")
	}
	for _, in := range [][]byte{nil, []byte("a"), []byte(`{"token":"ab"}` + "\n"), bytes.Repeat([]byte{0xff, 0, 'x'}, 3000)} {
		cmd := exec.Command("cksum")
		cmd.Stdin = bytes.NewReader(in)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cksum(in), strings.TrimSpace(string(out)); got != want {
			t.Errorf("cksum of %d bytes: %q, cksum(1) says %q", len(in), got, want)
		}
	}
}

// A put by the agent and the script's read see the same version, and each
// side's compare-and-swap refuses the other's stale version.
func TestHostFileMatchesScript(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	dir := filepath.Join(t.TempDir(), "new dir")
	file := filepath.Join(dir, FileName)
	ctx := context.Background()
	hf := hostFile{file: file, mutex: mutexFlock}
	s, err := hf.put(verAbsent, []byte(`{"token":"a11ce0"}`))
	if err != nil || !s.Wrote || s.Absent() {
		t.Fatalf("put: %+v %v", s, err)
	}
	r, err := exchange(ctx, h, mutexFlock, opRead, dir, file, "", nil)
	if err != nil || r.Version != s.Version || !bytes.Equal(r.Content, s.Content) || r.MTime != s.MTime {
		t.Fatalf("the script reads %+v (%v), the agent wrote %+v", r, err, s)
	}
	for _, p := range []string{dir, file} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v, want no access for others", p, st.Mode().Perm())
		}
	}
	// The script's put replaces the agent's version: the agent's stale put
	// is a conflict that shows the script's file.
	w, err := exchange(ctx, h, mutexFlock, opPut, dir, file, s.Version, []byte(`{"token":"b0b0"}`))
	if err != nil || !w.Wrote {
		t.Fatalf("script put: %+v %v", w, err)
	}
	c, err := hf.put(s.Version, []byte(`{"token":"a11ce0"}`))
	if err != nil || c.Wrote || c.Version != w.Version || string(c.Content) != `{"token":"b0b0"}`+"\n" {
		t.Fatalf("the agent's stale put: %+v %v (script wrote %+v)", c, err, w)
	}
	rd, err := hf.read()
	if err != nil || rd.Version != w.Version {
		t.Fatalf("agent read %+v %v", rd, err)
	}
	if _, err := exchange(ctx, h, mutexFlock, opDel, dir, file, w.Version, nil); err != nil {
		t.Fatal(err)
	}
	if rd, err := hf.read(); err != nil || !rd.Absent() || rd.Now == 0 {
		t.Fatalf("after the delete: %+v %v", rd, err)
	}
	left, _ := filepath.Glob(file + ".tmp.*")
	if len(left) > 0 {
		t.Errorf("temp files left: %v", left)
	}
}

// Agents and scripts racing to create the lock: exactly one wins, with
// either mutex.
func TestHostFileAndScriptExclusion(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	for _, mx := range []string{mutexFlock, mutexMkdir} {
		t.Run(mx, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, FileName)
			var won atomic.Int32
			var wg sync.WaitGroup
			for i := range 8 {
				content := []byte(fmt.Sprintf(`{"token":"%x"}`, 0x100+i))
				wg.Go(func() {
					var s snapshot
					var err error
					if i%2 == 0 {
						s, err = hostFile{file: file, mutex: mx}.put(verAbsent, content)
					} else {
						s, err = exchange(context.Background(), h, mx, opPut, dir, file, verAbsent, content)
					}
					if err != nil {
						t.Error(err)
					}
					if s.Wrote {
						won.Add(1)
					}
				})
			}
			wg.Wait()
			if won.Load() != 1 {
				t.Fatalf("%d writers won, want 1", won.Load())
			}
			if _, err := os.Stat(file + ".mutex.d"); !os.IsNotExist(err) {
				t.Errorf("mkdir mutex left: %v", err)
			}
		})
	}
}

// ServeLock does one operation at start and one per line on its stdin, no
// more: a cockpit that stops writing (frozen) stops the heartbeat, and its
// lock goes stale as with the script. The end of stdin ends it.
func TestServeLockOnePutPerPing(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, FileName)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- ServeLock(context.Background(), inR, outW, LockAgentOptions{File: file, Mutex: mutexMkdir,
			Drive: true, Content: []byte(`{"token":"a11ce0"}`), Want: verAbsent})
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	next := func() snapshot {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("no line: %v", lines.Err())
		}
		s, _, opErr, err := parseLockLine(lines.Bytes())
		if err != nil || opErr != "" || !s.Wrote {
			t.Fatalf("line %s: %+v %q %v", lines.Bytes(), s, opErr, err)
		}
		return s
	}
	first := next()
	for range 3 {
		inW.Write([]byte("\n"))
		next()
	}
	st0, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // no ping: no write
	st1, err := os.Stat(file)
	if err != nil || !os.SameFile(st0, st1) {
		t.Errorf("the file was rewritten without a ping: %v", err)
	}
	if first.Absent() {
		t.Errorf("first put: %+v", first)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeLock at the end of stdin: %v", err)
	}
	if lines.Scan() {
		t.Errorf("a line after the end of stdin: %s", lines.Bytes())
	}
}
