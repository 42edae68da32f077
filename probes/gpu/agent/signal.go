package agent

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
)

// exitText says how a command ended, naming the signal that killed it:
// "killed by SIGKILL" when SSH (exit-signal) or the local wait status
// reports the signal, "killed by SIGTERM (exit status 143)" when a shell
// between reported it as 128+N (which a program may also exit with
// itself, hence the number), else err's text ("exit status 1").
func exitText(err error) string {
	ee, ok := errors.AsType[*remote.ExitError](err)
	if !ok {
		return err.Error()
	}
	if ee.Signal != "" {
		name := sanitize.String(ee.Signal)
		if !strings.HasPrefix(name, "SIG") && !isDigits(name) {
			name = "SIG" + name
		} else if isDigits(name) {
			name = "signal " + name
		}
		return "killed by " + name
	}
	if n := ee.Code - 128; n > 0 && n < 65 {
		// The agent runs only on a host of this binary's OS (Linux) and
		// architecture: this kernel's numbering is the host's.
		if name := unix.SignalName(syscall.Signal(n)); name != "" {
			return fmt.Sprintf("killed by %s (exit status %d)", name, ee.Code)
		}
	}
	return ee.Error()
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
