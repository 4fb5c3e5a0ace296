package scipindex

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/resolver"
)

func TestDelegates(t *testing.T) {
	t.Parallel()
	method := &def{typ: resolver.TypeMethod, name: "create"}
	function := &def{typ: resolver.TypeFunction, name: "create"}
	for _, tc := range []struct {
		code string // the call site is the last "create("
		df   *def
		want bool
	}{
		{"return self._handler_for_request(request).create(request)", method, true},
		{"handler.create(request)", method, true},
		{"self.proxy_target.create(request)", method, true},
		{"return this.inner?.create(x)", method, true},
		{"o.self.create(x)", method, true},
		{"self.create(request)", method, false},    // the object itself: the index's, or recursion
		{"cls.create(request)", method, false},     // a classmethod's own class
		{"this.create(x)", method, false},          // JavaScript's object itself
		{"super().create(request)", method, false}, // the parent's, which the index resolves
		{"Base.create(self, request)", method, false},
		{"create(request)", method, false},           // a plain call
		{"handler.create(request)", function, false}, // a function forwards nothing
		{"handler.build(request)", &def{typ: resolver.TypeMethod, name: "build2"}, false},
	} {
		off := strings.LastIndex(tc.code, "create(")
		if tc.df.name == "build2" {
			off = strings.LastIndex(tc.code, "build(")
		}
		require.Equal(t, tc.want, delegates(tc.code, off, tc.df, tc.code[off:strings.IndexByte(tc.code[off:], '(')+off]), tc.code)
	}
}
