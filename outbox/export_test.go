package outbox

// DeleteRemovedSQL exposes the statement that deletes a republished file's
// removed POIs.
const DeleteRemovedSQL = deleteRemovedSQL
