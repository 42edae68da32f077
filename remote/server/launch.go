package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Spec is a fully resolved launch: what to run, where, and with which
// environment. Build it from a config preset and profile (see package
// sessions); Launch validates it again.
type Spec struct {
	Preset  string            // preset name, used in the log file name ("sglang" → sglang-20261129-101500.log)
	Profile string            // env profile name, recorded
	Server  string            // "sglang" or "vllm"
	Argv    []string          // the server's command line; Argv[0] is looked up on the host's PATH
	Env     map[string]string // added to the login environment with env(1); names [A-Z_][A-Z0-9_]*
	Workdir string            // where the server runs; "" is the home directory; "~/…" and relative paths are home-relative
	LogDir  string            // per-launch logs and the pidfile; same path rules; "" is ~/.flightdeck/logs
	Port    int               // the server's HTTP port (for adoption and health checks), 0 if unknown
	At      time.Time         // launch time for the log name and record; zero means now
}

// DefaultLogDir is the log directory when none is configured.
const DefaultLogDir = "~/.flightdeck/logs"

// AlreadyRunningError is returned by Launch when the pidfile names a server
// that is still running: kill it first (relaunch = Kill, wait, Launch).
type AlreadyRunningError struct{ PID int }

func (e *AlreadyRunningError) Error() string {
	return fmt.Sprintf("a server is already running (pid %d): kill it first", e.PID)
}

var presetFileName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Validate checks s without touching a host: a command, quotable words,
// env names and values (remote.ValidateEnv), a port in range.
func (s Spec) Validate() error {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return errors.New("launch: empty command")
	}
	if strings.Contains(s.Argv[0], "=") {
		return fmt.Errorf("launch: command %q contains '=': env(1) would take it for a variable", s.Argv[0])
	}
	for i, w := range s.Argv {
		if strings.ContainsAny(w, "\n\r\x00") {
			return fmt.Errorf("launch: argument %d contains a newline, carriage return or NUL", i)
		}
		if _, err := remote.Quote(w); err != nil {
			return fmt.Errorf("launch: argument %d: %w", i, err)
		}
	}
	if err := remote.ValidateEnv(s.Env); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	if s.Port < 0 || s.Port > 65535 {
		return fmt.Errorf("launch: port %d out of range", s.Port)
	}
	for _, p := range []string{s.Workdir, s.LogDir} {
		if _, err := remote.Quote(p); err != nil {
			return fmt.Errorf("launch: path %q: %w", p, err)
		}
	}
	return nil
}

// Launch starts s on h detached from the SSH connection: setsid, stdin from
// /dev/null, stdout and stderr appended to a new per-launch log
// <logdir>/<preset>-<YYYYMMDD-HHMMSS>.log, the environment passed as
// quoted export lines on the shell's stdin (never SSH Setenv, never on a
// command line, where ps would show a secret). A wrapper shell (the
// session leader) writes the pidfile <logdir>/flightdeck-server.json — pid,
// pgid, sid, start time and the launch — runs the server as its child and
// records its exit status in <logdir>/flightdeck-server.exit.
//
// flightdeck's own files (the log, the pidfile, the exit file) are created
// 0600, and the directories it creates 0700 (umask 077; the server itself
// runs with the login's umask); existing directories are left as they are,
// and one writable by every user (without the sticky bit) is reported in
// the record's Warnings. The pidfile's launch is redacted (RedactLaunch).
//
// It returns when the pidfile exists (well under a second), not when the
// server is ready. Errors: a Spec that fails Validate; *AlreadyRunningError
// when the pidfile's server is alive; a host without setsid or without the
// working directory; remote.ErrDisconnected wrapped when the connection
// dropped.
func Launch(ctx context.Context, h remote.Host, s Spec) (event.LaunchRecord, error) {
	if err := s.Validate(); err != nil {
		return event.LaunchRecord{}, err
	}
	if s.At.IsZero() {
		s.At = time.Now()
	}
	logDir, workdir := s.LogDir, s.Workdir
	if logDir == "" {
		logDir = DefaultLogDir
	}
	if err := Resolve(ctx, h, &logDir, &workdir); err != nil {
		return event.LaunchRecord{}, err
	}
	name := presetFileName.ReplaceAllString(s.Preset, "_")
	if name == "" {
		name = "server"
	}
	stamp := s.At.Format("20060102-150405")
	// The variables travel on stdin, as quoted export lines ahead of the
	// fixed script: they reach the server's environment but no command
	// line, where ps would show a token to every user of the host.
	var exports strings.Builder
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		q, err := remote.Quote(s.Env[k])
		if err != nil {
			return event.LaunchRecord{}, fmt.Errorf("launch: value of %s: %w", k, err)
		}
		exports.WriteString("export " + k + "=" + q + "\n")
	}
	script := exports.String() + launchScript
	mark := newMark()
	for try := 0; ; try++ {
		base := name + "-" + stamp
		if try > 0 {
			base += "-" + strconv.Itoa(try+1)
		}
		// The pidfile is read by whoever can read the log directory, and
		// outlives the server: it holds the launch with its secrets redacted.
		l := RedactLaunch(event.LaunchInfo{Preset: s.Preset, Profile: s.Profile, Server: s.Server, Argv: s.Argv, Env: s.Env,
			Workdir: workdir, LogPath: path.Join(logDir, base+".log"), ExitPath: path.Join(logDir, exitFileName),
			Port: s.Port, At: s.At})
		js, err := json.Marshal(l)
		if err != nil {
			return event.LaunchRecord{}, err
		}
		args := append([]string{"-s", "--", workdir, l.LogPath, path.Join(logDir, PidfileName), l.ExitPath, mark, string(js)}, s.Argv...)
		cmd, err := remote.Command("sh", args...)
		if err != nil {
			return event.LaunchRecord{}, fmt.Errorf("launch: %w", err)
		}
		res, err := h.Run(ctx, cmd, strings.NewReader(script))
		var ee *remote.ExitError
		switch {
		case err == nil:
			r, perr := parseRecord(bytes.TrimSpace(res.Stdout))
			if perr != nil {
				return event.LaunchRecord{}, fmt.Errorf("launch: %w", perr)
			}
			for _, line := range strings.Split(string(res.Stderr), "\n") {
				if w, ok := strings.CutPrefix(line, "warning "); ok {
					r.Warnings = append(r.Warnings, sanitize.String(w))
				}
			}
			return r, nil
		case errors.As(err, &ee) && ee.Code == 4 && try < 20:
			continue // a launch in the same second: next name
		case errors.As(err, &ee) && ee.Code == 5:
			pid, _ := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(string(res.Stdout)), "running "))
			return event.LaunchRecord{}, &AlreadyRunningError{PID: pid}
		case errors.As(err, &ee):
			return event.LaunchRecord{}, fmt.Errorf("launch on %s: %s", h.Name(), stderrOr(ee, err))
		default:
			return event.LaunchRecord{}, fmt.Errorf("launch on %s: %w", h.Name(), err)
		}
	}
}

// exitFileName is where the launch wrapper writes "PID STATUS" when the
// server exits (not when it is killed together with the wrapper).
const exitFileName = "flightdeck-server.exit"

// stderrOr is the command's last stderr line, sanitised, or err's text.
func stderrOr(ee *remote.ExitError, err error) string {
	s := strings.TrimSpace(string(ee.Stderr))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return err.Error()
	}
	return sanitize.String(s)
}

// Home returns the home directory of the login user on h ($HOME), absolute.
func Home(ctx context.Context, h remote.Host) (string, error) {
	res, err := h.Run(ctx, `printf '%s' "$HOME"`, nil)
	if err != nil {
		return "", fmt.Errorf("read $HOME on %s: %w", h.Name(), err)
	}
	home := string(res.Stdout)
	if !path.IsAbs(home) {
		return "", fmt.Errorf("read $HOME on %s: %q is not an absolute path", h.Name(), sanitize.String(home))
	}
	return path.Clean(home), nil
}

// Resolve makes each path absolute on h with AbsPath, reading $HOME (one
// command) only when one of them needs it.
func Resolve(ctx context.Context, h remote.Host, paths ...*string) error {
	home := ""
	for _, p := range paths {
		if path.IsAbs(*p) {
			*p = path.Clean(*p)
			continue
		}
		if home == "" {
			var err error
			if home, err = Home(ctx, h); err != nil {
				return err
			}
		}
		*p = AbsPath(home, *p)
	}
	return nil
}

// AbsPath resolves p on a host whose home is home: "~" and "~/x" expand,
// "" is home, a relative path is home-relative (an SSH command starts in
// the home directory), an absolute path is cleaned.
func AbsPath(home, p string) string {
	switch {
	case p == "" || p == "~":
		return home
	case strings.HasPrefix(p, "~/"):
		return path.Join(home, p[2:])
	case path.IsAbs(p):
		return path.Clean(p)
	}
	return path.Join(home, p)
}
