package remote

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// PassphraseRequiredError reports an encrypted identity file that could not
// be used because no passphrase could be asked for (SSHOptions.Passphrase is
// nil) and ssh-agent does not hold the key.
type PassphraseRequiredError struct {
	File string // absolute path of the private key
}

func (e *PassphraseRequiredError) Error() string {
	return fmt.Sprintf("identity file %s is passphrase-protected: add it to ssh-agent (ssh-add %s) and make sure SSH_AUTH_SOCK is set", e.File, e.File)
}

// AuthError reports that the server accepted none of our keys, or that we
// had none to offer. Skipped says why identities were left out (for example a
// *PassphraseRequiredError); errors.As finds them through Unwrap.
type AuthError struct {
	User    string   // remote user
	Host    string   // "host:port" dialed
	Tried   []string // "ssh-agent (2 keys)", identity file paths
	Err     error    // the handshake error, or why there was nothing to try
	Skipped []error
}

func (e *AuthError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ssh: authentication as %s@%s failed", e.User, e.Host)
	if len(e.Tried) > 0 {
		fmt.Fprintf(&b, " (tried %s)", strings.Join(e.Tried, ", "))
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	for _, s := range e.Skipped {
		fmt.Fprintf(&b, "; %v", s)
	}
	return b.String()
}

// Unwrap returns Err and the Skipped reasons.
func (e *AuthError) Unwrap() []error { return append([]error{e.Err}, e.Skipped...) }

// errNoIdentities is the AuthError.Err when there was no key to offer.
var errNoIdentities = errors.New("no usable SSH identity (no ssh-agent keys, no readable identity file)")

// authSource loads the client's signers for each dial: the ssh-agent's keys
// first, then identity files in config order. Parsed (and decrypted) files
// are cached so a reconnect never asks for a passphrase again.
type authSource struct {
	noAgent    bool
	passphrase func(file string) ([]byte, error)

	mu    sync.Mutex
	cache map[string]ssh.Signer
}

// signerSet is what one dial offers. agent is the ssh-agent connection the
// agent signers call back into; it must stay open for the client's life.
type signerSet struct {
	signers []ssh.Signer
	agent   io.Closer
	tried   []string
	skipped []error
}

func (s *signerSet) close() {
	if s != nil && s.agent != nil {
		s.agent.Close()
	}
}

// load collects the signers for h. It fails for an explicitly configured
// identity file that does not exist, for a passphrase callback error, and
// when there is nothing at all to offer; default files that are missing are
// skipped silently.
func (a *authSource) load(h *hostConfig) (*signerSet, error) {
	set := &signerSet{}
	agentKeys := map[string]bool{}
	sock := h.identityAgent
	if sock == "" {
		sock = os.Getenv("SSH_AUTH_SOCK")
	}
	if !a.noAgent && sock != "" && sock != "none" {
		conn, err := net.DialTimeout("unix", sock, 5*time.Second)
		if err != nil {
			set.skipped = append(set.skipped, fmt.Errorf("ssh-agent at %s: %w", sock, err))
		} else {
			ag := agent.NewClient(conn)
			signers, err := ag.Signers()
			if err != nil {
				conn.Close()
				set.skipped = append(set.skipped, fmt.Errorf("ssh-agent at %s: %w", sock, err))
			} else {
				set.agent = conn
				set.signers = append(set.signers, signers...)
				set.tried = append(set.tried, fmt.Sprintf("ssh-agent (%d keys)", len(signers)))
				for _, s := range signers {
					agentKeys[string(s.PublicKey().Marshal())] = true
				}
			}
		}
	}
	for _, id := range h.identityFiles {
		s, err := a.loadFile(id, agentKeys)
		switch {
		case err == nil && s == nil:
			// missing default file, or a key the agent already offers
		case err == nil:
			set.signers = append(set.signers, s)
			set.tried = append(set.tried, id.path)
		case isFatalIdentityError(err):
			set.close()
			return nil, err
		default:
			set.skipped = append(set.skipped, err)
		}
	}
	if len(set.signers) == 0 {
		set.close()
		return nil, &AuthError{User: h.user, Host: h.addr(), Err: errNoIdentities, Skipped: set.skipped}
	}
	return set, nil
}

// fatalIdentityError marks identity problems that retrying cannot fix and
// that the user must see even if another key might work.
type fatalIdentityError struct{ err error }

func (e *fatalIdentityError) Error() string { return e.err.Error() }
func (e *fatalIdentityError) Unwrap() error { return e.err }

func isFatalIdentityError(err error) bool {
	var f *fatalIdentityError
	return errors.As(err, &f)
}

// passphraseTries is how many times a wrong passphrase is asked again.
const passphraseTries = 3

// loadFile returns the signer in id, or nil (and no error) when a default
// file is missing or ssh-agent already holds the (encrypted) key.
func (a *authSource) loadFile(id identityFile, agentKeys map[string]bool) (ssh.Signer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.cache[id.path]; ok {
		return s, nil
	}
	b, err := os.ReadFile(id.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !id.explicit {
			return nil, nil
		}
		if id.explicit {
			return nil, &fatalIdentityError{fmt.Errorf("identity file: %w", err)}
		}
		return nil, fmt.Errorf("identity file: %w", err)
	}
	s, err := ssh.ParsePrivateKey(b)
	var pm *ssh.PassphraseMissingError
	switch {
	case err == nil:
	case errors.As(err, &pm):
		if pm.PublicKey != nil && agentKeys[string(pm.PublicKey.Marshal())] {
			return nil, nil
		}
		if a.passphrase == nil {
			return nil, &PassphraseRequiredError{File: id.path}
		}
		// Three tries, like ssh: a mistyped passphrase is common.
		for try := 1; ; try++ {
			pass, perr := a.passphrase(id.path)
			if perr != nil {
				return nil, &fatalIdentityError{fmt.Errorf("passphrase for %s: %w", id.path, perr)}
			}
			s, err = ssh.ParsePrivateKeyWithPassphrase(b, pass)
			clear(pass)
			if err == nil {
				break
			}
			if !errors.Is(err, x509.IncorrectPasswordError) || try == passphraseTries {
				return nil, &fatalIdentityError{fmt.Errorf("identity file %s: %w", id.path, err)}
			}
		}
	case bytes.HasPrefix(bytes.TrimSpace(b), []byte("ssh-")) || bytes.HasPrefix(bytes.TrimSpace(b), []byte("ecdsa-")):
		// A public key given as IdentityFile selects an agent key in
		// OpenSSH; the agent's keys are offered anyway.
		return nil, nil
	default:
		return nil, fmt.Errorf("identity file %s: %w", id.path, err)
	}
	if a.cache == nil {
		a.cache = make(map[string]ssh.Signer)
	}
	a.cache[id.path] = s
	return s, nil
}
