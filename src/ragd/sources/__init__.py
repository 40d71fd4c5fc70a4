"""Sources that feed a dataset and stay in sync: a watched folder, a crawled website, an S3 prefix."""
