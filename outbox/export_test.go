package outbox

// DeleteRemovedSQL exposes the statement that deletes a republished file's
// removed POIs.
const DeleteRemovedSQL = deleteRemovedSQL

// PublisherStatements exposes the statements a publish runs in the
// caller's transaction that read or delete by key, with parameters to
// explain them with.
var PublisherStatements = map[string]struct {
	SQL    string
	Params []any
}{
	"deleteQueued":     {deleteQueuedSQL, []any{"", []string{"src/f1.js"}}},
	"lockFiles":        {lockFilesSQL, []any{"", []string{"src/f1.js"}}},
	"otherOwner":       {otherOwnerSQL, []any{"", []string{"f1.p1"}, []string{"src/f1.js"}, []string{"src/f1.js"}}},
	"oldSymbols":       {oldSymbolsSQL, []any{"", []string{"src/f1.js"}}},
	"deleteReferences": {deleteReferencesSQL, []any{"", []string{"src/f1.js"}}},
	"deleteRemoved":    {deleteRemovedSQL, []any{"", []string{"src/f1.js"}, []string{"f1.p1", "f1.p2"}, []string{"src/f1.js", "src/f1.js"}}},
	"clearTargets":     {clearTargetsSQL, []any{"", []string{"f1.p3", "f1.p4"}}},
	"stored":           {storedSQL, []any{"", []string{"f1.p1", "f1.p2"}, []string{"src/f1.js", "src/f1.js"}}},
}

// SetRejectedHook makes d call hook after each rejected publish of a
// drain, before it looks for the owner file's queued analysis.
func SetRejectedHook(d *Drainer, hook func(*RejectError)) { d.rejectedHook = hook }
