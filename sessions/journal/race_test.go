//go:build race

package journal

// RaceEnabled shortens the long synthetic journals under the race
// detector, which slows writing and the models tenfold. (Exported for the
// journal_test package: test files only.)
const RaceEnabled = true
