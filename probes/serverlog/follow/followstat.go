package follow

// The stat that runs before every start of tail or the agent (see
// Follower).

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// fileStat is what `stat -L -c '%i %s %f'` said about the file.
type fileStat struct {
	exists   bool
	hasInode bool
	inode    uint64
	size     int64
	regular  bool
}

// stat runs stat on the file. A missing file is not an error; a stat that
// fails otherwise (not installed, odd output) yields an existing file of
// unknown inode, size and type, so that no reset is made on its account.
func (f *Follower) stat(ctx context.Context) (fileStat, error) { return f.statPath(ctx, f.path) }

// statPath is stat for another path (the rotated copy).
func (f *Follower) statPath(ctx context.Context, path string) (fileStat, error) {
	if f.opts.InProcess {
		return localStat(path), nil
	}
	cmd, err := remote.Command("env", "LC_ALL=C", "stat", "-L", "-c", "%i %s %f", "--", path)
	if err != nil {
		return fileStat{}, err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := f.host.Run(sctx, cmd, nil)
	unknown := fileStat{exists: true, size: 1<<63 - 1}
	var exitErr *remote.ExitError
	if errors.As(err, &exitErr) {
		if bytes.Contains(res.Stderr, []byte("No such file")) || bytes.Contains(exitErr.Stderr, []byte("No such file")) {
			return fileStat{}, nil
		}
		return unknown, nil
	}
	if err != nil {
		return fileStat{}, err
	}
	fields := strings.Fields(string(res.Stdout))
	if len(fields) != 3 {
		return unknown, nil
	}
	ino, err1 := strconv.ParseUint(fields[0], 10, 64)
	size, err2 := strconv.ParseInt(fields[1], 10, 64)
	mode, err3 := strconv.ParseUint(fields[2], 16, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return unknown, nil
	}
	return fileStat{exists: true, hasInode: true, inode: ino, size: size, regular: mode&0o170000 == 0o100000}, nil
}

// localStat is statPath for Options.InProcess: stat(2) here, following
// links, as `stat -L` does.
func localStat(path string) fileStat {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return fileStat{}
	case err != nil:
		return fileStat{exists: true, size: 1<<63 - 1}
	}
	st := fileStat{exists: true, size: fi.Size(), regular: fi.Mode().IsRegular()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.hasInode, st.inode = true, uint64(sys.Ino)
	}
	return st
}
