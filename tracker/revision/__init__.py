"""One revision, from snapshot to recorded outcome: snapshot, estimate, process, backfill."""
