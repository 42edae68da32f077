// Package sim is a simulated GPU host for `flightdeck demo` and for tests.
// It needs no GPU and no network: a fake nvidia-smi, a fake SGLang server
// (log, /health, OpenAI-style streaming), a real git repository whose
// history holds a speed regression, and an in-process SSH server that serves
// it all on 127.0.0.1.
//
// The fake programs are the flightdeck binary (or a test binary) re-executed
// with FLIGHTDECK_SIM_ROLE set: every program that uses the sim calls
// RunRoleFromEnv first thing in main (and in TestMain).
package sim

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"mvdan.cc/sh/v3/syntax"
)

// Environment variables that select and configure a role.
const (
	EnvRole = "FLIGHTDECK_SIM_ROLE" // "nvidia-smi" or "server"
	EnvDir  = "FLIGHTDECK_SIM_DIR"  // the sim directory (sim.json, run/, logs/)
)

// Role names, also the names of their wrapper scripts in the bin directory.
const (
	RoleNvidiaSMI = "nvidia-smi"
	RoleServer    = "server"
)

// ServerWrapper is the file name of the fake server's wrapper in BinDir.
const ServerWrapper = "sglang-server"

// RunRoleFromEnv runs a sim role and exits when FLIGHTDECK_SIM_ROLE is set;
// otherwise it returns at once. Call it first thing in main() and in
// TestMain of every package that starts a sim host, so the wrappers the sim
// writes can re-execute the same binary as nvidia-smi or the server.
func RunRoleFromEnv() {
	role := os.Getenv(EnvRole)
	if role == "" {
		return
	}
	os.Unsetenv(EnvRole) // children of a role are ordinary programs
	dir := os.Getenv(EnvDir)
	os.Exit(runRole(role, dir, os.Args[1:]))
}

func runRole(role, dir string, args []string) int {
	switch role {
	case RoleNvidiaSMI:
		// The default SIGTERM/SIGINT action (exit) is what the real tool does.
		return runNvidiaSMI(context.Background(), args, smiEnv{dir: dir, stdout: os.Stdout})
	case RoleServer:
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		defer stop()
		return runServer(ctx, args, serverEnv{dir: dir, stdout: os.Stdout, stderr: os.Stderr, environ: os.Environ()})
	}
	fmt.Fprintf(os.Stderr, "flightdeck sim: unknown role %q\n", role)
	return 127
}

// quote is POSIX shell quoting (mvdan.cc/sh/v3/syntax, LangPOSIX).
func quote(s string) (string, error) {
	return syntax.Quote(s, syntax.LangPOSIX)
}

// writeWrapper writes bin/<name>: a POSIX sh script that re-executes exe in
// role. It works from any shell (the in-process SSH server, a real sshd with
// bin/ on PATH, a local terminal) because it names everything absolutely.
func writeWrapper(bin, name, role, dir, exe string) error {
	qd, err := quote(dir)
	if err != nil {
		return fmt.Errorf("quote sim dir: %w", err)
	}
	qe, err := quote(exe)
	if err != nil {
		return fmt.Errorf("quote executable: %w", err)
	}
	qr, _ := quote(role)
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	b.WriteString("# flightdeck simulated host: " + name + " (re-executes the flightdeck binary in a sim role)\n")
	fmt.Fprintf(&b, "%s=%s\n%s=%s\nexport %s %s\n", EnvRole, qr, EnvDir, qd, EnvRole, EnvDir)
	fmt.Fprintf(&b, "exec %s \"$@\"\n", qe)
	return writeFileAtomic(filepath.Join(bin, name), []byte(b.String()), 0o755)
}
