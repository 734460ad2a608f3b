"""IAM in the sandbox as AWS enforces it: role sessions for the code the sandbox runs, each call judged against
the role's policies (enforcement), what was judged (record) and a report of it (report)."""
