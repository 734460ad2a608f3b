"""CodeCommit errors as AWS returns them: HTTP 400 with the error code as the JSON `__type`."""

from __future__ import annotations

from moto.core.exceptions import JsonRESTError


class CodeCommitError(JsonRESTError):
    """An AWS CodeCommit error; botocore raises it as a ClientError whose Code is `error_type`."""

    code = 400

    def __init__(self, error_type: str, message: str):
        super().__init__(error_type, message)
