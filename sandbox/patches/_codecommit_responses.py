"""Response handlers of the CodeCommit file APIs: JSON request in, backend call, JSON response out.

moto dispatches a JSON-protocol request to the CodeCommitResponse method named after the X-Amz-Target
action in snake case, in-process (mock_aws) and in server mode alike.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from moto.codecommit.exceptions import InvalidRepositoryNameException
from moto.codecommit.responses import CodeCommitResponse, _is_repository_name_valid
from moto.core.utils import camelcase_to_underscores

from clm_sandbox.patches._codecommit_backend import OPERATIONS
from clm_sandbox.patches._codecommit_errors import CodeCommitError


def _arguments(response: CodeCommitResponse) -> dict[str, Any]:
    """The request's members in snake case, with the blobs (fileContent) decoded from base64."""
    body = json.loads(response.body or "{}")
    name = body.get("repositoryName")
    if not name:
        raise CodeCommitError("RepositoryNameRequiredException", "A repository name is required.")
    if not _is_repository_name_valid(name):
        raise InvalidRepositoryNameException()
    for entry in [body, *body.get("putFiles", ())]:
        if "fileContent" in entry:
            entry["fileContent"] = base64.b64decode(entry["fileContent"])
    return {camelcase_to_underscores(key): value for key, value in body.items()}


def _encode_blob(value: object) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _handler(operation: str) -> Callable[[CodeCommitResponse], str]:
    """The response method for one backend operation (e.g. "get_file")."""

    def handle(self: CodeCommitResponse) -> str:
        result = getattr(self.codecommit_backend, operation)(**_arguments(self))
        return json.dumps(result, default=_encode_blob)

    handle.__name__ = handle.__qualname__ = operation
    handle.__doc__ = f"The {operation} action of the CodeCommit file APIs."
    return handle


HANDLERS = {operation: _handler(operation) for operation in OPERATIONS}
