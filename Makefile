# The test command the README names and .ci/run calls.
GO ?= go
# go-nvml's cgo compile warns about every deprecated NVML function.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

# -parallel 4: the parallel tests (a bisect on the simulated host, the
# demo in tmux) mostly wait for launches; 2 cores would run 2 at a time.
.PHONY: test demo build bench vet gpu-check-bins host-procs

test: vet
	$(GO) test -race -count=1 -timeout 18m -parallel 4 ./...
	# Without cgo NVML is unavailable, and says so.
	CGO_ENABLED=0 $(GO) test -count=1 ./probes/gpu/nvml/

# The cockpit on the built-in simulated 8-GPU host.
demo:
	$(GO) run ./cmd/flightdeck demo

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) vet ./...
	# Every type switch over event.Payload lists every kind (sessions/event).
	$(GO) tool go-check-sumtype -default-signifies-exhaustive=false ./...

build:
	$(GO) build -o flightdeck ./cmd/flightdeck

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./probes/... ./tui/...

# The processes the cockpit starts on the GPU host in a minute of steady
# state (issue 20, docs/performance.md): connect over a traced sshd and the
# demo under strace, agent and nvidia-smi paths side by side, every command
# listed; needs strace, sshd and tmux. About 2 minutes.
host-procs:
	$(GO) test -count=1 -parallel 4 -run '^TestHostProcessesAtSteadyState' -v ./cmd/flightdeck/

# Binaries for scripts/gpu-check.sh on a device machine that may lack Go.
# cgo: NVML is linked in (the binary then needs the glibc it was built
# against, 2.34 or later here, on the device machine).
gpu-check-bins:
	mkdir -p bin
	CGO_ENABLED=1 $(GO) build -o bin/flightdeck ./cmd/flightdeck
	CGO_ENABLED=1 $(GO) test -c -o bin/gpu.test ./probes/gpu
	CGO_ENABLED=1 $(GO) test -c -o bin/nvml.test ./probes/gpu/nvml
