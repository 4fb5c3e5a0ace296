package outbox_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
)

// The publish's supersede of failed_pois rows probes the actionable rows of
// each file it publishes, even on a generic plan and with many rows of
// other files and of closed statuses: its cost follows the file's
// actionable rows, not the table.
func TestSupersedeFailedSQL_ProbesTheActionableRowsOfEachFile(t *testing.T) {
	t.Parallel()
	tx := testdb.Tx(t)
	_, err := tx.Exec(t.Context(), `
		INSERT INTO files (file_id, version, poi_count) SELECT 'src/f' || k || '.js', 1, 50 FROM generate_series(0, 199) k;
		INSERT INTO failed_pois (original_job_id, file_id, poi_id, poi_index, error_message, error_class, error_signature,
		                         original_poi_data, status)
		SELECT k, 'src/f' || (k % 200) || '.js', 'p' || k, 0, 'm', 'validation', 's', '{}',
		       CASE WHEN k % 10 = 0 THEN 'new' ELSE 'reprocessed' END
		FROM generate_series(0, 9999) k;
		ANALYZE failed_pois`)
	require.NoError(t, err)
	text := testdb.GenericPlan(t, tx, outbox.SupersedeFailedSQL, `'', '{src/f1.js}'`)
	require.NotContains(t, text, "Seq Scan", text)
	require.Contains(t, text, "failed_pois_actionable_idx", text)
	for line := range strings.SplitSeq(text, "\n") {
		if strings.Contains(line, "Index Cond:") && strings.Contains(line, "repository =") {
			require.Contains(t, line, " AND ", "a key looked up by its repository alone:\n%s", text)
		}
	}
}
