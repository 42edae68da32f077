package follow

import (
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// Options tunes a Follower. The zero value follows the whole file
// from byte 0.
type Options struct {
	// Offset is the byte offset to start at, e.g. one saved from an earlier
	// Follower; it must be the start of a line. Ignored when Backlog > 0.
	Offset int64
	// Backlog > 0 starts near the end of the file instead: at the first
	// line that starts within the last Backlog bytes (the cockpit does not
	// replay a 2 GB log).
	Backlog int64
	// MinBackoff and MaxBackoff bound the wait between restarts of tail,
	// doubling from one to the other while restarts keep failing
	// (defaults 200 ms and 10 s).
	MinBackoff, MaxBackoff time.Duration
	// MaxBatch is the most lines one event.LogLines carries (default 2048).
	MaxBatch int
	// CheckInterval is the least time between two content checks in
	// CheckStrict (see Follower), default 250 ms: while lines keep coming,
	// they are delivered at most this much (plus a round trip) after tail
	// read them.
	CheckInterval time.Duration
	// Check is when tail's batches are checked against the file (see
	// Follower): CheckStrict, the zero value, before each is delivered;
	// CheckLazy after, at most every LazyInterval. Not used on the agent
	// path: the agent checks on the host, in-process.
	Check CheckMode
	// LazyInterval is the least time between two checks in CheckLazy
	// (default 30 s: at most 2 processes a minute on the host).
	LazyInterval time.Duration
	// Agent, when set, follows with `flightdeck agent follow` on the host
	// (StreamFile) instead of tail: no content checks from here, no
	// process on the host while it runs. When AgentCommand says
	// remote.ErrNoAgent, tail is used, and the agent asked again at the
	// next restart.
	Agent remote.Agent
	// InProcess says the host is this machine (remote.Local): StreamFile
	// then follows the file in a goroutine of this process, in place of
	// the agent, so that no process is started for it at all (but the one
	// stat before each start). Agent is not asked.
	InProcess bool
	// AgentWait is how long the first start waits for Agent's install to
	// settle (default 5 s) before it starts tail; the Follower switches
	// to the agent when it settles later.
	AgentWait time.Duration
}

// CheckMode says when the Follower compares tail's batches with the file.
type CheckMode uint8

const (
	// CheckStrict delivers a batch that continues the file only after a
	// content check (one dd at most every CheckInterval while lines
	// arrive): every line exactly once, even when tail misses a rewrite.
	CheckStrict CheckMode = iota
	// CheckLazy delivers at once and checks at most every LazyInterval
	// after lines were delivered; see Follower for what it gives up.
	CheckLazy
)
