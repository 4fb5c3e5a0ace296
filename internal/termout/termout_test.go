package termout_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/termout"
)

func TestWriter_EscapesWhatATerminalWouldObey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"plain text and layout", "id\tfile\nx1\tsrc/a.go\n", "id\tfile\nx1\tsrc/a.go\n"},
		{"CSI recolour", "x\x1b[31mred", `x\u001b[31mred`},
		{"OSC window title", "\x1b]0;pwned\x07", `\u001b]0;pwned\u0007`},
		{"erase line with CR", "ok\rFAKE", `ok\u000dFAKE`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
		{"DEL", "a\x7fb", `a\u007fb`},
		{"bidi override", "abc\u202edef", `abc\u202edef`},
		{"invalid UTF-8", "a\xffb", `a\xffb`},
		{"non-ASCII kept", "héllo 世界 ✓", "héllo 世界 ✓"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			w := termout.NewWriter(&b)
			n, err := w.Write([]byte(tc.in))
			require.NoError(t, err)
			require.Equal(t, len(tc.in), n)
			require.NoError(t, w.Flush())
			require.Equal(t, tc.want, b.String())
		})
	}
}

func TestWriter_DecodesASequenceSplitAcrossWrites(t *testing.T) {
	t.Parallel()
	in := []byte("世\u009b界") // the C1 control is two bytes
	for cut := 0; cut <= len(in); cut++ {
		var b bytes.Buffer
		w := termout.NewWriter(&b)
		_, err := w.Write(in[:cut])
		require.NoError(t, err)
		_, err = w.Write(in[cut:])
		require.NoError(t, err)
		require.NoError(t, w.Flush())
		require.Equal(t, `世\u009b界`, b.String(), "cut at %d", cut)
	}
	var b bytes.Buffer
	w := termout.NewWriter(&b)
	_, _ = w.Write([]byte("a\xe4\xb8")) // truncated at the end of output
	require.NoError(t, w.Flush())
	require.Equal(t, `a\xe4\xb8`, b.String())
}

// JSON written through a Writer decodes to the same values.
func TestWriter_KeepsJSONValues(t *testing.T) {
	t.Parallel()
	v := map[string]string{"id": "x\x1b[2J\u009b\u202e\x7f\r\n\t\"\\ok 世界"}
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var b bytes.Buffer
	w := termout.NewWriter(&b)
	_, err = w.Write(raw)
	require.NoError(t, err)
	require.NoError(t, w.Flush())
	for _, r := range b.String() {
		require.False(t, r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x202e, "raw control %U in %q", r, b.String())
	}
	var got map[string]string
	require.NoError(t, json.Unmarshal(b.Bytes(), &got))
	require.Equal(t, v, got)
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("no space left on device")
}

func TestWriter_KeepsTheFirstError(t *testing.T) {
	t.Parallel()
	fw := &failWriter{}
	w := termout.NewWriter(fw)
	_, err := w.Write([]byte("a"))
	require.EqualError(t, err, "no space left on device")
	_, err = w.Write([]byte("b"))
	require.EqualError(t, err, "no space left on device")
	require.EqualError(t, w.Flush(), "no space left on device")
	require.Equal(t, 1, fw.n, "no write after the first error")
}

func TestString_EscapesLayoutToo(t *testing.T) {
	t.Parallel()
	require.Equal(t, "src/a.go", termout.String("src/a.go"))
	require.Equal(t, `a\u000a9\u0009forged\u001b[0m`, termout.String("a\n9\tforged\x1b[0m"))
	require.Equal(t, `a\u000ab\u0009c`, termout.String("a\nb\tc"))
	require.Equal(t, "\ufffd ok", termout.String("\ufffd ok"), "a valid U+FFFD is text")
	require.Equal(t, `\xff`, termout.String("\xff"))
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[31m", "\u009b", "\xff\xfe", "a\nb", "\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := termout.String(s)
		require.True(t, utf8.ValidString(out))
		for _, r := range out {
			require.False(t, r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069), "raw control %U", r)
		}
		safe := utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
			return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r >= 0x2000 && r <= 0x206f) || r == 0x061c
		})
		if safe {
			require.Equal(t, s, out, "text without controls is unchanged")
		}
	})
}
