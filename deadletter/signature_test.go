package deadletter

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestSignature_NormalizesRealMessages(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		message string
		want    string
	}{
		{"empty", "", ""},
		{"only whitespace", " \t\n ", ""},
		{"plain text unchanged", "context deadline exceeded", "context deadline exceeded"},
		{"context canceled", "context canceled", "context canceled"},
		{"signal", "signal: killed", "signal: killed"},
		{"seconds", "timeout after 305 seconds", "timeout after <n> seconds"},
		{"negative number", "lineNumber must be a non-negative integer, got -3", "lineNumber must be a non-negative integer, got <n>"},
		{"validation error", `poi "b3" (file "src/base.js"): name is required`, `poi "<str>" (file "<str>"): name is required`},
		{"dial tcp", "dial tcp 127.0.0.1:5432: connect: connection refused", "dial tcp <ip>: connect: connection refused"},
		{"dial tcp ipv6", "dial tcp [::1]:5432: connect: connection refused", "dial tcp <ip>: connect: connection refused"},
		{"dns lookup keeps host name", "dial tcp: lookup db.internal on 127.0.0.53:53: no such host", "dial tcp: lookup db.internal on <ip>: no such host"},
		{"cidr", "address 10.0.0.0/24 is not allowed", "address <ip> is not allowed"},
		{"postgres unique violation keeps SQLSTATE", `ERROR: duplicate key value violates unique constraint "pois_pkey" (SQLSTATE 23505)`, `ERROR: duplicate key value violates unique constraint "<str>" (SQLSTATE 23505)`},
		{"postgres undefined table keeps SQLSTATE", `ERROR: relation "failed_pois" does not exist (SQLSTATE 42P01)`, `ERROR: relation "<str>" does not exist (SQLSTATE 42P01)`},
		{"postgres statement timeout", "ERROR: canceling statement due to statement timeout (SQLSTATE 57014)", "ERROR: canceling statement due to statement timeout (SQLSTATE 57014)"},
		{"pgx connect with backtick dsn", "failed to connect to `host=localhost user=relay database=relay`: dial error (dial tcp 127.0.0.1:5432: connect: connection refused)", "failed to connect to `<str>`: dial error (dial tcp <ip>: connect: connection refused)"},
		{"go open", "open /var/lib/relay/x.log: no such file or directory", "open <path>: no such file or directory"},
		{"go fork exec", "fork/exec /usr/bin/node: no such file or directory", "fork/exec <path>: no such file or directory"},
		{"go write with pid dir", "write /tmp/relay-1234/out.json: no space left on device", "write <path>: no space left on device"},
		{"index out of range", "runtime error: index out of range [5] with length 3", "runtime error: index out of range [<n>] with length <n>"},
		{"nil pointer", "runtime error: invalid memory address or nil pointer dereference [signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x4a5b2c]", "runtime error: invalid memory address or nil pointer dereference [signal SIGSEGV: segmentation violation code=<hex> addr=<hex> pc=<hex>]"},
		{"go stack frame", "goroutine 17 [running]: /app/worker/resolve_file.go:193 +0x1d", "goroutine <n> [running]: <path> +<hex>"},
		{"river unregistered kind", "job kind is not registered in the client's Workers bundle: resolve_file", "job kind is not registered in the client's Workers bundle: resolve_file"},
		{"river attempts", "river: job 42 exhausted its 25 attempts", "river: job <n> exhausted its <n> attempts"},
		{"agent exit code", "command failed with exit code 3", "command failed with exit code <n>"},
		{"exit status", "exit status 137", "exit status <n>"},
		{"json invalid character", "invalid character 'x' looking for beginning of value", "invalid character '<str>' looking for beginning of value"},
		{"json quoted space", "invalid character ' ' in literal true (expecting 'e')", "invalid character '<str>' in literal true (expecting '<str>')"},
		{"json unmarshal unchanged", "json: cannot unmarshal string into Go struct field POI.lineNumber of type int", "json: cannot unmarshal string into Go struct field POI.lineNumber of type int"},
		{"python traceback", `Traceback (most recent call last): File "/app/x.py", line 12, in add ZeroDivisionError: division by zero`, `Traceback (most recent call last): File "<str>", line <n>, in add ZeroDivisionError: division by zero`},
		{"python key error", "KeyError: 'lineNumber'", "KeyError: '<str>'"},
		{"node type error", "TypeError: Cannot read properties of undefined (reading 'name') at /app/src/math.js:12:5", "TypeError: Cannot read properties of undefined (reading '<str>') at <path>"},
		{"relative paths", "resolving src/a.go:12:3 then ./a/b then ../x/y.py", "resolving <path> then <path> then <path>"},
		{"windows path", `open C:\relay\data\x.log: access denied`, "open <path>: access denied"},
		{"not paths", "i/o timeout reading TCP/IP application/json", "i/o timeout reading TCP/IP application/json"},
		{"protocol version", "unexpected HTTP/1.1 503 from 10.0.0.7:8080", "unexpected HTTP/<n> <n> from <ip>"},
		{"go-quoted windows path", `path "C:\\relay\\" is invalid`, `path "<str>" is invalid`},
		{"backslash before quote is kept", `path "C:\relay\" is invalid`, `path "<path>\" is invalid`},
		{"apostrophes are not quotes", "can't open file's header: don't retry; workers' queue 'default' is full", "can't open file's header: don't retry; workers' queue '<str>' is full"},
		{"escaped quote", `poi "a \"quoted\" id": bad`, `poi "<str>": bad`},
		{"empty quotes stay empty", `poi "": name is required`, `poi "": name is required`},
		{"rfc3339 timestamp", "lock held since 2026-11-21T04:22:23.123Z by worker 3", "lock held since <ts> by worker <n>"},
		{"rfc3339 with offset", "expired at 2026-11-21T04:22:23+01:00", "expired at <ts>"},
		{"go log and time.String", "2026/11/21 04:22:23 crashed at 2026-11-21 04:22:23.123456789 +0000 UTC m=+0.000123001", "<ts> crashed at <ts>"},
		{"syslog timestamp and date", "Nov 21 04:22:23 host relay[123]: failed on 2026-11-21", "<ts> host relay[<n>]: failed on <date>"},
		{"rfc1123 access log unix date", "Sat, 21 Nov 2026 04:22:23 GMT, 21/Nov/2026:04:22:23 +0000, Mon Jan  2 15:04:05 MST 2006", "<ts>, <ts>, <ts>"},
		{"uuid", "file 550e8400-e29b-41d4-a716-446655440000 not found", "file <uuid> not found"},
		{"git sha", "fatal: reference is not a tree: 3f2a9c1e5b7d4a6f8e0c2b4d6a8f0e1c3b5d7a9f", "fatal: reference is not a tree: <hex>"},
		{"pointer without 0x", "object c000123abc was freed", "object <hex> was freed"},
		{"hex words kept", "deadbeef cafebabe", "deadbeef cafebabe"},
		{"memory sizes", "allocated 4KiB then 1.5GB of 512MiB", "allocated <n>KiB then <n>GB of <n>MiB"},
		{"durations", "took 12ms, then 1m30s, 50% done, 1e10 ops", "took <n>ms, then <n>m<n>s, <n>% done, <n> ops"},
		{"url with password", "failed to connect to postgres://relay:s3cret@db.internal:5432/relay?sslmode=disable: timeout", "failed to connect to <url>: timeout"},
		{"quoted url", `Get "https://api.example.com/v1/items?id=5": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, `Get "<str>": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`},
		{"joined ids become n", "job_42 item-7 #12 10-20", "job_<n> item-<n> #<n> <n>-<n>"},
		{"words with digits kept", "utf8 sha256 v2 x86_64 int64 m12 utf-8 sha-256 iso-8859-1 v1.2.3 river_job", "utf8 sha256 v2 x86_64 int64 m12 utf-8 sha-256 iso-8859-1 v1.2.3 river_job"},
		{"whitespace collapsed", "  panic:\tboom\n\ngoroutine 1  ", "panic: boom goroutine <n>"},
		{"nul and invalid utf-8", "bad\x00byte \xff\xfe here", "bad byte \uFFFD\uFFFD here"},
		{"unterminated quote", `poi "m1 is missing 3 fields`, `poi "m1 is missing <n> fields`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Signature(tt.message)
			require.Equal(t, tt.want, got)
			require.Equal(t, got, Signature(got), "signature is not idempotent")
		})
	}
}

func TestSignature_GroupsEqualCausesAndSeparatesOthers(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		a, b  string
		share bool
	}{
		{"seconds", "timeout after 305 seconds", "timeout after 12 seconds", true},
		{"negative integers", "lineNumber must be a non-negative integer, got -3", "lineNumber must be a non-negative integer, got -17", true},
		{"poi ids", `poi "m1": name is required`, `poi "b42": name is required`, true},
		{"dial addresses", "dial tcp 127.0.0.1:5432: connect: connection refused", "dial tcp 10.0.0.7:6543: connect: connection refused", true},
		{"paths", "open /var/lib/relay/a.log: permission denied", "open /tmp/b/c.log: permission denied", true},
		{"timestamps", "stale since 2026-11-21T04:22:23Z", "stale since 2025-01-02 03:04:05.999+02:00", true},
		{"uuids", "file 550e8400-e29b-41d4-a716-446655440000 gone", "file 6ba7b810-9dad-11d1-80b4-00c04fd430c8 gone", true},
		{"urls", "GET http://a.example:8080/x?q=1 failed", "GET https://u:p@b.example/y failed", true},
		{"job ids", "job_42 failed", "job_7 failed", true},
		{"index panics", "index out of range [5] with length 3", "index out of range [0] with length 0", true},
		{"timeout vs refused", "timeout after 5 seconds", "connection refused", false},
		{"name vs type", "name is required", "type is required", false},
		{"units differ", "took 5ms", "took 5s", false},
		{"constraint sqlstate", "violates constraint (SQLSTATE 23505)", "violates constraint (SQLSTATE 23502)", false},
		{"x86_64 vs x86_32", "unsupported arch x86_64", "unsupported arch x86_32", false},
		{"exit signal", "signal: killed", "signal: terminated", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, b := Signature(tt.a), Signature(tt.b)
			if tt.share {
				require.Equal(t, a, b)
			} else {
				require.NotEqual(t, a, b)
			}
		})
	}
}

func TestSignature_CapsLength(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		message string
		want    string
	}{
		{"cut at a word", strings.Repeat("abcdefghi ", 60), strings.TrimSpace(strings.Repeat("abcdefghi ", 50)) + "…"},
		{"cut inside a long word", strings.Repeat("é", 600), strings.Repeat("é", 499) + "…"},
		{"exactly the cap is not cut", strings.Repeat("a", 500), strings.Repeat("a", 500)},
		{"placeholders count", strings.Repeat("7 ", 200), strings.TrimSpace(strings.Repeat("<n> ", 125)) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Signature(tt.message)
			require.Equal(t, tt.want, got)
			require.LessOrEqual(t, utf8.RuneCountInString(got), signatureMaxRunes)
			require.Equal(t, got, Signature(got))
		})
	}
}

func FuzzSignature(f *testing.F) {
	for _, seed := range []string{
		"",
		"timeout after 305 seconds",
		`poi "b3" (file "src/base.js"): name is required`,
		"dial tcp [::1]:5432: connect: connection refused",
		"ERROR: duplicate key value violates unique constraint \"pois_pkey\" (SQLSTATE 23505)",
		"can't open 'x' workers' 'y",
		"2026-11-21T04:22:23.123Z Nov 21 04:22:23 21/Nov/2026:04:22:23 +0000",
		"550e8400-e29b-41d4-a716-446655440000 3f2a9c1e5b7d4a6f8e0c2b4d6a8f0e1c3b5d7a9f 0x4a5b2c",
		"postgres://u:p@h:5432/db?x=1: /a/b.go:1:2 C:\\x\\y ./a ../b/c.py src/x.js",
		"job_42 x86_64 utf-8 iso-8859-1 1m30s 1.5GB -3 #12 1e10 v1.2.3",
		"a\x00b\xffc\t\n\"\\\"'`",
		strings.Repeat("deadbeef12 ", 60),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, message string) {
		got := Signature(message)
		require.True(t, utf8.ValidString(got), "invalid UTF-8 in %q", got)
		require.NotContains(t, got, "\x00")
		require.LessOrEqual(t, utf8.RuneCountInString(got), signatureMaxRunes)
		require.Equal(t, got, Signature(got), "not idempotent for %q", message)
	})
}

func BenchmarkSignature(b *testing.B) {
	// A 200-byte message with a little of everything.
	msg := `poi "b42" (file "src/base.js"): resolver failed after 305ms: dial tcp 10.0.0.7:6543: ` +
		`connect: connection refused at 2026-11-21T04:22:23.123Z (job_42, sha 3f2a9c1e5b7d0, exit 3) [attempt 2 of 9, 4 KiB]`
	if len(msg) != 200 {
		b.Fatalf("message is %d bytes, want 200", len(msg))
	}
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		Signature(msg)
	}
}
