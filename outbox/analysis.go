package outbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Analysis is one analysed source file and its POIs, as backend services
// send it: {"repository": "...", "fileId": "...", "pois": [ ... ]}. Each
// POI is kept as the raw JSON received, so nothing is altered on its way to
// the worker or to failed_pois.
type Analysis struct {
	// Repository names the codebase the file belongs to: file ids and POI
	// ids are unique within a repository, and names resolve only within
	// one. Optional: "" is the default repository.
	Repository string            `json:"repository,omitempty"`
	FileID     string            `json:"fileId"`
	POIs       []json.RawMessage `json:"pois"`
}

// ErrRejected is wrapped by every error that rejects an analysis because of
// its content (as opposed to the database failing). Nothing is enqueued for a
// rejected analysis.
var ErrRejected = errors.New("analysis rejected")

// RejectError says why an analysis was rejected, naming the file and, where
// one POI is the cause, the POI.
type RejectError struct {
	// Repository is the file's repository ("" the default one).
	Repository string
	FileID     string
	// POIID is the offending POI's id, when it has one.
	POIID string
	// POIIndex is the offending POI's position in the pois array, or -1.
	POIIndex int
	Reason   string
	// OwnerFileID is the file of the repository that a POI id of the
	// analysis belongs to, when that is why it was rejected.
	OwnerFileID string
}

func (e *RejectError) Error() string {
	file := fmt.Sprintf("file %q", e.FileID)
	if e.Repository != "" {
		file += fmt.Sprintf(", repository %q", e.Repository)
	}
	switch {
	case e.POIID != "":
		return fmt.Sprintf("poi %q (%s): %s", e.POIID, file, e.Reason)
	case e.POIIndex >= 0:
		return fmt.Sprintf("poi #%d (%s): %s", e.POIIndex, file, e.Reason)
	case e.FileID != "" && e.Repository != "":
		return fmt.Sprintf("file %q (repository %q): %s", e.FileID, e.Repository, e.Reason)
	case e.FileID != "":
		return fmt.Sprintf("file %q: %s", e.FileID, e.Reason)
	default:
		return e.Reason
	}
}

// Unwrap makes errors.Is(err, ErrRejected) true.
func (e *RejectError) Unwrap() error { return ErrRejected }

func reject(fileID string, reason string, args ...any) *RejectError {
	return &RejectError{FileID: fileID, POIIndex: -1, Reason: fmt.Sprintf(reason, args...)}
}

// DecodeAnalysis decodes one analysis from JSON. It checks only the
// envelope (an object with a string fileId and a pois array); the POIs are
// checked by the publisher and the worker.
func DecodeAnalysis(data []byte) (Analysis, error) {
	// The usual analysis decodes in one pass over its text; anything else
	// is decoded (and explained) step by step. Both give the same result
	// (FuzzDecodeAnalysis).
	var env struct {
		Repository json.RawMessage   `json:"repository"`
		FileID     json.RawMessage   `json:"fileId"`
		POIs       []json.RawMessage `json:"pois"`
	}
	if json.Unmarshal(data, &env) == nil && env.POIs != nil {
		var a Analysis
		fileID, ok := decodeFileID(env.FileID)
		repo, repoOK := "", len(env.Repository) == 0 || string(env.Repository) == "null"
		if !repoOK {
			repo, repoOK = decodeFileID(env.Repository)
		}
		if ok && repoOK {
			a.Repository, a.FileID, a.POIs = repo, fileID, env.POIs
			return a, nil
		}
	}
	return decodeAnalysisSteps(data)
}

// decodeFileID decodes a fileId that decodeAnalysisSteps accepts.
func decodeFileID(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || !utf8.Valid(raw) || containsLoneSurrogate(raw) || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// decodeAnalysisSteps decodes an analysis one part at a time, rejecting it
// with the reason when a part is wrong.
func decodeAnalysisSteps(data []byte) (Analysis, error) {
	var env struct {
		Repository json.RawMessage `json:"repository"`
		FileID     json.RawMessage `json:"fileId"`
		POIs       json.RawMessage `json:"pois"`
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		if !json.Valid(data) {
			if notJSON(data) {
				return Analysis{}, reject("", "not JSON (the text begins %q): an analysis is one JSON object, "+
					`{"fileId": "...", "pois": [...]}`, truncate(data, 24))
			}
			return Analysis{}, reject("", "invalid JSON: %v", jsonSyntaxError(data))
		}
		return Analysis{}, reject("", "an analysis must be a JSON object with fileId and pois")
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return Analysis{}, reject("", "invalid JSON: %v", err)
	}
	var a Analysis
	if len(env.FileID) == 0 || string(env.FileID) == "null" {
		return Analysis{}, reject("", "fileId is required")
	}
	// encoding/json would silently turn invalid UTF-8 and unpaired
	// surrogate escapes into U+FFFD; relay never alters data, so reject.
	if !utf8.Valid(env.FileID) || containsLoneSurrogate(env.FileID) {
		return Analysis{}, reject("", "fileId is not valid UTF-8 (invalid bytes or an unpaired \\ud800-\\udfff escape)")
	}
	if err := json.Unmarshal(env.FileID, &a.FileID); err != nil {
		return Analysis{}, reject("", "fileId must be a string, got %s", truncate(env.FileID, 40))
	}
	if len(env.Repository) > 0 && string(env.Repository) != "null" {
		if !utf8.Valid(env.Repository) || containsLoneSurrogate(env.Repository) {
			return Analysis{}, reject(a.FileID, "repository is not valid UTF-8 (invalid bytes or an unpaired \\ud800-\\udfff escape)")
		}
		if err := json.Unmarshal(env.Repository, &a.Repository); err != nil {
			return Analysis{}, reject(a.FileID, "repository must be a string, got %s", truncate(env.Repository, 40))
		}
	}
	if len(env.POIs) == 0 || string(env.POIs) == "null" {
		return Analysis{}, reject(a.FileID, "pois is required (an array; [] for a file without POIs)")
	}
	if env.POIs[0] != '[' {
		return Analysis{}, reject(a.FileID, "pois must be an array, got %s", truncate(env.POIs, 40))
	}
	if err := json.Unmarshal(env.POIs, &a.POIs); err != nil {
		return Analysis{}, reject(a.FileID, "pois: %v", err)
	}
	return a, nil
}

// notJSON reports whether invalid JSON text is not JSON at all rather than
// broken JSON: empty, or its first character starts no JSON value (a
// letter starts only true, false and null, which are valid).
func notJSON(data []byte) bool {
	if len(data) == 0 {
		return true
	}
	switch c := data[0]; {
	case c == '{' || c == '[' || c == '"' || c == '-' || c >= '0' && c <= '9':
		return false
	default:
		return true
	}
}

func jsonSyntaxError(data []byte) error {
	var v any
	return json.Unmarshal(data, &v)
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// containsNUL reports whether JSON text holds a \u0000 escape (a NUL
// character PostgreSQL cannot store in jsonb or text). A raw NUL byte cannot
// appear in valid JSON.
func containsNUL(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i+5 < len(raw) && raw[i+1] == 'u' && string(raw[i+2:i+6]) == "0000" {
			return true
		}
		i++ // skip the escaped character, so \\u0000 is not a NUL
	}
	return false
}

// containsLoneSurrogate reports whether JSON text holds a \uXXXX escape of
// a UTF-16 surrogate that is not part of a high-low pair. PostgreSQL's jsonb
// rejects such text, and encoding/json would turn it into U+FFFD.
func containsLoneSurrogate(raw []byte) bool {
	escape := func(i int) (rune, bool) { // the \uXXXX escape at raw[i:], if any
		if i+5 >= len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range raw[i+2 : i+6] {
			switch {
			case c >= '0' && c <= '9':
				r = r<<4 | rune(c-'0')
			case c >= 'a' && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case c >= 'A' && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		r, ok := escape(i)
		if !ok {
			i++ // skip the escaped character, so \\ud800 is not an escape
			continue
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if low, ok := escape(i + 6); ok && low >= 0xDC00 && low <= 0xDFFF {
				i += 11
				continue
			}
			return true
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		}
		i += 5
	}
	return false
}
