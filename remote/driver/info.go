package driver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// FileName is the lock file's name in its directory. The mutex beside it
// is FileName+".mutex" (or the directory FileName+".mutex.d").
const FileName = "flightdeck-driver.json"

// Defaults of Lock.Heartbeat and Lock.StaleAfter.
const (
	DefaultHeartbeat  = 5 * time.Second
	DefaultStaleAfter = 30 * time.Second
)

// Limits on the text fields of an Info: longer text read from a lock file
// is cut (at a rune boundary), and Lock refuses a longer Me.
const (
	MaxNameBytes    = 64   // User, Machine
	MaxJournalBytes = 4096 // Journal
	MaxTokenBytes   = 64   // Token (hex digits)
)

// ErrGarbled is wrapped by the errors of Read (and in State.Err) for a lock
// file that is not a lock this version can read: not JSON, no valid token,
// too big. Such a file counts as held by an unknown cockpit until its mtime
// is older than the stale limit.
var ErrGarbled = errors.New("garbled lock file")

// Self returns the Info of this process: login name ($USER when the user
// database has none), hostname, pid, and a new Token. Since and Journal are
// left for the caller (Lock sets Since when it takes the lock).
func Self() event.DriverInfo {
	i := event.DriverInfo{PID: os.Getpid(), Token: NewToken()}
	if u, err := user.Current(); err == nil && u.Username != "" {
		i.User = u.Username
	} else {
		i.User = os.Getenv("USER")
	}
	i.Machine, _ = os.Hostname()
	i.User = clip(sanitize.String(i.User), MaxNameBytes)
	i.Machine = clip(sanitize.String(i.Machine), MaxNameBytes)
	return i
}

// NewToken returns a random token: 32 lower-case hex digits (128 bits from
// crypto/rand).
func NewToken() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (it crashes the program instead)
	return hex.EncodeToString(b[:])
}

// validToken reports whether t is 1 to MaxTokenBytes lower-case hex digits.
func validToken(t string) bool {
	if t == "" || len(t) > MaxTokenBytes {
		return false
	}
	for _, c := range []byte(t) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// checkMe validates a cockpit's own Info before it is written.
func checkMe(i event.DriverInfo) error {
	switch {
	case !validToken(i.Token):
		return fmt.Errorf("driver lock: token must be 1 to %d lower-case hex digits", MaxTokenBytes)
	case len(i.User) > MaxNameBytes || len(i.Machine) > MaxNameBytes:
		return fmt.Errorf("driver lock: user and machine names are at most %d bytes", MaxNameBytes)
	case len(i.Journal) > MaxJournalBytes:
		return fmt.Errorf("driver lock: journal path is at most %d bytes", MaxJournalBytes)
	case i.PID < 0:
		return fmt.Errorf("driver lock: negative pid %d", i.PID)
	}
	for _, s := range []string{i.User, i.Machine, i.Journal} {
		if sanitize.String(s) != s {
			return fmt.Errorf("driver lock: user, machine and journal must be printable text: %q", s)
		}
	}
	return nil
}

// clip cuts s to at most n bytes at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// parseInfo reads a lock file's content (remote text): the JSON of an
// Info with a valid token. Text fields are sanitised and cut to their
// limits; Heartbeat is the file's mtime. Errors wrap ErrGarbled.
func parseInfo(s snapshot) (event.DriverInfo, error) {
	if len(s.Content) > MaxFileBytes {
		return event.DriverInfo{}, fmt.Errorf("%w: more than %d bytes", ErrGarbled, MaxFileBytes)
	}
	var i event.DriverInfo
	if err := json.Unmarshal(s.Content, &i); err != nil {
		return event.DriverInfo{}, fmt.Errorf("%w: %s", ErrGarbled, sanitize.String(err.Error()))
	}
	if !validToken(i.Token) {
		return event.DriverInfo{}, fmt.Errorf("%w: no valid token", ErrGarbled)
	}
	if i.PID < 0 {
		return event.DriverInfo{}, fmt.Errorf("%w: negative pid", ErrGarbled)
	}
	i.User = clip(sanitize.String(i.User), MaxNameBytes)
	i.Machine = clip(sanitize.String(i.Machine), MaxNameBytes)
	i.Journal = clip(sanitize.String(i.Journal), MaxJournalBytes)
	i.Heartbeat = time.Unix(s.MTime, 0)
	return i, nil
}

// resolveDir makes dir absolute on h ("" is server.DefaultLogDir; "~/"
// and relative paths are home-relative) and returns it with the lock
// file's path.
func resolveDir(ctx context.Context, h remote.Host, dir string) (string, string, error) {
	if dir == "" {
		dir = server.DefaultLogDir
	}
	if err := server.Resolve(ctx, h, &dir); err != nil {
		return "", "", fmt.Errorf("driver lock directory: %w", err)
	}
	return dir, path.Join(dir, FileName), nil
}

// Read returns the lock on h in dir ("" is server.DefaultLogDir; see
// Lock.Dir) for a cockpit that does not take it (`flightdeck follow HOST`,
// a status line): its holder, with Heartbeat the file's mtime (host clock),
// and whether it is held (its heartbeat is at most DefaultStaleAfter old).
// No lock file: zero Info, false, nil. A garbled file: zero Info, whether
// it is fresh, and an error wrapping ErrGarbled. Other errors (the host,
// the directory) come with a zero Info and false; a lost connection wraps
// remote.ErrDisconnected.
func Read(ctx context.Context, h remote.Host, dir string) (event.DriverInfo, bool, error) {
	dir, file, err := resolveDir(ctx, h, dir)
	if err != nil {
		return event.DriverInfo{}, false, err
	}
	s, err := exchange(ctx, h, mutexFlock, opRead, dir, file, "", nil)
	if err != nil {
		return event.DriverInfo{}, false, err
	}
	if s.Absent() {
		return event.DriverInfo{}, false, nil
	}
	fresh := s.Age() <= DefaultStaleAfter
	i, err := parseInfo(s)
	if err != nil {
		return event.DriverInfo{}, fresh, fmt.Errorf("driver lock %s on %s: %w", sanitize.String(file), h.Name(), err)
	}
	return i, fresh, nil
}

// whoPID is Who with the pid: "alice@laptop (pid 4123)".
func whoPID(i event.DriverInfo) string {
	if i.PID > 0 {
		return fmt.Sprintf("%s (pid %d)", i.Who(), i.PID)
	}
	return i.Who()
}

// clock formats t as the screen shows times of day: "10:02:03", local time.
func clock(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return t.Local().Format("15:04:05")
}

// ago formats a heartbeat's age: "47s", "12m", "3h".
func ago(d time.Duration) string {
	switch {
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int64(d/time.Second))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int64(d/time.Minute))
	}
	return fmt.Sprintf("%dh", int64(d/time.Hour))
}

// Notes for State.Note.
func noteStale(prev event.DriverInfo, garbled bool, age time.Duration) string {
	if garbled {
		return fmt.Sprintf("took the stale lock (a garbled lock file): no heartbeat for %s", ago(age))
	}
	return fmt.Sprintf("took the stale lock of %s: no heartbeat for %s", whoPID(prev), ago(age))
}

func noteTakeOver(prev event.DriverInfo, garbled bool) string {
	if garbled {
		return "took over from an unknown cockpit (a garbled lock file)"
	}
	if prev.PID > 0 {
		return fmt.Sprintf("took over from %s (pid %d, driving since %s)", prev.Who(), prev.PID, clock(prev.Since))
	}
	return fmt.Sprintf("took over from %s (driving since %s)", prev.Who(), clock(prev.Since))
}

func noteLost(by event.DriverInfo) string {
	return fmt.Sprintf("%s took over at %s", whoPID(by), clock(by.Since))
}

func noteQuit(prev event.DriverInfo) string {
	if prev.Token == "" {
		return "the lock was released: you drive now"
	}
	return whoPID(prev) + " quit: you drive now"
}

func noteNewHolder(prev, by event.DriverInfo) string {
	if prev.Token == "" {
		return fmt.Sprintf("%s drives since %s", by.Who(), clock(by.Since))
	}
	return fmt.Sprintf("%s took over from %s at %s", whoPID(by), whoPID(prev), clock(by.Since))
}

// garbledErr is State.Err for a fresh garbled lock file.
func garbledErr(file string, err error, staleAfter time.Duration) string {
	msg := strings.TrimPrefix(err.Error(), ErrGarbled.Error()+": ")
	return fmt.Sprintf("%s %s (%s): held by an unknown cockpit until it has no heartbeat for %s; --take-over takes it",
		ErrGarbled, sanitize.String(file), msg, ago(staleAfter))
}
