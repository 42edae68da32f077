package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ValidateEnv checks environment variables before they are passed to a
// process: every name must match [A-Z_][A-Z0-9_]* and no value may contain a
// newline, a carriage return or a NUL byte (they would break the env(1)
// argument or the pidfile line the variables travel in, and NUL cannot be in
// an environment at all). It returns nil, or an errors.Join of one *Error per
// bad variable (Key is the variable's name), sorted by name.
func ValidateEnv(env map[string]string) error {
	var errs []*Error
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if msg := checkEnvName(name); msg != "" {
			errs = append(errs, &Error{Key: name, Msg: msg})
		}
		if msg := checkEnvValue(env[name]); msg != "" {
			errs = append(errs, &Error{Key: name, Msg: msg})
		}
	}
	return joinSorted(errs)
}

// checkEnvName returns why name is not a valid variable name, or "".
func checkEnvName(name string) string {
	if name == "" {
		return "empty environment variable name"
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return fmt.Sprintf("invalid environment variable name %q: names are upper-case letters, digits and _, not starting with a digit", name)
	}
	return ""
}

// checkEnvValue returns why value cannot be an environment value, or "".
func checkEnvValue(value string) string {
	switch {
	case strings.ContainsRune(value, '\n'):
		return "value contains a newline"
	case strings.ContainsRune(value, '\r'):
		return "value contains a carriage return"
	case strings.ContainsRune(value, 0):
		return "value contains a NUL byte"
	}
	return ""
}
