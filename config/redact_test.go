package config_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/config"
)

// The cases the old regular expressions printed in full: pgx accepts '#'
// and '?' in a userinfo password and connects, so these reached the demo's
// closing hint and every connection error.
var leakedBefore = []struct{ url, want string }{
	{"postgres://adv_pw:s3cr3t#Pss@127.0.0.1:1/relay?sslmode=disable", "postgres://adv_pw:xxxxx@127.0.0.1:1/relay?sslmode=disable"},
	{"postgres://adv_pw:s3cr3t?Pss@127.0.0.1:1/relay?sslmode=disable", "postgres://adv_pw:xxxxx@127.0.0.1:1/relay?sslmode=disable"},
	{"postgres://adv_pw:s3cr3t/Pss@127.0.0.1:1/relay?sslmode=disable", "postgres://adv_pw:xxxxx@127.0.0.1:1/relay?sslmode=disable"},
	{"postgres://adv_pw:s3cr3t Pss@127.0.0.1:1/relay?sslmode=disable", "postgres://adv_pw:xxxxx@127.0.0.1:1/relay?sslmode=disable"},
	{"postgres://adv_pw:s3cr3t@Pss@127.0.0.1:1/relay?sslmode=disable", "postgres://adv_pw:xxxxx@127.0.0.1:1/relay?sslmode=disable"},
	{"postgresql://adv_pw:s3cr3t:P@ss#/?@127.0.0.1:1/relay", "postgresql://adv_pw:xxxxx@127.0.0.1:1/relay"},
	{"postgres://127.0.0.1:1/relay?sslmode=disable&password=s3cr3t%23Pss", "postgres://127.0.0.1:1/relay?sslmode=disable&password=xxxxx"},
	{"postgres://127.0.0.1:1/relay?SSLPassword=s3cr3tPss&sslmode=disable", "postgres://127.0.0.1:1/relay?SSLPassword=xxxxx&sslmode=disable"},
	{`host=db user=relay password='a b\' c' dbname=relay`, "host=db user=relay password=xxxxx dbname=relay"},
	{`host=db user=relay password = a\ b dbname=relay`, "host=db user=relay password = xxxxx dbname=relay"},
	{`host=db password='unterminated \' quote user=relay`, "host=db password=xxxxx"},
}

func TestRedactURL_HidesPasswordsTheRegexpsLeaked(t *testing.T) {
	t.Parallel()
	for _, tc := range leakedBefore {
		require.Equal(t, tc.want, config.RedactURL(tc.url), tc.url)
		// Redact, on free text, is at least as strong.
		msg := "error connecting to database " + tc.url + " (dial error)"
		require.NotContains(t, config.Redact(msg), "s3cr3t", msg)
		require.NotContains(t, config.Redact(msg), "a b", msg)
	}
}

func TestRedactURL_KeepsWhatIsNotSecret(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://localhost:5432/relay?sslmode=disable":                    "postgres://localhost:5432/relay?sslmode=disable",
		"postgres://relay@db:5432/relay":                                     "postgres://relay@db:5432/relay",
		"postgres://relay:p%40ss%23@db:5432/relay?application_name=x":        "postgres://relay:xxxxx@db:5432/relay?application_name=x",
		"postgres://relay:pw@h1:5432,h2:5433/relay?target_session_attrs=any": "postgres://relay:xxxxx@h1:5432,h2:5433/relay?target_session_attrs=any",
		"postgres://relay:pw@[::1]:5432/relay":                               "postgres://relay:xxxxx@[::1]:5432/relay",
		"host=db port=5432 user=relay dbname=relay":                          "host=db port=5432 user=relay dbname=relay",
		// An '@' after the userinfo makes the structure ambiguous (it
		// could be a password's): everything up to it is hidden.
		"postgres://relay:pw@db/relay?application_name=a@b": "postgres://relay:xxxxx@b",
	} {
		require.Equal(t, want, config.RedactURL(in), in)
	}
}

// A Redactor knows the password, so it hides it in text no structural rule
// can parse: a library's message that quotes half a URL, a %q- or
// JSON-escaped copy, the encoded form.
func TestRedactor_HidesTheKnownPasswordAnywhere(t *testing.T) {
	t.Parallel()
	const pw = `s3cr3t#P"ss\`
	u := "postgres://adv_pw:" + pw + "@127.0.0.1:1/relay"
	r := config.NewRedactor(u)
	j, err := json.Marshal(pw)
	require.NoError(t, err)
	for _, msg := range []string{
		`parse "postgres://adv_pw:s3cr3t": invalid port ":s3cr3t" after host`, // net/url, cut at '#'
		"password is " + pw,
		"quoted " + strconv.Quote(pw),
		`{"msg":` + string(j) + `}`,
		"encoded " + url.QueryEscape(pw) + " and " + url.PathEscape(pw),
		fmt.Sprintf("%q", u),
	} {
		out := r.Redact(msg)
		require.NotContains(t, out, "s3cr3t", msg)
		require.NotContains(t, out, pw, msg)
	}
	require.Equal(t, "nothing to hide", r.Redact("nothing to hide"))
}

// Load teaches Redact the password of every database_url it reads, so the
// CLI's final config.Redact(err.Error()) hides it wherever it is quoted.
func TestRedactor_HidesThePasswordAndItsFragments(t *testing.T) {
	t.Parallel()
	const pw = "L0ad#Rem3mbered"
	r := config.NewRedactor("postgres://adv_pw:" + pw + "@127.0.0.1:1/relay")
	require.Equal(t, "pgx said: xxxxx (or xxxxx)", r.Redact("pgx said: "+pw+" (or L0ad)"),
		"the password and its fragments before '#' are hidden in any text")
}

// Load's errors hide every database password it read, in whatever form
// the failing setting quoted it.
func TestLoad_ErrorsNeverShowAPasswordItRead(t *testing.T) {
	t.Parallel()
	const pw = "L0ad#Rem3mbered"
	_, err := config.Load(flags(t, "--database-url", "postgres://adv_pw:"+pw+"@127.0.0.1:1/relay", "--http-addr", pw),
		envOf(nil))
	require.Error(t, err)
	require.Contains(t, err.Error(), "http_addr")
	require.NotContains(t, err.Error(), "Rem3mbered")
}

func TestRedact_UnchangedWithoutSecrets(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"error connecting to database postgres://localhost:5432/relay?sslmode=disable: connection refused",
		"invalid http_addr: \"nonsense\" must be host:port",
		"mail admin@example.com",
	} {
		require.Equal(t, s, config.Redact(s))
	}
}

// FuzzRedact checks the one property that matters: a password never
// survives redaction, whatever it holds ('#', '?', '/', '@', ' ', ':', '%',
// quotes, backslashes) and however it is written (raw or percent-encoded
// userinfo, query parameter, keyword/value DSN quoted or not), by
// RedactURL on the connection string, by Redact on a message quoting it,
// and by a Redactor that knows it on a message quoting it in any way.
func FuzzRedact(f *testing.F) {
	for _, seed := range []string{
		"s3cr3t#Pss", "s3cr3t?Pss", "s3cr3t/Pss", "s3cr3t Pss", "s3cr3t@Pss", "s3cr3t%Pss",
		`a b\' c`, `qu"ote`, `back\slash`, "co:lo:n", "p@ss/w?rd#x", "ab://cd@ef", "  ", "x%40y", "12/34",
		"password=inner", "ünïcødé", "tab\tnew\nline", "'", `\`, "@", "xxxxxx-not-a-mask",
	} {
		for form := range uint8(6) {
			f.Add(seed, form)
		}
	}
	f.Fuzz(func(t *testing.T, pw string, form uint8) {
		if pw == "" || strings.ContainsRune(pw, 0) || !isText(pw) {
			return
		}
		const (
			user = "adv_pw"
			host = "127.0.0.1:1"
		)
		var cs, masked string
		switch form % 6 {
		case 0: // raw userinfo: what pgx accepts and more
			cs = "postgres://" + user + ":" + pw + "@" + host + "/relay?sslmode=disable"
		case 1: // properly encoded userinfo
			cs = "postgres://" + url.UserPassword(user, pw).String() + "@" + host + "/relay?sslmode=disable"
		case 2: // query parameter
			cs = "postgres://" + host + "/relay?sslmode=disable&password=" + url.QueryEscape(pw)
		case 3: // keyword/value, quoted
			cs = "host=127.0.0.1 port=1 user=" + user + " password='" +
				strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw) + "' dbname=relay"
		case 4: // keyword/value, unquoted with escapes
			cs = "host=127.0.0.1 port=1 password=" + escapeKV(pw) + " dbname=relay"
		case 5: // raw userinfo inside a libpq-style message
			cs = "postgresql://" + user + ":" + pw + "@" + host
		}
		// Everything the output may legitimately hold: the connection string
		// with its password gone, written the ways redaction writes it, alone
		// and in the message.
		forms := []string{
			"postgres://" + user + ":" + config.Mask + "@" + host + "/relay?sslmode=disable",
			"postgres://" + config.Mask + "@" + host + "/relay?sslmode=disable",
			"postgresql://" + user + ":" + config.Mask + "@" + host,
			"postgresql://" + config.Mask + "@" + host,
			"postgres://" + host + "/relay?sslmode=disable&password=" + config.Mask,
			"host=127.0.0.1 port=1 user=" + user + " password=" + config.Mask + " dbname=relay",
			"host=127.0.0.1 port=1 password=" + config.Mask + " dbname=relay",
		}
		for _, m := range forms[:len(forms):len(forms)] {
			forms = append(forms, "error connecting to database "+m+": dial error (user="+user+")")
		}
		masked = strings.Join(forms, "\n")
		if strings.Contains(masked, pw) || strings.TrimSpace(pw) == "" {
			return // the password is also something that is not secret
		}

		out := config.RedactURL(cs)
		require.NotContains(t, out, pw, "RedactURL(%q) = %q", cs, out)

		msg := "error connecting to database " + cs + ": dial error (user=" + user + ")"
		// Free text without knowing the password: where a raw URL's
		// password holds whitespace, nothing tells it from the words
		// around it (pgx refuses such a URL; a Redactor hides it, below).
		if raw := form%6 == 0 || form%6 == 5; !raw || !strings.ContainsFunc(pw, isSpaceRune) {
			out = config.Redact(msg)
			require.NotContains(t, out, pw, "Redact(%q) = %q", msg, out)
		}

		// Knowing the password, any quoting of it is hidden.
		if len(pw) < 3 {
			return // too short to hide everywhere; the structure hid it above
		}
		r := config.NewRedactor(cs)
		j, err := json.Marshal(msg)
		require.NoError(t, err)
		var pe *pgconn.ParseConfigError
		_, perr := pgconn.ParseConfig(cs)
		pgxMsg := ""
		if errors.As(perr, &pe) {
			pgxMsg = perr.Error()
		}
		for _, text := range []string{msg, strconv.Quote(msg), string(j), pw, pgxMsg} {
			out := r.Redact(text)
			require.NotContains(t, out, pw, "Redactor(%q).Redact(%q) = %q", cs, text, out)
		}
	})
}

func isText(s string) bool {
	for _, r := range s {
		if r == '\uFFFD' || r < 0x20 && r != '\t' && r != '\n' {
			return false
		}
	}
	return true
}

func isSpaceRune(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
}

// escapeKV writes s as an unquoted libpq keyword/value value.
func escapeKV(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '\\' || r == '\'' || isSpaceRune(r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
