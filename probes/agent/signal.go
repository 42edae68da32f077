package agent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flightdeck-dev/flightdeck/probes/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote"
)

// linuxSignals names the Linux signals by number (the generic numbering of
// x86, arm, arm64, riscv, ppc and s390; the agent runs only on a Linux host
// of this binary's architecture). 0 is unused.
var linuxSignals = [...]string{"", "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS",
	"SIGFPE", "SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM", "SIGSTKFLT",
	"SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGXCPU", "SIGXFSZ",
	"SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO", "SIGPWR", "SIGSYS"}

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
	if n := ee.Code - 128; n > 0 && n < len(linuxSignals) {
		return fmt.Sprintf("killed by %s (exit status %d)", linuxSignals[n], ee.Code)
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
