package driver

// The lock file operated on in-process on the host itself, by `flightdeck
// agent lock` (ServeLock): the same compare-and-swap as lockScript, under
// the same mutex, with no process spawned.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// mutexWait is how long an operation waits for the mutex (lockScript's 5 s:
// 50 tries 100 ms apart), and mutexDirStale the age of a mutex directory
// left by a killed holder that is removed (lockScript's 30 s).
const (
	mutexTries    = 50
	mutexPause    = 100 * time.Millisecond
	mutexDirStale = 30 * time.Second
)

// errBusy is wrapped by hostFile's errors when the mutex stayed held for
// 5 s (lockScript's exit 75).
var errBusy = errors.New("the driver lock's mutex is busy")

// hostFile is the lock file at an absolute path on this host.
type hostFile struct {
	file  string
	mutex string // mutexFlock (flock(2) on FILE.mutex and the mkdir mutex) or mutexMkdir
}

// read returns the file as it is now, as lockScript's read prints it. It
// takes no mutex: every writer replaces the file with a rename (or, the
// shell loop, rewrites the same bytes), so one open file's stat and bytes
// belong to one state.
func (h hostFile) read() (snapshot, error) { return h.snap() }

// snap is the file's snapshot (Wrote false).
func (h hostFile) snap() (snapshot, error) {
	s := snapshot{Now: time.Now().Unix(), Version: verAbsent}
	f, err := os.Open(h.file)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("cannot read %s: %w", h.file, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return s, fmt.Errorf("cannot read %s: %w", h.file, err)
	}
	head := make([]byte, MaxFileBytes+1)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return s, fmt.Errorf("cannot read %s: %w", h.file, err)
	}
	var sum cksummer
	sum.Write(head[:n])
	if n == len(head) {
		if _, err := io.Copy(&sum, f); err != nil {
			return s, fmt.Errorf("cannot read %s: %w", h.file, err)
		}
	}
	s.MTime = st.ModTime().Unix()
	s.Version = strconv.FormatInt(s.MTime, 10) + " " + sum.String()
	s.Content = head[:n:n]
	return s, nil
}

// put writes content plus a newline if the file's version is want (a temp
// file renamed over it, 0600, the directory made 0700 when missing), and
// returns the file after the change (Wrote) or as it is (a conflict).
func (h hostFile) put(want string, content []byte) (snapshot, error) {
	if err := os.MkdirAll(filepath.Dir(h.file), 0o700); err != nil {
		return snapshot{}, fmt.Errorf("cannot write %s: %w", h.file, err)
	}
	unlock, err := h.lock()
	if err != nil {
		return snapshot{}, err
	}
	defer unlock()
	cur, err := h.snap()
	if err != nil || cur.Version != want {
		return cur, err
	}
	tmp := h.file + ".tmp." + strconv.Itoa(os.Getpid())
	if err := writeNew(tmp, append(content[:len(content):len(content)], '\n')); err != nil {
		os.Remove(tmp)
		return snapshot{}, fmt.Errorf("cannot write %s: %w", h.file, err)
	}
	if err := os.Rename(tmp, h.file); err != nil {
		os.Remove(tmp)
		return snapshot{}, fmt.Errorf("cannot write %s: %w", h.file, err)
	}
	s, err := h.snap()
	s.Wrote = err == nil
	return s, err
}

// writeNew creates path (0600, failing if it exists) holding b.
func writeNew(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// lock takes the mutex that lockScript takes: with mutexFlock both
// flock(2) on FILE.mutex (the script's choice where flock(1) exists) and
// the mkdir mutex FILE.mutex.d (its choice elsewhere), so a script of
// either kind is excluded; with mutexMkdir the mkdir mutex only. It waits
// 5 s at most (then the error wraps errBusy).
func (h hostFile) lock() (unlock func(), err error) {
	unlockF := func() {}
	if h.mutex != mutexMkdir {
		if unlockF, err = flockFile(h.file + ".mutex"); err != nil {
			return nil, err
		}
	}
	d := h.file + ".mutex.d"
	for i := 0; ; i++ {
		err := os.Mkdir(d, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			unlockF()
			return nil, fmt.Errorf("cannot take the mutex %s: %w", d, err)
		}
		if i >= mutexTries {
			if st, err := os.Stat(d); err == nil && time.Since(st.ModTime()) > mutexDirStale {
				os.Remove(d)
				i = 0
				continue
			}
			unlockF()
			return nil, fmt.Errorf("%s is busy: the mutex directory %s was held for 5s: %w", h.file, d, errBusy)
		}
		sleepMutex()
	}
	return func() { os.Remove(d); unlockF() }, nil
}

// sleepMutex waits between two tries of a busy mutex.
func sleepMutex() { time.Sleep(mutexPause) }
