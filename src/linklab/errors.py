"""Errors a user can act on.

Nothing below ``cli.py`` prints; code raises one of these with a one-line message
that names the argument (or file and field) and what is accepted. The CLI turns
them into ``linklab: error: <message>`` on stderr and exit status 2 (usage) or 1
(a run that failed for a reason outside the user's input).
"""

from __future__ import annotations


class LinklabError(Exception):
    """Base class: a failure with a message meant for the user."""

    exit_code = 1


class UsageError(LinklabError):
    """Bad input from the user (argument, file, field). Exit status 2."""

    exit_code = 2

    def __init__(self, message: str, *, argument: str | None = None):
        self.argument = argument
        super().__init__(f"{argument}: {message}" if argument else message)


class PrivilegeError(LinklabError):
    """A privilege linklab needs is missing (root, user namespaces, CAP_NET_ADMIN)."""

    exit_code = 2


class EnvironmentProblem(LinklabError):
    """A tool or library linklab needs is missing or misbehaves (run scripts/setup.sh)."""

    exit_code = 1
