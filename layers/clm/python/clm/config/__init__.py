"""Configuration sources: versioned snapshots of a config repository (local dir, S3, CodeCommit, combined)."""
