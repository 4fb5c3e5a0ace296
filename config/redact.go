package config

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
)

// Mask replaces every password relay hides.
const Mask = "xxxxx"

// Literal passwords shorter than these are not hidden wherever they occur
// (RedactURL and the structural rules of Redact still hide them in their
// place): masking every "ab" in a message would destroy it and hide nothing
// worth hiding. Fragments are the pieces of a password between the
// characters parsers cut at ('#', '?', '/', '@', ':', quotes, ...), which is
// what a third-party error quoting a half-parsed URL shows.
const (
	minLiteralSecret  = 3
	minSecretFragment = 4
)

// Redact returns s with every password it can find by its shape replaced by
// Mask:
//
//   - the userinfo of any URL in s (scheme://user:password@host): when the
//     URL's structure is ambiguous (an unencoded '@', '/', '?' or '#' in
//     the password) everything up to its last '@' is hidden;
//   - password= and sslpassword= values of keyword/value connection strings
//     and of URL queries, quoted ('a b\' c') or not.
//
// Use it on anything that might carry a database URL before it reaches a log
// line, an error or --help. When the whole string is a connection string,
// RedactURL is more precise; when the connection string is known, a
// Redactor also hides its password wherever a library quoted it.
func Redact(s string) string {
	return redactStructure(s)
}

// RedactURL returns the connection string connString (a postgres:// URL or a
// keyword/value DSN) fit for display: its password, and sslpassword, replaced
// by Mask. It parses rather than pattern-matches: a password holding '#',
// '?', '/', ' ', an unencoded '@' or quotes is hidden whole. When the URL's
// structure is ambiguous (more than one '@', or '?' or '#' before the '@'),
// everything between "://" and the last '@' is hidden but a plain user name.
func RedactURL(connString string) string {
	s := connString
	if _, rest, ok := cutScheme(s); ok {
		s = s[:len(s)-len(rest)] + redactAuthorityAndQuery(rest)
	} else {
		s = redactKeywordValues(s)
	}
	// Belt and braces: a literal copy of the password elsewhere in the
	// string (a misplaced one, or a keyword/value DSN quoting it twice).
	return NewRedactor(connString).hideLiterals(s)
}

// Redactor hides the passwords of known connection strings in any text. The
// zero value knows none. It is safe for concurrent use.
type Redactor struct {
	mu      sync.Mutex
	secrets []string // longest first, deduplicated
	repl    atomic.Pointer[strings.Replacer]
}

// NewRedactor returns a Redactor that knows the passwords of connStrings.
func NewRedactor(connStrings ...string) *Redactor {
	r := &Redactor{}
	for _, cs := range connStrings {
		r.Add(cs)
	}
	return r
}

// Add teaches r the password and sslpassword of connString, in every way a
// parser could read them (pgx stops the userinfo at its first '@', net/url
// at its last), and their encoded forms.
func (r *Redactor) Add(connString string) {
	var lits []string
	for _, rd := range passwordsIn(connString) {
		lits = append(lits, literalForms(rd)...)
	}
	if len(lits) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	added := false
	for _, l := range lits {
		if !slices.Contains(r.secrets, l) {
			r.secrets = append(r.secrets, l)
			added = true
		}
	}
	if !added {
		return
	}
	sorted := slices.Clone(r.secrets)
	// Longest first, so a password's encoded form is replaced whole before
	// a fragment of it could be.
	slices.SortStableFunc(sorted, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(sorted))
	for _, s := range sorted {
		pairs = append(pairs, s, Mask)
	}
	r.repl.Store(strings.NewReplacer(pairs...))
}

// Redact returns s with r's known passwords and everything Redact finds
// hidden.
func (r *Redactor) Redact(s string) string { return Redact(r.hideLiterals(s)) }

func (r *Redactor) hideLiterals(s string) string {
	if repl := r.repl.Load(); repl != nil {
		return repl.Replace(s)
	}
	return s
}

// reading is one way a parser could read a connection string's password.
// Its fragments are hidden too unless it is only a guess (the userinfo up to
// the last '@' of an ambiguous URL may hold the host and database names).
type reading struct {
	pw        string
	fragments bool
}

// passwordsIn returns every reading of connString's passwords.
func passwordsIn(connString string) []reading {
	var out []reading
	add := func(p string, fragments bool) {
		if p == "" {
			return
		}
		for i := range out {
			if out[i].pw == p {
				out[i].fragments = out[i].fragments || fragments
				return
			}
		}
		out = append(out, reading{p, fragments})
	}
	addRaw := func(raw string, fragments bool) {
		add(raw, fragments)
		if dec, err := url.PathUnescape(raw); err == nil {
			add(dec, fragments)
		}
		if dec, err := url.QueryUnescape(raw); err == nil {
			add(dec, fragments)
		}
	}
	if cfg, err := pgconn.ParseConfig(connString); err == nil {
		add(cfg.Password, true)
	}
	if _, rest, ok := cutScheme(connString); ok {
		// pgx and libpq: the userinfo ends at the first '@' before any '/'.
		if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
			if _, pw, ok := strings.Cut(rest[:i], ":"); ok {
				addRaw(pw, true)
			}
		}
		// net/url and a human: it ends at the last '@'.
		if i := strings.LastIndexByte(rest, '@'); i >= 0 {
			if _, pw, ok := strings.Cut(rest[:i], ":"); ok {
				addRaw(pw, false)
			}
			// With several, pgx takes what lies between the first and the
			// last for the host, and quotes it: "lookup Pss@127.0.0.1".
			if first := strings.IndexByte(rest, '@'); first < i {
				add(rest[first+1:i], false)
			}
		}
		if u, err := url.Parse(connString); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok {
				add(pw, true)
			}
		}
		for _, q := range strings.Split(rest, "?")[1:] {
			for _, pair := range strings.Split(q, "&") {
				k, v, ok := strings.Cut(pair, "=")
				if ok && isPasswordKey(unescapeLenient(k)) {
					addRaw(v, true)
				}
			}
		}
		return out
	}
	for _, kv := range scanKeywordValues(connString) {
		add(kv.value, true)
		add(connString[kv.start:kv.end], false)
	}
	return out
}

// literalForms returns pw as it could appear in text: raw, percent-encoded,
// quoted by %q, by JSON (slog's JSON handler) and by a keyword/value DSN,
// and, with fragments, its pieces between the characters parsers cut at.
func literalForms(r reading) []string {
	pw := r.pw
	var out []string
	add := func(s string, min int) {
		if len(s) >= min && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	add(pw, minLiteralSecret)
	add(url.QueryEscape(pw), minLiteralSecret)
	add(url.PathEscape(pw), minLiteralSecret)
	add(strings.TrimPrefix(url.UserPassword("", pw).String(), ":"), minLiteralSecret)
	q := strconv.Quote(pw)
	add(q[1:len(q)-1], minLiteralSecret)
	if j, err := json.Marshal(pw); err == nil {
		add(string(j[1:len(j)-1]), minLiteralSecret)
	}
	add(strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw), minLiteralSecret)
	if !r.fragments {
		return out
	}
	for _, f := range strings.FieldsFunc(pw, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == '~' || r > 127)
	}) {
		add(f, minSecretFragment)
	}
	return out
}

var schemeRE = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://`)

// cutScheme splits a string that starts with a URL scheme.
func cutScheme(s string) (scheme, rest string, ok bool) {
	loc := schemeRE.FindStringIndex(s)
	if loc == nil || loc[0] != 0 {
		return "", s, false
	}
	return s[:loc[1]], s[loc[1]:], true
}

// redactStructure hides URL userinfo passwords and keyword/value passwords in
// free text.
func redactStructure(s string) string {
	var b strings.Builder
	for {
		loc := schemeRE.FindStringIndex(s)
		if loc == nil {
			break
		}
		b.WriteString(s[:loc[1]])
		rest := s[loc[1]:]
		end := urlTokenEnd(rest)
		b.WriteString(redactAuthorityAndQuery(rest[:end]))
		s = rest[end:]
	}
	b.WriteString(s)
	return redactKeywordValues(b.String())
}

// urlTokenEnd returns where the URL starting at rest (after its "://") ends
// in free text: at the first whitespace, or, when what precedes it cannot
// be a host (user:pass with a space in the password: "u:se cret@host"), at
// the first whitespace after the next '@' on the line.
func urlTokenEnd(rest string) int {
	end := strings.IndexFunc(rest, isSpace)
	if end < 0 {
		return len(rest)
	}
	tok := rest[:end]
	if strings.IndexByte(tok, '@') >= 0 || !looksLikeBrokenUserinfo(tok) {
		return end
	}
	line := rest
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	at := strings.IndexByte(line, '@')
	if at < 0 || schemeRE.MatchString(line[:at]) {
		return end
	}
	if e := strings.IndexFunc(line[at:], isSpace); e >= 0 {
		return at + e
	}
	return len(line)
}

// looksLikeBrokenUserinfo reports whether tok (a URL without "scheme://" and
// without '@') starts with name:x where x is not a port number.
func looksLikeBrokenUserinfo(tok string) bool {
	authority := tok
	if i := strings.IndexAny(authority, "/?#,"); i >= 0 {
		authority = authority[:i]
	}
	if strings.HasPrefix(authority, "[") {
		return false
	}
	_, port, ok := strings.Cut(authority, ":")
	if !ok {
		return false
	}
	if port == "" {
		// "name:" then a space: a password starting with one, or a URL
		// followed by ": message"; only extended if an '@' follows.
		return authority == tok
	}
	port = strings.TrimRight(port, "`'\".,;:)]}")
	for _, c := range port {
		if c < '0' || c > '9' {
			return true
		}
	}
	return false
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
}

// redactAuthorityAndQuery redacts a URL without its "scheme://": the
// userinfo password and password query parameters.
func redactAuthorityAndQuery(rest string) string {
	last := strings.LastIndexByte(rest, '@')
	if last < 0 {
		return redactQuery(rest)
	}
	userinfo, after := rest[:last], rest[last:]
	first := strings.IndexAny(rest, "@/")
	unambiguous := first == last && !strings.ContainsAny(userinfo, "?#")
	user, _, hasPassword := strings.Cut(userinfo, ":")
	switch {
	case unambiguous && !hasPassword:
		return userinfo + redactQuery(after)
	case unambiguous:
		return user + ":" + Mask + redactQuery(after)
	case hasPassword && !strings.ContainsAny(user, "@/?#"):
		// The user name is plain; the password swallowed delimiters.
		return user + ":" + Mask + redactQuery(after)
	default:
		return Mask + redactQuery(after)
	}
}

// redactQuery masks the values of password and sslpassword query
// parameters in the part of a URL after its userinfo.
func redactQuery(s string) string {
	q := strings.IndexByte(s, '?')
	if q < 0 {
		return s
	}
	pairs := strings.Split(s[q+1:], "&")
	for i, pair := range pairs {
		k, _, ok := strings.Cut(pair, "=")
		if ok && isPasswordKey(unescapeLenient(k)) {
			pairs[i] = k + "=" + Mask
		}
	}
	return s[:q+1] + strings.Join(pairs, "&")
}

func unescapeLenient(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

func isPasswordKey(k string) bool {
	k = strings.ToLower(strings.TrimSpace(k))
	return k == "password" || k == "sslpassword"
}

// kvPasswordRE finds where a keyword/value password's value starts.
// Any key ending in password (PGPASSWORD=, db_password=) counts.
var kvPasswordRE = regexp.MustCompile(`(?i)password\s*=\s*`)

// redactKeywordValues masks password= and sslpassword= values: a quoted
// value up to its closing unescaped quote (the rest of s if there is none),
// an unquoted one up to unescaped whitespace.
func redactKeywordValues(s string) string {
	var b strings.Builder
	for {
		loc := kvPasswordRE.FindStringIndex(s)
		if loc == nil {
			break
		}
		b.WriteString(s[:loc[1]])
		b.WriteString(Mask)
		_, n := kvValue(s[loc[1]:])
		s = s[loc[1]+n:]
	}
	b.WriteString(s)
	return b.String()
}

// kvValue reads a libpq keyword/value value at the start of s, returning it
// unescaped and how many bytes it took.
func kvValue(s string) (string, int) {
	var v strings.Builder
	if strings.HasPrefix(s, "'") {
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				if i+1 < len(s) {
					i++
					v.WriteByte(s[i])
				}
			case '\'':
				return v.String(), i + 1
			default:
				v.WriteByte(s[i])
			}
		}
		return v.String(), len(s) // unterminated: all of it
	}
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			i++
			v.WriteByte(s[i])
		case isSpace(rune(s[i])):
			return v.String(), i
		default:
			v.WriteByte(s[i])
		}
	}
	return v.String(), len(s)
}

type keywordValue struct {
	value      string
	start, end int // the raw value's span
}

// scanKeywordValues finds every password-keyed value in a keyword/value
// string, tolerating malformed input.
func scanKeywordValues(s string) []keywordValue {
	var out []keywordValue
	off := 0
	for {
		loc := kvPasswordRE.FindStringIndex(s[off:])
		if loc == nil {
			return out
		}
		start := off + loc[1]
		v, n := kvValue(s[start:])
		out = append(out, keywordValue{value: v, start: start, end: start + n})
		off = start + n
		if n == 0 {
			off++
		}
		if off >= len(s) {
			return out
		}
	}
}
