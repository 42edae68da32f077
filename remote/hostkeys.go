package remote

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"
)

// UnknownHostKeyError reports a host that has no key in known_hosts. The
// connection was refused; the user should compare Fingerprint with the
// host's real key and then accept it (SSHOptions.AcceptNewHostKey, the
// --accept-new-host-key flag).
type UnknownHostKeyError struct {
	Host           string // name as looked up in known_hosts: "gpu-box" or "[10.0.0.5]:2222"
	KeyType        string // "ssh-ed25519", "ecdsa-sha2-nistp256", ...
	Fingerprint    string // "SHA256:..." (ssh.FingerprintSHA256)
	KnownHostsFile string // where accepting would record it
}

func (e *UnknownHostKeyError) Error() string {
	return fmt.Sprintf("ssh: host key for %s is not known: %s %s. Verify the fingerprint, then pass --accept-new-host-key to trust it (it will be added to %s)",
		e.Host, e.KeyType, e.Fingerprint, e.KnownHostsFile)
}

// KnownHostKey is one known_hosts entry for a host.
type KnownHostKey struct {
	File        string
	Line        int // 1-based
	KeyType     string
	Fingerprint string // "SHA256:..."
}

// HostKeyChangedError reports a host whose key differs from the one in
// known_hosts: possibly a man-in-the-middle. It is never retried and never
// accepted automatically, whatever the options say.
type HostKeyChangedError struct {
	Host        string // name as looked up in known_hosts
	KeyType     string // what the server presented
	Fingerprint string
	Known       []KnownHostKey // the entries it does not match
}

func (e *HostKeyChangedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ssh: WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED for %s (possible man-in-the-middle attack): the server presented %s %s, but",
		e.Host, e.KeyType, e.Fingerprint)
	for i, k := range e.Known {
		if i > 0 {
			b.WriteString(" and")
		}
		fmt.Fprintf(&b, " %s:%d has %s %s", k.File, k.Line, k.KeyType, k.Fingerprint)
	}
	fmt.Fprintf(&b, ". Refusing to connect. If the change is expected, remove the old entry (ssh-keygen -R '%s') and connect again", e.Host)
	return b.String()
}

// HostKeyRevokedError is a host key that a known_hosts file marks
// @revoked: it is refused, whatever else the files say, with the key's
// fingerprint and the line that revokes it. It wraps the known-hosts
// library's *knownhosts.RevokedError (golang.org/x/crypto/ssh/knownhosts).
type HostKeyRevokedError struct {
	Host        string // name as looked up in known_hosts
	KeyType     string // what the server presented
	Fingerprint string // SHA256:… of the presented key
	File        string // the known_hosts file with the @revoked line
	Line        int    // 1-based
	Err         error  // the library's error
}

func (e *HostKeyRevokedError) Error() string {
	return fmt.Sprintf("ssh: the host key of %s is revoked: the server presented %s %s, which %s:%d marks @revoked. Refusing to connect",
		e.Host, e.KeyType, e.Fingerprint, e.File, e.Line)
}

// Unwrap returns the library's error.
func (e *HostKeyRevokedError) Unwrap() error { return e.Err }

// opensshHostKeyOrder is the preference used for a host with no known key,
// like OpenSSH's: ed25519 first, so the key recorded on first use is the
// one OpenSSH will use later too. x/crypto's default puts ed25519 last.
var opensshHostKeyOrder = []string{
	ssh.KeyAlgoED25519,
	ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
	ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256,
}

// hostKeyChecker verifies one host's key against known_hosts files
// (github.com/skeema/knownhosts over x/crypto's knownhosts).
type hostKeyChecker struct {
	name      string   // "host:port" looked up (hostConfig.knownHostsKey)
	files     []string // user files first, then global ones
	writeFile string   // where an accepted key is appended
	acceptNew bool

	mu       sync.Mutex
	accepted map[string]bool // keys appended by this process (rekeys see them again)
}

func newHostKeyChecker(h *hostConfig, acceptNew bool) *hostKeyChecker {
	switch h.strict {
	case "accept-new", "no", "off":
		// "no" is treated as accept-new: a changed key is still refused.
		acceptNew = true
	}
	c := &hostKeyChecker{
		name:      h.knownHostsKey(),
		files:     append(slices.Clone(h.userKnownHosts), h.globalKnown...),
		acceptNew: acceptNew,
		accepted:  map[string]bool{},
	}
	if len(h.userKnownHosts) > 0 {
		c.writeFile = h.userKnownHosts[0]
	}
	return c
}

// prepare reads the known_hosts files now (they may have changed since the
// last dial) and returns the host key callback and the host key algorithms
// to offer: those of the known keys first (so the server presents a key we
// can check), then the rest in OpenSSH order.
func (c *hostKeyChecker) prepare() (ssh.HostKeyCallback, []string, error) {
	var existing []string
	for _, f := range c.files {
		if _, err := os.Stat(f); err == nil {
			existing = append(existing, f)
		}
	}
	var db *knownhosts.HostKeyDB
	if len(existing) > 0 {
		var err error
		if db, err = knownhosts.NewDB(existing...); err != nil {
			return nil, nil, fmt.Errorf("remote: reading known_hosts: %w", err)
		}
	}
	var algos []string
	if db != nil {
		algos = db.HostKeyAlgorithms(c.name)
	}
	for _, a := range opensshHostKeyOrder {
		if !slices.Contains(algos, a) {
			algos = append(algos, a)
		}
	}
	cb := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		return c.check(db, hostname, remote, key)
	}
	return cb, algos, nil
}

func (c *hostKeyChecker) check(db *knownhosts.HostKeyDB, hostname string, remote net.Addr, key ssh.PublicKey) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.accepted[string(key.Marshal())] {
		return nil
	}
	if db != nil {
		err := db.HostKeyCallback()(hostname, remote, key)
		var ke *xknownhosts.KeyError
		var re *xknownhosts.RevokedError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &re):
			return &HostKeyRevokedError{Host: knownhosts.Normalize(hostname), KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key),
				File: re.Revoked.Filename, Line: re.Revoked.Line, Err: err}
		case errors.As(err, &ke) && len(ke.Want) > 0:
			ce := &HostKeyChangedError{Host: knownhosts.Normalize(hostname), KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key)}
			for _, w := range ke.Want {
				ce.Known = append(ce.Known, KnownHostKey{File: w.Filename, Line: w.Line, KeyType: w.Key.Type(), Fingerprint: ssh.FingerprintSHA256(w.Key)})
			}
			return ce
		case errors.As(err, &ke):
			// unknown: handled below
		default:
			return err // a bad file
		}
	}
	if !c.acceptNew || c.writeFile == "" {
		return &UnknownHostKeyError{Host: knownhosts.Normalize(hostname), KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key), KnownHostsFile: c.writeFile}
	}
	if err := appendKnownHost(c.writeFile, hostname, key); err != nil {
		return err
	}
	c.accepted[string(key.Marshal())] = true
	return nil
}

// appendKnownHost adds "name keytype base64" to file, creating the file
// (0600) and its directory (0700) when needed, like ssh's accept-new.
func appendKnownHost(file, hostname string, key ssh.PublicKey) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return fmt.Errorf("remote: recording host key: %w", err)
	}
	line := knownhosts.Line([]string{hostname}, key) + "\n"
	// Start on a fresh line if the file does not end with one.
	if b, err := os.ReadFile(file); err == nil && len(b) > 0 && !bytes.HasSuffix(b, []byte("\n")) {
		line = "\n" + line
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remote: recording host key: %w", err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("remote: recording host key: %w", err)
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return fmt.Errorf("remote: recording host key in %s: %w", file, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("remote: recording host key in %s: %w", file, err)
	}
	return nil
}
