"""`make demo`: CLM's main job end to end on the sandbox (steps), what it watches of the roll (watch) and its
figures and timeline (report)."""
