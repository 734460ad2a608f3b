"""The work of each workflow step, called by the thin Lambda handlers in lambdas/."""
