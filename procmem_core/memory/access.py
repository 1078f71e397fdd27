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

Namespaces: a principal with ``namespaces`` (``{namespace: role}``) may touch only those
namespaces, each with its role there; one without (None) holds ``role`` in every
namespace. A read that names a namespace the principal cannot read raises
``AccessDenied`` before anything is read; a read naming none sees only its namespaces
(``allowed_namespaces``). Writing a row grants nothing. With a principal, the actor is
the principal (``acting_actor``): a different ``actor`` is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from procmem_core.errors import AccessDenied as _AccessDenied
from procmem_core.errors import ParameterError, ProcmemError, check_choice, check_text, quote
from procmem_core.graph.access import ROLES, has_role
from procmem_core.graph.keys import check_namespace, check_namespaces
from procmem_core.limits import check_identifier
from procmem_core.memory.records import AGENT_USER

READ_EVERY_AGENT = "*"
NO_AGENT = "-"
AGENT_TAG = "agent:"


class AccessDenied(_AccessDenied):
    """The principal's role (or pin, or namespaces) does not allow the operation."""

    def __init__(self, operation: str, principal: Principal, needed: str) -> None:
        self.operation = operation
        self.principal = principal
        self.needed = needed
        super().__init__(
            f"{operation} is refused for principal {principal.name!r}: it needs {needed}, "
            f"and the principal has role {principal.role!r}"
            + (f" pinned to user {principal.read_user_id!r}" if principal.read_user_id else "")
        )


def _namespace_roles(namespaces: Any) -> tuple[tuple[str, str], ...]:
    """A principal's ``{namespace: role}`` (a mapping, or the pairs a ``Principal`` keeps)
    as pairs sorted by namespace, each namespace once with a role."""
    allowed = "a {namespace: role} mapping (or (namespace, role) pairs, each namespace once)"
    if isinstance(namespaces, Mapping):
        pairs = list(namespaces.items())
    elif isinstance(namespaces, tuple) and all(
        isinstance(pair, tuple) and len(pair) == 2 for pair in namespaces
    ):
        pairs = list(namespaces)
    else:
        raise ParameterError("namespaces", namespaces, allowed)
    for ns, role in pairs:
        check_namespace(ns)
        check_choice(f"namespaces[{ns!r}]", role, ROLES)
    if len({ns for ns, _ in pairs}) < len(pairs):
        raise ParameterError("namespaces", namespaces, allowed)
    return tuple(sorted(pairs))


@dataclass(frozen=True)
class Principal:
    """A caller: ``name`` (the token or service: a distinct writer), ``role``, the end user
    it is (``user_id``: an approver's own user id), an optional pin ``read_user_id``, the
    ``agent`` the token names and the ``namespaces`` it may touch (``{namespace: role}``,
    then ``role`` is unused; None: ``role`` in every namespace)."""

    name: str
    role: str = "writer"
    user_id: str | None = None
    read_user_id: str | None = None
    agent: str | None = None
    namespaces: Any = None  # Mapping[str, str] in, a sorted tuple of pairs kept

    def __post_init__(self) -> None:
        check_identifier("name", self.name)
        check_choice("role", self.role, ROLES)
        for field in ("user_id", "read_user_id", "agent"):
            value = getattr(self, field)
            if value is not None:
                check_identifier(field, value)
        if self.namespaces is not None:
            object.__setattr__(self, "namespaces", _namespace_roles(self.namespaces))

    @property
    def pinned(self) -> bool:
        return self.read_user_id is not None

    def role_in(self, namespace: str) -> str | None:
        """The role held in ``namespace`` (None: none)."""
        if self.namespaces is None:
            return self.role
        return dict(self.namespaces).get(namespace)

    def top_role(self) -> str | None:
        """The highest role held anywhere (None: a scope of no namespace)."""
        if self.namespaces is None:
            return self.role
        held = [ROLES.index(r) for _, r in self.namespaces]
        return ROLES[max(held)] if held else None

    def require(self, role: str, operation: str, namespace: str | None = None) -> None:
        """Raise ``AccessDenied`` unless this principal holds ``role`` or higher in
        ``namespace`` (None: in some namespace)."""
        check_choice("role", role, ROLES)
        held = self.top_role() if namespace is None else self.role_in(namespace)
        if not has_role(held, role):
            where = "" if namespace is None else f" in namespace {namespace!r}"
            raise AccessDenied(operation, self, f"role {role!r} or higher{where}")

    def acting_agent(self, body_agent: str | None) -> str | None:
        """The agent this call acts as: a pinned token's own agent (None if it names none),
        else the request body's agent."""
        return self.agent if self.pinned else body_agent

    def check_writes_user(self, user_id: str | None, operation: str) -> None:
        """A pinned token writes only rows its pinned user reads (``MemoryRecord
        .visible_to``: its own, the shared zone None, the agent's row ``"-"``), as it reads
        and deletes only those; ``AccessDenied`` for another user's row. Any other token
        writes under any ``user_id``."""
        if self.pinned and user_id not in (None, AGENT_USER, self.read_user_id):
            raise AccessDenied(
                operation,
                self,
                f"user_id {self.read_user_id!r} (its pin), None or {AGENT_USER!r}, "
                f"not {quote(user_id)}",
            )

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


def authorize(
    principal: Principal | None, role: str, operation: str, namespace: str | None = None
) -> None:
    """``principal.require(role, operation, namespace)``; None means auth is off
    (everything allowed)."""
    if principal is None:
        return
    if not isinstance(principal, Principal):
        raise ParameterError("principal", principal, "expected a Principal or None")
    principal.require(role, operation, namespace)


def authorize_row(
    principal: Principal | None, operation: str, namespace: str, user_id: str | None
) -> None:
    """A row write: the writer role in ``namespace`` (``authorize``) and, for a pinned
    token, a ``user_id`` it speaks for (``Principal.check_writes_user``)."""
    authorize(principal, "writer", operation, namespace)
    if principal is not None:
        principal.check_writes_user(user_id, operation)


def in_namespaces(record: Any, spaces: frozenset[str] | None) -> bool:
    """Whether ``record`` lies in ``spaces`` (``allowed_namespaces``; None: every one)."""
    return spaces is None or record.namespace in spaces


def allowed_namespaces(
    principal: Principal | None, role: str, operation: str, namespace: Any = None
) -> frozenset[str] | None:
    """The namespaces a call may touch with ``role`` (None: every one). Each named
    ``namespace`` (a name or a list) must allow it (``AccessDenied`` otherwise); with
    none named, the principal's own namespaces (every one when it is unscoped)."""
    authorize(principal, role, operation)
    named = None
    if namespace is not None:
        named = check_namespaces(namespace)
        for ns in named:
            authorize(principal, role, operation, ns)
        return frozenset(named)
    if principal is None or principal.namespaces is None:
        return None
    return frozenset(ns for ns, r in principal.namespaces if has_role(r, role))


def acting_actor(principal: Principal | None, actor: str | None) -> str | None:
    """The actor a write records: the principal's name (another ``actor`` is refused),
    or the given label when auth is off."""
    if actor is not None:
        check_identifier("actor", actor)
    if principal is None:
        return actor
    if actor is not None and actor != principal.name:
        raise AccessDenied("write", principal, f"actor {principal.name!r} (not {actor!r})")
    return principal.name


class UnknownRecord(ProcmemError, KeyError):
    """No record with this id."""

    def __str__(self) -> str:
        return str(self.args[0])


class HiddenRecord(UnknownRecord, AccessDenied):
    """No record with this id that the principal can read: raised alike for a missing id,
    a record in a namespace the principal holds no role in and, for a pinned token,
    another user's row, so the error tells neither whether the row exists nor its
    namespace. Both an ``UnknownRecord`` and an ``AccessDenied``."""

    def __init__(self, record_id: object, principal: Principal) -> None:
        self.operation, self.principal, self.needed = "memory.get", principal, "viewer"
        Exception.__init__(
            self, f"no memory record {quote(record_id)} that principal {principal.name!r} can read"
        )


def can_read_record(record: Any, principal: Principal) -> bool:
    """Whether ``principal`` may read ``record`` (None: a missing one): a role in its
    namespace and, for a pinned token, a row its pinned user reads (``visible_to``)."""
    return (
        record is not None
        and principal.role_in(record.namespace) is not None
        and record.visible_to(principal.read_user_id)
    )
