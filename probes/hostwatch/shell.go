package hostwatch

import (
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// ShellCommand returns the command line of the shell watcher: the
// fallback for hosts without the flightdeck agent, writing the same lines
// as Run (with "via":"shell"). It needs bash (4.4 or newer; a host without
// it gets one error line and exit status 3). The script is passed with
// `bash -c`, not on stdin: Host.Start gives the command a closed stdin.
//
// At start it runs a few processes (mktemp; `git ls-files` for the
// tracked files; a subshell that holds the pipe `read -t` sleeps on);
// at steady state only bash builtins: `read -r` of HEAD, the ref, the
// pidfile, the exit file, /proc/PID/stat and children and /proc/net/tcp,
// `[ F -ot STAMP ]` against stamp files it rewrites with a redirection
// (in a 0700 directory of its own, removed at exit), the /proc glob, and
// `read -t` on that pipe to sleep. It runs `git ls-files` again only when
// the index changed. So it spawns nothing while nothing changes.
//
// What it can miss compared with the agent (Run), and how late it is:
//
//   - HEAD, its ref, packed-refs and the index: within one interval, as the
//     agent (mtimes compared with "not older than" the last stamp, so a
//     change in the stamp's own clock tick is not lost; one may be
//     reported twice);
//   - the working tree: a rotating check of the tracked files and their
//     directories, shellBatch paths an interval (directories first: an
//     added or removed file changes its directory), against a stamp of the
//     previous round. A change is seen within one round: one interval for
//     up to shellBatch paths, about N/shellBatch intervals for N paths
//     (the SGLang tree, ~3500 paths: 7 s). Untracked files in a new
//     untracked directory below another one are not seen (git status
//     shows the directory, already seen, without -uall anyway); nor is a
//     file whose mtime was set back (`touch -d`), nor ignored paths (they
//     are not checked; git does not show them either);
//   - the server: as the agent, with bash's regular expressions (POSIX
//     ERE, as Find's grep -E) for the command lines (a --port given as
//     "--port=08000" is compared as text, not as a number), but the
//     listener on the port every 5 intervals only (/proc/net/tcp costs the
//     kernel a walk of its whole connection table; the agent asks
//     sock_diag instead): a server started by hand that the command-line
//     pattern does not match is seen within 5 intervals.
//
// interval and keepalive are rounded to what bash takes (ms; s).
func ShellCommand(o Options) (string, error) {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Keepalive <= 0 {
		o.Keepalive = DefaultKeepalive
	}
	iv := strconv.FormatFloat(o.Interval.Seconds(), 'f', 3, 64)
	ka := strconv.Itoa(max(1, int(o.Keepalive/time.Second)))
	var pidf, exitf, port, match string
	if s := o.Server; s != nil {
		pidf, exitf, port, match = s.Pidfile, s.ExitFile, strconv.Itoa(s.Port), s.Match
	}
	// remote.Quote carries no newline: the script travels with its
	// backslashes doubled and its newlines as \n, and printf %b (a
	// builtin) turns it back before bash runs it.
	enc := strings.ReplaceAll(strings.ReplaceAll(shellScript, `\`, `\\`), "\n", `\n`)
	return remote.Command("sh", "-c", shellLauncher, "flightdeck-watch", enc, "flightdeck-watch",
		iv, ka, o.Repo, pidf, exitf, port, match, strconv.Itoa(shellBatch))
}

// shellLauncher checks for bash and runs the decoded script ($1) with the
// other arguments.
const shellLauncher = `command -v bash >/dev/null 2>&1 || { printf '%s\n' '{"t":"error","err":"no bash on the host: the shell watcher needs it"}'; exit 3; }; ` +
	`s=$(printf '%b' "$1") && shift && exec bash -c "$s" "$@"`

// shellBatch is how many tracked paths the shell watcher checks an
// interval (each a stat: about 1 ms of bash for 256).
const shellBatch = 256

// shellScript is the shell watcher. Usage: bash -c SCRIPT NAME INTERVAL_S
// KEEPALIVE_S REPO PIDFILE EXITFILE PORT MATCH BATCH (REPO "" watches no
// checkout, PIDFILE "" no server).
const shellScript = `set -u
iv=$1 ka=$2 repo=$3 pidf=$4 exitf=$5 port=${6:-0} pat=$7 batch=$8
trap '' PIPE
trap 'exit 0' TERM HUP INT
home() { case $1 in "~") printf '%s' "$HOME" ;; "~/"*) printf '%s' "$HOME/${1#"~/"}" ;; *) printf '%s' "$1" ;; esac; }
repo=$(home "$repo") pidf=$(home "$pidf") exitf=$(home "$exitf")
[ -n "$repo" ] && case $repo in /*) ;; *) repo=$HOME/$repo ;; esac
last=$SECONDS
out() { printf '%s\n' "$1" || exit 0; last=$SECONDS; }
tmp=$(umask 077 && mktemp -d "${TMPDIR:-/tmp}/flightdeck-watch.XXXXXX") || { out '{"t":"error","err":"mktemp failed"}'; exit 3; }
trap 'rm -rf "$tmp"' EXIT
exec 9<> <(:)
stamp=0
echo 0 > "$tmp/s0"; echo 1 > "$tmp/s1"; echo c > "$tmp/c0"; echo c > "$tmp/c1"
newer() { [ -e "$1" ] && ! [ "$1" -ot "$2" ]; }

# The checkout: where it is (gd: HEAD and index; cd: refs), HEAD, its ref.
top= gd= cdir= paths=() pos=0 round=0
gitloc() {
  local d=$repo l c
  top=
  while [ -n "$d" ]; do
    if [ -d "$d/.git" ]; then top=$d gd=$d/.git; break; fi
    if [ -f "$d/.git" ]; then
      l=; read -r l < "$d/.git"; gd=${l#gitdir: }
      case $gd in /*) ;; *) gd=$d/$gd ;; esac
      top=$d; break
    fi
    [ "$d" = / ] && break
    d=${d%/*}; [ -n "$d" ] || d=/
  done
  [ -n "$top" ] || return 1
  cdir=$gd
  if [ -f "$gd/commondir" ]; then
    c=; read -r c < "$gd/commondir"
    case $c in /*) cdir=$c ;; *) cdir=$gd/$c ;; esac
  fi
}
# listpaths lists the tracked files' directories, then the files.
listpaths() {
  local f d files=()
  declare -A dirs=()
  mapfile -d '' -t files < <(cd "$top" 2>/dev/null && git ls-files -z 2>/dev/null)
  dirs[.]=1
  for f in "${files[@]}"; do
    d=$f
    while [ "$d" != "${d%/*}" ]; do d=${d%/*}; [ -n "${dirs[$d]-}" ] && break; dirs[$d]=1; done
  done
  paths=("${!dirs[@]}" "${files[@]}")
  pos=0
}
gp= gidx=
gitprint() {
  local h= r=- pe= ie=
  gitloc || { gp=none; return; }
  read -r h 2>/dev/null < "$gd/HEAD"
  case $h in "ref: refs/"*) [ -f "$cdir/${h#ref: }" ] && read -r r < "$cdir/${h#ref: }" ;; esac
  [ -e "$cdir/packed-refs" ] && pe=p
  [ -e "$gd/index" ] && ie=i
  gp="$top|$gd|$h|$r|$pe|$ie"
}
# treecheck checks the next batch of tracked paths against the stamp of
# the previous round; it prints nothing, sets tch when one changed.
tch=
treecheck() {
  local n=${#paths[@]} i=0 p
  tch=
  [ "$n" -gt 0 ] || return 0
  if [ "$pos" -ge "$n" ]; then
    pos=0 round=$((round + 1))
    echo "$round" > "$tmp/c$((round % 2))"
  fi
  local prev=$tmp/c$(((round + 1) % 2))
  while (( i < batch && pos < n )); do
    p=$top/${paths[pos]}
    [[ -e $p && ! $p -ot $prev ]] && tch=1
    ((pos++, i++))
  done
}

# The server: what Find reads.
hex=
[ "$port" -gt 0 ] 2>/dev/null && hex=$(printf '%04X' "$port")
declare -A seen=() mt=()
tick=0
matches() {
  local d p c a carrier cm pa nx
  local -A now=()
  m=
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [[ $p == "$$" ]] && continue
    now[$p]=1
    [[ -n ${seen[$p]-} ]] || seen[$p]=$tick
    if (( tick - seen[$p] <= 3 || tick % 30 == 0 )); then
      c= carrier= pa= nx=
      while IFS= read -r -d '' a; do
        c+=$a$'\001'
        [ "$a" = "$pat" ] && carrier=1
        if [ -z "$pa" ]; then
          case $a in --port=*) pa=${a#--port=} ;; *) [ -n "$nx" ] && pa=$a ;; esac
        fi
        nx=; [ "$a" = --port ] && nx=1
      done 2>/dev/null < "$d/cmdline"
      mt[$p]=
      if [ -z "$carrier" ] && [ "$pa" = "$port" ] && [[ $c =~ $pat ]]; then
        cm=; read -r cm 2>/dev/null < "$d/comm"
        case $cm in sh|bash|dash|zsh|ksh|ash|mksh|busybox|fish) ;; *) mt[$p]=1 ;; esac
      fi
    fi
    [[ -n ${mt[$p]-} ]] && m+=" $p"
  done
  for p in "${!seen[@]}"; do [[ -n ${now[$p]-} ]] || unset "seen[$p]" "mt[$p]"; done
}
# srvprint sets the parts of the server's fingerprint, named as the
# agent's (serverState.diff): s_pidfile s_exit s_root s_children s_listen
# s_match.
s_pidfile= s_exit= s_root= s_children= s_listen= s_match= lnlast=
srvprint() {
  local pf=- ex= root= ch= ln= f la st ino s rp rst
  m=
  if [ -e "$pidf" ]; then pf=; IFS= read -r -d "" pf 2>/dev/null < "$pidf"; fi
  [ -e "$exitf" ] && IFS= read -r -d "" ex 2>/dev/null < "$exitf"
  local re='^\{"pid":([0-9]+),"pgid":[0-9]+,"sid":[0-9]+,"start_time":([0-9]+),'
  if [[ $pf =~ $re ]]; then
    rp=${BASH_REMATCH[1]} rst=${BASH_REMATCH[2]} root=gone
    if read -r s 2>/dev/null < "/proc/$rp/stat"; then
      set -- ${s##*) }
      if [ "${20-}" = "$rst" ] && [ "${1-}" != Z ] && [ "$1" != X ]; then
        root=alive
        read -r ch 2>/dev/null < "/proc/$rp/task/$rp/children"
      fi
    fi
  fi
  # The listeners, every 5th interval: the kernel walks its whole
  # connection table for /proc/net/tcp (milliseconds on a big host), and
  # bash's read re-reads a /proc file for each line: it is read whole
  # (read -N) and searched in memory.
  if [ -n "$hex" ] && (( tick % 5 == 0 )); then
    local nt re4='[0-9A-F]+:'$hex' [0-9A-F]+:[0-9A-F]+ 0A [0-9A-F]+:[0-9A-F]+ [0-9A-F]+:[0-9A-F]+ [0-9A-F]+ +[0-9]+ +[0-9]+ ([0-9]+)'
    for f in /proc/net/tcp /proc/net/tcp6; do
      [ -r "$f" ] || continue
      nt=; IFS= read -r -d '' -N 16777216 nt 2>/dev/null < "$f"
      while [[ $nt =~ $re4 ]]; do
        ln="$ln ${BASH_REMATCH[1]}"
        nt=${nt#*"${BASH_REMATCH[0]}"}
      done
    done
    lnlast=$ln
  fi
  ln=$lnlast
  [ -n "$pat" ] && [ -n "$hex" ] && matches
  s_pidfile=$pf s_exit=$ex s_root=$root s_children=$ch s_listen=$ln s_match=$m
}
srvparts='pidfile exit root children listen match'
srvsave() { local n; for n in $srvparts; do eval "o_$n=\$s_$n"; done; }
srvwhy() { local n; why=; for n in $srvparts; do eval '[ "$o_'$n'" = "$s_'$n'" ]' || why=$why,$n; done; }

out "{\"t\":\"watch\",\"v\":1,\"via\":\"shell\",\"interval_ms\":$(( ${iv%.*} * 1000 + 10#${iv#*.} ))}"
if [ -n "$repo" ]; then
  gitprint; gidx=$gp; [ "$gp" = none ] || listpaths
  out '{"t":"git","why":"start"}'
fi
if [ -n "$pidf" ]; then srvprint; out '{"t":"server","why":"start"}'; fi
while :; do
  read -r -t "$iv" -u 9 _
  tick=$((tick + 1))
  prev=$tmp/s$stamp stamp=$((1 - stamp))
  echo "$tick" > "$tmp/s$stamp"
  if [ -n "$repo" ]; then
    old=$gp why=
    gitprint
    [ "$gp" = "$old" ] || why=head
    if [ "$gp" != none ]; then
      newer "$cdir/packed-refs" "$prev" && why=$why,packed-refs
      if newer "$gd/index" "$prev"; then why=$why,index; listpaths; fi
      [ "${old%%|*}" = "${gp%%|*}" ] || listpaths
      treecheck
      [ -n "$tch" ] && why=$why,tree
    fi
    [ -n "$why" ] && out "{\"t\":\"git\",\"why\":\"${why#,}\"}"
  fi
  if [ -n "$pidf" ]; then
    srvsave
    srvprint
    srvwhy
    [ -n "$why" ] && out "{\"t\":\"server\",\"why\":\"${why#,}\"}"
  fi
  [ $((SECONDS - last)) -ge "$ka" ] && out '{"t":"alive"}'
done
`
