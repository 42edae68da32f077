package journal

import "fmt"

// Problems is what a reader skipped in a journal. Nothing here stops a
// journal from opening.
type Problems struct {
	// Torn is set when the last line is incomplete (no "\n": the writer
	// was killed mid-line, or is writing it now); it is skipped.
	// TornBytes is its length.
	Torn      bool
	TornBytes int
	// Garbled counts complete lines ("\n"-terminated, the last one
	// included) that are not events (a foreign write, bit rot);
	// FirstGarbled is the 1-based line number of the first (the header is
	// line 1), 0 when none.
	Garbled      int
	FirstGarbled int
	// Unknown counts events of kinds this version does not know (written
	// by a newer flightdeck); UnknownKinds lists the first few kinds.
	Unknown      int
	UnknownKinds []string
	// Undecodable counts events whose line looked right but whose data did
	// not decode (seen while decoding: Scan, Events, CatchUp), and gpu
	// samples whose keyframe was damaged.
	Undecodable int
	Blank       int // empty lines, skipped
}

// Any reports whether anything was skipped.
func (p Problems) Any() bool {
	return p.Torn || p.Garbled > 0 || p.Unknown > 0 || p.Undecodable > 0
}

// String is a one-line summary: "torn last line (37 bytes); 2 garbled
// lines (first: line 1041); 5 events of unknown kinds (gpu-power)".
func (p Problems) String() string {
	var parts []string
	if p.Torn {
		parts = append(parts, fmt.Sprintf("torn last line (%d bytes)", p.TornBytes))
	}
	if p.Garbled > 0 {
		parts = append(parts, fmt.Sprintf("%d garbled line(s) (first: line %d)", p.Garbled, p.FirstGarbled))
	}
	if p.Unknown > 0 {
		parts = append(parts, fmt.Sprintf("%d event(s) of unknown kinds (%s)", p.Unknown, joinKinds(p.UnknownKinds)))
	}
	if p.Undecodable > 0 {
		parts = append(parts, fmt.Sprintf("%d undecodable event(s)", p.Undecodable))
	}
	if len(parts) == 0 {
		return "no problems"
	}
	s := parts[0]
	for _, x := range parts[1:] {
		s += "; " + x
	}
	return s
}

func joinKinds(k []string) string {
	s := ""
	for i, x := range k {
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s
}

// maxUnknownKinds caps Problems.UnknownKinds.
const maxUnknownKinds = 8
