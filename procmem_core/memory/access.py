"""Who is calling: principals, their roles, and the agent and end user they act as.

Seed (loom-procedures.txt, "Learnings review queue"): operations need a role (viewer <
writer < admin; ``learnings.review`` is admin only). A token *pinned* to one end user
(``read_user_id``) acts as the agent it names, never the request body's agent, and may
speak for that user only; any other token (an own-user token without a pin included)
acts as the body's agent and may send any ``user_id``, which is why many users from one
writer count as one source (``supporter_writers``). A pinned token that names no agent
files no bot's rule and is served no rule promoted for a named bot.

Reads by agent (``READ_EVERY_AGENT`` = ``"*"``, ``NO_AGENT`` = ``"-"``): a read under an
agent name is served the rules promoted for that agent; ``"*"`` (a namespace-wide read,
the HTTP ``memory.ask`` default) is served every bot's rules; ``"-"`` or None (a read
under no agent, the ``loom_search`` default) none promoted for a named bot. A rule for
every agent is served to every read (``serves_agent``).
"""

from __future__ import annotations

from dataclasses import dataclass

from procmem_core.errors import ParameterError, ProcmemError, check_choice, check_text

ROLES = ("viewer", "writer", "admin")
"""Roles in increasing order of what they may do."""
READ_EVERY_AGENT = "*"
NO_AGENT = "-"
AGENT_TAG = "agent:"


class AccessDenied(ProcmemError):
    """The principal's role (or pin) does not allow the operation."""

    def __init__(self, operation: str, principal: Principal, needed: str) -> None:
        self.operation = operation
        self.principal = principal
        self.needed = needed
        super().__init__(
            f"{operation} is refused for principal {principal.name!r}: it needs {needed}, "
            f"and the principal has role {principal.role!r}"
            + (f" pinned to user {principal.read_user_id!r}" if principal.read_user_id else "")
        )


@dataclass(frozen=True)
class Principal:
    """A caller: ``name`` (the token or service: a distinct writer), ``role``, the end user
    it is (``user_id``: an approver's own user id), an optional pin ``read_user_id`` and
    the ``agent`` the token names."""

    name: str
    role: str = "writer"
    user_id: str | None = None
    read_user_id: str | None = None
    agent: str | None = None

    def __post_init__(self) -> None:
        check_text("name", self.name)
        check_choice("role", self.role, ROLES)
        for field in ("user_id", "read_user_id", "agent"):
            value = getattr(self, field)
            if value is not None:
                check_text(field, value)

    @property
    def pinned(self) -> bool:
        return self.read_user_id is not None

    def require(self, role: str, operation: str) -> None:
        """Raise ``AccessDenied`` unless this principal's role is ``role`` or higher."""
        check_choice("role", role, ROLES)
        if ROLES.index(self.role) < ROLES.index(role):
            raise AccessDenied(operation, self, f"role {role!r} or higher")

    def acting_agent(self, body_agent: str | None) -> str | None:
        """The agent this call acts as: a pinned token's own agent (None if it names none),
        else the request body's agent."""
        return self.agent if self.pinned else body_agent

    def acting_user(self, body_user: str | None, operation: str) -> str:
        """The end user this call speaks for: a pinned token only for its pinned user
        (its pin when the body names none); any other token for the body's user."""
        if self.pinned:
            if body_user is not None and body_user != self.read_user_id:
                raise AccessDenied(operation, self, f"user_id {self.read_user_id!r} (its pin)")
            return str(self.read_user_id)
        if body_user is None:
            raise ParameterError("user_id", body_user, "expected the end user's id")
        return check_text("user_id", body_user)


def agent_tag(agent: str) -> str:
    """The tag a rule promoted for ``agent`` carries: ``agent:<agent>``."""
    return AGENT_TAG + check_text("agent", agent)


def tagged_agent(tags: tuple[str, ...]) -> str | None:
    """The agent named by an ``agent:<name>`` tag (None without one)."""
    for t in tags:
        if t.startswith(AGENT_TAG):
            return t[len(AGENT_TAG) :]
    return None


def serves_agent(tags: tuple[str, ...], reader: str | None) -> bool:
    """Whether a record with ``tags`` is served to a read under agent ``reader``.

    Untagged or ``agent:*``: every read. Tagged for a bot: a read under that agent, or a
    namespace-wide read (``"*"``); never a read under no agent (``"-"`` or None).
    """
    owner = tagged_agent(tags)
    if owner is None or owner == READ_EVERY_AGENT:
        return True
    if reader == READ_EVERY_AGENT:
        return True
    if reader is None or reader == NO_AGENT:
        return False
    return reader == owner


def authorize(principal: Principal | None, role: str, operation: str) -> None:
    """``principal.require(role, operation)``; None means auth is off (everything allowed)."""
    if principal is None:
        return
    if not isinstance(principal, Principal):
        raise ParameterError("principal", principal, "expected a Principal or None")
    principal.require(role, operation)
