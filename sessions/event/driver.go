package event

import "time"

// Who names a holder for the screen: "alice@laptop"; "?" stands for a
// missing user or machine, "an unknown cockpit" for both.
func (i DriverInfo) Who() string {
	if i.User == "" && i.Machine == "" {
		return "an unknown cockpit"
	}
	u, m := i.User, i.Machine
	if u == "" {
		u = "?"
	}
	if m == "" {
		m = "?"
	}
	return u + "@" + m
}

// DriverInfo names one cockpit that drives (or drove) a host: the content of the
// lock file, and the holder shown by watchers and followers.
type DriverInfo struct {
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

// DriverRole is a cockpit's part on a host.
type DriverRole uint8

const (
	// RoleNone: no lock is used (a replay, the lock released, or it could not
	// be read yet).
	RoleNone DriverRole = iota
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

func (r DriverRole) String() string {
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

// DriverState is a cockpit's role and who drives, published when the cockpit
// connects and at every change (took the lock, lost it to a take-over,
// took a stale or released lock). It is an event payload (kind "driver"),
// journaled, so replays and followers show who drove.
type DriverState struct {
	// Host is the GPU host the lock is on (remote.Host.Name()).
	Host string `json:"host"`
	// Role is this cockpit's role.
	Role DriverRole `json:"role"`
	// Holder is who drives: this cockpit when Role is RoleDriving, the
	// other one when RoleWatching; zero when nobody does.
	Holder DriverInfo `json:"holder"`
	// Note says what changed, for the screen: "took the lock of alice@laptop
	// (pid 4123): no heartbeat for 47s", "bob@desk took over at 10:15:02".
	// "" when nothing did.
	Note string `json:"note,omitempty"`
	// Err is why the lock could not be read or written ("" when it could);
	// the role is then the last known one.
	Err string `json:"err,omitempty"`
}
