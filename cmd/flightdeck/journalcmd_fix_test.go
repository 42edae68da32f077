package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

const fixPatch = "diff --git a/model/pynccl.py b/model/pynccl.py\n--- a/model/pynccl.py\n+++ b/model/pynccl.py\n" +
	"@@ -1,2 +1,3 @@\n-x = 1\n+x = 2\n+TOKEN = 'hunter2'\n y\n"

// unknownJournal writes a journal where e1's git capture failed (and its
// nccl probe), e2 is dirty and was ended by hand, then appends a second
// session (as --journal FILE after a crash) with e3 open at the crash.
func unknownJournal(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "unknown.jsonl")
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	w, err := journal.Create(path, event.SessionHeader{Created: t0, Host: "demo", Flightdeck: "v1", User: "ana", Hostname: "laptop", PID: 10})
	if err != nil {
		t.Fatal(err)
	}
	fp1 := event.Fingerprint{At: at(2), Git: &event.GitState{Repo: "/r"}, Errors: []string{"git: timed out after 30s"},
		Versions: []event.Version{{Name: "nccl", Command: "nccl-version", Err: "timed out after 10s"}}}
	fp2 := event.Fingerprint{At: at(62), Git: &event.GitState{Repo: "/r", Head: "a6d51c0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708", Branch: "main",
		Patch: fixPatch, PatchSHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", PatchBytes: len(fixPatch)},
		Versions: []event.Version{{Name: "nccl", Value: "2.21.5"}}}
	for _, e := range []event.Event{
		{At: at(1), Data: event.ExperimentStart{ID: "e1", Name: "base", Trigger: event.TriggerKey}},
		{At: at(2), Data: event.ExperimentFingerprint{Exp: "e1", Fingerprint: fp1}},
		{At: at(60), Data: event.ExperimentEnd{Exp: "e1", Trigger: event.TriggerKey}},
		{At: at(61), Data: event.ExperimentStart{ID: "e2", Name: "dirty", Trigger: event.TriggerKey}},
		{At: at(62), Data: event.ExperimentFingerprint{Exp: "e2", Fingerprint: fp2}},
		{At: at(120), Data: event.ExperimentEnd{Exp: "e2", Trigger: event.TriggerKey}},
		{At: at(130), Data: event.ExperimentStart{ID: "e3", Name: "crashed", Trigger: event.TriggerKey}},
		{At: at(140), Data: event.Note{Text: "last words [1m ctx]", Exp: "e3"}},
	} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w, err = journal.Append(path, event.SessionHeader{Created: at(3600), Host: "demo", Flightdeck: "v2", User: "ana", Hostname: "laptop", PID: 11})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// journal show: an unknown commit reads as unknown (never detached or
// clean), a dirty patch is summarised (diffstat, hash, size) and printed
// only with --patch, "key" reads "by hand", the sessions are listed.
func TestJournalShowUnknownPatchSessions(t *testing.T) {
	path := unknownJournal(t)
	out, _, err := runCLI(t, nil, "journal", "show", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"e1  base     unknown", "by hand", "e3  crashed  unknown", "crash",
		"[e3] last words [1m ctx]", // a typed note as typed
		"sessions (--journal appended to this file)", "0:00:00 flightdeck v1 pid 10 (ana@laptop) (created it)",
		"1:00:00 flightdeck v2 pid 11 (ana@laptop); e3, left open by the previous session, ended at its last event (0:02:20)"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runCLI(t, nil, "journal", "show", path, "e1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"commit      unknown (git: timed out after 30s)", "dirty       unknown (git: timed out after 30s)",
		"version     nccl     unknown: the probe failed: timed out after 10s", "ended       0:01:00 hand (e)"} {
		if !strings.Contains(out, want) {
			t.Errorf("show e1 lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"detached", "clean", "commit      -"} {
		if strings.Contains(out, bad) {
			t.Errorf("show e1 says %q:\n%s", bad, out)
		}
	}
	out, _, err = runCLI(t, nil, "journal", "show", path, "e2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dirty       patch 143 B, sha256 0123456789abcdef", "diffstat    1 file, +2 -1", "model/pynccl.py +2 -1", "(the patch itself: --patch)"} {
		if !strings.Contains(out, want) {
			t.Errorf("show e2 lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hunter2") {
		t.Errorf("the patch printed without --patch:\n%s", out)
	}
	out, _, err = runCLI(t, nil, "journal", "show", path, "e2", "--patch")
	if err != nil || !strings.Contains(out, "  patch:\ndiff --git a/model/pynccl.py b/model/pynccl.py\n") || !strings.Contains(out, "+TOKEN = 'hunter2'\n") {
		t.Errorf("show e2 --patch: %v\n%s", err, out)
	}
	_, errOut, err := runCLI(t, nil, "journal", "show", path, "--patch")
	wantRefused(t, errOut, err, "--patch goes with an experiment")
	out, _, _ = runCLI(t, nil, "journal", "show", "--help")
	if !strings.Contains(out, "secrets included") {
		t.Errorf("show --help does not warn that the patch is stored as is:\n%s", out)
	}
}

// An export to a directory that does not exist is an I/O failure (exit 1)
// naming the path given, not the temporary file.
func TestJournalExportOutputError(t *testing.T) {
	_, file := journalDirWith(t)
	out := filepath.Join(t.TempDir(), "nonexistent", "x.md")
	_, _, err := runCLI(t, nil, "journal", "export", file, "--format", "md", "-o", out)
	var ec exitCode
	if err == nil || errors.As(err, &ec) {
		t.Fatalf("err = %v, want an error main exits 1 for", err)
	}
	if want := "write " + out + ": no such directory: " + filepath.Dir(out); err.Error() != want || strings.Contains(err.Error(), ".tmp") {
		t.Errorf("err = %q, want %q", err, want)
	}
	// A directory given as the file: said so, not "file exists".
	dir := t.TempDir()
	if _, _, err := runCLI(t, nil, "journal", "export", file, "--format", "md", "-o", dir); err == nil || err.Error() != "write "+dir+": is a directory" {
		t.Errorf("-o DIR: err = %v", err)
	}
}

// An unknown subcommand is a usage error (exit 2), in every group and at
// the top.
func TestUnknownSubcommandIsUsageError(t *testing.T) {
	for _, args := range [][]string{{"journal", "lss"}, {"git", "lss"}, {"server", "lss"}, {"lss"}} {
		_, errOut, err := runCLI(t, nil, args...)
		var ec exitCode
		if !errors.As(err, &ec) || ec != exitRefused || !strings.Contains(errOut, `unknown command "lss"`) {
			t.Errorf("%v: err = %v, stderr %q, want a usage error (exit 2) naming the command", args, err, errOut)
		}
	}
	if out, _, err := runCLI(t, nil); err != nil || !strings.Contains(out, "Usage:") {
		t.Errorf("no arguments: %v, want the help", err)
	}
}

// TestExportSaysWhatItSkipped: an export of a damaged journal says on
// stderr what it skipped (show and ls say it too); show of an unknown
// experiment lists the ones there are.
func TestExportSaysWhatItSkipped(t *testing.T) {
	_, file := journalDirWith(t)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	damaged := filepath.Join(t.TempDir(), "damaged.jsonl")
	os.WriteFile(damaged, []byte(strings.Join(lines[:5], "")+"{garbage\n"+strings.Join(lines[5:], "")), 0o600)
	out, errOut, err := runCLI(t, nil, "journal", "export", damaged, "--format", "md")
	if err != nil || !strings.Contains(errOut, "skipped 1 garbled line") || !strings.Contains(out, "| e1 |") {
		t.Errorf("export of a damaged journal: %v, stderr %q", err, errOut)
	}
	_, errOut, err = runCLI(t, nil, "journal", "show", file, "e99")
	wantRefused(t, errOut, err, "experiment e99: not in "+file+" (have e1, e2, e3)")
}
