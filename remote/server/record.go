// Package server controls an inference server (SGLang, vLLM, the simulated
// one) on a GPU host reached through a remote.Host: launch it detached so it
// survives the SSH connection, find it again (adopt), kill its whole process
// tree, wait until its GPU memory is free, and check its HTTP health through
// the host's port forward.
//
// Every shell script here is fixed text sent on stdin ("sh -s -- ARGS");
// all variable data travels as positional arguments quoted with
// remote.Command, so no user text is ever interpreted by a shell.
package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// PidfileName is the file in the log directory that names the server the
// cockpit launched last: one JSON object (event.LaunchRecord). It is replaced
// atomically at each launch.
const PidfileName = "flightdeck-server.json"

// CommandLine is l's argv as one POSIX shell line, for display.
func CommandLine(l event.LaunchInfo) string { return displayLine(l.Argv) }

// parseRecord reads a pidfile.
func parseRecord(b []byte) (event.LaunchRecord, error) {
	var r event.LaunchRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("pidfile: %w", err)
	}
	if r.PID <= 1 {
		return r, fmt.Errorf("pidfile: pid %d is not a server", r.PID)
	}
	return r, nil
}

var secretName = regexp.MustCompile(`(?i)(TOKEN|SECRET|PASSW|KEY|PRIVATE|CREDENTIAL|AUTH|COOKIE|SESSION)`)

// Redact returns env with the values of secret-looking variables (names
// containing TOKEN, SECRET, PASSW, KEY, PRIVATE, CREDENTIAL, AUTH, COOKIE
// or SESSION, in any case: HF_TOKEN, AWS_ACCESS_KEY_ID, WANDB_KEY)
// replaced by "<redacted>", for records, journals and screens. The server
// itself still receives the real values.
func Redact(env map[string]string) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if secretName.MatchString(k) {
			v = "<redacted>"
		}
		out[k] = v
	}
	return out
}

// secretFlagWords are the words of a flag name ("--hf-token" → hf, token)
// that make its value a secret.
var secretFlagWords = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true, "password": true, "passwd": true,
	"credential": true, "credentials": true, "auth": true,
}

// RedactArgv returns a copy of argv with secret values replaced by
// "<redacted>": the value of a flag whose name has a word key, apikey,
// token, secret, password, passwd, credential(s) or auth (--api-key X,
// --hf-token=X, --admin_password X; a following word that starts with "-"
// is another flag and stays), and the value of a NAME=value word whose name
// server.Redact hides (env HF_TOKEN=x python …). --ssl-keyfile or
// --tokenizer-path are not secrets: their words are keyfile, tokenizer.
func RedactArgv(argv []string) []string {
	if argv == nil {
		return nil
	}
	out := make([]string, len(argv))
	copy(out, argv)
	for i := 0; i < len(out); i++ {
		w := out[i]
		if strings.HasPrefix(w, "-") {
			name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			if !secretFlag(name) {
				continue
			}
			if hasValue {
				out[i] = w[:strings.IndexByte(w, '=')+1] + "<redacted>"
			} else if i+1 < len(out) && !strings.HasPrefix(out[i+1], "-") {
				out[i+1] = "<redacted>"
				i++
			}
			continue
		}
		if name, _, ok := strings.Cut(w, "="); ok && remote.CheckEnvName(name) == nil && secretName.MatchString(name) {
			out[i] = name + "=<redacted>"
		}
	}
	return out
}

func secretFlag(name string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		if secretFlagWords[w] {
			return true
		}
	}
	return false
}

// RedactLaunch returns a copy of l safe to record and show: env values of
// secret-looking names (Redact) and secret argv values (RedactArgv)
// replaced by "<redacted>". The journal stores launches this way.
func RedactLaunch(l event.LaunchInfo) event.LaunchInfo {
	l.Env = Redact(l.Env)
	l.Argv = RedactArgv(l.Argv)
	return l
}

// ErrNoServer is returned by Find and Kill when no server is running.
var ErrNoServer = errors.New("no server running")

// displayLine joins words for display, quoting those that need it the way
// a shell user would type them; words that cannot be quoted (control
// characters) are shown Go-quoted.
func displayLine(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(displayWord(w))
	}
	return b.String()
}

// EnvLine renders env as sorted NAME=value words, each value quoted for a
// shell where it needs it (NCCL_PROTO=LL, HF_HOME='/data/hf cache').
func EnvLine(env map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(env)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k + "=" + displayWord(env[k]))
	}
	return b.String()
}
