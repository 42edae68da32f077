package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
)

// demoSite is how a cockpit reaches a demo's simulated host: written by
// `flightdeck demo` to <sim dir>/join.json, read by `flightdeck demo
// --join`, so that a second cockpit (a pair in another tmux pane) shares
// the first one's host, server, checkout and driver lock.
type demoSite struct {
	Dir        string `json:"dir"`         // the sim directory
	Target     string `json:"target"`      // the SSH target, user@127.0.0.1:port
	Identity   string `json:"identity"`    // the throwaway private key
	KnownHosts string `json:"known_hosts"` // its known_hosts
	LogDir     string `json:"log_dir"`     // server logs, pidfile and driver lock
	Repo       string `json:"repo"`        // the server's git checkout
	Port       int    `json:"port"`        // the fake server's HTTP port
	GPUs       int    `json:"gpus"`
	Profile    string `json:"profile"` // the first launch's env profile
	PID        int    `json:"pid"`     // the demo serving the host
}

// joinFile is the site file's name in a sim directory.
const joinFile = "join.json"

// siteOf is h as the demo serves it.
func siteOf(h *sim.Host, f demoFlags) demoSite {
	return demoSite{Dir: h.Dir, Target: h.Target(), Identity: h.IdentityPath, KnownHosts: h.KnownHostsPath,
		LogDir: filepath.Dir(h.LogPath), Repo: h.RepoPath, Port: h.ServerPort, GPUs: f.gpus, Profile: f.profile, PID: os.Getpid()}
}

// config is the site as a configured host: the "sim" preset serving the
// fake Kimi-K2.5 checkpoint on all GPUs, logs and pidfile in the sim's
// logs/, launched from its git checkout.
func (s demoSite) config() config.Host {
	return config.Host{Name: "demo", Target: s.Target, LogDir: s.LogDir, Repo: s.Repo,
		Workdir: s.Repo, Preset: "sim", Profile: s.Profile, Model: "/shared/kimi-k2.5-int4", TP: s.GPUs, Port: s.Port}
}

// write stores the site in its sim directory, readable by this user only.
func (s demoSite) write() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.Dir, joinFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.Dir, joinFile))
}

// findDemo reads the site of the demo to join: the one in dir (a sim
// directory), or with dir "" the only demo of this user running under the
// temporary directory. It errors when there is none, saying how to start
// one, and when there are several, listing them.
func findDemo(dir string) (demoSite, error) {
	if dir != "" {
		s, err := readSite(filepath.Join(dir, joinFile))
		if errors.Is(err, os.ErrNotExist) {
			return s, fmt.Errorf("--join --dir %s: no running demo there (no %s; it is written by a flightdeck demo serving that directory)", dir, joinFile)
		}
		if err == nil && !alive(s.PID) {
			return s, fmt.Errorf("--join --dir %s: the demo that served it (pid %d) has ended", dir, s.PID)
		}
		return s, err
	}
	paths, _ := filepath.Glob(filepath.Join(os.TempDir(), "flightdeck-sim-*", joinFile))
	var live []demoSite
	for _, p := range paths {
		if s, err := readSite(p); err == nil && alive(s.PID) {
			live = append(live, s)
		}
	}
	switch len(live) {
	case 0:
		return demoSite{}, errors.New("--join: no running flightdeck demo found: start one first (flightdeck demo), or name its sim directory (--join --dir DIR)")
	case 1:
		return live[0], nil
	}
	// Joining (or taking over) the wrong one would act on another
	// person's or test's demo: name them and let the user choose.
	var b strings.Builder
	for _, s := range live {
		fmt.Fprintf(&b, "\n  flightdeck demo --join --dir %s   (pid %d, %s)", shellQuote(s.Dir), s.PID, s.Target)
	}
	return demoSite{}, fmt.Errorf("--join: %d flightdeck demos run; name one:%s", len(live), b.String())
}

// readSite reads a site file that this user wrote (owned by us, not
// writable by others): another user's file in the shared temporary
// directory could point a joining cockpit at their own host and key.
func readSite(path string) (demoSite, error) {
	var s demoSite
	fi, err := os.Stat(path)
	if err != nil {
		return s, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o022 != 0 {
		return s, fmt.Errorf("%s: not written by this user (owner or mode): not joining it", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	if s.Target == "" || s.Identity == "" || s.KnownHosts == "" || s.LogDir == "" || s.GPUs < 1 {
		return s, fmt.Errorf("%s: incomplete demo site", path)
	}
	return s, nil
}

// alive reports whether process pid exists and is ours (signal 0: a
// demo is this user's process).
func alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}
