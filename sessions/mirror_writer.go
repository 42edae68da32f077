package sessions

// The mirror's remote writer and the fence that makes sure the writer
// before it is dead when the mirror resynchronises.
//
// A frozen peer (its sshd stopped, a partition) leaves the old writer, a
// `cat >> FILE` on the host, alive and the bytes sent to it held in the
// frozen sshd. The mirror gives the connection up, resynchronises over a
// new one from the file's size and goes on; when the old sshd wakes it
// hands the old cat what it held, and those lines would land again, after
// newer ones. So each writer records itself in a sidecar file next to the
// mirror (pid and start time), and each resynchronisation first kills the
// recorded writer (by pid, when that process still has the recorded start
// time: a pid may have been reused) and waits until it is gone, then reads
// the file's size. A writer whose command reaches the host only after a
// resynchronisation (held in a frozen sshd too) finds that the sidecar no
// longer names its token and exits without writing. Both steps hold the
// sidecar's flock, where the host has flock(1).

import (
	"crypto/rand"
	"encoding/hex"
	"path"
)

// mirrorSuperseded is the writer's exit status when a later
// resynchronisation (of this mirror or another one of the same file) took
// the file over.
const mirrorSuperseded = 75

// mirrorFenceScript kills the previous writer and hands the file to the
// next one. Usage: sh -s -- FILE DIR SIDECAR TOKEN, the script on stdin. It
// makes DIR (umask 077: 0700, existing directories untouched), kills the
// writer that SIDECAR ("TOKEN PID STARTTIME") names when /proc/PID/stat
// still shows that start time, waits until it is gone (a zombie holds no
// file), writes TOKEN alone to SIDECAR (0600) and prints FILE's size in
// bytes, or "missing". Exit 3: the writer outlived SIGKILL for 5 s.
const mirrorFenceScript = `f=$1 d=$2 w=$3 tok=$4
umask 077
mkdir -p -- "$d" || exit 1
exec 9>>"$w" || exit 1
command -v flock >/dev/null 2>&1 && flock -w 10 -x 9
old= pid= st=
read -r old pid st < "$w"
case $pid in ''|*[!0-9]*) pid=0 ;; esac
alive() {
  s=
  read -r s 2>/dev/null < "/proc/$pid/stat" || return 1
  set -- ${s##*) }
  [ "${20}" = "$st" ] && [ "$1" != Z ] && [ "$1" != X ]
}
if [ "$pid" -gt 1 ] && [ -n "$st" ] && alive; then
  kill -s KILL "$pid" 2>/dev/null
  i=0
  while alive; do
    i=$((i + 1))
    [ "$i" -le 100 ] || { echo "the mirror's previous writer (pid $pid) is still alive after SIGKILL" >&2; exit 3; }
    sleep 0.05
  done
fi
printf '%s\n' "$tok" > "$w" || exit 1
if [ -e "$f" ]; then wc -c < "$f"; else echo missing; fi
`

// mirrorWriterScript is the writer: it appends its stdin to FILE. Usage:
// sh -c SCRIPT NAME FILE SIDECAR TOKEN (one line: a quoted word holds no
// newline). It exits with mirrorSuperseded (75), writing nothing, unless
// SIDECAR names TOKEN (the resynchronisation it follows is still the
// last); else it records "TOKEN PID STARTTIME" there and becomes the `cat`
// (same pid and start time), without the lock. umask 077: the mirror holds
// launch commands, env and notes; on a shared host it is the user's alone
// (0600), as the local journal is.
const mirrorWriterScript = `f=$1 w=$2 tok=$3; umask 077; exec 9>>"$w" || exit 1; ` +
	`command -v flock >/dev/null 2>&1 && flock -w 10 -x 9; ` +
	`cur=; read -r cur _ < "$w"; ` +
	`[ "$cur" = "$tok" ] || { echo "a later resynchronisation took $f over" >&2; exit 75; }; ` +
	`st=; if read -r s 2>/dev/null < "/proc/$$/stat"; then set -- ${s##*) }; st=${20}; fi; ` +
	`printf '%s %s %s\n' "$tok" "$$" "$st" > "$w" || exit 1; ` +
	`exec cat >> "$f" 9>&-`

// mirrorSidecar is the file next to the mirror dst that names its writer:
// hidden, so that listings of *.jsonl skip it.
func mirrorSidecar(dst string) string {
	return path.Join(path.Dir(dst), "."+path.Base(dst)+".writer")
}

// newMirrorToken returns a fresh writer token.
func newMirrorToken() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
