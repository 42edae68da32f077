package server

import (
	"regexp"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Redacted is what a secret is replaced by wherever flightdeck shows or
// stores it.
const Redacted = "<redacted>"

// secretPart matches a word of a variable's name that makes its value a
// secret, anywhere in the word (HFTOKEN, APIKEY, PASSWORD, OLDPWD).
var secretPart = regexp.MustCompile(`(?i)(TOKEN|SECRET|PASS|PWD|KEY|PRIVATE|CREDENTIAL|AUTH|COOKIE|SESSION|DSN)`)

// urlUserinfo matches the userinfo of a URL anywhere in a text
// ("postgres://u:pw@db/x", "--proxy=http://bob:pw@proxy:3128"): from the
// scheme's "://" to the last "@" before the host's end (a password may hold
// an unescaped "@"). RFC 3986 §3.2.1 deprecates a password there; tokens
// travel as the user part too (https://ghp_x@github.com/), so the whole
// userinfo goes.
var urlUserinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]*@`)

// IsSecretName reports whether a variable named name holds a secret: its
// name contains TOKEN, SECRET, PASS, PWD, KEY, PRIVATE, CREDENTIAL, AUTH,
// COOKIE, SESSION or DSN, in any case (HF_TOKEN, AWS_ACCESS_KEY_ID,
// MY_PASS, DATABASE_DSN), or has a word (between _ - .) CONN, CONNSTR or
// CONNECTION followed by STRING, STR, URL or URI (DB_CONN,
// PG_CONNECTION_STRING). A CONNECTION word alone is not one: NCCL's
// NCCL_IB_QPS_PER_CONNECTION is a tuning knob whose changes must show.
func IsSecretName(name string) bool {
	if secretPart.MatchString(name) {
		return true
	}
	words := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool { return r == '_' || r == '-' || r == '.' })
	for i, w := range words {
		switch w {
		case "CONN", "CONNSTR":
			return true
		case "CONNECTION":
			if i+1 < len(words) && (words[i+1] == "STRING" || words[i+1] == "STR" || words[i+1] == "URL" || words[i+1] == "URI") {
				return true
			}
		}
	}
	return false
}

// RedactURLs returns s with the userinfo of every URL in it replaced by
// "<redacted>": "http://bob:pw@proxy:3128" becomes
// "http://<redacted>@proxy:3128". Text without "://" is returned as it is.
func RedactURLs(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlUserinfo.ReplaceAllString(s, "${1}"+Redacted+"@")
}

// RedactValue returns the value of variable name as it may be shown or
// stored: "<redacted>" when IsSecretName(name), else value with the
// userinfo of its URLs redacted (RedactURLs).
func RedactValue(name, value string) string {
	if IsSecretName(name) {
		return Redacted
	}
	return RedactURLs(value)
}

// Redact returns env with every value as RedactValue gives it, for
// records, journals and screens: secret-looking names' values replaced by
// "<redacted>", the userinfo of URLs in the others too. The server itself
// still receives the real values.
func Redact(env map[string]string) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = RedactValue(k, v)
	}
	return out
}

// secretFlagWords are the words of a flag name ("--hf-token" → hf, token)
// that make its value a secret.
var secretFlagWords = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true, "password": true, "passwd": true,
	"pass": true, "pwd": true, "credential": true, "credentials": true, "auth": true, "cookie": true,
	"dsn": true,
}

// RedactArgv returns a copy of argv with secret values replaced by
// "<redacted>": the value of a flag whose name has a word key, apikey,
// token, secret, password, passwd, pass, pwd, credential(s), auth, cookie
// or dsn (--api-key X, --hf-token=X, --admin_password X; a following word
// that starts with "-" is another flag and stays), the value of a
// NAME=value word whose name IsSecretName (env HF_TOKEN=x python …), and
// the userinfo of every URL in any word (--proxy http://u:pw@h/).
// --ssl-keyfile or --tokenizer-path are not secrets: their words are
// keyfile, tokenizer.
func RedactArgv(argv []string) []string {
	if argv == nil {
		return nil
	}
	out := make([]string, len(argv))
	for i, w := range argv {
		out[i] = RedactURLs(w)
	}
	for i := 0; i < len(out); i++ {
		w := out[i]
		if strings.HasPrefix(w, "-") {
			name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			if !secretFlag(name) {
				continue
			}
			if hasValue {
				out[i] = w[:strings.IndexByte(w, '=')+1] + Redacted
			} else if i+1 < len(out) && !strings.HasPrefix(out[i+1], "-") {
				out[i+1] = Redacted
				i++
			}
			continue
		}
		if name, _, ok := strings.Cut(w, "="); ok && remote.CheckEnvName(name) == nil && IsSecretName(name) {
			out[i] = name + "=" + Redacted
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

// RedactLaunch returns a copy of l safe to record and show: env values
// (Redact) and argv words (RedactArgv) with their secrets replaced by
// "<redacted>". The journal and the pidfile store launches this way.
func RedactLaunch(l event.LaunchInfo) event.LaunchInfo {
	l.Env = Redact(l.Env)
	l.Argv = RedactArgv(l.Argv)
	return l
}
