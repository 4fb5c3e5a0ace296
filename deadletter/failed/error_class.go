package failed

import (
	"fmt"
	"strings"
)

// ErrorClass is the coarse category of a failure recorded in
// failed_pois.error_class.
type ErrorClass string

// The classes of a POI failure.
const (
	ClassValidation ErrorClass = "validation" // the POI's data is structurally wrong
	ClassPanic      ErrorClass = "panic"      // resolver code panicked on this POI
	ClassTimeout    ErrorClass = "timeout"    // the per-POI deadline expired
	ClassResolver   ErrorClass = "resolver"   // the resolver returned an error
	ClassStorage    ErrorClass = "storage"    // writing the POI's results failed
)

// Classes lists every class, in the order they are declared. It returns a
// new slice on each call, so callers may modify it.
func Classes() []ErrorClass {
	return []ErrorClass{ClassValidation, ClassPanic, ClassTimeout, ClassResolver, ClassStorage}
}

// ParseErrorClass returns the class named s, ignoring case and surrounding
// space (operators type it on the command line), or an error that names s
// and lists the valid classes.
func ParseErrorClass(s string) (ErrorClass, error) {
	want := strings.ToLower(strings.TrimSpace(s))
	classes := Classes()
	names := make([]string, len(classes))
	for i, c := range classes {
		if string(c) == want {
			return c, nil
		}
		names[i] = string(c)
	}
	return "", fmt.Errorf("unknown error class %q (valid classes: %s)", s, strings.Join(names, ", "))
}
