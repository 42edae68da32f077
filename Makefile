# The test command the README names and .ci/run calls.
GO ?= go

.PHONY: test build bench vet gpu-check-bins

test: vet
	$(GO) test -race -count=1 -timeout 15m ./...

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

build:
	$(GO) build -o flightdeck ./cmd/flightdeck

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./probes/... ./tui/...

# Binaries for scripts/gpu-check.sh on a device machine that may lack Go.
gpu-check-bins:
	mkdir -p bin
	CGO_ENABLED=0 $(GO) build -o bin/flightdeck ./cmd/flightdeck
	CGO_ENABLED=0 $(GO) test -c -o bin/gpu.test ./probes/gpu
