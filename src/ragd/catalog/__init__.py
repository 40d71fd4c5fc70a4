"""What ragd knows about its knowledge bases, in SQL: tenants and keys, datasets, files,
sources and their sync ledger, and the durable job queue."""
