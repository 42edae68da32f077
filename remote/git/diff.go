package git

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// Patch is a checkout's uncommitted changes to tracked files (staged and
// unstaged), as `git diff HEAD --binary` prints them: a patch that `git
// apply` brings back byte for byte.
type Patch struct {
	Text      string // the first bytes of the patch, at most the limit asked for; raw remote text
	Bytes     int64  // size of the whole patch; 0 for a clean tree
	SHA256    string // hex SHA-256 of the whole patch (of the empty patch for a clean tree)
	Truncated bool   // Text is shorter than the patch
}

// patchArgs is the diff Patch runs: binary-safe, with git's own diff
// (no external diff driver, no textconv) and the standard a/ b/
// prefixes whatever the user's configuration says; no optional locks, so
// it never takes the index lock from the user's own git.
var patchArgs = []string{"--no-optional-locks", "diff", "HEAD", "--binary", "--no-ext-diff", "--no-textconv",
	"--src-prefix=a/", "--dst-prefix=b/", "--"}

// Patch reads the checkout's patch against HEAD, streaming it: the whole
// patch is hashed and counted, and at most limit bytes of it are kept
// (limit ≤ 0 keeps none). Errors: a *GitError (a repository without
// commits has no HEAD), the host's error (wrapping
// remote.ErrDisconnected), or ctx's.
func (r *Repo) Patch(ctx context.Context, limit int) (Patch, error) {
	cmd, err := r.git(patchArgs...)
	if err != nil {
		return Patch{}, err
	}
	proc, err := r.Host.Start(ctx, cmd)
	if err != nil {
		return Patch{}, fmt.Errorf("git diff: %w", err)
	}
	defer proc.Close()
	stderr := &headBuffer{max: 4096}
	errDone := make(chan struct{})
	go func() {
		defer close(errDone)
		io.Copy(stderr, proc.Stderr())
	}()
	h := sha256.New()
	kept := &headBuffer{max: max(limit, 0)}
	n, copyErr := io.Copy(io.MultiWriter(h, kept), proc.Stdout())
	<-errDone
	waitErr := proc.Wait()
	var ee *remote.ExitError
	switch {
	case errors.As(waitErr, &ee):
		words := stderr.Bytes()
		if len(bytes.TrimSpace(words)) == 0 {
			words = ee.Stderr
		}
		return Patch{}, &GitError{Args: patchArgs[1:], Code: ee.Code, Stderr: clip(words)}
	case waitErr != nil:
		return Patch{}, fmt.Errorf("git diff: %w", waitErr)
	case copyErr != nil:
		return Patch{}, fmt.Errorf("git diff: read: %w", copyErr)
	case ctx.Err() != nil:
		return Patch{}, fmt.Errorf("git diff: %w", ctx.Err())
	}
	return Patch{Text: kept.String(), Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil)), Truncated: n > int64(kept.Len())}, nil
}

// headBuffer keeps the first max bytes written to it and discards the rest
// (without failing the writer).
type headBuffer struct {
	bytes.Buffer
	max int
}

func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
