package resolvefile_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
)

// A reprocessed POI that enters the symbol table for the first time is the
// target of the references to its symbol and id stored before, as of those
// to its name.
func TestResolveFileWorker_ReprocessedPOIResolvesReferencesToItsSymbolAndID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setupE2E(t, 2)
	e.publish(t, outbox.Analysis{FileID: "a.go", POIs: []json.RawMessage{json.RawMessage(
		`{"id":"a1","type":"function_definition","name":"A","filePath":"a.go","lineNumber":1,` +
			`"references":[{"type":"CALLS","symbol":"m.B"},{"type":"CALLS","targetId":"b1"}]}`)}})
	e.publish(t, outbox.Analysis{FileID: "b.ts", POIs: []json.RawMessage{json.RawMessage(
		`{"id":"b1","type":"function_definition","name":"B","filePath":"b.ts","lineNumber":"two","symbol":"m.B"}`)}})
	e.start(t)
	waitDrained(t, e.db.Pool)
	require.Equal(t, 2, testdb.Count(t, e.db.Pool, `SELECT count(*) FROM poi_references WHERE source_poi_id = 'a1' AND target_poi_id IS NULL`))

	_, err := e.db.Pool.Exec(ctx, `UPDATE failed_pois SET original_poi_data = jsonb_set(original_poi_data, '{lineNumber}', '2') WHERE poi_id = 'b1'`)
	require.NoError(t, err)
	res, err := failed.NewReprocessor(e.db.Pool, e.client, nil, testdb.Logger(t)).
		Run(ctx, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}}, "tester", nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Jobs)
	waitDrained(t, e.db.Pool)

	require.Equal(t, 1, testdb.Count(t, e.db.Pool, `SELECT count(*) FROM pois WHERE poi_id = 'b1' AND symbol = 'm.B'`))
	require.Equal(t, 2, testdb.Count(t, e.db.Pool, `SELECT count(*) FROM poi_references WHERE source_poi_id = 'a1' AND target_poi_id = 'b1'`),
		"the references by symbol and by id both resolve")
	require.Equal(t, []string{"a1 CALLS b1"}, relationships(t, e.db.Pool))
}
