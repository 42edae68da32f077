package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// KillResult is what Kill did.
type KillResult struct {
	Members   []event.Process // the server's processes when the kill began
	Escalated []int           // pids still alive after the grace period, sent SIGKILL
	Survivors []event.Process // processes alive even after SIGKILL (e.g. stuck in state D)
}

// SurvivorsError is returned by Kill when processes outlive SIGKILL.
type SurvivorsError struct{ Survivors []event.Process }

func (e *SurvivorsError) Error() string {
	var b strings.Builder
	b.WriteString("still alive after SIGKILL:")
	for _, p := range e.Survivors {
		fmt.Fprintf(&b, " %d (%s, state %s)", p.PID, p.Comm, p.State)
	}
	return b.String()
}

// DefaultGrace is how long Kill waits after SIGTERM before SIGKILL.
const DefaultGrace = 10 * time.Second

// Kill stops the server t names and everything that belongs to it: the
// root, its descendants (snapshotted before any signal, so workers that
// called setsid or lost their parent are still found), its process group
// and session when the root leads them, t.Keep, and every process that
// carries the launch's mark t.Mark (found again before each signal and at
// the end: Kill succeeds only when none is left). It sends SIGTERM, waits
// up to grace (0: DefaultGrace) for every non-zombie to exit, then SIGKILLs
// the rest and waits 5 s more. A pid whose start time no longer matches is
// another process and is never signalled.
//
// Kill does not wait for GPU memory; see the GPU checks in package
// sessions. Errors: *SurvivorsError when processes outlive SIGKILL;
// remote.ErrDisconnected wrapped when the connection dropped.
func Kill(ctx context.Context, h remote.Host, t event.KillTarget, grace time.Duration) (KillResult, error) {
	return KillFenced(ctx, h, t, grace, Fence{})
}

// Fence makes a kill conditional on the host's driver lock file
// (driver.Lock.Fence): right before its SIGTERM, holding the lock's
// flock(1) mutex ("FILE.mutex", as the lock's own script takes it) when
// the host has flock, the kill script checks that the file is absent or
// names Token, so that a take-over by another cockpit a moment before
// stops the signal instead of racing it. The zero Fence checks nothing.
type Fence struct {
	File  string // the lock file's absolute path on the host; "" for none
	Token string // this cockpit's token (event.DriverInfo.Token, hex digits)
}

// exitFenced is the kill script's exit status when the fence stopped it.
const exitFenced = 5

// ErrFenced is wrapped by KillFenced's error when the fence stopped the
// signal: the driver lock names another cockpit.
var ErrFenced = errors.New("the driver lock names another cockpit now: nothing was signalled")

// KillFenced is Kill with a Fence checked right before the SIGTERM. Beyond
// Kill's errors it returns ErrFenced wrapped (the result's Members are the
// tree as it was; nothing was signalled), and an error for a token that is
// not hex digits.
func KillFenced(ctx context.Context, h remote.Host, t event.KillTarget, grace time.Duration, f Fence) (KillResult, error) {
	if grace <= 0 {
		grace = DefaultGrace
	}
	if f.File != "" && (f.Token == "" || strings.Trim(f.Token, "0123456789abcdef") != "") {
		return KillResult{}, fmt.Errorf("kill: fence token %q is not hex digits", f.Token)
	}
	if !validMark(t.Mark) {
		return KillResult{}, fmt.Errorf("kill: launch mark %q is not %d hex digits", t.Mark, markLen)
	}
	secs := int((grace + time.Second - 1) / time.Second)
	keep := make([]string, 0, len(t.Keep))
	for _, p := range t.Keep {
		keep = append(keep, keepWord(p))
	}
	cmd, err := remote.Command("sh", "-s", "--", strconv.Itoa(t.PID), strconv.FormatUint(t.StartTime, 10),
		strconv.Itoa(t.PGID), strconv.Itoa(t.SID), strconv.Itoa(secs), strings.Join(keep, " "), f.File, f.Token, t.Mark)
	if err != nil {
		return KillResult{}, err
	}
	res, err := h.Run(ctx, cmd, strings.NewReader(killScript))
	r := parseKill(res.Stdout)
	var ee *remote.ExitError
	switch {
	case err == nil:
		return r, nil
	case errors.As(err, &ee) && ee.Code == exitFenced:
		return r, fmt.Errorf("kill on %s: %w", h.Name(), ErrFenced)
	case errors.As(err, &ee) && ee.Code == 1 && len(r.Survivors) > 0:
		return r, &SurvivorsError{Survivors: r.Survivors}
	case errors.As(err, &ee):
		return r, fmt.Errorf("kill on %s: %s", h.Name(), stderrOr(ee, err))
	}
	return r, fmt.Errorf("kill on %s: %w", h.Name(), err)
}

func parseKill(out []byte) KillResult {
	var r KillResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "member", "survivor":
			p, ok := parseProc(rest)
			if !ok {
				continue
			}
			if kind == "member" {
				r.Members = append(r.Members, p)
			} else {
				r.Survivors = append(r.Survivors, p)
			}
		case "escalate":
			for _, w := range strings.Fields(rest) {
				if pid, err := strconv.Atoi(w); err == nil {
					r.Escalated = append(r.Escalated, pid)
				}
			}
		}
	}
	return r
}
