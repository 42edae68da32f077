// Package component is the contract of the cockpit's parts: a key Binding
// as data (its keys and help, why it cannot act now, whether it asks
// first), a Dialog that takes the keys while it is open over the screen,
// the Stack those dialogs open on, the Confirm dialog of a dangerous key,
// the full help generated from the bindings (Cheatsheet), and the chrome
// they are drawn with: notice lines above the panels (Banner), framed
// boxes spliced over the screen (Frame, Splice), section title lines
// (TitleRule), a form's choice among names (Chooser) and footer key
// hints.
//
// Chrome is plain ASCII: box drawing characters and the ellipsis are
// ambiguous-width (two cells in some CJK terminal setups).
package component
