package deadletter

import (
	"strings"
	"unicode"
)

// signatureMaxRunes caps the length of a signature, ellipsis included.
const signatureMaxRunes = 500

// Signature normalizes an error message into a stable grouping key, stored as
// error_signature in failed_pois and dead_lettered_items, so that failures
// with the same cause share one row in `GROUP BY error_signature` while the
// key stays readable in `relay failed analyze`.
//
// The message is read once, left to right. At each position the first rule
// that applies wins, and the text it consumed is not looked at again. Rules 4
// to 11 only apply where a token starts: not right after a letter, a digit or
// a placeholder's closing >.
//
//  1. Invalid UTF-8 bytes become U+FFFD and control characters (NUL
//     included, which PostgreSQL text cannot hold) count as whitespace.
//  2. Runs of whitespace become one space; the result is trimmed.
//  3. Quoted text: the contents of "...", '...' and `...` become <str>,
//     keeping the quotes (`poi "b42"` -> `poi "<str>"`); backslash escapes
//     are honoured, empty quotes stay empty and an unclosed quote is left
//     alone. A ' only opens a quote when no letter or digit precedes it and
//     only closes one when no letter or digit follows it, so `can't`,
//     `file's` and `users' files` are words.
//  4. The code after SQLSTATE is kept: `(SQLSTATE 42P01)`.
//  5. URLs (scheme://...) become <url>, credentials and all:
//     `postgres://relay:secret@db:5432/relay?sslmode=disable` -> `<url>`.
//  6. Timestamps become <ts>: `2026-11-21T04:22:23.123Z`,
//     `2026-11-21 04:22:23.5 +0000 UTC`, `2026/11/21 04:22:23`,
//     `Nov 21 04:22:23`, `Sat, 21 Nov 2026 04:22:23 GMT`,
//     `21/Nov/2026:04:22:23 +0000` and a bare `04:22:23`. A date alone
//     becomes <date>: `2026-11-21`.
//  7. IPv4 addresses, with an optional :port or /prefix, and bracketed IPv6
//     addresses, with an optional :port, become <ip>: `127.0.0.1:5432` and
//     `[::1]:5432` -> `<ip>`. Host names are kept.
//  8. File paths become <path>, with any :line or :line:col: absolute
//     (`/var/lib/relay/x.log`), `./a`, `../x/y.py`, `~/x`, Windows
//     (`C:\relay\x.log`), and relative paths with two slashes or with one
//     slash and a file extension (`src/a.go:12:3`). `i/o`, `TCP/IP` and
//     `application/json` are not paths.
//  9. UUIDs become <uuid>.
//  10. Hex: 0x-prefixed (`0x4a5b2c`) and runs of 8 or more hex digits with
//     at least one digit and one letter (git SHAs, `c000123abc`) become
//     <hex>. Words such as `deadbeef` are kept.
//  11. Numbers (integers, decimals, exponents, a leading minus) become <n>
//     and a unit glued on stays: `305s` -> `<n>s`, `1.5GiB` -> `<n>GiB`,
//     `1m30s` -> `<n>m<n>s`, `-3` -> `<n>`, `#12` -> `#<n>`. Digits inside
//     a word are kept (`utf8`, `sha256`, `v2`, `int64`, `m12`), as are
//     those after a dot (`v1.2.3`). Digits joined to a word by _ or -
//     become <n> when that word is only letters (`job_42` -> `job_<n>`,
//     `item-7` -> `item-<n>`), and are kept when it has digits (`x86_64`)
//     or is a well-known name (`utf-8`, `sha-256`, `iso-8859-1`).
//  12. The result is cut to 500 runes, at a space if one is near, and ends
//     in "…" when cut.
//
// Signature is deterministic, takes time linear in the length of the
// message, never panics, and is idempotent:
// Signature(Signature(m)) == Signature(m).
func Signature(message string) string {
	if message == "" {
		return ""
	}
	s := sigScanner{in: []rune(message)} // invalid bytes become U+FFFD
	s.out = make([]rune, 0, min(len(s.in), signatureMaxRunes)+16)
	s.scan()
	return s.result()
}

// sigScanner holds the state of one Signature call.
type sigScanner struct {
	in  []rune
	out []rune
	// noClose records, per quote kind, that a search for a closing quote
	// already failed: every later search would fail too, so it is skipped,
	// keeping the scan linear.
	noClose [3]bool
}

// scan normalizes s.in into s.out. It stops early once s.out is certainly
// longer than the cap: later input cannot change earlier output.
func (s *sigScanner) scan() {
	for i := 0; i < len(s.in) && len(s.out) < signatureMaxRunes+2; {
		r := s.in[i]
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			if len(s.out) > 0 && s.out[len(s.out)-1] != ' ' {
				s.out = append(s.out, ' ')
			}
			i++
			continue
		}
		if n := s.quoted(i); n > 0 {
			i += n
			continue
		}
		if n := s.token(i); n > 0 {
			i += n
			continue
		}
		s.out = append(s.out, r)
		i++
	}
}

// result trims and caps s.out.
func (s *sigScanner) result() string {
	out := sigTrimRight(s.out)
	if len(out) > signatureMaxRunes {
		cut := signatureMaxRunes - 1 // room for the ellipsis
		for k := cut; k > 0 && k > cut-32; k-- {
			if out[k] == ' ' {
				cut = k
				break
			}
		}
		out = append(sigTrimRight(out[:cut]), '…')
	}
	return string(out)
}

// at returns the input rune at i, or 0 past either end.
func (s *sigScanner) at(i int) rune {
	if i < 0 || i >= len(s.in) {
		return 0
	}
	return s.in[i]
}

// prev returns the last rune written, or a space at the start.
func (s *sigScanner) prev() rune {
	if len(s.out) == 0 {
		return ' '
	}
	return s.out[len(s.out)-1]
}

// emit writes a placeholder and returns n, the number of runes it replaces.
func (s *sigScanner) emit(placeholder string, n int) int {
	for _, c := range placeholder {
		s.out = append(s.out, c)
	}
	return n
}

// keep copies in[i:j] to the output unchanged and returns its length.
func (s *sigScanner) keep(i, j int) int {
	s.out = append(s.out, s.in[i:j]...)
	return j - i
}

// quoted applies rule 3 at i and returns the runes consumed, or 0.
func (s *sigScanner) quoted(i int) int {
	q := s.in[i]
	kind := strings.IndexRune("\"'`", q)
	if kind < 0 || s.noClose[kind] || (q == '\'' && sigWordBefore(s.prev())) {
		return 0
	}
	for j := i + 1; j < len(s.in); j++ {
		switch c := s.in[j]; {
		case c == '\\':
			j++
		case c != q:
		case q == '\'' && sigWordAfter(s.at(j+1)):
			// An apostrophe inside a word, not the closing quote.
		default:
			s.out = append(s.out, q)
			if j > i+1 {
				s.emit("<str>", 0)
			}
			s.out = append(s.out, q)
			return j - i + 1
		}
	}
	s.noClose[kind] = true
	return 0
}

// token tries rules 4 to 11 at i and returns the runes consumed, or 0. All
// of them need i to start a word.
func (s *sigScanner) token(i int) int {
	if sigWordBefore(s.prev()) {
		return 0
	}
	if n := s.sqlState(i); n > 0 {
		return n
	}
	if n := s.url(i); n > 0 {
		return n
	}
	if n := s.timestamp(i); n > 0 {
		return n
	}
	if n := s.ip(i); n > 0 {
		return n
	}
	if n := s.path(i); n > 0 {
		return n
	}
	if n := s.uuid(i); n > 0 {
		return n
	}
	if n := s.hex(i); n > 0 {
		return n
	}
	return s.number(i)
}

// sqlState keeps the word after "SQLSTATE " (rule 4).
func (s *sigScanner) sqlState(i int) int {
	const prefix = "SQLSTATE "
	if len(s.out) < len(prefix) || s.out[len(s.out)-1] != ' ' {
		return 0
	}
	for k, c := range s.out[len(s.out)-len(prefix):] {
		if c != rune(prefix[k]) {
			return 0
		}
	}
	j := i
	for j < len(s.in) && sigIsWord(s.in[j]) {
		j++
	}
	return s.keep(i, j)
}

// url replaces scheme://... (rule 5).
func (s *sigScanner) url(i int) int {
	if !sigIsASCIILetter(s.in[i]) {
		return 0
	}
	j := i + 1
	for j < len(s.in) && j-i < 32 && (sigIsASCIILetter(s.in[j]) || sigIsDigit(s.in[j]) || strings.ContainsRune("+.-", s.in[j])) {
		j++
	}
	if s.at(j) != ':' || s.at(j+1) != '/' || s.at(j+2) != '/' {
		return 0
	}
	for j += 3; j < len(s.in); j++ {
		if c := s.in[j]; unicode.IsSpace(c) || unicode.IsControl(c) || strings.ContainsRune("\"'`<>()\\", c) {
			break
		}
	}
	for strings.ContainsRune(".,:;!?", s.in[j-1]) {
		j--
	}
	return s.emit("<url>", j-i)
}

// timestamp replaces timestamps and dates (rule 6).
func (s *sigScanner) timestamp(i int) int {
	if j, hasTime := s.numericDate(i); j > 0 {
		if hasTime {
			return s.emit("<ts>", j-i)
		}
		return s.emit("<date>", j-i)
	}
	if j := s.namedDate(i); j > 0 {
		return s.emit("<ts>", j-i)
	}
	if j := s.clock(i, true); j > 0 {
		return s.emit("<ts>", s.zone(j)-i)
	}
	return 0
}

// numericDate matches 2006-01-02 or 2006/01/02 with an optional time and
// zone. It returns the end and whether a time was present.
func (s *sigScanner) numericDate(i int) (int, bool) {
	sep := s.at(i + 4)
	if !s.digits(i, 4) || (sep != '-' && sep != '/') || !s.digits(i+5, 2) || s.at(i+7) != sep ||
		!s.digits(i+8, 2) || sigIsDigit(s.at(i+10)) {
		return 0, false
	}
	j := i + 10
	if c := s.at(j); c == 'T' || c == ' ' || c == '_' {
		if k := s.clock(j+1, false); k > 0 {
			return s.zone(k), true
		}
	}
	if sigWordAfter(s.at(j)) {
		return 0, false
	}
	return j, false
}

// namedDate matches timestamps with month names: "Nov 21 04:22:23" (syslog,
// Go's ANSIC and UnixDate, optionally after a weekday), "Sat, 21 Nov 2026
// 04:22:23 GMT" (RFC 1123) and "21/Nov/2026:04:22:23 +0000" (access logs).
// It returns the end, or 0.
func (s *sigScanner) namedDate(i int) int {
	j := i
	if s.word(j, sigWeekdays) {
		k := j + 3
		if s.at(k) == ',' {
			k++
		}
		if s.at(k) != ' ' {
			return 0
		}
		j = k + 1
	}
	if s.word(j, sigMonths) && s.at(j+3) == ' ' { // Nov 21 04:22:23 [MST] [2026]
		k := j + 4
		if s.at(k) == ' ' {
			k++ // Go pads single-digit days: "Nov  1"
		}
		d := s.digitRun(k, 2)
		k += d
		if d == 0 || s.at(k) != ' ' {
			return 0
		}
		end := s.clock(k+1, true)
		if end == 0 {
			return 0
		}
		end = s.zone(end)
		if s.at(end) == ' ' && s.digits(end+1, 4) && !sigWordAfter(s.at(end+5)) {
			end += 5
		}
		return end
	}
	if d := s.digitRun(j, 2); d > 0 { // 21 Nov 2026 04:22:23 GMT
		k := j + d
		if s.at(k) == ' ' && s.word(k+1, sigMonths) && s.at(k+4) == ' ' && s.digits(k+5, 4) && s.at(k+9) == ' ' {
			if end := s.clock(k+10, true); end > 0 {
				return s.zone(end)
			}
		}
		if s.at(k) == '/' && s.word(k+1, sigMonths) && s.at(k+4) == '/' && s.digits(k+5, 4) && s.at(k+9) == ':' {
			if end := s.clock(k+10, true); end > 0 {
				return s.zone(end)
			}
		}
	}
	return 0
}

// clock matches 15:04, 15:04:05 and 15:04:05.000 (or ,000) at i and returns
// the end, or 0. needSeconds rejects 15:04.
func (s *sigScanner) clock(i int, needSeconds bool) int {
	if !s.digits(i, 2) || s.at(i+2) != ':' || !s.digits(i+3, 2) {
		return 0
	}
	j := i + 5
	switch {
	case s.at(j) == ':' && s.digits(j+1, 2):
		j += 3
		if c := s.at(j); (c == '.' || c == ',') && sigIsDigit(s.at(j+1)) {
			j++
			j += s.digitRun(j, len(s.in))
		}
	case needSeconds:
		return 0
	}
	if sigDigitAfter(s.at(j)) || (s.at(j) == ':' && sigDigitAfter(s.at(j+1))) {
		return 0
	}
	return j
}

// zone extends a time ending at i over a zone (Z, +07:00, " +0000", " UTC")
// and Go's monotonic clock reading (" m=+0.001"), returning the new end.
func (s *sigScanner) zone(i int) int {
	j := i
	if c := s.at(j); (c == 'Z' || c == 'z') && !sigWordAfter(s.at(j+1)) {
		j++
	} else {
		k, spaced := j, false
		if s.at(k) == ' ' {
			k, spaced = k+1, true
		}
		if c := s.at(k); (c == '+' || c == '-') && s.digits(k+1, 2) {
			end := 0
			switch {
			case s.at(k+3) == ':' && s.digits(k+4, 2):
				end = k + 6
			case s.digits(k+3, 2):
				end = k + 5
			case !spaced:
				end = k + 3
			}
			if end > 0 && !sigDigitAfter(s.at(end)) {
				j = end
			}
		}
	}
	if s.at(j) == ' ' {
		for _, z := range sigZones {
			if s.lit(j+1, z) && !sigWordAfter(s.at(j+1+len(z))) {
				j += 1 + len(z)
				break
			}
		}
	}
	if s.lit(j, " m=") && (s.at(j+3) == '+' || s.at(j+3) == '-') && sigIsDigit(s.at(j+4)) {
		j += 4
		j += s.digitRun(j, len(s.in))
		if s.at(j) == '.' && sigIsDigit(s.at(j+1)) {
			j++
			j += s.digitRun(j, len(s.in))
		}
	}
	return j
}

// ip replaces IPv4 addresses with optional :port or /prefix and bracketed
// IPv6 addresses with optional :port (rule 7).
func (s *sigScanner) ip(i int) int {
	if s.prev() == '.' {
		return 0
	}
	if s.in[i] == '[' {
		if s.prev() == '\'' { // see sigSeparatorBefore
			return 0
		}
		return s.ipv6(i)
	}
	j := i
	for part := 0; part < 4; part++ {
		if part > 0 {
			if s.at(j) != '.' {
				return 0
			}
			j++
		}
		d := s.digitRun(j, 3)
		if d == 0 || sigIsDigit(s.at(j+d)) {
			return 0
		}
		if v := string(s.in[j : j+d]); len(v) == 3 && v > "255" {
			return 0
		}
		j += d
	}
	if sigWordAfter(s.at(j)) || (s.at(j) == '.' && sigWordAfter(s.at(j+1))) {
		return 0
	}
	j = s.port(j, ':', 5)
	j = s.port(j, '/', 3)
	return s.emit("<ip>", j-i)
}

// ipv6 matches [2001:db8::1] or [::1]:5432 at i.
func (s *sigScanner) ipv6(i int) int {
	colons := 0
	j := i + 1
	for ; j < len(s.in) && j-i < 48; j++ {
		c := s.in[j]
		if c == ':' {
			colons++
		} else if !sigIsHex(c) && c != '.' {
			break
		}
	}
	if s.at(j) != ']' || colons < 2 {
		return 0
	}
	return s.emit("<ip>", s.port(j+1, ':', 5)-i)
}

// port extends an address ending at i over sep and up to maxDigits digits,
// when they end the token.
func (s *sigScanner) port(i int, sep rune, maxDigits int) int {
	if s.at(i) != sep {
		return i
	}
	d := s.digitRun(i+1, maxDigits+1)
	if d == 0 || d > maxDigits || sigWordAfter(s.at(i+1+d)) {
		return i
	}
	return i + 1 + d
}

// path replaces file paths (rule 8).
func (s *sigScanner) path(i int) int {
	if !sigSeparatorBefore(s.prev()) {
		return 0
	}
	c := s.in[i]
	var j int
	switch {
	case c == '/' && sigIsPathRune(s.at(i+1)),
		(s.lit(i, "./") || s.lit(i, "~/")) && sigIsPathRune(s.at(i+2)),
		s.lit(i, "../") && sigIsPathRune(s.at(i+3)):
		j = s.pathEnd(i, false)
	case sigIsASCIILetter(c) && s.at(i+1) == ':' && (s.at(i+2) == '\\' || s.at(i+2) == '/') && sigIsPathRune(s.at(i+3)):
		j = s.pathEnd(i+2, true)
	case unicode.IsLetter(c) || c == '_' || c == '.':
		j = s.pathEnd(i, false)
		if !sigIsRelativePath(s.in[i:j]) {
			return 0
		}
	default:
		return 0
	}
	for range 2 { // :line and :line:col
		if s.at(j) == ':' && sigIsDigit(s.at(j+1)) {
			j += 1 + s.digitRun(j+1, len(s.in))
		}
	}
	return s.emit("<path>", j-i)
}

// pathEnd returns the end of the path runes starting at i, without trailing
// dots (a path ending a sentence).
func (s *sigScanner) pathEnd(i int, backslash bool) int {
	j := i
	for j < len(s.in) && (sigIsPathRune(s.in[j]) || (backslash && s.in[j] == '\\')) {
		j++
	}
	// Trailing backslashes stay: they may escape a closing quote.
	for j > i+1 && (s.in[j-1] == '.' || s.in[j-1] == '\\') {
		j--
	}
	return j
}

// uuid replaces UUIDs (rule 9).
func (s *sigScanner) uuid(i int) int {
	const n = 36
	if i+n > len(s.in) || sigWordAfter(s.at(i+n)) {
		return 0
	}
	for k, c := range s.in[i : i+n] {
		if k == 8 || k == 13 || k == 18 || k == 23 {
			if c != '-' {
				return 0
			}
		} else if !sigIsHex(c) {
			return 0
		}
	}
	return s.emit("<uuid>", n)
}

// hex replaces 0x-prefixed hex and long bare hex runs (rule 10).
func (s *sigScanner) hex(i int) int {
	start := i
	if s.in[i] == '0' && (s.at(i+1) == 'x' || s.at(i+1) == 'X') && sigIsHex(s.at(i+2)) {
		start = i + 2
	}
	j, digit, letter := start, false, false
	for ; j < len(s.in) && sigIsHex(s.in[j]); j++ {
		if sigIsDigit(s.in[j]) {
			digit = true
		} else {
			letter = true
		}
	}
	if sigWordAfter(s.at(j)) || (start == i && (j-i < 8 || !digit || !letter)) {
		return 0
	}
	return s.emit("<hex>", j-i)
}

// number replaces numbers, keeping glued units (rule 11).
func (s *sigScanner) number(i int) int {
	prev, j := s.prev(), i
	if s.in[i] == '-' {
		if !sigSeparatorBefore(prev) || !sigIsDigit(s.at(i+1)) {
			return 0
		}
		j++
	}
	if !sigIsDigit(s.at(j)) || prev == '.' {
		return 0
	}
	if j == i && (prev == '_' || prev == '-') && s.keepAfterJoiner() {
		k := i
		for k < len(s.in) && sigIsWord(s.in[k]) {
			k++
		}
		return s.keep(i, k)
	}
	for {
		j += s.digitRun(j, len(s.in))
		for s.at(j) == '.' && sigIsDigit(s.at(j+1)) {
			j++
			j += s.digitRun(j, len(s.in))
		}
		if c := s.at(j); c == 'e' || c == 'E' {
			k := j + 1
			if s.at(k) == '+' || s.at(k) == '-' {
				k++
			}
			if sigIsDigit(s.at(k)) {
				j = k + s.digitRun(k, len(s.in))
			}
		}
		s.out = append(s.out, '<', 'n', '>')
		u := j
		for j < len(s.in) && unicode.IsLetter(s.in[j]) {
			j++
		}
		s.out = append(s.out, s.in[u:j]...)
		// 1m30s continues with 30s, unless the output is already full.
		if j == u || !sigIsDigit(s.at(j)) || len(s.out) >= signatureMaxRunes+2 {
			return j - i
		}
	}
}

// keepAfterJoiner reports whether digits after the _ or - just written
// belong to the word before it: that word has digits (x86_64) or is a
// well-known name (utf-8).
func (s *sigScanner) keepAfterJoiner() bool {
	k := len(s.out) - 1
	for k > 0 && sigIsWord(s.out[k-1]) {
		k--
	}
	word := s.out[k : len(s.out)-1]
	if len(word) == 0 {
		return false
	}
	for _, c := range word {
		if sigIsDigit(c) {
			return true
		}
	}
	_, ok := sigJoinedNames[strings.ToLower(string(word))]
	return ok
}

// digits reports whether in[i:i+n] are n ASCII digits.
func (s *sigScanner) digits(i, n int) bool {
	return s.digitRun(i, n) == n
}

// digitRun returns how many ASCII digits, at most maxLen, start at i.
func (s *sigScanner) digitRun(i, maxLen int) int {
	n := 0
	for n < maxLen && sigIsDigit(s.at(i+n)) {
		n++
	}
	return n
}

// lit reports whether the ASCII string lit starts at i.
func (s *sigScanner) lit(i int, lit string) bool {
	if i < 0 || i+len(lit) > len(s.in) {
		return false
	}
	for k := range len(lit) {
		if s.in[i+k] != rune(lit[k]) {
			return false
		}
	}
	return true
}

// word reports whether one of the three-letter words in list starts at i.
func (s *sigScanner) word(i int, list string) bool {
	if i < 0 || i+3 > len(s.in) || !sigIsASCIILetter(s.in[i]) {
		return false
	}
	for k := 0; k+3 <= len(list); k += 4 {
		if s.lit(i, list[k:k+3]) {
			return true
		}
	}
	return false
}

// Word lists for timestamps: each name is followed by a space.
const (
	sigWeekdays = "Mon Tue Wed Thu Fri Sat Sun "
	sigMonths   = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec "
)

// sigZones are the zone abbreviations accepted after a time.
var sigZones = []string{
	"UTC", "GMT", "CEST", "CET", "EEST", "EET", "WEST", "WET", "BST", "IST", "JST",
	"EST", "EDT", "CST", "CDT", "MST", "MDT", "PST", "PDT",
}

// sigJoinedNames are words whose joined digits are part of a name, as in
// utf-8, sha-256 and iso-8859-1.
var sigJoinedNames = map[string]struct{}{
	"utf": {}, "ucs": {}, "sha": {}, "iso": {}, "latin": {}, "crc": {}, "md": {}, "rfc": {},
}

// sigIsRelativePath reports whether p, a run of path runes, is a relative
// path: two slashes, or one slash and a last segment with a file extension
// (a dot, not leading, followed by a letter). A prefix of a run that is not a
// path is never one, so rewriting the end of such a run (a version number
// in "HTTP/1.1") cannot turn it into a path when normalized again.
func sigIsRelativePath(p []rune) bool {
	slashes, last := 0, 0
	for k, c := range p {
		if c == '/' {
			slashes++
			last = k + 1
		}
	}
	if slashes != 1 {
		return slashes > 1
	}
	seg := p[last:]
	for k := 1; k+1 < len(seg); k++ {
		if seg[k] == '.' && sigIsASCIILetter(seg[k+1]) {
			return true
		}
	}
	return false
}

// sigTrimRight drops trailing spaces.
func sigTrimRight(r []rune) []rune {
	for len(r) > 0 && r[len(r)-1] == ' ' {
		r = r[:len(r)-1]
	}
	return r
}

// sigIsWord reports whether r is a letter or digit.
func sigIsWord(r rune) bool {
	if r < 0x80 {
		return sigIsASCIILetter(r) || sigIsDigit(r)
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// sigWordBefore reports whether a token starting after r would continue a
// word. A placeholder's closing > counts, so "<n>s" stays put.
func sigWordBefore(r rune) bool {
	return sigIsWord(r) || r == '>'
}

// sigWordAfter reports whether a token ending before r would continue into
// a word. A placeholder's opening < and the ellipsis of a cut signature
// count, so normalizing a signature again changes nothing.
func sigWordAfter(r rune) bool {
	return sigIsWord(r) || r == '<' || r == '…'
}

// sigDigitAfter reports whether r would continue a number ending before it;
// like sigWordAfter, it counts a placeholder's opening <.
func sigDigitAfter(r rune) bool {
	return sigIsDigit(r) || r == '<'
}

// sigSeparatorBefore reports whether r may precede a path or a negative
// number. A ' may not: whether it closes a quote depends on the rune after
// it, which must therefore not be rewritten.
func sigSeparatorBefore(r rune) bool {
	return strings.ContainsRune(" \"`([{=,:;", r)
}

// sigIsPathRune reports whether r can appear in a path.
func sigIsPathRune(r rune) bool {
	return sigIsWord(r) || strings.ContainsRune("/._-~+@%", r)
}

// sigIsDigit reports whether r is an ASCII digit.
func sigIsDigit(r rune) bool { return '0' <= r && r <= '9' }

// sigIsASCIILetter reports whether r is an ASCII letter.
func sigIsASCIILetter(r rune) bool { return ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') }

// sigIsHex reports whether r is an ASCII hex digit.
func sigIsHex(r rune) bool {
	return sigIsDigit(r) || ('a' <= r && r <= 'f') || ('A' <= r && r <= 'F')
}
