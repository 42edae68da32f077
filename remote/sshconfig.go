package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kevinburke/ssh_config"
)

// hostConfig is one SSH destination after ~/.ssh/config resolution, with
// every path expanded.
type hostConfig struct {
	alias          string // the host as the user typed it
	hostName       string // where to connect
	user           string
	port           int
	identityFiles  []identityFile
	userKnownHosts []string // accept-new writes to the first
	globalKnown    []string
	hostKeyAlias   string
	proxyJump      []string // raw hop specs, in dial order; nil for none
	strict         string   // StrictHostKeyChecking, lower case
	aliveInterval  time.Duration
	aliveCountMax  int
	connectTimeout time.Duration // 0: not configured
	identityAgent  string        // socket path; "none" disables; "" means $SSH_AUTH_SOCK
}

// identityFile is a private key path; explicit ones came from the user
// (config or options) and must exist, implicit ones are OpenSSH's defaults.
type identityFile struct {
	path     string
	explicit bool
}

// addr is the dial address "hostname:port".
func (h *hostConfig) addr() string { return net.JoinHostPort(h.hostName, strconv.Itoa(h.port)) }

// knownHostsKey is the "host:port" under which known_hosts stores the key:
// HostKeyAlias when set (without port, like OpenSSH), else hostname:port.
func (h *hostConfig) knownHostsKey() string {
	if h.hostKeyAlias != "" {
		return net.JoinHostPort(h.hostKeyAlias, "22")
	}
	return h.addr()
}

// targetSpec is a parsed `[ssh://][user@]host[:port]`.
type targetSpec struct {
	user string
	host string
	port int
}

// parseTarget parses an SSH target: user@host:port, host, an alias, an
// IPv6 address in brackets ([::1]:22) or an ssh:// URL.
func parseTarget(s string) (targetSpec, error) {
	var t targetSpec
	var portStr string
	bad := func(why string) (targetSpec, error) {
		return targetSpec{}, fmt.Errorf("remote: bad ssh target %q: %s", s, why)
	}
	if strings.HasPrefix(s, "ssh://") {
		u, err := url.Parse(s)
		if err != nil {
			return bad(err.Error())
		}
		if u.Path != "" && u.Path != "/" {
			return bad("ssh:// URL has a path")
		}
		t.user = u.User.Username()
		t.host = u.Hostname()
		portStr = u.Port()
	} else {
		rest := s
		if i := strings.LastIndexByte(rest, '@'); i >= 0 {
			t.user, rest = rest[:i], rest[i+1:]
			if t.user == "" {
				return bad("empty user")
			}
		}
		host, port := rest, ""
		switch {
		case strings.HasPrefix(rest, "["):
			h, p, err := net.SplitHostPort(rest)
			if err != nil {
				if !strings.HasSuffix(rest, "]") {
					return bad(err.Error())
				}
				h, p = rest[1:len(rest)-1], ""
			}
			host, port = h, p
		case strings.Count(rest, ":") == 1:
			host, port, _ = strings.Cut(rest, ":")
		}
		t.host, portStr = host, port
	}
	if portStr != "" {
		n, err := strconv.Atoi(portStr)
		if err != nil || n < 1 || n > 65535 {
			return bad("bad port")
		}
		t.port = n
	}
	switch {
	case t.host == "":
		return bad("empty host")
	case strings.HasPrefix(t.host, "-") || strings.HasPrefix(t.user, "-"):
		return bad("host or user starts with '-'")
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return bad("contains a space or control character")
	}
	return t, nil
}

// defaultIdentityFiles are OpenSSH's defaults (ssh_config(5), 9.x), tried in
// this order when no IdentityFile is configured.
var defaultIdentityFiles = []string{
	"~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ecdsa_sk", "~/.ssh/id_ed25519",
	"~/.ssh/id_ed25519_sk", "~/.ssh/id_xmss", "~/.ssh/id_dsa",
}

// configKeys are the ssh_config keywords we use, lower case.
var configKeys = []string{
	"hostname", "user", "port", "identityfile", "userknownhostsfile", "globalknownhostsfile",
	"hostkeyalias", "proxyjump", "proxycommand", "stricthostkeychecking", "serveraliveinterval",
	"serveralivecountmax", "connecttimeout", "identityagent",
}

// resolveHost resolves target with `ssh -G` when the ssh client exists (and
// opts allow), else with github.com/kevinburke/ssh_config. For a ProxyJump
// hop, hop is true: the options' User and Port then do not apply.
func resolveHost(ctx context.Context, target string, opts *SSHOptions, hop bool) (*hostConfig, error) {
	t, err := parseTarget(target)
	if err != nil {
		return nil, err
	}
	if !hop {
		if t.user == "" {
			t.user = opts.User
		}
		if t.port == 0 {
			t.port = opts.Port
		}
	}
	var kv map[string][]string
	explicitIdentities := true
	if sshPath := opts.sshClient(); sshPath != "" {
		kv, err = sshG(ctx, sshPath, opts.ConfigFile, t)
		if err != nil {
			return nil, err
		}
		explicitIdentities = !isDefaultIdentityList(kv["identityfile"])
	} else {
		kv, err = parseConfigFiles(opts, t)
		if err != nil {
			return nil, err
		}
		if len(kv["identityfile"]) == 0 {
			kv["identityfile"] = defaultIdentityFiles
			explicitIdentities = false
		}
	}
	return buildHostConfig(t, kv, explicitIdentities, opts)
}

// sshClient returns the ssh binary to run `ssh -G` with, or "".
func (o *SSHOptions) sshClient() string {
	if o.DisableSSHG {
		return ""
	}
	if o.SSHCommand != "" {
		return o.SSHCommand
	}
	p, err := exec.LookPath("ssh")
	if err != nil {
		return ""
	}
	return p
}

// sshG runs `ssh -G [-F file] [-p port] [-l user] -- host` and returns its
// "keyword value" lines. Note that ssh -G runs `Match exec` commands of the
// user's config, exactly as ssh itself would.
func sshG(ctx context.Context, sshPath, configFile string, t targetSpec) (map[string][]string, error) {
	args := []string{"-G"}
	if configFile != "" {
		args = append(args, "-F", configFile)
	}
	if t.port != 0 {
		args = append(args, "-p", strconv.Itoa(t.port))
	}
	if t.user != "" {
		args = append(args, "-l", t.user)
	}
	args = append(args, "--", t.host)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sshPath, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		return nil, fmt.Errorf("remote: resolving %q with ssh -G: %w: %s", t.host, err, msg)
	}
	kv := make(map[string][]string)
	for line := range strings.SplitSeq(string(out), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		kv[k] = append(kv[k], strings.TrimSpace(v))
	}
	return kv, nil
}

func isDefaultIdentityList(files []string) bool {
	for _, f := range files {
		found := false
		for _, d := range defaultIdentityFiles {
			if f == d {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// parseConfigFiles reads opts.ConfigFile (or ~/.ssh/config and
// /etc/ssh/ssh_config) with kevinburke/ssh_config. A file that does not
// parse (kevinburke supports only `Match host|all`) is an error naming the
// file and line, never silently ignored.
func parseConfigFiles(opts *SSHOptions, t targetSpec) (map[string][]string, error) {
	var files []string
	if opts.ConfigFile != "" {
		files = []string{opts.ConfigFile}
	} else {
		home, err := opts.homeDir()
		if err == nil {
			files = append(files, filepath.Join(home, ".ssh", "config"))
		}
		files = append(files, "/etc/ssh/ssh_config")
	}
	var cfgs []*ssh_config.Config
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && (opts.ConfigFile == "" || i > 0) {
				continue
			}
			return nil, fmt.Errorf("remote: ssh config: %w", err)
		}
		cfg, err := ssh_config.DecodeBytes(b)
		if err != nil {
			// The library reports "(line, col): message".
			return nil, fmt.Errorf("remote: ssh config %s: %w (this parser supports only Match host/all; install the OpenSSH client so `ssh -G` can be used)", f, err)
		}
		cfgs = append(cfgs, cfg)
	}
	kv := make(map[string][]string)
	for _, key := range configKeys {
		for _, cfg := range cfgs {
			if key == "identityfile" {
				all, err := cfg.GetAll(t.host, key)
				if err != nil {
					return nil, fmt.Errorf("remote: ssh config: %w", err)
				}
				kv[key] = append(kv[key], all...)
				continue
			}
			v, err := cfg.Get(t.host, key)
			if err != nil {
				return nil, fmt.Errorf("remote: ssh config: %w", err)
			}
			if v != "" {
				kv[key] = []string{v}
				break
			}
		}
	}
	// Command-line values beat the config, as with ssh -l/-p.
	if t.user != "" {
		kv["user"] = []string{t.user}
	}
	if t.port != 0 {
		kv["port"] = []string{strconv.Itoa(t.port)}
	}
	if len(kv["hostname"]) == 0 {
		kv["hostname"] = []string{t.host}
	}
	if len(kv["user"]) == 0 {
		kv["user"] = []string{localUserName()}
	}
	if len(kv["port"]) == 0 {
		kv["port"] = []string{"22"}
	}
	if len(kv["userknownhostsfile"]) == 0 {
		kv["userknownhostsfile"] = []string{"~/.ssh/known_hosts ~/.ssh/known_hosts2"}
	}
	if len(kv["globalknownhostsfile"]) == 0 {
		kv["globalknownhostsfile"] = []string{"/etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2"}
	}
	return kv, nil
}

// buildHostConfig turns resolved keywords into a hostConfig, expanding ~ and
// %-tokens and applying the options' overrides.
func buildHostConfig(t targetSpec, kv map[string][]string, explicitIdentities bool, opts *SSHOptions) (*hostConfig, error) {
	first := func(k string) string {
		if v := kv[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	h := &hostConfig{
		alias:        t.host,
		user:         first("user"),
		hostKeyAlias: first("hostkeyalias"),
		strict:       strings.ToLower(first("stricthostkeychecking")),
	}
	if h.hostKeyAlias == "none" {
		h.hostKeyAlias = ""
	}
	port, err := strconv.Atoi(first("port"))
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("remote: ssh config for %q: bad port %q", t.host, first("port"))
	}
	h.port = port
	home, err := opts.homeDir()
	if err != nil {
		return nil, err
	}
	x := &expander{home: home, h: h}
	// %h in HostName is the alias (ssh -G has already expanded it).
	x.hostForH = t.host
	if h.hostName, err = x.expand(first("hostname"), "HostName"); err != nil {
		return nil, err
	}
	if h.hostName == "" {
		h.hostName = t.host
	}
	x.hostForH = h.hostName
	if pc := first("proxycommand"); pc != "" && pc != "none" {
		return nil, fmt.Errorf("remote: ssh config for %q sets ProxyCommand, which flightdeck does not run; use ProxyJump", t.host)
	}
	if pj := first("proxyjump"); pj != "" && pj != "none" {
		for hop := range strings.SplitSeq(pj, ",") {
			if hop = strings.TrimSpace(hop); hop != "" {
				h.proxyJump = append(h.proxyJump, hop)
			}
		}
	}
	if len(opts.IdentityFiles) > 0 {
		for _, f := range opts.IdentityFiles {
			p, err := x.optionPath(f, "IdentityFile")
			if err != nil {
				return nil, err
			}
			h.identityFiles = append(h.identityFiles, identityFile{path: p, explicit: true})
		}
	} else {
		for _, f := range kv["identityfile"] {
			p, err := x.path(f, "IdentityFile")
			if err != nil {
				return nil, err
			}
			h.identityFiles = append(h.identityFiles, identityFile{path: p, explicit: explicitIdentities})
		}
	}
	if len(opts.KnownHostsFiles) > 0 {
		for _, f := range opts.KnownHostsFiles {
			p, err := x.optionPath(f, "known_hosts")
			if err != nil {
				return nil, err
			}
			h.userKnownHosts = append(h.userKnownHosts, p)
		}
	} else {
		for _, list := range kv["userknownhostsfile"] {
			for f := range strings.FieldsSeq(list) {
				p, err := x.path(f, "UserKnownHostsFile")
				if err != nil {
					return nil, err
				}
				h.userKnownHosts = append(h.userKnownHosts, p)
			}
		}
		for _, list := range kv["globalknownhostsfile"] {
			for f := range strings.FieldsSeq(list) {
				p, err := x.path(f, "GlobalKnownHostsFile")
				if err != nil {
					return nil, err
				}
				h.globalKnown = append(h.globalKnown, p)
			}
		}
	}
	if ia := first("identityagent"); ia != "" && ia != "SSH_AUTH_SOCK" {
		if ia == "none" {
			h.identityAgent = "none"
		} else if h.identityAgent, err = x.path(ia, "IdentityAgent"); err != nil {
			return nil, err
		}
	}
	h.aliveInterval = seconds(first("serveraliveinterval"))
	if n, err := strconv.Atoi(first("serveralivecountmax")); err == nil && n > 0 {
		h.aliveCountMax = n
	}
	h.connectTimeout = seconds(first("connecttimeout"))
	return h, nil
}

// seconds parses an ssh_config time in seconds ("none" and junk are 0).
func seconds(s string) time.Duration {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// expander expands ~ and ssh_config %-tokens (ssh_config(5) TOKENS).
type expander struct {
	home     string
	h        *hostConfig
	hostForH string
}

// path expands f and makes it absolute.
func (x *expander) path(f, what string) (string, error) {
	f, err := x.expand(f, what)
	if err != nil {
		return "", err
	}
	switch {
	case f == "~":
		f = x.home
	case strings.HasPrefix(f, "~/"):
		f = filepath.Join(x.home, f[2:])
	case strings.HasPrefix(f, "~"):
		name, rest, _ := strings.Cut(f[1:], "/")
		u, err := user.Lookup(name)
		if err != nil {
			return "", fmt.Errorf("remote: %s %q: %w", what, f, err)
		}
		f = filepath.Join(u.HomeDir, rest)
	}
	if !filepath.IsAbs(f) {
		// OpenSSH reads relative identity paths from the home directory.
		f = filepath.Join(x.home, f)
	}
	return f, nil
}

// optionPath is path for a file named on the command line (ssh -i, -o
// UserKnownHostsFile=): a relative path is the working directory's, as
// with ssh, not the home directory's as in a config file.
func (x *expander) optionPath(f, what string) (string, error) {
	if f == "" {
		return "", fmt.Errorf("remote: %s: an empty path", what)
	}
	if !filepath.IsAbs(f) && !strings.HasPrefix(f, "~") {
		abs, err := filepath.Abs(f)
		if err != nil {
			return "", fmt.Errorf("remote: %s %q: %w", what, f, err)
		}
		f = abs
	}
	return x.path(f, what)
}

// expand replaces %%, %d, %h, %i, %k, %L, %l, %n, %p, %r, %u. Any other
// token is an error, as in OpenSSH.
func (x *expander) expand(s, what string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return "", fmt.Errorf("remote: %s %q: trailing %%", what, s)
		}
		i++
		switch s[i] {
		case '%':
			b.WriteByte('%')
		case 'd':
			b.WriteString(x.home)
		case 'h':
			b.WriteString(x.hostForH)
		case 'i':
			b.WriteString(strconv.Itoa(os.Getuid()))
		case 'k':
			if x.h.hostKeyAlias != "" {
				b.WriteString(x.h.hostKeyAlias)
			} else {
				b.WriteString(x.h.alias)
			}
		case 'L':
			hn, _ := os.Hostname()
			hn, _, _ = strings.Cut(hn, ".")
			b.WriteString(hn)
		case 'l':
			hn, _ := os.Hostname()
			b.WriteString(hn)
		case 'n':
			b.WriteString(x.h.alias)
		case 'p':
			b.WriteString(strconv.Itoa(x.h.port))
		case 'r':
			b.WriteString(x.h.user)
		case 'u':
			b.WriteString(localUserName())
		default:
			return "", fmt.Errorf("remote: %s %q: unsupported token %%%c", what, s, s[i])
		}
	}
	return b.String(), nil
}

// localUserName is the name of the user running flightdeck.
func localUserName() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

// homeDir is opts.HomeDir or the user's home directory.
func (o *SSHOptions) homeDir() (string, error) {
	if o.HomeDir != "" {
		return o.HomeDir, nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("remote: home directory for ~/.ssh: %w", err)
	}
	return h, nil
}
