package agent

// A stalled agent is killed on the host when the Runner gives up on it.

import (
	"strings"
	"testing"
	"time"
)

// A stalled agent (silent: it neither writes nor exits) is killed when the
// Runner gives up on it, over a real OpenSSH sshd as root, which keeps a
// command of a closed session without a PTY running and refuses to signal
// it: it would otherwise hold its process and an sshd session slot.
func TestRunnerKillsAStalledAgent(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"after a sample", `echo '` + fakeHello + `'; echo '` + fakeSample + `'; exec sleep 61`, "agent sent nothing for 3 intervals"},
		{"before its hello", `exec sleep 61`, "agent sent no hello within 2s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rg := newRig(t)
			events := rg.run(&Runner{Binary: rg.fakeAgent("agent", c.body), StartTimeout: 2 * time.Second})
			src := expectFallback(t, events)
			if !strings.HasPrefix(src.Fallback, c.want) {
				t.Errorf("fallback %q, want it to start with %q", src.Fallback, c.want)
			}
			waitGone(t, rg.pidOf("agent"))
		})
	}
}
