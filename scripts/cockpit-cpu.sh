#!/bin/bash
# cockpit-cpu.sh LABEL BIN [SETTLE] [SPAN]: the CPU of one cockpit at steady
# state (issue 20), with the simulated host in its own process.
#
# Start the host first:  flightdeck sim host --dir "$SIM"   (SIM defaults to /tmp/simhost)
# and a server on it:    flightdeck --config "$SIM/flightdeck.toml" server launch sim -F "$SIM/ssh_config"
# This opens BIN's cockpit on it in its own tmux session at 200x60, waits SETTLE
# seconds (20), and prints the cockpit process's utime+stime (/proc/PID/stat
# fields 14+15) over SPAN seconds (60) as a percentage of one core, with its
# children's (16+17). Run old and new binaries alternately, one at a time: a
# second cockpit would follow the first one's driver lock read-only.
set -eu
label=$1 bin=$2 settle=${3:-20} span=${4:-60}
S=${SIM:-/tmp/simhost}
tmux -L cockpit-cpu new-session -d -s "$label" -x 200 -y 60 \
	"exec $bin --config $S/flightdeck.toml connect sim -F $S/ssh_config"
pid=$(tmux -L cockpit-cpu list-panes -t "$label" -F '#{pane_pid}')
sleep "$settle"
read_t() { awk '{print $14+$15, $16+$17}' "/proc/$pid/stat"; }
a=($(read_t)); t0=$(date +%s.%N)
sleep "$span"
b=($(read_t)); t1=$(date +%s.%N)
awk -v l="$label" -v a="${a[0]}" -v b="${b[0]}" -v ca="${a[1]}" -v cb="${b[1]}" -v t0="$t0" -v t1="$t1" -v hz="$(getconf CLK_TCK)" \
	'BEGIN{w=t1-t0; printf "%s: %.3f %% of one core (%d ticks in %.1f s; children %d ticks)\n", l, 100*(b-a)/hz/w, b-a, w, cb-ca}'
tmux -L cockpit-cpu kill-session -t "$label"
# The tmux server exits with its last session, a moment later: a run started
# at once could reach the dying server ("server exited unexpectedly").
sleep 2
