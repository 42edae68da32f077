// Package driver is the driver lock on a GPU host: one cockpit at a time
// acts on the host's inference server and git checkout (it "drives"); the
// others watch, read-only, and say who drives. The lock is a small JSON
// file on the host, next to the server's pidfile, refreshed by the holder's
// heartbeat; a lock whose heartbeat stopped is stale and is taken over
// automatically.
package driver

import "time"

// Info names one cockpit that drives (or drove) a host: the content of the
// lock file, and the holder shown by watchers and followers.
type Info struct {
	// User is the login name of the user running the cockpit, on the
	// machine it runs on.
	User string `json:"user"`
	// Machine is the hostname of the machine the cockpit runs on (a laptop,
	// a jump box, or the GPU host itself).
	Machine string `json:"machine"`
	// PID is the cockpit's process id on Machine.
	PID int `json:"pid"`
	// Since is when it took the lock.
	Since time.Time `json:"since"`
	// Heartbeat is the holder's last heartbeat, as the host's clock saw it
	// (the lock file's modification time). Zero in the holder's own view.
	Heartbeat time.Time `json:"heartbeat,omitzero"`
	// Journal is the path, on the GPU host, of the holder's live journal
	// (its own file when it runs on the host, else its mirror there); ""
	// when it records none. `flightdeck follow HOST` tails it.
	Journal string `json:"journal,omitempty"`
	// Token identifies one cockpit run (random hex); it tells the holder
	// its own lock from one another cockpit took.
	Token string `json:"token"`
}

// Role is a cockpit's part on a host.
type Role uint8

const (
	// RoleNone: no lock is used (a replay, the lock released, or it could not
	// be read yet).
	RoleNone Role = iota
	// RoleDriving: this cockpit holds the lock; its keys act.
	RoleDriving
	// RoleWatching: another cockpit holds the lock; this one is read-only.
	RoleWatching
	// RoleUnsure: this cockpit drove, but the host has not answered its
	// heartbeats for longer than is safe (StaleAfter less one heartbeat):
	// another cockpit may have taken the lock as stale. Its keys that act
	// are refused until the host answers and the lock says who drives.
	RoleUnsure
)

func (r Role) String() string {
	switch r {
	case RoleDriving:
		return "driving"
	case RoleWatching:
		return "watching"
	case RoleUnsure:
		return "unsure"
	}
	return "none"
}

// State is a cockpit's role and who drives, published when the cockpit
// connects and at every change (took the lock, lost it to a take-over,
// took a stale or released lock). It is an event payload (kind "driver"),
// journaled, so replays and followers show who drove.
type State struct {
	// Host is the GPU host the lock is on (remote.Host.Name()).
	Host string `json:"host"`
	// Role is this cockpit's role.
	Role Role `json:"role"`
	// Holder is who drives: this cockpit when Role is RoleDriving, the
	// other one when RoleWatching; zero when nobody does.
	Holder Info `json:"holder"`
	// Note says what changed, for the screen: "took the lock of alice@laptop
	// (pid 4123): no heartbeat for 47s", "bob@desk took over at 10:15:02".
	// "" when nothing did.
	Note string `json:"note,omitempty"`
	// Err is why the lock could not be read or written ("" when it could);
	// the role is then the last known one.
	Err string `json:"err,omitempty"`
}

// Kind implements event.Payload.
func (State) Kind() string { return "driver" }

// NoteReleased is the Note of the RoleNone state a driving cockpit
// publishes when it releases the lock (it quits): followers of its journal
// read it as the end of the session.
const NoteReleased = "released the lock"
