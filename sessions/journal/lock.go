package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// LockedError is returned by Create and Append when another process (or
// another Writer in this one) is writing the journal.
type LockedError struct {
	Path  string    // the journal
	PID   int       // the writer's process id; 0 when its lock file is unreadable
	User  string    // who runs it
	Since time.Time // when it took the lock
}

func (e *LockedError) Error() string {
	who := "another flightdeck"
	if e.PID > 0 {
		who = "flightdeck pid " + strconv.Itoa(e.PID)
	}
	var extra []byte
	if e.User != "" || !e.Since.IsZero() {
		extra = append(extra, " ("...)
		if e.User != "" {
			extra = append(extra, "user "...)
			extra = append(extra, e.User...)
		}
		if !e.Since.IsZero() {
			if e.User != "" {
				extra = append(extra, ", "...)
			}
			extra = append(extra, "since "...)
			extra = e.Since.Local().AppendFormat(extra, "2006-01-02 15:04:05")
		}
		extra = append(extra, ')')
	}
	return fmt.Sprintf("journal %s is being written by %s%s", e.Path, who, extra)
}

// lockInfo is the content of a journal's lock file.
type lockInfo struct {
	PID   int       `json:"pid"`
	User  string    `json:"user,omitempty"`
	Since time.Time `json:"since"`
}

// fileLock is a held lock on a journal: an exclusive flock(2) on the
// sidecar "<journal>.lock". The kernel drops it when the process dies, so a
// lock file left by a killed writer is simply taken over.
type fileLock struct {
	f    *os.File
	path string
}

// lockPath is the sidecar lock file of the journal at path.
func lockPath(path string) string { return path + ".lock" }

// acquireLock takes the lock of the journal at path, or returns a
// *LockedError naming its holder.
func acquireLock(path string) (*fileLock, error) {
	lp := lockPath(path)
	for range 10 {
		f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("journal lock: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			var info lockInfo
			b, _ := os.ReadFile(lp)
			_ = json.Unmarshal(b, &info)
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, &LockedError{Path: path, PID: info.PID, User: info.User, Since: info.Since}
			}
			return nil, fmt.Errorf("journal lock %s: %w", lp, err)
		}
		// The holder we waited on may have removed the file while we
		// opened it: then our lock is on a dead inode. Retry on the new one.
		var held, now unix.Stat_t
		if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(lp, &now) != nil || held.Ino != now.Ino || held.Dev != now.Dev {
			f.Close()
			continue
		}
		info := lockInfo{PID: os.Getpid(), Since: time.Now().UTC().Truncate(time.Second)}
		if u, err := user.Current(); err == nil {
			info.User = u.Username
		}
		b, _ := json.Marshal(info)
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt(append(b, '\n'), 0)
		}
		return &fileLock{f: f, path: lp}, nil
	}
	return nil, fmt.Errorf("journal lock %s: its file keeps being replaced", lp)
}

// release removes the lock file and drops the lock (in that order, so a
// waiting writer never locks a file about to be removed).
func (l *fileLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := os.Remove(l.path)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// Live reports whether a cockpit is writing the journal at path now: its
// lock is held. It probes with a shared, non-blocking flock that it drops at
// once, so it never takes over (or removes) a stale lock file.
func Live(path string) bool {
	f, err := os.Open(lockPath(path))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}
