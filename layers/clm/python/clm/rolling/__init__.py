"""Rolling updates: which node of a pool to replace next, from observed state."""
