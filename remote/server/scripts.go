package server

// The scripts below are fixed text, sent on stdin to "sh -s -- ARGS…"; all
// variable data arrives as positional parameters. They need a POSIX sh,
// /proc, coreutils (cat, mkdir, mv, rm, sleep with fractions), a grep with
// -z (GNU, busybox) plus util-linux setsid for the launch — what every Linux GPU host has.

// procTree defines four shell functions. same PID STARTTIME succeeds when
// PID is alive with that start time. procs prints every process as
// "pid ppid pgid sid state starttime comm" from /proc/PID/stat (comm with
// anything but [A-Za-z0-9_.:/@+=-] replaced by "?"). tree ROOT STARTTIME
// PGID SID "KEEP" prints, in the same format, a server's processes: ROOT
// (if alive with that start time), its descendants, the members of process
// group PGID and session SID (values ≤ 1 are ignored), and every
// "pid:starttime" in KEEP that is still that process, with their
// descendants. Zombies are left out: they hold no memory and cannot be
// killed further. With a sixth argument MARK (the launch's mark, hex
// digits), the tree also holds every process whose environment has
// FLIGHTDECK_LAUNCH=MARK (marked MARK lists them from /proc/PID/environ),
// however it left the server's tree (double fork, setsid), and their
// descendants (none when this script carries the mark itself).
const procTree = `
procs() {
  cat /proc/[0-9]*/stat 2>/dev/null | awk '{
    p = index($0, " (")
    q = 0
    for (i = length($0) - 1; i > p; i--) if (substr($0, i, 2) == ") ") { q = i; break }
    if (p == 0 || q == 0) next
    n = split(substr($0, q + 2), f, " ")
    if (n < 20) next
    comm = substr($0, p + 2, q - p - 2)
    gsub(/[^A-Za-z0-9_.:\/@+=-]/, "?", comm)
    if (comm == "") comm = "?"
    print substr($0, 1, p - 1), f[2], f[3], f[4], f[1], f[20], comm
  }'
}
same() {
  s=
  read -r s < "/proc/$1/stat" 2>/dev/null || return 1
  set -- "$2" ${s##*) }
  [ "${21}" = "$1" ]
}
marked() {
  [ -n "$1" ] || return 0
  # A script that carries the mark itself runs inside the launch: the
  # sweep would hit its own shell and the login that started it.
  grep -q -a -z -x -F -e "FLIGHTDECK_LAUNCH=$1" "/proc/$$/environ" 2>/dev/null && return 0
  grep -a -l -z -x -F -e "FLIGHTDECK_LAUNCH=$1" /proc/[0-9]*/environ 2>/dev/null |
    sed -n 's|^/proc/\([0-9]*\)/environ$|\1|p' | tr '\n' ' '
}
tree() {
  mk=$(marked "${6:-}")
  procs | awk -v root="$1" -v rst="$2" -v pg="$3" -v sid="$4" -v keep="$5" -v marked="$mk" '
  { ids[++k] = $1; pp[$1] = $2; gr[$1] = $3; se[$1] = $4; st[$1] = $5; t[$1] = $6; line[$1] = $0 }
  END {
    if (pg <= 1) pg = -1
    if (sid <= 1) sid = -1
    # A live ROOT with another start time is a new process that reused the
    # pid: its group and session are not ours. The group and session of a vanished ROOT:
    # their ids cannot have been reused while members remain (Linux does
    # not hand out a pid still used as a pgid or sid).
    if (root in t) { if (t[root] == rst) in_[root] = 1; else { pg = -1; sid = -1 } }
    nk = split(keep, kv, " ")
    for (j = 1; j <= nk; j++) { split(kv[j], a, ":"); if ((a[1] in t) && t[a[1]] == a[2]) in_[a[1]] = 1 }
    nm = split(marked, mv, " ")
    for (j = 1; j <= nm; j++) if (mv[j] in t) in_[mv[j]] = 1
    do {
      changed = 0
      for (j = 1; j <= k; j++) {
        id = ids[j]
        if (id in in_) continue
        if ((pp[id] in in_) || gr[id] == pg || se[id] == sid) { in_[id] = 1; changed = 1 }
      }
    } while (changed)
    for (j = 1; j <= k; j++) { id = ids[j]; if ((id in in_) && st[id] != "Z" && st[id] != "X") print line[id] }
  }'
}
`

// launchScript starts the server detached and prints the pidfile.
// Usage: sh -s -- WORKDIR LOG PIDFILE EXITFILE MARK LAUNCHJSON ARGV…, with
// the server's variables as quoted `export NAME='value'` lines before it on
// stdin. MARK (hex digits) goes into the environment of the wrapper and so
// of every process the launch starts, as FLIGHTDECK_LAUNCH, and into the
// pidfile: Kill sweeps by it.
// Exit 3: the host cannot run it (no setsid, no working directory);
// 4: LOG exists already; 5: a server from PIDFILE is still running
// (stdout says "running PID"); 6: the wrapper never wrote the pidfile.
const launchScript = `set -u
workdir=$1 log=$2 pidf=$3 exitf=$4 mark=$5 launch=$6
shift 6
command -v setsid >/dev/null 2>&1 || { echo "setsid (util-linux) is not installed on the host: cannot detach the server" >&2; exit 3; }
[ -d "$workdir" ] || { echo "working directory $workdir does not exist on the host" >&2; exit 3; }
if [ -s "$pidf" ]; then
  old=$(sed -n 's/^{"pid":\([0-9]*\),"pgid":[0-9]*,"sid":[0-9]*,"start_time":\([0-9]*\),.*/\1 \2/p' "$pidf")
  if [ -n "$old" ]; then
    opid=${old% *} ost=${old#* }
    if read -r s < "/proc/$opid/stat" 2>/dev/null; then
      f() { [ "${20}" = "$ost" ] && [ "$1" != Z ]; }
      if f ${s##*) }; then echo "running $opid"; exit 5; fi
    fi
  fi
fi
um=$(umask)
umask 077
mkdir -p "$(dirname "$log")" "$(dirname "$pidf")" || exit 3
ld=$(dirname "$log") pd=$(dirname "$pidf")
for d in "$ld" "$pd"; do
  [ "$d" = "$pd" ] && [ "$d" = "$ld" ] && [ -n "${warned-}" ] && continue
  warned=1
  [ -n "$(find "$d" -maxdepth 0 -perm -0002 ! -perm -1000 2>/dev/null)" ] && echo "warning $d is writable by every user of the host: another user can replace the pidfile or the log" >&2
done
( set -C; : > "$log" ) 2>/dev/null || { echo "log file $log already exists" >&2; exit 4; }
rm -f "$pidf" "$exitf"
cd "$workdir" || exit 3
FLIGHTDECK_LAUNCH=$mark
export FLIGHTDECK_LAUNCH
setsid -f sh -c 'pidf=$1 exitf=$2 mark=$3 launch=$4 um=$5
shift 5
f() { pgid=$3 sid=$4 st=${20}; }
read -r s < /proc/$$/stat
f ${s##*) }
printf "{\"pid\":%s,\"pgid\":%s,\"sid\":%s,\"start_time\":%s,\"mark\":\"%s\",\"launch\":%s}\n" "$$" "$pgid" "$sid" "$st" "$mark" "$launch" > "$pidf.tmp.$$"
mv -f "$pidf.tmp.$$" "$pidf"
umask "$um"
"$@"
rc=$?
umask 077
echo "$$ $rc" > "$exitf"
exit "$rc"' flightdeck-server "$pidf" "$exitf" "$mark" "$launch" "$um" "$@" >>"$log" 2>&1 </dev/null
i=0
while [ ! -s "$pidf" ]; do
  i=$((i + 1))
  [ "$i" -le 100 ] || { echo "the server wrapper wrote no pidfile within 10 s" >&2; exit 6; }
  sleep 0.1
done
cat "$pidf"
`

// findScript reports what is known about the server on the host.
// Usage: sh -s -- PIDFILE EXITFILE PORT PATTERN
// Output lines: "pidfile JSON" and "exit PID STATUS" when those files
// exist; "tree …" lines (as procTree prints them) for the pidfile's
// server; "listen PID" for the process listening on TCP PORT (0 skips);
// "match PID" for each process whose NUL-separated command line matches
// the extended regular expression PATTERN ("" skips), each followed by
// "cmdline PID ARGS" (arguments separated by 0x1f); "proc …" lines for
// every listen and match PID; "script PID", this script's shell (its
// children, like grep, hold PATTERN in their command lines), and "self PID"
// for it and each of its ancestors (so may theirs).
const findScript = procTree + `
pidf=$1 exitf=$2 port=$3 pat=$4
if [ -s "$pidf" ]; then
  printf 'pidfile %s\n' "$(head -c 65536 "$pidf" | tr -d '\n')"
  [ -s "$exitf" ] && printf 'exit %s\n' "$(head -c 64 "$exitf" | tr -d '\n')"
  old=$(sed -n 's/^{"pid":\([0-9]*\),"pgid":\([0-9]*\),"sid":\([0-9]*\),"start_time":\([0-9]*\),\("mark":"\([0-9a-f]*\)",\)\{0,1\}.*/\1 \4 \2 \3 \6/p' "$pidf")
  if [ -n "$old" ]; then
    set -- $old
    # The pidfile's group and session count only when the root leads them
    # and is alive as recorded: a pidfile naming a gone pid and someone
    # else's session must not make that session the server.
    # So does its mark: the processes the launch started that left its
    # tree count while the root lives.
    r=$1 rst=$2 rpg=$3 rsid=$4 rmark=${5:-}
    same "$r" "$rst" || { rpg=0 rsid=0 rmark=""; }
    [ "$rpg" = "$r" ] || rpg=0
    [ "$rsid" = "$r" ] || rsid=0
    t=$(tree "$r" "$rst" "$rpg" "$rsid" "" "$rmark")
    if [ -n "$t" ]; then
      # The pidfile's server runs: no need to look further.
      printf '%s\n' "$t" | sed 's/^/tree /'
      port=0 pat=""
    fi
  fi
fi
want=""
if [ "$port" -gt 0 ] 2>/dev/null; then
  hex=$(printf '%04X' "$port")
  for inode in $(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v h=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == h { print $10 }' | sort -u); do
    p=$(find /proc/[0-9]*/fd -lname "socket:\[$inode\]" 2>/dev/null | head -n 1 | sed 's|^/proc/\([0-9]*\)/.*|\1|')
    [ -n "$p" ] && { echo "listen $p"; want="$want $p"; }
  done
fi
if [ -n "$pat" ]; then
  for p in $(grep -a -l -E -e "$pat" /proc/[0-9]*/cmdline 2>/dev/null | sed 's|^/proc/\([0-9]*\)/cmdline$|\1|'); do
    echo "match $p"
    printf 'cmdline %s ' "$p"
    head -c 4096 "/proc/$p/cmdline" 2>/dev/null | tr '\000\n' '\037 '
    echo
    want="$want $p"
  done
fi
[ -n "$want" ] && procs | awk -v want="$want " 'index(want, " " $1 " ") { print "proc " $0 }'
echo "script $$"
p=$$
while [ "$p" -gt 1 ] 2>/dev/null; do
  echo "self $p"
  read -r s < "/proc/$p/stat" || break
  f() { p=$2; }
  f ${s##*) }
done
`

// killScript stops a server's whole process tree: SIGTERM to the root, its
// group, its session and every process found in them (and descendants), then
// SIGKILL to whatever is left after GRACE seconds.
// Usage: sh -s -- ROOT STARTTIME PGID SID GRACE_SECONDS [KEEP [FENCE TOKEN
// [MARK]]]. With MARK (the pidfile's), every process that carries the
// launch's mark is part of the tree, before, during and after the signals:
// the kill succeeds only when none is left.
// With FENCE (a driver lock file), the SIGTERM goes out only while FENCE
// is absent or names TOKEN, checked under the lock's flock mutex when the
// host has flock (see Fence): exit 5 otherwise, nothing signalled.
// Output: "member …" lines (the tree before the kill, as procTree prints),
// "term", "escalate PIDS", "survivor …" lines, then "stopped" or "alive".
// Exit 0 when nothing is left, 1 when survivors remain (e.g. state D).
const killScript = procTree + `
root=$1 st=$2 pg=$3 sid=$4 grace=$5 keep=${6:-} fence=${7:-} token=${8:-} mark=${9:-}
# The group and session are the server's only while the root that leads
# them is alive as recorded at the start; once snapshotted, their members
# are followed even after the root exits.
same "$root" "$st" || { pg=0 sid=0; }
snap=$(tree "$root" "$st" "$pg" "$sid" "$keep" "$mark")
if [ -z "$snap" ]; then echo stopped; exit 0; fi
printf '%s\n' "$snap" | sed 's/^/member /'
keep="$keep $(printf '%s\n' "$snap" | awk '{ printf "%s:%s ", $1, $6 }')"
pids() { tree "$root" "$st" "$pg" "$sid" "$keep" "$mark" | awk '{ printf "%s ", $1 }'; }
signal() {
  [ "$pg" -gt 1 ] 2>/dev/null && kill "-$1" -- "-$pg" 2>/dev/null
  p=$(pids)
  [ -n "$p" ] && kill "-$1" $p 2>/dev/null
  true
}
if [ -n "$fence" ] && [ -e "$fence" ]; then
  if command -v flock >/dev/null 2>&1; then
    exec 8>>"$fence.mutex" && flock -w 5 8 || { echo "the driver lock $fence is busy" >&2; exit 4; }
  fi
  if [ -e "$fence" ] && ! grep -qF "\"token\":\"$token\"" "$fence"; then
    echo "the driver lock $fence names another cockpit now" >&2; exit 5
  fi
fi
signal TERM
exec 8>&-
echo term
i=0
while [ -n "$(pids)" ] && [ "$i" -lt $((grace * 5)) ]; do sleep 0.2; i=$((i + 1)); done
p=$(pids)
if [ -n "$p" ]; then
  echo "escalate $p"
  signal KILL
  i=0
  while [ -n "$(pids)" ] && [ "$i" -lt 25 ]; do sleep 0.2; i=$((i + 1)); done
fi
left=$(tree "$root" "$st" "$pg" "$sid" "$keep" "$mark")
if [ -n "$left" ]; then printf '%s\n' "$left" | sed 's/^/survivor /'; echo alive; exit 1; fi
echo stopped
`
