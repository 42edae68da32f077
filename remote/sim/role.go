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
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"mvdan.cc/sh/v3/syntax"
)

// Environment variables that select and configure a role.
const (
	EnvRole = "FLIGHTDECK_SIM_ROLE" // a Role* name
	EnvDir  = "FLIGHTDECK_SIM_DIR"  // the sim directory (sim.json, run/, logs/)
)

// Role names.
const (
	RoleNvidiaSMI = "nvidia-smi" // the fake nvidia-smi (wrapper bin/nvidia-smi)
	RoleServer    = "server"     // the fake SGLang server (wrapper bin/sglang-server)
	// RoleCLI is the simulated host's own flightdeck (wrapper bin/flightdeck):
	// `flightdeck sim server ARGS…` runs the fake server as RoleServer does,
	// so a launcher can start it the way it would start `flightdeck sim
	// server` anywhere, and `flightdeck sim version NAME` answers the "sim"
	// preset's version probes; any other command fails with status 2.
	RoleCLI = "flightdeck"
	// RoleWorker is a worker process of the fake server (--sim-workers);
	// only the server starts it.
	RoleWorker = "worker"
)

// Wrapper file names in BinDir.
const (
	ServerWrapper = "sglang-server" // the fake server
	CLIWrapper    = "flightdeck"    // the simulated host's flightdeck (RoleCLI)
)

// cliUsage is RoleCLI's answer to anything but `sim server`.
const cliUsage = "flightdeck: this is the simulated host's flightdeck: only `flightdeck sim server …` and `flightdeck sim version NAME` are available here"

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
		return runServerProcess(args, dir)
	case RoleCLI:
		if len(args) >= 2 && args[0] == "sim" && args[1] == "server" {
			return runServerProcess(args[2:], dir)
		}
		if len(args) >= 2 && args[0] == "sim" && args[1] == "version" {
			return RunVersion(args[2:], os.Stdout, os.Stderr)
		}
		fmt.Fprintln(os.Stderr, cliUsage)
		return 2
	case RoleWorker:
		return runWorker(args, dir)
	}
	fmt.Fprintf(os.Stderr, "flightdeck sim: unknown role %q\n", role)
	return 127
}

// runServerProcess runs the fake server as this process: SIGTERM, SIGINT
// and SIGHUP shut it down.
func runServerProcess(args []string, dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	return runServer(ctx, args, serverEnv{dir: dir, stdout: os.Stdout, stderr: os.Stderr, environ: os.Environ()})
}

// RunServer runs the fake SGLang server in this process until ctx ends
// (its SIGTERM) or a simulated failure, and returns its exit status; it is
// `flightdeck sim server ARGS…`. args are the server's flags (SGLang's
// plus the sim's: --repo, --time-scale, --sim-fail, --sim-workers, …).
//
// The sim directory is --sim-dir, else $FLIGHTDECK_SIM_DIR: the server then
// reads sim.json, publishes its GPU state for the fake nvidia-smi and, unless
// --repo says otherwise, runs from <dir>/repo. Without one it runs
// standalone: no GPU state, no repository (so not regressed), no workers.
// Either way the NCCL profile comes from this process's environment.
// Workers re-execute os.Executable(), which must call RunRoleFromEnv first
// thing in main.
func RunServer(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runServer(ctx, args, serverEnv{dir: os.Getenv(EnvDir), stdout: stdout, stderr: stderr, environ: os.Environ()})
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
