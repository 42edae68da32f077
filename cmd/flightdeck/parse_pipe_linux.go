package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pipeBytes is the pipe buffer parse asks for when its output is a pipe:
// 1 MiB, the most an unprivileged process may set by default
// (/proc/sys/fs/pipe-max-size). With the default 64 KiB, writing the
// JSONL of a large log to `| cat` costs a wake-up of each side for every
// 64 KiB.
const pipeBytes = 1 << 20

// growPipe enlarges the buffer of w when it is a pipe; it is best effort
// (a smaller pipe only costs time).
func growPipe(w io.Writer) {
	f, ok := w.(*os.File)
	if !ok {
		return
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return
	}
	if sc, err := f.SyscallConn(); err == nil {
		_ = sc.Control(func(fd uintptr) {
			if n, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0); err == nil && n < pipeBytes {
				_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeBytes)
			}
		})
	}
}
