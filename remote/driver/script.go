package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
)

// MaxFileBytes is the largest lock file read; a bigger one is garbled (a
// real one is about 250 bytes).
const MaxFileBytes = 4096

// lockScript is every operation on the lock file, sent on stdin to
// "sh -s -- OP DIR FILE WANT NEW MUTEX"; all variable data arrives as
// positional parameters. It is one compare-and-swap, serialised against
// every other cockpit by a mutex on the sidecar FILE.mutex (flock(1) on fd 9
// when MUTEX is "flock" and the host has it, else a mkdir(2) mutex
// FILE.mutex.d that a killed script may leave behind, removed when older
// than 30 s).
//
// A version names one state of the file: "absent", or "MTIME CRC SIZE" (the
// host's mtime in Unix seconds and cksum(1) of the content), so the content
// never has to travel back as an argument. OP is
//
//	read  print the file (without the mutex when the directory is not ours)
//	put   if the version is WANT, write NEW plus a newline (temp file + mv)
//	del   if the version is WANT, remove the file
//
// and the script prints "result ok|conflict|read", "now UNIXSECONDS" and
// "version V" lines (after the change when it made one), then the first
// MaxFileBytes+1 bytes of the file. Exit 3: the file cannot be read or
// written; 75: the mutex stayed busy for 5 s. It needs a POSIX sh and
// coreutils (stat -c, cksum, head -c, mv, sleep with fractions).
const lockScript = `set -u
umask 077
op=$1 dir=$2 f=$3 want=$4 new=$5 mx=$6
ver() {
  if [ -e "$f" ]; then
    m=$(stat -c %Y -- "$f") && c=$(cksum < "$f") && echo "$m $c"
  else
    echo absent
  fi
}
mutex() {
  if [ "$mx" = flock ] && command -v flock >/dev/null 2>&1; then
    exec 9>>"$f.mutex" || exit 3
    flock -w 5 9 || { echo "$f is busy: flock on $f.mutex timed out after 5s" >&2; exit 75; }
    return 0
  fi
  d="$f.mutex.d" i=0
  until mkdir -- "$d" 2>/dev/null; do
    i=$((i+1))
    if [ "$i" -gt 50 ]; then
      a=$(stat -c %Y -- "$d" 2>/dev/null) || a=
      if [ -n "$a" ] && [ $(( $(date +%s) - a )) -gt 30 ]; then rmdir -- "$d" 2>/dev/null; i=0; continue; fi
      echo "$f is busy: the mutex directory $d was held for 5s" >&2; exit 75
    fi
    sleep 0.1
  done
  trap 'rmdir -- "$d" 2>/dev/null' EXIT
  trap 'exit 129' HUP INT TERM
}
case $op in
read) if [ -e "$f" ] && [ -w "$dir" ]; then mutex; fi ;;
put) mkdir -p -- "$dir" || exit 3; mutex ;;
del) if [ -e "$f" ]; then mutex; fi ;;
*) echo "unknown operation $op" >&2; exit 2 ;;
esac
cur=$(ver) || exit 3
res=conflict
[ "$op" = read ] && res=read
if [ "$op" != read ] && [ "$cur" = "$want" ]; then
  if [ "$op" = put ]; then
    t="$f.tmp.$$"
    if ! { printf '%s\n' "$new" > "$t" && mv -f -- "$t" "$f"; }; then rm -f -- "$t"; echo "cannot write $f" >&2; exit 3; fi
  else
    rm -f -- "$f" || exit 3
  fi
  res=ok
  cur=$(ver) || exit 3
fi
printf 'result %s\nnow %s\nversion %s\n' "$res" "$(date +%s)" "$cur"
if [ "$cur" != absent ]; then head -c 4097 -- "$f"; fi
`

// Script operations (lockScript's OP).
const (
	opRead = "read"
	opPut  = "put"
	opDel  = "del"
)

// verAbsent is the version of a lock file that does not exist.
const verAbsent = "absent"

// snapshot is what lockScript printed: the lock file as the host saw it
// (after the change when Wrote).
type snapshot struct {
	Wrote   bool   // the put or del happened
	Now     int64  // host clock, Unix seconds
	Version string // verAbsent or "MTIME CRC SIZE"
	MTime   int64  // host clock, Unix seconds; 0 when absent
	Content []byte // at most MaxFileBytes+1 bytes; nil when absent
}

// Absent reports whether there is no lock file.
func (s snapshot) Absent() bool { return s.Version == verAbsent }

// Age is how long ago, by the host's clock, the file was last written (its
// holder's last heartbeat); 0 when absent or written "in the future" (a
// clock step).
func (s snapshot) Age() time.Duration {
	if s.Absent() || s.MTime >= s.Now {
		return 0
	}
	return time.Duration(s.Now-s.MTime) * time.Second
}

// errOutput is wrapped by parseSnapshot's errors.
var errOutput = errors.New("unexpected output from the lock script")

// parseSnapshot parses lockScript's output.
func parseSnapshot(out []byte) (snapshot, error) {
	var s snapshot
	rest := out
	line := func(key string) (string, error) {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return "", fmt.Errorf("%w: no %q line", errOutput, key)
		}
		l := string(rest[:i])
		rest = rest[i+1:]
		v, ok := strings.CutPrefix(l, key+" ")
		if !ok {
			return "", fmt.Errorf("%w: %q where a %q line was due", errOutput, sanitize.String(l), key)
		}
		return v, nil
	}
	res, err := line("result")
	if err != nil {
		return s, err
	}
	switch res {
	case "ok":
		s.Wrote = true
	case "conflict", "read":
	default:
		return s, fmt.Errorf("%w: result %q", errOutput, sanitize.String(res))
	}
	now, err := line("now")
	if err != nil {
		return s, err
	}
	if s.Now, err = strconv.ParseInt(now, 10, 64); err != nil || s.Now <= 0 {
		return s, fmt.Errorf("%w: host clock %q", errOutput, sanitize.String(now))
	}
	if s.Version, err = line("version"); err != nil {
		return s, err
	}
	if s.Absent() {
		if len(rest) > 0 {
			return s, fmt.Errorf("%w: content after an absent version", errOutput)
		}
		return s, nil
	}
	f := strings.Fields(s.Version)
	if len(f) != 3 || strings.Join(f, " ") != s.Version {
		return s, fmt.Errorf("%w: version %q", errOutput, sanitize.String(s.Version))
	}
	var nums [3]int64
	for i, x := range f {
		if nums[i], err = strconv.ParseInt(x, 10, 64); err != nil || nums[i] < 0 {
			return s, fmt.Errorf("%w: version %q", errOutput, sanitize.String(s.Version))
		}
	}
	s.MTime = nums[0]
	if len(rest) > MaxFileBytes+1 {
		return s, fmt.Errorf("%w: %d bytes of content", errOutput, len(rest))
	}
	s.Content = rest
	return s, nil
}

// exchange runs lockScript on h for file in dir.
func exchange(ctx context.Context, h remote.Host, mutex, op, dir, file, want string, content []byte) (snapshot, error) {
	cmd, err := remote.Command("sh", "-s", "--", op, dir, file, want, string(content), mutex)
	if err != nil {
		return snapshot{}, fmt.Errorf("driver lock %s: %w", sanitize.String(file), err)
	}
	res, err := h.Run(ctx, cmd, strings.NewReader(lockScript))
	if err != nil {
		var ee *remote.ExitError
		if errors.As(err, &ee) {
			if msg := lastLine(ee.Stderr); msg != "" {
				return snapshot{}, fmt.Errorf("driver lock on %s: %s: %w", h.Name(), msg, err)
			}
		}
		return snapshot{}, fmt.Errorf("driver lock on %s: %w", h.Name(), err)
	}
	s, err := parseSnapshot(res.Stdout)
	if err != nil {
		return s, fmt.Errorf("driver lock %s on %s: %w", sanitize.String(file), h.Name(), err)
	}
	return s, nil
}

// lastLine is the last non-empty line of b, sanitised.
func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return sanitize.String(s)
}
