package outbox

// DeleteRemovedSQL exposes the statement that deletes a republished file's
// removed POIs.
const DeleteRemovedSQL = deleteRemovedSQL

// PublisherStatements exposes the statements a publish runs in the
// caller's transaction that read or delete by key, with arguments to
// explain them with.
var PublisherStatements = map[string]struct{ SQL, Args string }{
	"deleteQueued":     {deleteQueuedSQL, `'{""}', '{src/a.js}'`},
	"lockFiles":        {lockFilesSQL, `'{""}', '{src/a.js}'`},
	"otherOwner":       {otherOwnerSQL, `'{""}', '{a1}', '{src/a.js}'`},
	"oldSymbols":       {oldSymbolsSQL, `'{""}', '{src/a.js}'`},
	"deleteRemoved":    {deleteRemovedSQL, `'{""}', '{src/a.js}', '{"",""}', '{a1,a2}'`},
	"deleteReferences": {deleteReferencesSQL, `'{""}', '{src/a.js}'`},
}
