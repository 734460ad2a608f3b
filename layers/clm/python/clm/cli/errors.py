"""Errors of the `clm` command itself: each message says what is wrong and what to do about it."""

from __future__ import annotations

from clm.cli.aws_errors import DEPLOY_HINT
from clm.errors import ClmError


class CliError(ClmError):
    """A command cannot do what it was asked (refused, or a precondition is not met)."""


class DeploymentNotFound(CliError):
    """The CLM stack, one of its outputs, or the state machine it names does not exist."""

    def __init__(self, what: str, stack: str, where: str):
        self.stack = stack
        super().__init__(f"{what} ({where}): is CLM deployed? {DEPLOY_HINT}; or pass --stack (or set CLM_STACK)")
