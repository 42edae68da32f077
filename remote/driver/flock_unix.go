//go:build unix

package driver

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// flockFile takes flock(2) LOCK_EX on path (created 0600), as flock(1)
// does for lockScript, waiting 5 s at most; unlock releases it.
func flockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot take the mutex %s: %w", path, err)
	}
	for i := 0; ; i++ {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing the file releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("cannot take the mutex %s: %w", path, err)
		}
		if i >= mutexTries {
			f.Close()
			return nil, fmt.Errorf("%s is busy: flock on it timed out after 5s: %w", path, errBusy)
		}
		sleepMutex()
	}
}
