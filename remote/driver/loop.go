package driver

// The fallback stream, for a host without the flightdeck agent: a shell
// loop, started once, that does each heartbeat (or each look at the lock)
// with shell builtins only when the cockpit writes a line to its stdin, so
// no process is spawned per beat.
//
// Driving, it rewrites its own lock file in place (the same bytes through
// /proc/self/fd/4, the file it checked at its start): the mtime is the
// heartbeat, exactly as the script's rewrite. It writes only while the
// path still names that file ([ F -ef /proc/self/fd/4 ]): a take-over
// renames a new file over it, and the loop's write then goes to the old,
// unlinked one, harmlessly; it says "lost" and ends. Watching, it checks
// that the file is still there and the same (or the same content, renamed
// over it by an agent's or a script's heartbeat: "fresh"), and whether
// its mtime moved since the last look ([ F -nt REF ], REF a file of its
// own it rewrites at each look). The cockpit runs lockScript (processes)
// only when something changed: a new holder, the file gone, a holder
// quiet for StaleAfter less a heartbeat (the script then judges staleness
// by the host's clock, as before).
//
// It needs Linux's /proc/self/fd and a test(1) with -ef and -nt (dash,
// bash, busybox); else it exits 26 and the lock falls back to lockScript
// beats.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
)

// loopScript is run as "sh -c SCRIPT flightdeck-lock MODE FILE NEW" (MODE
// drive or watch; NEW the lock file's content as we wrote it, without its
// newline). It prints one line at its start and one per line read on
// stdin: drive: "ok" (rewritten), "lost" (the file is not ours: it ends),
// "error TEXT"; watch: "fresh" (rewritten or replaced with the same
// content since the last look), "same" (untouched), "changed" or "absent"
// (it ends). Only its start spawns processes (watch: one rm).
const loopScript = `set -u
mode=$1 f=$2 new=$3
[ -e /proc/self/fd/0 ] || { echo 'the lock loop needs /proc/self/fd' >&2; exit 26; }
if [ "$mode" = drive ]; then
  exec 4<"$f" || { echo lost; exit 0; }
  IFS= read -r cur <&4 || cur=
  [ "$cur" = "$new" ] || { echo lost; exit 0; }
  while :; do
    if [ "$f" -ef /proc/self/fd/4 ]; then
      if printf '%s\n' "$new" 1<>/proc/self/fd/4; then echo ok; else echo "error cannot rewrite $f"; fi
    else
      echo lost; exit 0
    fi
    IFS= read -r _ || exit 0
  done
fi
ref="${TMPDIR:-/tmp}/flightdeck-lock-watch.$$"
{ umask 077; : >"$ref" && exec 6<>"$ref"; } || { echo "cannot create $ref" >&2; exit 3; }
rm -f -- "$ref"
exec 5<"$f" || { echo absent; exit 0; }
IFS= read -r last <&5 || last=
echo fresh
while IFS= read -r _; do
  if ! [ -e "$f" ]; then echo absent; exit 0; fi
  if [ "$f" -ef /proc/self/fd/5 ]; then
    if [ "$f" -nt /proc/self/fd/6 ]; then echo fresh; else echo same; fi
  else
    exec 5<"$f" || { echo absent; exit 0; }
    IFS= read -r c <&5 || c=
    if [ "$c" = "$last" ]; then echo fresh; else echo changed; exit 0; fi
  fi
  printf x >/proc/self/fd/6
done
`

// loopCommand is the command line of the shell loop for stream s.
func (l *Lock) loopCommand(s *lockStream, every time.Duration) (string, error) {
	if _, ok := l.Host.(remote.InputStarter); !ok {
		return "", nil
	}
	content, err := l.content()
	if err != nil {
		return "", err
	}
	mode := "watch"
	if s.drive {
		mode = "drive"
	}
	return remote.Command("sh", "-c", loopLine1, "flightdeck-lock", mode, l.file, string(content))
}

// loopLine1 is loopScript on one line (a shell word cannot carry a
// newline): "; " between commands, a space after a keyword that opens a
// body.
var loopLine1 = oneLine(loopScript)

// oneLine joins a script's lines: after "then", "do", "else" or "{" with a
// space, else with "; ".
func oneLine(script string) string {
	var b strings.Builder
	for _, ln := range strings.Split(strings.TrimSpace(script), "\n") {
		ln = strings.TrimSpace(ln)
		if ln == "" {
			continue
		}
		if b.Len() > 0 {
			prev := b.String()
			sep := "; "
			for _, k := range []string{" then", " do", " else", "{"} {
				if strings.HasSuffix(prev, k) || prev == strings.TrimSpace(k) {
					sep = " "
				}
			}
			b.WriteString(sep)
		}
		b.WriteString(ln)
	}
	return b.String()
}

// loopLine feeds one line of the shell loop to the state machine: at is
// when the operation was asked for (mono()). l.op is held.
func (l *Lock) loopLine(ctx context.Context, s *lockStream, line []byte, at int64) {
	w := strings.TrimSpace(string(line))
	every, stale, _ := l.periods()
	switch {
	case s.drive && w == "ok":
		if l.ver != "" && l.ver == s.want {
			l.wroteAt(at, "")
		}
	case s.drive && strings.HasPrefix(w, "error "):
		l.fail(fmt.Errorf("driver lock on %s: %s", l.Host.Name(), sanitize.String(strings.TrimPrefix(w, "error "))))
	case !s.drive && w == "fresh":
		s.quiet = 0 // State's Holder.Heartbeat stays the mtime last read by a script
	case !s.drive && w == "same":
		s.quiet++
		if time.Duration(s.quiet)*every >= stale-every {
			// Quiet for long: the script judges staleness by the host's
			// clock (and takes the lock if it is stale).
			s.quiet = 0
			if l.ver == "" {
				l.claim(ctx, nil, false)
			}
		}
	default: // lost, changed, absent, or a line we do not know: look with the script
		s.over = true
		if s.drive && l.ver != s.want {
			return // the lock moved outside the stream: fits replaces it
		}
		if s.drive || l.ver == "" {
			l.claim(ctx, nil, false)
		}
	}
}
