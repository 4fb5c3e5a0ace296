package resolver

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAnswerNames(t *testing.T) {
	t.Parallel()

	all := ByName | ByReceiver | ByID | BySymbol
	method := Answerer{ID: "c1", Type: TypeMethod, Name: "Query", Receiver: "Conn", Symbol: "m/pgx.(*Conn).Query"}
	tests := []struct {
		name  string
		a     Answerer
		kinds NameKinds
		want  []string
	}{
		{"GoMethod", method, all, []string{"Query", "Conn.Query", "id:c1", "sym:m/pgx.(*Conn).Query"}},
		{"NameAndReceiverOnly", method, ByName | ByReceiver, []string{"Query", "Conn.Query"}},
		{"IDAndSymbolOnly", method, ByID | BySymbol, []string{"id:c1", "sym:m/pgx.(*Conn).Query"}},
		{"FunctionWithoutSymbol", Answerer{ID: "f1", Type: TypeFunction, Name: "open"}, all, []string{"open", "id:f1"}},
		{"ImportAnswersToNone", Answerer{ID: "i1", Type: TypeImport, Name: "fmt", Symbol: "fmt"}, all, nil},
		{"NoKinds", method, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			AnswerNames(tt.a, tt.kinds, func(n string) { got = append(got, n) })
			require.Equal(t, tt.want, got)
		})
	}
}
