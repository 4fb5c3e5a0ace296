package outbox

import (
	"encoding/json"

	"github.com/riverqueue/river"
)

// KindResolveFile is the River job kind of a file's POI batch.
const KindResolveFile = "resolve_file"

// QueueResolve is the River queue resolve_file jobs go to.
const QueueResolve = "resolve"

// ResolveFileArgs is the resolve_file job: one file's POIs (or, for a file
// larger than the per-job limit, one part of them), carried exactly as they
// were received so the worker can validate and dead-letter each one on its
// own.
//
// In river_job.args the POIs are stored compressed (poisZstd, see
// MarshalJSON): a 50-POI file's args are about 2 KB instead of 25 KB, which
// PostgreSQL would otherwise parse, compress, decompress and print, and
// relay and River would encode and decode, on every insert, fetch and
// completion of the job. The other fields stay plain JSON for SQL and River's
// UI; ExpandArgs turns stored args back into the readable form.
type ResolveFileArgs struct {
	// Repository is the file's repository ("" the default one).
	Repository string `json:"repository,omitempty"`
	// FileID is the analysed file.
	FileID string `json:"fileId"`
	// FileVersion is the files.version this analysis was published as. A job
	// whose version is older than the file's current one has been superseded
	// by a re-publish and completes without effect.
	FileVersion int64 `json:"fileVersion"`
	// PublishXID is the PostgreSQL transaction id (xid8) of the publish that
	// enqueued the job. A reference resolved under a snapshot whose xmin is
	// above it already saw this publish's symbols, so the job does not
	// re-resolve it. Zero (jobs from before it existed, reprocess jobs)
	// means unknown: every reference to ChangedNames is re-resolved.
	PublishXID int64 `json:"publishXid,omitempty"`
	// POIs is the complete POI array of the file (or of this part), each
	// element the POI's JSON as received.
	POIs []json.RawMessage `json:"pois"`
	// Part and Parts number the jobs of a file that was split (1-based);
	// both are zero for the usual single job.
	Part  int `json:"part,omitempty"`
	Parts int `json:"parts,omitempty"`
	// ChangedNames are the names whose definitions this publish added,
	// removed or moved; references to them from other files are re-resolved.
	ChangedNames []string `json:"changedNames,omitempty"`
	// FailedPOIIDs, set on jobs made by `relay reprocess`, holds for each
	// POI (same index) the failed_pois row it came from.
	FailedPOIIDs []int64 `json:"failedPoiIds,omitempty"`
}

// Kind is the River job kind.
func (ResolveFileArgs) Kind() string { return KindResolveFile }

// InsertOpts sends resolve_file jobs to their own queue.
func (ResolveFileArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueResolve}
}

// Split cuts a file's POIs into the consecutive parts that its jobs carry,
// each at most maxBytes of POI JSON (a single POI larger than that is a part
// of its own), and returns each part's end index in pois. There is always at
// least one part: an empty (re-)analysis still gets its one job. The
// publisher and the reprocessor both split with it, so a file's jobs are cut
// the same way whoever enqueues them.
func Split(pois []json.RawMessage, maxBytes int) []int {
	var ends []int
	size := 0
	for i, raw := range pois {
		if size > 0 && size+len(raw) > maxBytes {
			ends = append(ends, i)
			size = 0
		}
		size += len(raw) + 1
	}
	return append(ends, len(pois))
}

// SamePublish reports whether a file at version and published by
// transaction xid is the publish a job of (jobVersion, jobXID) belongs to:
// the batch and the linker apply a job's rows only then. A version alone
// is not enough: it starts again at 1 when a deleted file is created
// again. An unknown transaction id (0) on either side compares by version
// alone.
func SamePublish(version, xid, jobVersion, jobXID int64) bool {
	return version == jobVersion && (xid == 0 || jobXID <= 0 || xid == jobXID)
}
