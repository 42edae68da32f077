#!/usr/bin/env bash
# The checks that need a real NVIDIA GPU and driver, as one short script for a
# device machine. Everything else is covered by `make test` on any machine.
#
#   make gpu-check-bins     # here: builds bin/flightdeck, bin/gpu.test and
#                           # bin/nvml.test with cgo (no Go needed there)
#   scripts/gpu-check.sh    # there: results under $OUT (default ./gpu-check-out)
#
# It captures the driver's own outputs as fixtures (query CSV with header and
# units, -q, -q -x, topo -m, compute apps); checks our --query-gpu field list,
# -lms delivery through a pipe and that every live cell parses; compares NVML
# (in-process, as the cockpit samples a local host) with nvidia-smi field by
# field within tolerances; measures CPU time and processes spawned per sample
# for nvidia-smi per tick, one `nvidia-smi -lms` loop and NVML in-process; runs
# `flightdeck agent --once`; and captures the cockpit on the local GPUs. It
# ends with one summary table and exits non-zero on any mismatch or failure.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check-out}
mkdir -p "$out/fixtures"
status=0
results=()
step() { printf '\n== %s\n' "$*"; }
result() { # result NAME RC
  if [ "$2" = 0 ]; then results+=("PASS  $1"); else results+=("FAIL  $1"); status=1; fi
}
runtest() { # runtest BIN PKGDIR REGEX LOG
  if [ -x "$1" ]; then
    (cd "$2" && "../../$1" -test.run "$3" -test.v -test.count=1) >"$4" 2>&1
  else
    go test -count=1 -run "$3" -v "./$2" >"$4" 2>&1
  fi
  local rc=$?
  tail -40 "$4"
  return $rc
}

step "driver"
nvidia-smi --version | tee "$out/version.txt"; result "nvidia-smi --version" "${PIPESTATUS[0]}"
nvidia-smi -L | tee "$out/list.txt"

step "fixtures: the driver's own outputs"
fx="$out/fixtures"
nvidia-smi --help-query-gpu >"$fx/help-query-gpu.txt" 2>&1
nvidia-smi -q >"$fx/q.txt" 2>&1
nvidia-smi -q -x >"$fx/q.xml" 2>&1
nvidia-smi topo -m >"$fx/topo-m.txt" 2>&1
nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_bus_id,gpu_uuid --format=csv >"$fx/compute-apps.csv" 2>&1
nvidia-smi >"$fx/nvidia-smi.txt" 2>&1
wc -c "$fx"/* | sed 's/^/  /'

export FLIGHTDECK_REAL_GPU=1 FLIGHTDECK_GPU_CHECK_OUT="$out"

step "sampler against the real nvidia-smi (TestRealNvidiaSMI)"
runtest bin/gpu.test probes/gpu 'TestRealNvidiaSMI' "$out/sampler-test.txt"
result "nvidia-smi sampler: fields, -lms delivery, every cell parses" $?

step "NVML against nvidia-smi, field by field (TestRealNVMLMatchesNvidiaSMI)"
runtest bin/nvml.test probes/gpu/nvml 'TestRealNVMLMatchesNvidiaSMI' "$out/nvml-test.txt"
result "NVML = nvidia-smi within tolerances" $?

step "sampling cost: CPU and processes per sample (TestRealSamplingCost)"
runtest bin/nvml.test probes/gpu/nvml 'TestRealSamplingCost' "$out/cost-test.txt"
result "sampling cost measured" $?

fd=bin/flightdeck
[ -x "$fd" ] || { go build -o "$fd" ./cmd/flightdeck || status=1; }

step "flightdeck agent --once"
timeout 60 "$fd" agent --once --interval 500ms >"$out/agent-once.jsonl" 2>"$out/agent-once.err"
rc=$?
head -c 1500 "$out/agent-once.jsonl"; echo; cat "$out/agent-once.err"
if [ $rc = 0 ] && head -1 "$out/agent-once.jsonl" | grep -q '"t":"hello"' && grep -q '"t":"sample"' "$out/agent-once.jsonl"; then
  result "agent --once: hello and one sample" 0
else
  result "agent --once: hello and one sample (exit $rc)" 1
fi

step "-lms delivery through a pipe (arrival time of each line)"
timeout 3 nvidia-smi --query-gpu=index,timestamp --format=csv,noheader -lms 250 |
  while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done | tee "$out/lms-arrival.txt" | tail -4

step "the cockpit on the local GPUs (tmux capture after 6 s)"
if command -v tmux >/dev/null 2>&1 && [ -x "$fd" ]; then
  sock="gpu-check-$$"
  tmux -L "$sock" -f /dev/null new-session -d -s c -x 160 -y 40 "$fd connect local --no-journal --interval 500ms; sleep 60"
  sleep 6
  tmux -L "$sock" capture-pane -p -t c | tee "$out/cockpit.txt"
  tmux -L "$sock" kill-server
  grep -q 'nvml' "$out/cockpit.txt"; result "cockpit samples the local GPUs with NVML (header says nvml)" $?
else
  echo "tmux or the binary is missing; skipped" | tee "$out/cockpit.txt"
fi

step "summary"
for f in nvml-vs-smi.txt sampling-cost.txt; do
  [ -f "$out/$f" ] && { echo "-- $f"; cat "$out/$f"; }
done
echo
printf '%s\n' "${results[@]}"
step "result: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
