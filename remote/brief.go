package remote

import (
	"context"
	"errors"
	"strings"
	"syscall"
)

// Brief summarises a connection error in a few words for a status line:
// "host key changed", "unknown host key", "authentication failed",
// "passphrase required", "connection refused", "timed out", "closed", or
// else the innermost error's own message. The full error keeps the details
// (fingerprints, known_hosts lines, keys tried) for the log or for printing
// after the screen closes. Brief(nil) is "".
func Brief(err error) string {
	if err == nil {
		return ""
	}
	var (
		changed *HostKeyChangedError
		unknown *UnknownHostKeyError
		auth    *AuthError
		pass    *PassphraseRequiredError
	)
	switch {
	case errors.As(err, &changed):
		return "host key changed"
	case errors.As(err, &unknown):
		return "unknown host key"
	case errors.As(err, &pass):
		return "passphrase required"
	case errors.As(err, &auth):
		return "authentication failed"
	case errors.Is(err, ErrClosed):
		return "closed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, errKeepaliveTimeout):
		return "timed out"
	}
	return innermost(err).Error()
}

// innermost follows the wrap chain (the last branch of a multi-error) to the
// error that says what actually happened.
func innermost(err error) error {
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			if es := u.Unwrap(); len(es) > 0 {
				next = es[len(es)-1]
			}
		}
		if next == nil {
			msg := err.Error()
			if i := strings.LastIndex(msg, ": "); i >= 0 && i+2 < len(msg) && len(msg) > 80 {
				return errors.New(msg[i+2:]) // a flat chain formatted with ": "
			}
			return err
		}
		err = next
	}
}
