package remote

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Quote returns s as one POSIX shell word (mvdan.cc/sh/v3/syntax.Quote with
// LangPOSIX): unquoted when it is safe as is, else in single quotes (or double
// quotes for a single quote). The result is correct for sh, dash, bash, ksh
// and zsh.
//
// Quote fails closed: it returns an error, never a lossy word, for a string
// that POSIX shell cannot carry literally — NUL, newline, tab, carriage
// return, escape and any other control or non-printable character, and
// invalid UTF-8. The error names the byte offset but not the string (it may
// be a secret such as a token in an env value).
//
// Quoting stops the shell from interpreting a word; it does not stop the
// command from reading it as an option ("--upload-pack=x"): validate such
// words before quoting them.
func Quote(s string) (string, error) {
	q, err := syntax.Quote(s, syntax.LangPOSIX)
	if err != nil {
		return "", fmt.Errorf("remote: cannot quote shell word: %w", err)
	}
	return q, nil
}

// Command returns the POSIX shell command line that runs name with args,
// every word quoted by Quote, separated by single spaces. It returns an error
// naming the position of the first word that cannot be quoted (0 is name).
//
// Environment variables are passed as words of the command, never with the
// SSH "env" request (OpenSSH refuses it without AcceptEnv):
//
//	Command("env", "NCCL_DEBUG=INFO", "python", "-m", "sglang.launch_server")
//
// Use EnvAssignment to build and validate such a word.
func Command(name string, args ...string) (string, error) {
	var b strings.Builder
	for i, w := range append([]string{name}, args...) {
		q, err := Quote(w)
		if err != nil {
			return "", fmt.Errorf("remote: command word %d: %w", i, err)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(q)
	}
	return b.String(), nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ErrBadEnvName is wrapped by EnvAssignment for a name that is not a portable
// shell variable name ([A-Za-z_][A-Za-z0-9_]*); env(1) could read such a word
// as an option or a command.
var ErrBadEnvName = errors.New("remote: invalid environment variable name")

// EnvAssignment returns the unquoted word "name=value" for env(1), after
// checking that name is a portable variable name and that value can be
// quoted (see Quote). Pass the result to Command, which quotes it.
func EnvAssignment(name, value string) (string, error) {
	if !envName.MatchString(name) {
		return "", fmt.Errorf("%w: %q", ErrBadEnvName, name)
	}
	if _, err := Quote(value); err != nil {
		return "", fmt.Errorf("remote: value of %s: %w", name, err)
	}
	return name + "=" + value, nil
}

var serverEnvName = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// CheckEnvName reports whether name can name a variable of a server's
// environment: [A-Z_][A-Z0-9_]* (upper case, like NCCL_PROTO). The error
// is an *EnvNameError, which matches ErrBadEnvName with errors.Is.
func CheckEnvName(name string) error {
	if !serverEnvName.MatchString(name) {
		return &EnvNameError{Name: name}
	}
	return nil
}

// EnvNameError is a variable name CheckEnvName refuses.
type EnvNameError struct{ Name string }

func (e *EnvNameError) Error() string {
	if e.Name == "" {
		return "empty environment variable name"
	}
	return fmt.Sprintf("invalid environment variable name %q: names are upper-case letters, digits and _ (like NCCL_PROTO), not starting with a digit", e.Name)
}

// Is makes errors.Is(err, ErrBadEnvName) hold.
func (e *EnvNameError) Is(target error) bool { return target == ErrBadEnvName }

// CheckEnvValue reports whether value, the value of variable name, is
// single-line text a POSIX shell can carry literally: no newline, carriage
// return or NUL (each named in the error), no other control character,
// valid UTF-8. Spaces, quotes, $, backticks and the like are fine: they are
// quoted, never interpreted. The error names the variable but never echoes
// the value (it may be a secret).
func CheckEnvValue(name, value string) error {
	switch {
	case strings.ContainsRune(value, '\n'):
		return fmt.Errorf("value of %s contains a newline: environment values must be one line", name)
	case strings.ContainsRune(value, '\r'):
		return fmt.Errorf("value of %s contains a carriage return: environment values must be one line", name)
	case strings.ContainsRune(value, 0):
		return fmt.Errorf("value of %s contains a NUL byte, which no environment can carry", name)
	}
	if _, err := Quote(value); err != nil {
		return fmt.Errorf("value of %s: control characters and invalid UTF-8 are not allowed: %w", name, err)
	}
	return nil
}

// ValidateEnv checks variables meant for a server's environment with
// CheckEnvName and CheckEnvValue and returns the first problem in name
// order.
func ValidateEnv(env map[string]string) error {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if err := CheckEnvName(k); err != nil {
			return err
		}
		if err := CheckEnvValue(k, env[k]); err != nil {
			return err
		}
	}
	return nil
}
