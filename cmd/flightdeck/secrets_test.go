package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// secretCorpus are the secret forms of the attack round (issue 19): URL
// passwords in env values and in --extra, a plain secret under a *PASS
// name, tokens under flag and variable names. None may appear in anything
// flightdeck shows or stores.
var secretCorpus = []string{"DBPASSWORD42", "Pr0xyPassw0rd", "plainpass777", "UrlPassw0rd", "URLPW77", "sk-apikey9", "hf_tok55", "cookie88", "dsn-secret3"}

// TestSecretsNeverLeaveRedactedForm: a launch whose profile and --extra
// carry every secret form, then every output of it: the launch's and the
// repeat's terminal text, server status (text and JSON), the journal,
// journal show, its md, json and csv exports, the pidfile and every other
// file flightdeck wrote on the host (the host's journal mirror too): 0
// occurrences.
func TestSecretsNeverLeaveRedactedForm(t *testing.T) {
	t.Parallel()
	h, cfg, ssh := simHostConfig(t)
	profile := `
[profiles.secrets]
extends = "nccl-ll-ring"
env = { DATABASE_URL = "postgres://u:DBPASSWORD42@db/x", HTTPS_PROXY = "http://bob:Pr0xyPassw0rd@proxy:3128", MY_PASS = "plainpass777", HF_TOKEN = "hf_tok55", SESSION_COOKIE = "cookie88", SENTRY_DSN = "dsn-secret3" }
`
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(profile); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	args := func(a ...string) []string { return append(a, ssh...) }
	journal := filepath.Join(t.TempDir(), "secrets.jsonl")
	extra := "--proxy http://alice:UrlPassw0rd@host/ --model-url https://user:URLPW77@m/ --api-key sk-apikey9"
	var shown strings.Builder
	run := func(what string, a ...string) {
		t.Helper()
		if a[0] != "journal" { // the journal commands reach no host
			a = args(a...)
		}
		out, stderr, err := runBin(t, ctx, nil, a...)
		if err != nil {
			t.Fatalf("%s: %v\n%s%s", what, err, out, stderr)
		}
		shown.WriteString("--- " + what + "\n" + out + stderr)
	}
	run("server launch", "server", "launch", "sim", "--profile", "secrets", "--extra", extra, "--timeout", "90s")
	run("server status", "server", "status", "sim")
	run("server status --json", "server", "status", "sim", "--json")
	run("server repeat", "server", "repeat", "sim", "-n", "1", "--samples", "3", "--journal", journal)
	run("journal show", "journal", "show", journal)
	for _, format := range []string{"md", "json", "csv"} {
		run("journal export "+format, "journal", "export", journal, "--format", format)
	}
	run("server kill", "server", "kill", "sim", "--yes", "--grace", "2s")
	if !strings.Contains(shown.String(), "<redacted>") {
		t.Errorf("nothing shown was redacted: did the launch carry the secrets?\n%s", shown.String())
	}
	check := func(where, text string) {
		for _, s := range secretCorpus {
			for _, line := range strings.Split(text, "\n") {
				if strings.Contains(line, s) {
					t.Errorf("%s shows the secret %q: %s", where, s, line)
					break
				}
			}
		}
	}
	check("the terminal", shown.String())
	// The files: the journal here, and everything in the host's log
	// directory but the server's own log (what the server prints is its
	// own). The host's journal mirror is a copy of the journal's lines,
	// removed as each command ends (runBin).
	files := []string{journal}
	for _, root := range []string{filepath.Dir(h.LogPath)} {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && !strings.HasSuffix(p, ".log") {
				files = append(files, p)
			}
			return nil
		})
	}
	seenPidfile := false
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // another test's mirror, gone
		}
		seenPidfile = seenPidfile || filepath.Base(p) == "flightdeck-server.json"
		check(p, string(b))
	}
	if !seenPidfile {
		t.Errorf("no pidfile among %q", files)
	}
}
