#!/usr/bin/env bash
# The checks that need a real NVIDIA GPU and driver, as one short script for a
# device machine. Everything else is covered by `make test` on any machine.
#
#   make gpu-check-bins     # here: builds bin/flightdeck and bin/gpu.test (no Go needed there)
#   scripts/gpu-check.sh    # there: results under $OUT (default ./gpu-check-out)
#
# It checks: our --query-gpu field list against the driver's --help-query-gpu;
# that `nvidia-smi -lms` output arrives tick by tick through a pipe (the
# sampler depends on it); that every cell of the live GPUs parses; that the
# driver's own CSV (header and units) parses with `flightdeck parse gpu`;
# and what the cockpit shows on the local GPUs (a tmux capture).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check-out}
mkdir -p "$out"
status=0
step() { printf '\n== %s\n' "$*"; }

step "driver"
nvidia-smi --version | tee "$out/version.txt" || status=1
nvidia-smi -L | tee "$out/list.txt" || status=1

step "sampler against the real nvidia-smi (go test TestRealNvidiaSMI)"
export FLIGHTDECK_REAL_GPU=1 FLIGHTDECK_GPU_CHECK_OUT="$out"
if [ -x bin/gpu.test ]; then
  (cd probes/gpu && ../../bin/gpu.test -test.run 'TestRealNvidiaSMI' -test.v) 2>&1 | tee "$out/sampler-test.txt"
else
  go test -count=1 -run 'TestRealNvidiaSMI' -v ./probes/gpu 2>&1 | tee "$out/sampler-test.txt"
fi
[ "${PIPESTATUS[0]}" = 0 ] || status=1

step "-lms delivery through a pipe (arrival time of each line)"
timeout 3 nvidia-smi --query-gpu=index,timestamp --format=csv,noheader -lms 250 |
  while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done | tee "$out/lms-arrival.txt" | tail -4

fd=bin/flightdeck
[ -x "$fd" ] || { go build -o "$fd" ./cmd/flightdeck || status=1; }

step "the cockpit on the local GPUs (tmux capture after 6 s)"
if command -v tmux >/dev/null 2>&1 && [ -x "$fd" ]; then
  sock="gpu-check-$$"
  tmux -L "$sock" -f /dev/null new-session -d -s c -x 160 -y 40 "$fd connect local --interval 500ms; sleep 60"
  sleep 6
  tmux -L "$sock" capture-pane -p -t c | tee "$out/cockpit.txt"
  tmux -L "$sock" kill-server
else
  echo "tmux or the binary is missing; skipped" | tee "$out/cockpit.txt"
fi

step "result: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
