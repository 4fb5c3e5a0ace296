package outbox

// SupersedeFailedSQL exposes the publish's supersede of failed_pois rows.
const SupersedeFailedSQL = supersedeFailedSQL
