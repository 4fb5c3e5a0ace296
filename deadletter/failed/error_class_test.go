package failed

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClasses_ListsEveryClassInOrder(t *testing.T) {
	t.Parallel()

	require.Equal(t, []ErrorClass{ClassValidation, ClassPanic, ClassTimeout, ClassResolver, ClassStorage}, Classes())

	classes := Classes()
	classes[0] = "changed"
	require.Equal(t, ClassValidation, Classes()[0], "Classes must return a fresh slice")
}

func TestParseErrorClass(t *testing.T) {
	t.Parallel()

	tests := []struct {
		input   string
		want    ErrorClass
		wantErr string
	}{
		{input: "validation", want: ClassValidation},
		{input: "panic", want: ClassPanic},
		{input: "timeout", want: ClassTimeout},
		{input: "resolver", want: ClassResolver},
		{input: "storage", want: ClassStorage},
		{input: " Timeout ", want: ClassTimeout},
		{input: "PANIC", want: ClassPanic},
		{input: "", wantErr: `unknown error class "" (valid classes: validation, panic, timeout, resolver, storage)`},
		{input: "panics", wantErr: `unknown error class "panics" (valid classes: validation, panic, timeout, resolver, storage)`},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			t.Parallel()
			got, err := ParseErrorClass(tt.input)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				require.Empty(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
