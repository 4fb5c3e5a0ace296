-- +goose Up
-- files.publish_xid: the transaction id (xid8) of the publish that wrote the
-- file's current version. A file's version starts again at 1 when the file
-- is created again after `relay repository delete`, so a version alone does
-- not tell a job of the deleted file from the new file's: a batch (and a
-- link round) applies a publish's work only while the file is at that
-- publish's version and transaction
-- (TestDelete_AJobOfADeletedFileIsNotAppliedToItsSuccessor). NULL for the
-- rows already there: their jobs are compared by version alone.
--
-- Rollback: drops the column; jobs are again compared by version alone.
ALTER TABLE files ADD COLUMN publish_xid bigint;

-- +goose Down
ALTER TABLE files DROP COLUMN publish_xid;
