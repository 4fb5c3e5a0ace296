package outbox

// supersedeFailedSQL closes the actionable failed_pois rows (status new,
// reprocessing or ignored) of the files a publish writes in one repository
// ($1 the repository, $2 file ids): they were failed by an earlier version, which a reprocess
// must never apply over this one (docs/failed_pois.md, "Versions"). Each
// row becomes superseded, with the reason naming the version published. It
// runs in the publish's transaction after the files' rows are locked and
// their versions increased: a reprocess batch of one of these files holds
// the file's row FOR SHARE while it checks the version and its rows, so it
// sees them either before the publish (which waits for it) or after it
// commits (TestReprocess_JobQueuedBeforeAHeldPublishOfItsFileWritesNothing,
// TestDelete_ReprocessQueuedBeforeADeleteAndARepublishWritesNothing). The
// lookups are driven from the arrays, a probe of failed_pois_actionable_idx
// per file (TestSupersedeFailedSQL_ProbesTheActionableRowsOfEachFile); the
// status is checked again on the row updated, so a row a concurrent
// reprocess chunk marked meanwhile is superseded too. The reason is built
// with ||, not format(): Citus refuses a STABLE function of a column in an
// UPDATE ("STABLE functions used in UPDATE queries cannot be called with
// column references"), and bigint's text cast is immutable. With the
// repository a value, Citus routes the statement to the node holding it.
const supersedeFailedSQL = `
	UPDATE failed_pois t
	SET status = 'superseded', superseded_at = now(), updated_at = now(),
	    superseded_reason = 'version ' || d.version::text || ' of the file was published'
	FROM (
		SELECT x.id, f.version FROM unnest($2::text[]) AS u(file)
		CROSS JOIN LATERAL (SELECT version FROM files WHERE repository = $1 AND file_id = u.file OFFSET 0) f
		CROSS JOIN LATERAL (SELECT id FROM failed_pois
		                    WHERE repository = $1 AND file_id = u.file AND status IN ('new', 'reprocessing', 'ignored')
		                    OFFSET 0) x) d
	WHERE t.repository = $1 AND t.id = d.id AND t.status IN ('new', 'reprocessing', 'ignored')`
