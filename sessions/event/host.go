package event

import "time"

// HostState is the host as a session found it on connect: a Fingerprint
// captured as an experiment's is (uname, kernel, the checkout, the version
// probes, the GPUs of the first sample) plus the running server's launch
// (command line and env, secrets redacted) when flightdeck launched it. It
// is an event payload (kind "host-state"), what the next session on the
// host compares itself with (HostChanges).
type HostState struct {
	Host        string      `json:"host"` // as the journal's header names it
	Fingerprint Fingerprint `json:"fingerprint"`
}

// HostChanges is what differs between the host now (the HostState this
// session recorded) and the last state recorded for it by an earlier
// session: its latest host-state or experiment fingerprint with the same
// repository, from a local journal or, else, the host's mirror. It is an
// event payload (kind "host-changes").
type HostChanges struct {
	Host string `json:"host"`
	Repo string `json:"repo,omitempty"` // the checkout compared, "" when none is configured
	// Seen is false for a host (and repository) no earlier session
	// recorded: the first session here. The fields below are then empty.
	Seen bool `json:"seen"`
	// Since is when the earlier state was captured; Journal the journal it
	// was read from (a path on the host when Mirror); Exp the experiment
	// whose fingerprint it was ("" for a host-state).
	Since   time.Time `json:"since,omitzero"`
	Journal string    `json:"journal,omitempty"`
	Mirror  bool      `json:"mirror,omitempty"`
	Exp     string    `json:"exp,omitempty"`
	// Changes lists what differs, in group order (HostGroups); none when
	// nothing changed. A part unknown on either side is not a change.
	Changes []HostChange `json:"changes,omitempty"`
	// Errs says what could not be read (the reflog, the commit range, the
	// mirror), so that "nothing changed" is not claimed unseen.
	Errs []string `json:"errs,omitempty"`
}

// HostChange is one difference between two states of a host.
type HostChange struct {
	// Group is one of HostGroups: "git", "patch", "versions", "gpus",
	// "launch", "kernel".
	Group string `json:"group"`
	// Name is what changed within its group: "HEAD", "branch", "patch",
	// "torch", "GPU 3", "GPUs", "command", "env NCCL_ALGO", "kernel".
	Name string `json:"name"`
	// Was and Now are its values before and after, "" for none (a GPU
	// gone, an env variable set); HEAD's are full commit ids.
	Was string `json:"was,omitempty"`
	Now string `json:"now,omitempty"`
	// How lists the reflog actions that moved HEAD in between, oldest
	// first, each once ("pull", "checkout"); Range the commits and files
	// between the two HEADs (HEAD only).
	How   []string     `json:"how,omitempty"`
	Range *CommitRange `json:"range,omitempty"`
	// Detail are more lines about it: the reflog entries, the commits, a
	// diffstat, a link's max.
	Detail []string `json:"detail,omitempty"`
}

// HostGroups are the groups of HostChange, in the order changes are listed.
var HostGroups = []string{"git", "patch", "versions", "gpus", "launch", "kernel"}
