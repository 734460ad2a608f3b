"""CodeCommit file APIs for moto 5.2.5, backed by real Git commits (moto has repositories only).

`install()` adds PutFile, CreateCommit, GetBranch, CreateBranch, ListBranches, GetCommit, GetFile, GetFolder,
GetDifferences and GetBlob to moto's CodeCommit backend and response handler, so they work in-process
(`mock_aws()`) and in server mode. Each commit is an immutable snapshot with Git's SHA-1 ids (blobs, trees,
commits), parents, author, message and date; branches are refs; the first commit of an empty repository
creates its default branch. Errors carry AWS's codes. Every branch change puts a
"CodeCommit Repository State Change" event (referenceCreated / referenceUpdated) on the default EventBridge bus.
"""

from __future__ import annotations

from moto.codecommit.models import CodeCommitBackend
from moto.codecommit.responses import CodeCommitResponse

from clm_sandbox.patches._codecommit_backend import OPERATIONS
from clm_sandbox.patches._codecommit_responses import HANDLERS


def install() -> None:
    """Add the file APIs to moto's CodeCommit; calling it again changes nothing."""
    for name, operation in OPERATIONS.items():
        setattr(CodeCommitBackend, name, operation)
        setattr(CodeCommitResponse, name, HANDLERS[name])
