package remote

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in   string
		want targetSpec
		bad  bool
	}{
		{in: "gpu-box", want: targetSpec{host: "gpu-box"}},
		{in: "root@gpu-box", want: targetSpec{user: "root", host: "gpu-box"}},
		{in: "root@10.0.0.5:2222", want: targetSpec{user: "root", host: "10.0.0.5", port: 2222}},
		{in: "a@b@host:22", want: targetSpec{user: "a@b", host: "host", port: 22}},
		{in: "[::1]:2200", want: targetSpec{host: "::1", port: 2200}},
		{in: "u@[fe80::1]", want: targetSpec{user: "u", host: "fe80::1"}},
		{in: "fe80::1", want: targetSpec{host: "fe80::1"}},
		{in: "ssh://u@h:2022", want: targetSpec{user: "u", host: "h", port: 2022}},
		{in: "", bad: true},
		{in: "@h", bad: true},
		{in: "u@", bad: true},
		{in: "h:0", bad: true},
		{in: "h:70000", bad: true},
		{in: "h:x", bad: true},
		{in: "-oProxyCommand=x", bad: true},
		{in: "-l@h", bad: true},
		{in: "h ost", bad: true},
		{in: "h\nost", bad: true},
		{in: "ssh://h/path", bad: true},
	}
	for _, tt := range tests {
		got, err := parseTarget(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("parseTarget(%q) = %+v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseTarget(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// resolvers returns the two resolution paths; ssh -G only when installed.
func resolvers(t *testing.T) map[string]bool {
	m := map[string]bool{"ssh_config-library": true}
	if _, err := exec.LookPath("ssh"); err == nil {
		m["ssh -G"] = false
	} else if os.Getenv("CI") != "" {
		t.Fatal("ssh client not installed (CI is set)")
	}
	return m
}

func TestResolveAlias(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "config")
	writeFile(t, cfg, `
Host gpu-box
  HostName 10.1.2.3
  User alice
  Port 2222
  IdentityFile ~/keys/%h_%r
  IdentityFile /abs/key2
  UserKnownHostsFile ~/kh1 %d/kh2
  ServerAliveInterval 7
  ServerAliveCountMax 4
  ConnectTimeout 9
  ProxyJump bob@jump:2200,jump2
  HostKeyAlias gpu-alias
  StrictHostKeyChecking accept-new

Host plain
  HostName plain.example
`)
	for name, disable := range resolvers(t) {
		t.Run(name, func(t *testing.T) {
			opts := &SSHOptions{ConfigFile: cfg, HomeDir: home, DisableSSHG: disable}
			// ssh -G expands UserKnownHostsFile itself, with the account's
			// real home directory (getpwuid), not HomeDir.
			khHome := home
			if !disable {
				u, err := user.Current()
				if err != nil {
					t.Fatal(err)
				}
				khHome = u.HomeDir
			}
			h, err := resolveHost(context.Background(), "gpu-box", opts, false)
			if err != nil {
				t.Fatal(err)
			}
			want := &hostConfig{
				alias: "gpu-box", hostName: "10.1.2.3", user: "alice", port: 2222,
				identityFiles: []identityFile{
					{path: filepath.Join(home, "keys/10.1.2.3_alice"), explicit: true},
					{path: "/abs/key2", explicit: true},
				},
				userKnownHosts: []string{filepath.Join(khHome, "kh1"), filepath.Join(khHome, "kh2")},
				globalKnown:    []string{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"},
				hostKeyAlias:   "gpu-alias",
				proxyJump:      []string{"bob@jump:2200", "jump2"},
				strict:         "accept-new",
				aliveInterval:  7 * time.Second,
				aliveCountMax:  4,
				connectTimeout: 9 * time.Second,
			}
			if !reflect.DeepEqual(h, want) {
				t.Errorf("got  %+v\nwant %+v", h, want)
			}
			if k := h.knownHostsKey(); k != "gpu-alias:22" {
				t.Errorf("knownHostsKey = %q", k)
			}

			// Explicit user and port in the target beat the config.
			h, err = resolveHost(context.Background(), "root@gpu-box:2022", opts, false)
			if err != nil {
				t.Fatal(err)
			}
			if h.user != "root" || h.port != 2022 || h.hostName != "10.1.2.3" {
				t.Errorf("override: %+v", h)
			}

			// Without IdentityFile, OpenSSH's defaults apply and are optional.
			h, err = resolveHost(context.Background(), "plain", &SSHOptions{ConfigFile: cfg, HomeDir: home, DisableSSHG: disable, User: "carol"}, false)
			if err != nil {
				t.Fatal(err)
			}
			if h.hostName != "plain.example" || h.user != "carol" || h.port != 22 || h.knownHostsKey() != "plain.example:22" {
				t.Errorf("plain: %+v", h)
			}
			if len(h.identityFiles) == 0 {
				t.Fatal("no default identity files")
			}
			for _, f := range h.identityFiles {
				if f.explicit || !strings.HasPrefix(f.path, filepath.Join(home, ".ssh")+"/id_") {
					t.Errorf("default identity %+v", f)
				}
			}
		})
	}
}

func TestResolveOptionsOverride(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "config")
	writeFile(t, cfg, "Host x\n  IdentityFile /from/config\n  UserKnownHostsFile /from/config/kh\n")
	for name, disable := range resolvers(t) {
		t.Run(name, func(t *testing.T) {
			h, err := resolveHost(context.Background(), "x", &SSHOptions{
				ConfigFile: cfg, HomeDir: home, DisableSSHG: disable,
				IdentityFiles: []string{"~/id"}, KnownHostsFiles: []string{"/kh"}, Port: 2200,
			}, false)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h.identityFiles, []identityFile{{path: filepath.Join(home, "id"), explicit: true}}) ||
				!reflect.DeepEqual(h.userKnownHosts, []string{"/kh"}) || h.globalKnown != nil || h.port != 2200 {
				t.Errorf("got %+v", h)
			}
			// -i key, as ssh takes it: the working directory's file, not
			// the home directory's; a config file's relative path stays
			// the home directory's.
			h, err = resolveHost(context.Background(), "x", &SSHOptions{
				ConfigFile: cfg, HomeDir: home, DisableSSHG: disable,
				IdentityFiles: []string{"keys/id"}, KnownHostsFiles: []string{"kh"},
			}, false)
			if err != nil {
				t.Fatal(err)
			}
			wd, _ := os.Getwd()
			if !reflect.DeepEqual(h.identityFiles, []identityFile{{path: filepath.Join(wd, "keys", "id"), explicit: true}}) ||
				!reflect.DeepEqual(h.userKnownHosts, []string{filepath.Join(wd, "kh")}) {
				t.Errorf("relative -i: got %+v, want under %s", h, wd)
			}
			_, err = resolveHost(context.Background(), "x", &SSHOptions{ConfigFile: cfg, HomeDir: home, DisableSSHG: disable, IdentityFiles: []string{""}}, false)
			if err == nil || !strings.Contains(err.Error(), "empty path") {
				t.Errorf("-i '': err = %v, want an empty path refused", err)
			}
		})
	}
}

func TestResolveConfigErrors(t *testing.T) {
	dir := t.TempDir()
	matchExec := filepath.Join(dir, "match")
	writeFile(t, matchExec, "Host a\n  User u\n\nMatch exec \"true\"\n  User v\n")
	_, err := resolveHost(context.Background(), "a", &SSHOptions{ConfigFile: matchExec, DisableSSHG: true, HomeDir: dir}, false)
	if err == nil || !strings.Contains(err.Error(), matchExec) || !strings.Contains(err.Error(), "(4,") {
		t.Errorf("Match exec with the library: err = %v, want the file and line 4", err)
	}

	proxyCmd := filepath.Join(dir, "proxycmd")
	writeFile(t, proxyCmd, "Host a\n  ProxyCommand nc %h %p\n")
	for name, disable := range resolvers(t) {
		_, err := resolveHost(context.Background(), "a", &SSHOptions{ConfigFile: proxyCmd, DisableSSHG: disable, HomeDir: dir}, false)
		if err == nil || !strings.Contains(err.Error(), "ProxyCommand") {
			t.Errorf("%s: ProxyCommand: err = %v", name, err)
		}
	}

	badToken := filepath.Join(dir, "token")
	writeFile(t, badToken, "Host a\n  IdentityFile ~/%Z\n")
	_, err = resolveHost(context.Background(), "a", &SSHOptions{ConfigFile: badToken, DisableSSHG: true, HomeDir: dir}, false)
	if err == nil || !strings.Contains(err.Error(), "%Z") {
		t.Errorf("unknown token: err = %v", err)
	}

	if _, err := resolveHost(context.Background(), "a", &SSHOptions{ConfigFile: filepath.Join(dir, "missing"), DisableSSHG: true}, false); err == nil {
		t.Error("missing explicit config file: no error")
	}
}

func TestExpandTokens(t *testing.T) {
	h := &hostConfig{alias: "gpu", hostName: "10.0.0.1", user: "root", port: 22}
	x := &expander{home: "/home/me", h: h, hostForH: h.hostName}
	got, err := x.path("%d/.ssh/%h-%p-%r-%n-%k-%%", "IdentityFile")
	if err != nil {
		t.Fatal(err)
	}
	if want := "/home/me/.ssh/10.0.0.1-22-root-gpu-gpu-%"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, _ := x.path("rel/key", "IdentityFile"); got != "/home/me/rel/key" {
		t.Errorf("relative path: %q", got)
	}
	if _, err := x.expand("trailing%", "x"); err == nil {
		t.Error("trailing %: no error")
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
