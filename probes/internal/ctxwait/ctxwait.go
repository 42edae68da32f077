// Package ctxwait waits for a duration or a context's end, whichever comes
// first: the backoff and polling pauses of the probes.
package ctxwait

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends; it reports whether d passed (false:
// ctx ended first, or had already ended).
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
