//go:build !race

package latest

// raceEnabled: the race detector is on (see skipUnderRace).
const raceEnabled = false
