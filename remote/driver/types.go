// Package driver is the driver lock on a GPU host: one cockpit at a time
// acts on the host's inference server and git checkout (it "drives"); the
// others watch, read-only, and say who drives. The lock is a small JSON
// file on the host, next to the server's pidfile, refreshed by the holder's
// heartbeat; a lock whose heartbeat stopped is stale and is taken over
// automatically.
package driver

// NoteReleased is the Note of the RoleNone state a driving cockpit
// publishes when it releases the lock (it quits): followers of its journal
// read it as the end of the session.
const NoteReleased = "released the lock"
