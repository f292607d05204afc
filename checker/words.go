package checker

import "strconv"

// count writes n with the noun in the number it takes: "1 endpoint", "3 endpoints". Messages are read
// by people, in reports and on the command line.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
