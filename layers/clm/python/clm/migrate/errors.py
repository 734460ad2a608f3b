"""The error of a Go template that cannot be read: it names the file and line."""

from __future__ import annotations

from clm.errors import ClmError


class MigrateError(ClmError):
    """A Go template that does not parse (CLM would refuse it too)."""

    asl_name = "MigrateError"

    def __init__(self, message: str, file: str, line: int | None):
        self.message, self.file, self.line = message, file, line
        super().__init__(f"{file}:{line}: {message}" if line else f"{file}: {message}")
