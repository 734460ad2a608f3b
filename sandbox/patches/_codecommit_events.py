"""CodeCommit's "Repository State Change" events, put on moto's default EventBridge bus."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from moto.events.models import events_backends

from clm_sandbox.patches._codecommit_repo import RefUpdate

SOURCE = "aws.codecommit"
DETAIL_TYPE = "CodeCommit Repository State Change"

logger = logging.getLogger(__name__)


def reference_event(repository: Mapping[str, str], update: RefUpdate) -> dict[str, object]:
    """The event's detail as AWS sends it for a branch created or moved."""
    detail = {
        "event": "referenceCreated" if update.old_commit_id is None else "referenceUpdated",
        "repositoryName": repository["repositoryName"],
        "repositoryId": repository["repositoryId"],
        "referenceType": "branch",
        "referenceName": update.branch,
        "referenceFullName": f"refs/heads/{update.branch}",
        "commitId": update.commit.commit_id,
    }
    if update.old_commit_id is not None:
        detail["oldCommitId"] = update.old_commit_id
    return detail


def publish_reference_change(account_id: str, region: str, repository: Mapping[str, str], update: RefUpdate) -> None:
    """Put the event on the default bus of the repository's account and region, so rules see it.

    As on AWS, the commit stands even when delivery fails; the failure is logged.
    """
    entry = {
        "Source": SOURCE,
        "DetailType": DETAIL_TYPE,
        "Resources": [repository["Arn"]],
        "Detail": json.dumps(reference_event(repository, update)),
    }
    try:
        events_backends[account_id][region].put_events([entry])
    except Exception:
        logger.exception(
            "CodeCommit %s: the %s event of branch %s could not be delivered",
            repository["repositoryName"],
            DETAIL_TYPE,
            update.branch,
        )
