package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu/nvml"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
)

// Test seams: the platform this binary runs on, and whether it has NVML.
var (
	localPlatform = runtime.GOOS + "/" + runtime.GOARCH
	nvmlCompiled  = nvml.Compiled
)

// Deadlines of the install steps.
const (
	probeTimeout  = 30 * time.Second
	uploadTimeout = 10 * time.Minute
)

// The install scripts run under `sh -c SCRIPT flightdeck-agent BASE KEY
// [SUM [ARGS…]]`: BASE is Runner.CacheDir ("" for the default), KEY the
// version directory, SUM the expected SHA-256, ARGS the agent's. They are
// single lines (remote.Quote refuses newlines) and take their inputs as
// positional parameters, so no input is ever parsed as shell code.
//
// A relative BASE is taken from the login directory and written "./BASE",
// so that no path ever starts with '-' (an option to mkdir, rm or find).
//
// sum prints the SHA-256 of its stdin in hex with sha256sum (GNU,
// busybox), shasum -a 256 (macOS, Perl) or openssl dgst: the file is
// given as a redirection, so that no tool escapes its name in its output.
// check prints "ok" when the cache is safe to run from, else why not, and
// fails. It looks at $base, $base/agent, the version directory and the
// agent (nothing above $base: the login user's home and ~/.cache are
// theirs to keep), refusing
//   - "not-owned PATH": one of them is owned by another user, who could
//     swap the agent between its check and its start;
//   - "symlink PATH": the agent is a symbolic link;
//   - "writable PATH": one of them is writable by its group or by others
//     (ls -ldL shows 'w' in the group or other permissions), who could
//     rename entries in it, or rewrite the agent, between its check and
//     its start;
//   - "unchecked PATH": its permissions could not be read (ls failed).
const scriptPrelude = `base=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/flightdeck}; case $base in /*) ;; *) base=./$base;; esac; ` +
	`bin=$base/agent/$2/flightdeck; dir=${bin%/*}; ` +
	`sum() { if command -v sha256sum >/dev/null 2>&1; then set -- $(sha256sum); ` +
	`elif command -v shasum >/dev/null 2>&1; then set -- $(shasum -a 256); ` +
	`elif command -v openssl >/dev/null 2>&1; then set -- $(openssl dgst -sha256); if [ $# -gt 1 ]; then shift $(($# - 1)); fi; ` +
	`else return 2; fi; printf '%s\n' "$1"; }; ` +
	`check() { for d in "$base" "$base/agent" "$dir" "$bin"; do if [ -e "$d" ] && [ ! -O "$d" ]; then printf 'not-owned %s\n' "$d"; return 1; fi; done; ` +
	`if [ -L "$bin" ]; then printf 'symlink %s\n' "$bin"; return 1; fi; ` +
	`for d in "$base" "$base/agent" "$dir" "$bin"; do if [ -e "$d" ]; then m=$(ls -ldL "$d" 2>/dev/null); case $m in ` +
	`?????w*|????????w*) printf 'writable %s\n' "$d"; return 1;; ??????????*) ;; *) printf 'unchecked %s\n' "$d"; return 1;; esac; fi; done; echo ok; }; `

// driverDirs are the directories where an NVIDIA driver puts
// libnvidia-ml.so.1 on common distributions, looked at besides
// LD_LIBRARY_PATH and the dynamic loader's cache: Debian and Ubuntu
// (multiarch, and Debian's nvidia/current), RHEL, SUSE and Arch (lib64,
// lib), what the NVIDIA Container Toolkit injects into a container (the
// multiarch directory; GKE mounts /usr/local/nvidia), WSL2 and NixOS.
const driverDirs = "/usr/lib/x86_64-linux-gnu:/usr/lib/aarch64-linux-gnu:/usr/lib/powerpc64le-linux-gnu:" +
	"/usr/lib/x86_64-linux-gnu/nvidia/current:/usr/lib/aarch64-linux-gnu/nvidia/current:" +
	"/usr/lib64:/usr/lib:/lib/x86_64-linux-gnu:/lib/aarch64-linux-gnu:/lib64:/lib:" +
	"/usr/local/nvidia/lib64:/usr/local/nvidia/lib:/usr/lib/wsl/lib:/run/opengl-driver/lib"

// nvmlCheck (a shell function) prints whether the agent could load
// libnvidia-ml.so.1 on the host, without loading it: "sim" when the
// session has FLIGHTDECK_SIM_NVML (the simulated host's fake NVML), "yes"
// when the file is in an LD_LIBRARY_PATH entry or a driverDirs directory
// or named in the loader's cache (/etc/ld.so.cache, else `ldconfig -p`;
// the dynamic loader finds a library through the same three), "no" when
// the cache was read and none has it, "unknown" when nothing could tell
// (no grep, no readable cache, no ldconfig). Only "no" skips the agent.
const nvmlCheck = `nvml() { if [ -n "${FLIGHTDECK_SIM_NVML:-}" ]; then echo sim; return; fi; ` +
	`if ( p=${LD_LIBRARY_PATH:-}:` + driverDirs + `; IFS=:; set -f; for d in $p; do if [ -n "$d" ] && [ -e "$d/libnvidia-ml.so.1" ]; then exit 0; fi; done; exit 1 ); then echo yes; return; fi; ` +
	`if ! command -v grep >/dev/null 2>&1; then echo unknown; return; fi; ` +
	`if [ -r /etc/ld.so.cache ]; then if grep -q 'libnvidia-ml[.]so[.]1' /etc/ld.so.cache; then echo yes; else echo no; fi; return; fi; ` +
	`for l in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do if command -v "$l" >/dev/null 2>&1; then ` +
	`if "$l" -p 2>/dev/null | grep -q 'libnvidia-ml[.]so[.]1'; then echo yes; else echo no; fi; return; fi; done; echo unknown; }; `

// probeScript prints "uname <uname -sm>", "path <agent path>", "tool
// yes|no" (a SHA-256 tool exists), "nvml sim|yes|no|unknown"
// (nvmlCheck), "cache <check's answer>" and "sum <hex>|none" (none also
// when the cache is refused).
const probeScript = scriptPrelude + nvmlCheck +
	`printf 'uname %s\n' "$(uname -sm)"; printf 'path %s\n' "$bin"; printf 'nvml %s\n' "$(nvml)"; ` +
	`if command -v sha256sum >/dev/null 2>&1 || command -v shasum >/dev/null 2>&1 || command -v openssl >/dev/null 2>&1; ` +
	`then echo 'tool yes'; else echo 'tool no'; fi; ` +
	`c=$(check); printf 'cache %s\n' "$c"; ` +
	`if [ "$c" = ok ] && [ -f "$bin" ]; then printf 'sum %s\n' "$(sum < "$bin")"; else echo 'sum none'; fi`

// Exit statuses of the upload and run scripts that the Runner names.
const (
	exitMkdir     = 20 // upload: the directory cannot be made
	exitCopy      = 21 // upload: the copy failed
	exitMismatch  = 22 // upload: the checksum differs
	exitInstall   = 23 // upload: chmod or mv failed
	exitNoTemp    = 24 // upload: mktemp is missing or fails; run: the agent changed since its check
	exitRefused   = 25 // upload, run: check refused the cache
	exitNoProcFD  = 26 // run: the host has no /proc/self/fd
	exitChanged   = exitNoTemp
	scriptRefusal = "refusing the agent cache: "
)

// Pruning of old agent versions (pruneScript), as decimal strings for the
// script.
const (
	// pruneAfterDays is how long a cached agent version that is not used
	// stays on a host: its directory is removed by the next upload of
	// another version after more than this many days (find -mtime +14).
	pruneAfterDays = "14"
	// pruneKeep is how many agent versions stay cached at most after an
	// upload: the new one and the most recently used others.
	pruneKeep = "3"
)

// pruneScript defines prune, which the upload script runs once the new
// agent is in place. A version directory's modification time is its last
// use: an upload renames the agent into it and runScript touches it at
// every start. prune removes each other entry D of BASE/agent that
//   - is named as versionKey names (letters, digits, '.', '_', '+', '-';
//     nothing hidden), is a directory, not a symbolic link, and owned by
//     the login user;
//   - and was last used more than pruneAfterDays days ago, or has
//     pruneKeep newer such directories (the new version's counting).
//
// It decides for all before it removes anything (a removal inside a
// directory makes it look used). It never recurses: it removes
// D/flightdeck and leftover D/.flightdeck.* temporaries that are regular
// files owned by the user (rm of a name never follows a link), then rmdir
// D, which fails, leaving D, when anything else is in it. The names it
// keeps have no blank or glob character, so the list of them splits
// safely. Nothing it does can fail the upload.
const pruneScript = `prune() { old=; for d in "$base/agent"/*; do case ${d##*/} in *[!A-Za-z0-9._+-]*) continue;; esac; ` +
	`if [ "$d" = "$dir" ] || [ ! -d "$d" ] || [ -L "$d" ] || [ ! -O "$d" ]; then continue; fi; ` +
	`n=0; for e in "$base/agent"/*; do if [ "$e" != "$d" ] && [ -d "$e" ] && [ ! -L "$e" ] && [ -O "$e" ] && [ "$e" -nt "$d" ]; then n=$((n + 1)); fi; done; ` +
	`if [ "$n" -ge ` + pruneKeep + ` ] || [ -n "$(find "$d" -prune -mtime +` + pruneAfterDays + ` 2>/dev/null)" ]; then old="$old ${d##*/}"; fi; done; ` +
	`for k in $old; do d=$base/agent/$k; ` +
	`for f in "$d/flightdeck" "$d"/.flightdeck.*; do if [ -f "$f" ] && [ ! -L "$f" ] && [ -O "$f" ]; then rm -f "$f"; fi; done; ` +
	`rmdir "$d" 2>/dev/null && printf 'pruned %s\n' "$k"; done; }; `

// uploadScript writes stdin to a private temporary file (mktemp; there is
// no predictable fallback name) next to the agent, checks its SHA-256,
// makes it executable by its owner only and renames it into place
// (atomic: a running agent keeps its old file). The directory is made
// private (umask 077, chmod 700) and must pass check. Exit statuses as
// the constants above. It then prints "path <agent path>", prunes other
// versions (pruneScript: "pruned <key>" for each) and exits 0.
const uploadScript = scriptPrelude + pruneScript +
	`umask 077; mkdir -p "$dir" || exit 20; ` +
	`c=$(check) || { printf '` + scriptRefusal + `%s\n' "$c" >&2; exit 25; }; chmod 700 "$dir" || exit 20; ` +
	`tmp=$(mktemp "$dir/.flightdeck.XXXXXX" 2>/dev/null) && [ -n "$tmp" ] || { echo 'cannot make a private temporary file: no working mktemp on the host' >&2; exit 24; }; ` +
	`cat > "$tmp" || { rm -f "$tmp"; exit 21; }; got=$(sum < "$tmp"); ` +
	`if [ "$got" != "$3" ]; then rm -f "$tmp"; printf 'got %s\n' "${got:-nothing}" >&2; exit 22; fi; ` +
	`chmod 700 "$tmp" && mv -f "$tmp" "$bin" || { rm -f "$tmp"; exit 23; }; printf 'path %s\n' "$bin"; prune; exit 0`

// runScript starts the agent in the same session that checks it, so that
// what runs is what was checked. It first writes the launch line with its
// own process id, which the agent keeps (exec keeps it): the Runner can
// kill whatever this session runs from then on, even a check stalled on a
// hung file system. It then refuses a cache that fails check, opens the
// agent once (fd 3), compares the SHA-256 of what fd 3 reads with SUM,
// touches the version directory (its last use, for pruneScript) and execs
// the open file through /proc/self/fd/3 with ARGS: what it hashed is what
// runs, even if the agent's path is renamed meanwhile. Exit statuses:
// 24 the agent changed since its check (or is gone), 25 the cache is
// refused, 26 the host has no /proc/self/fd (not Linux: the agent runs
// only there); each with a line on stderr saying why.
const runScript = scriptPrelude +
	`printf '{"t":"launch","pid":%s}\n' "$$"; ` +
	`c=$(check) || { printf '` + scriptRefusal + `%s\n' "$c" >&2; exit 25; }; ` +
	`[ -f "$bin" ] || { printf 'the agent %s is gone since it was checked\n' "$bin" >&2; exit 24; }; exec 3< "$bin"; ` +
	`[ -r /proc/self/fd/3 ] || { echo 'cannot run the agent: the host has no /proc/self/fd (the agent runs on Linux only)' >&2; exit 26; }; ` +
	`got=$(sum <&3); if [ "$got" != "$3" ]; then printf 'the agent %s changed since it was checked (SHA-256 %s)\n' "$bin" "${got:-unreadable}" >&2; exit 24; fi; ` +
	`touch "$dir" 2>/dev/null; shift 3; exec /proc/self/fd/3 "$@"`

// probeResult is what probeScript printed.
type probeResult struct {
	uname string // "Linux x86_64"
	path  string // the agent's path on the host
	tool  bool   // a SHA-256 tool exists
	cache string // "ok", or why the cache is refused ("not-owned PATH", "symlink PATH")
	sum   string // the cached agent's SHA-256, "" when there is none
	nvml  string // "sim", "yes", "no" or "unknown": can libnvidia-ml.so.1 be loaded (nvmlCheck)
}

// parseProbe reads probeScript's output.
func parseProbe(out []byte) (probeResult, error) {
	var p probeResult
	seen := 0
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(strings.TrimRight(line, "\r"), " ")
		switch k {
		case "uname":
			p.uname = strings.TrimSpace(v)
			seen |= 1
		case "path":
			p.path = v
			seen |= 2
		case "tool":
			p.tool = v == "yes"
			seen |= 4
		case "sum":
			if v != "none" {
				p.sum = strings.ToLower(strings.TrimSpace(v))
			}
			seen |= 8
		case "cache":
			p.cache = strings.TrimSpace(v)
			seen |= 16
		case "nvml":
			p.nvml = strings.TrimSpace(v)
			seen |= 32
		}
	}
	if seen != 63 || p.path == "" || p.cache == "" || p.nvml == "" {
		return p, fmt.Errorf("unexpected output %q", excerpt(out))
	}
	return p, nil
}

// hostPlatform maps `uname -sm` ("Linux x86_64") to Go's GOOS/GOARCH
// ("linux/amd64"). Unknown names are kept, lower-cased.
func hostPlatform(uname string) string {
	f := strings.Fields(uname)
	if len(f) != 2 {
		return "unknown (uname -sm: " + sanitize.String(uname) + ")"
	}
	goos := strings.ToLower(f[0])
	arch := strings.ToLower(f[1])
	switch arch {
	case "x86_64", "amd64":
		arch = "amd64"
	case "aarch64", "arm64", "aarch64_be":
		if arch == "aarch64_be" {
			arch = "arm64be"
		} else {
			arch = "arm64"
		}
	case "i386", "i486", "i586", "i686":
		arch = "386"
	case "ppc64le", "s390x", "riscv64", "loong64", "mips64", "ppc64":
	default:
		if strings.HasPrefix(arch, "armv") {
			arch = "arm"
		}
	}
	return sanitize.String(goos + "/" + arch)
}

// versionKey makes a version usable as one directory name: characters
// other than letters, digits, '.', '_', '+' and '-' become '_', and a
// leading '.' too. An empty version is named by the binary's checksum.
func versionKey(version, sum string) string {
	if version == "" {
		return "sha256-" + sum[:16]
	}
	b := []byte(version)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' && i > 0 || c == '_' || c == '+' || c == '-'
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) > 100 {
		b = b[:100]
	}
	return string(b)
}

// sumCache holds the SHA-256 of local binaries, computed once per process
// (per path, size and modification time).
var sumCache struct {
	mu   sync.Mutex
	sums map[string]sumEntry
}

type sumEntry struct {
	size  int64
	mtime time.Time
	sum   string
}

// binarySum returns the SHA-256 (hex) of the file at path.
func binarySum(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	sumCache.mu.Lock()
	defer sumCache.mu.Unlock()
	if e, ok := sumCache.sums[path]; ok && e.size == st.Size() && e.mtime.Equal(st.ModTime()) {
		return e.sum, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if sumCache.sums == nil {
		sumCache.sums = make(map[string]sumEntry)
	}
	sumCache.sums[path] = sumEntry{size: st.Size(), mtime: st.ModTime(), sum: sum}
	return sum, nil
}

// installed is where the agent is on the host and how it got there.
type installed struct {
	path string
	how  string // "cached" or "uploaded"
	key  string // its version directory (versionKey)
	sum  string // its SHA-256, hex: runScript checks it again before the start
}

// refusedCache is the fallback reason for a cache that check refused.
func refusedCache(answer string) fallbackReason {
	what, path, _ := strings.Cut(answer, " ")
	path = sanitize.String(path)
	switch what {
	case "not-owned":
		return fallbackReason("agent cache " + path + " is not owned by the login user: refusing it")
	case "symlink":
		return fallbackReason("cached agent " + path + " is a symbolic link: refusing it")
	case "writable":
		return fallbackReason("agent cache " + path + " is writable by its group or others, who could swap the agent: refusing it (chmod go-w it)")
	case "unchecked":
		return fallbackReason("cannot read the permissions of the agent cache " + path + " (ls -ld failed): refusing it")
	}
	return fallbackReason("agent cache refused: " + cut(sanitize.String(answer), 200))
}

// errNoDriver is the fallback when the host has no libnvidia-ml.so.1.
const errNoDriver = fallbackReason("no NVIDIA driver on the host (libnvidia-ml.so.1 not found)")

// fallbackReason is an install outcome that sends the Runner to the
// nvidia-smi stream for good: the host's answer, which a retry would
// meet again. A transientReason sends it there and retries the agent
// later; other install errors (a dropped connection, the context's end)
// are retried at once or end the Runner.
type fallbackReason string

func (f fallbackReason) Error() string { return string(f) }

// transientReason is an install step that failed without the host
// answering it (no *remote.ExitError: a session that could not be opened,
// "waiting for a free session") or that ran past its deadline (30 s for
// the check, 10 min for the upload: a slow NFS home, a loaded host): a
// retry may pass.
type transientReason string

func (f transientReason) Error() string { return string(f) }

// failed is the install error for a step's err (with the command's
// stderr): a transientReason, named transient, when a retry may pass,
// else a fallbackReason named refused.
func failed(refused, transient string, err error, stderr []byte) error {
	if _, exited := errors.AsType[*remote.ExitError](err); !exited || errors.Is(err, context.DeadlineExceeded) {
		return transientReason(transient + ": " + withStderr(err, stderr))
	}
	return fallbackReason(refused + ": " + withStderr(err, stderr))
}

// install makes sure the host has this binary as its agent: it reuses a
// cached copy with the same SHA-256, else uploads this binary when the
// host's OS and architecture match. It returns a fallbackReason when the
// agent cannot be installed, a transientReason when it could not be now.
func (r *Runner) install(ctx context.Context, c settings) (installed, error) {
	if !nvmlCompiled() {
		if runtime.GOOS != "linux" {
			return installed{}, fallbackReason("this build is for " + localPlatform + " and has no NVML agent")
		}
		return installed{}, fallbackReason("this build has no cgo")
	}
	sum, err := binarySum(c.binary)
	if err != nil {
		return installed{}, fallbackReason("cannot read this binary: " + err.Error())
	}
	key := versionKey(c.version, sum)
	cmd, err := remote.Command("sh", "-c", probeScript, "flightdeck-agent", c.cacheDir, key)
	if err != nil {
		return installed{}, fallbackReason("agent cache directory: " + err.Error())
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	res, err := r.Host.Run(pctx, cmd, nil)
	cancel()
	if err != nil {
		if retryable(ctx, err) {
			return installed{}, err
		}
		return installed{}, failed("agent install check failed", "agent install check failed", err, res.Stderr)
	}
	p, err := parseProbe(res.Stdout)
	if err != nil {
		return installed{}, fallbackReason("agent install check: " + err.Error())
	}
	if p.nvml == "no" {
		// Nothing to gain from 23 MB of agent that would only say so.
		return installed{}, errNoDriver
	}
	if p.cache != "ok" {
		return installed{}, refusedCache(p.cache)
	}
	if p.sum == sum {
		return installed{path: p.path, how: "cached", key: key, sum: sum}, nil
	}
	if hp := hostPlatform(p.uname); hp != localPlatform {
		return installed{}, fallbackReason(fmt.Sprintf("host is %s, this binary %s", hp, localPlatform))
	}
	if !p.tool {
		return installed{}, fallbackReason("no sha256sum on host (nor shasum or openssl) to check an upload")
	}
	f, err := os.Open(c.binary)
	if err != nil {
		return installed{}, fallbackReason("cannot read this binary: " + err.Error())
	}
	defer f.Close()
	cmd, err = remote.Command("sh", "-c", uploadScript, "flightdeck-agent", c.cacheDir, key, sum)
	if err != nil {
		return installed{}, fallbackReason("agent cache directory: " + err.Error())
	}
	uctx, cancel := context.WithTimeout(ctx, uploadTimeout)
	res, err = r.Host.Run(uctx, cmd, f)
	cancel()
	if err != nil {
		if retryable(ctx, err) {
			return installed{}, err
		}
		if ee, ok := errors.AsType[*remote.ExitError](err); ok {
			switch ee.Code {
			case exitMismatch:
				return installed{}, fallbackReason("checksum mismatch after upload (" + lastLine(res.Stderr, ee.Stderr) + ")")
			case exitRefused:
				return installed{}, refusedCache(strings.TrimPrefix(lastLine(res.Stderr, ee.Stderr), scriptRefusal))
			case exitNoTemp:
				return installed{}, fallbackReason("upload refused: " + lastLine(res.Stderr, ee.Stderr))
			}
		}
		return installed{}, failed("upload refused", "upload failed", err, res.Stderr)
	}
	path := p.path
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if k, v, _ := strings.Cut(strings.TrimRight(line, "\r"), " "); k == "path" && v != "" {
			path = v
		}
	}
	return installed{path: path, how: "uploaded", key: key, sum: sum}, nil
}

// retryable reports whether err ends the attempt without saying anything
// about the agent: the connection dropped, or ctx ended.
func retryable(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, remote.ErrDisconnected)
}

// withStderr is err's text with the last line of the command's stderr.
func withStderr(err error, stderr []byte) string {
	var tail []byte
	if ee, ok := errors.AsType[*remote.ExitError](err); ok {
		tail = ee.Stderr
	}
	if l := lastLine(stderr, tail); l != "" {
		return err.Error() + ": " + l
	}
	return err.Error()
}

// lastLine returns the last non-blank line of the first output that has
// one, sanitised and cut to 200 bytes.
func lastLine(outs ...[]byte) string {
	for _, out := range outs {
		lines := bytes.Split(bytes.TrimSpace(out), []byte{'\n'})
		for i := len(lines) - 1; i >= 0; i-- {
			if l := bytes.TrimSpace(lines[i]); len(l) > 0 {
				return cut(sanitize.Line(l), 200)
			}
		}
	}
	return ""
}

// cut shortens s to at most n bytes at a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xc0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}
