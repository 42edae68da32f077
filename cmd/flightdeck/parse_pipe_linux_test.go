package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestGrowPipe(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err == nil {
		if max, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && max < pipeBytes && os.Geteuid() != 0 {
			t.Skipf("this host's pipe-max-size is %d bytes, less than the %d growPipe asks for", max, pipeBytes)
		}
	}
	growPipe(pw)
	if n, err := unix.FcntlInt(pw.Fd(), unix.F_GETPIPE_SZ, 0); err != nil || n != pipeBytes {
		t.Errorf("pipe buffer %d bytes (%v), want %d", n, err, pipeBytes)
	}
	// Anything else is left alone.
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	growPipe(f)
	growPipe(&bytes.Buffer{})
	if _, err := f.WriteString("x\n"); err != nil {
		t.Error(err)
	}
}
