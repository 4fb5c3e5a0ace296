package resolver

import "fmt"

// ValidationError reports that a POI failed structural validation in DecodePOI.
// It is the only error type DecodePOI returns, so a caller can tell bad data
// (dead-letter the POI) from a failure of its own with errors.As.
type ValidationError struct {
	// POIID is the POI's id, or "" when the id itself is missing or unusable.
	POIID string
	// Field is the JSON field at fault ("id", "type", "name", "lineNumber",
	// "filePath", "rawCode", "context"), or "" when the whole value is at fault.
	Field string
	// Reason says what was wrong, e.g. `must be a non-empty string, got number 12`.
	Reason string
}

// Error names the POI, the field and what was wrong with it, e.g.
// `poi "m1": lineNumber must be a non-negative integer, got string "ten"` or
// `poi at unknown id: id is required`.
func (e *ValidationError) Error() string {
	who := "poi at unknown id"
	if e.POIID != "" {
		who = fmt.Sprintf("poi %q", e.POIID)
	}
	field := e.Field
	if field == "" {
		field = "value"
	}
	return fmt.Sprintf("%s: %s %s", who, field, e.Reason)
}
