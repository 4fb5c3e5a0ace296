package outbox

// supersedeFailedSQL closes the actionable failed_pois rows (status new,
// reprocessing or ignored) of the files a publish writes ($1 repositories,
// $2 file ids): they were failed by an earlier version, which a reprocess
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
// reprocess chunk marked meanwhile is superseded too.
const supersedeFailedSQL = `
	UPDATE failed_pois t
	SET status = 'superseded', superseded_at = now(), updated_at = now(),
	    superseded_reason = format('version %s of the file was published', d.version)
	FROM (
		SELECT x.repository, x.id, f.version FROM unnest($1::text[], $2::text[]) AS u(repo, file)
		CROSS JOIN LATERAL (SELECT version FROM files WHERE repository = u.repo AND file_id = u.file OFFSET 0) f
		CROSS JOIN LATERAL (SELECT repository, id FROM failed_pois
		                    WHERE repository = u.repo AND file_id = u.file AND status IN ('new', 'reprocessing', 'ignored')
		                    OFFSET 0) x) d
	WHERE t.repository = d.repository AND t.id = d.id AND t.status IN ('new', 'reprocessing', 'ignored')`
