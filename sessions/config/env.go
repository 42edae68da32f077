package config

import (
	"maps"
	"slices"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// ValidateEnv checks environment variables before they are passed to a
// process, by the rules a launch applies (remote.CheckEnvName and
// remote.CheckEnvValue): every name must match [A-Z_][A-Z0-9_]*; no value
// may contain a newline, carriage return, NUL or other control character. It returns nil, or an errors.Join of one *Error per
// bad variable (Key is the variable's name), sorted by name.
func ValidateEnv(env map[string]string) error {
	var errs []*Error
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if msg := checkEnvName(name); msg != "" {
			errs = append(errs, &Error{Key: name, Msg: msg})
		}
		if msg := checkEnvValue(name, env[name]); msg != "" {
			errs = append(errs, &Error{Key: name, Msg: msg})
		}
	}
	return joinSorted(errs)
}

// checkEnvName returns why name is not a valid variable name, or "" (the
// rule of remote.CheckEnvName, the one a launch applies).
func checkEnvName(name string) string {
	if err := remote.CheckEnvName(name); err != nil {
		return err.Error()
	}
	return ""
}

// checkEnvValue returns why value cannot be an environment value, or ""
// (remote.CheckEnvValue's rule).
func checkEnvValue(name, value string) string {
	if err := remote.CheckEnvValue(name, value); err != nil {
		return err.Error()
	}
	return ""
}
