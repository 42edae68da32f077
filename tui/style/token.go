package style

// Token names a Styles token without holding the style, so cached cells stay
// valid when the palette changes.
type Token uint8

// The tokens, one per Styles field of the same name.
const (
	Text Token = iota
	Dim
	Warn
	Crit
	OK
	Accent
	Title
)
