"""Who may read and write a namespace of the procedure store (seed: "Operations" role
column, "Matching" across "the caller's own namespaces", "Whose procedures a pack
injects", ``procedure.fork``).

Auth is on whenever a call names a ``principal``; without one (auth off, the operator's
own code) nothing is checked, as in the seed with auth off.

- Roles, in increasing order: viewer < writer < admin (``ROLES``), held per namespace
  (``ProcedureStore.grant(principal, namespace, role)``). ``OPERATION_ROLES`` is the
  seed's table: viewer for match, locate, list (and procmem's other reads: get, runs,
  traces, revisions, status, gate decisions); writer for add, record_run, evolve,
  revise, fork (and delete, complete_run); admin for grant (the seed's admin-only
  operation is ``learnings.review``; granting a namespace is procmem's choice).
- A principal reads only the namespaces it holds a role in (``readable_namespaces``).
  Writing a procedure somewhere grants nothing: with auth on, writing needs the writer
  role there first. Naming a namespace the principal cannot read raises ``AccessDenied``
  before anything is read; a bare key resolves among the readable namespaces only.
- With auth on the actor is the calling principal (``acting_actor``): a different
  ``actor`` is refused, so nobody injects a procedure into another principal's pack.
- ``match(namespace_scope="all_mine", principal=p)`` searches p's readable namespaces,
  the first ``fan_out`` in name order (``MAX_NAMESPACE_FAN_OUT``, procmem's default: the
  seed caps its fan-out without stating the cap, docs/seed-fidelity.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from procmem_core.errors import AccessDenied, ParameterError, check_choice, check_int, quote
from procmem_core.graph.keys import check_namespaces
from procmem_core.limits import check_identifier

__all__ = ["AccessDenied"]

MAX_NAMESPACE_FAN_OUT = 16
"""Default cap on the namespaces ``namespace_scope="all_mine"`` searches."""
NAMESPACE_SCOPES = ("given", "all_mine")
"""``given``: the ``namespace`` argument (None: every namespace the principal can read,
every namespace with auth off); ``all_mine``: the caller's readable namespaces, up to
the fan-out cap."""
ROLES = ("viewer", "writer", "admin")
"""Roles in increasing order of what they may do."""
OPERATION_ROLES = {
    **dict.fromkeys(("match", "locate", "list", "get", "runs", "traces", "revisions"), "viewer"),
    **dict.fromkeys(("status", "live_revisions", "gate_decisions", "releases", "pack"), "viewer"),
    **dict.fromkeys(("add", "record_run", "evolve", "revise", "fork", "delete"), "writer"),
    "complete_run": "writer",
    "grant": "admin",
}
"""The role each procedure operation needs in the namespace it touches."""

Grants = Mapping[str, Mapping[str, str]]
"""principal -> namespace -> role."""


def check_principal(field: str, value: object, required: bool = False) -> str | None:
    """None (when allowed) or a principal name (``limits.check_identifier``)."""
    if value is None and not required:
        return None
    if value is None:
        raise ParameterError(field, value, "expected a principal name (a non-empty string)")
    return check_identifier(field, value)


def check_role(role: object) -> str:
    return check_choice("role", role, ROLES)


def has_role(role: str | None, needed: str) -> bool:
    """Whether ``role`` (None: no role) is ``needed`` or higher."""
    return role is not None and ROLES.index(role) >= ROLES.index(needed)


def readable_namespaces(principal: str, grants: Grants) -> tuple[str, ...]:
    """The namespaces ``principal`` holds any role in, in name order."""
    return tuple(sorted(grants.get(principal, {})))


def require_role(
    principal: str | None,
    namespace: str,
    grants: Grants,
    operation: str,
    needed: str | None = None,
) -> None:
    """Raise ``AccessDenied`` unless ``principal`` (None: auth off) holds the role
    ``needed`` (default ``OPERATION_ROLES[operation]``) or higher in ``namespace``."""
    if principal is None:
        return
    needed = OPERATION_ROLES[operation] if needed is None else needed
    held = grants.get(principal, {}).get(namespace)
    if has_role(held, needed):
        return
    what = "cannot read" if held is None else f"holds only the {held} role in"
    raise AccessDenied(
        f"{operation} refused: principal {quote(principal)} {what} namespace "
        f"{quote(namespace)}; "
        f"{operation} needs the {needed} role there (readable: "
        f"{quote(list(readable_namespaces(principal, grants)))}; an admin of the namespace "
        f"grants it with store.grant(principal, namespace, {needed!r}, by=admin))"
    )


def check_can_read(
    principal: str | None, namespace: str, grants: Grants, operation: str = "match"
) -> None:
    """Raise ``AccessDenied`` unless ``principal`` (None: auth off) can read ``namespace``."""
    require_role(principal, namespace, grants, operation, "viewer")


def acting_actor(principal: str | None, actor: str | None) -> str | None:
    """The actor a write records: the principal with auth on (another ``actor`` is
    refused), the given label with auth off."""
    actor = check_principal("actor", actor)
    if principal is None or actor is None or actor == principal:
        return principal if principal is not None else actor
    raise AccessDenied(
        f"actor {quote(actor)} refused: with auth on the actor is the calling principal "
        f"{quote(principal)}"
    )


def scope_namespaces(
    scope: str,
    namespace: str | Iterable[str] | None,
    principal: str | None,
    grants: Grants,
    fan_out: int,
) -> list[str] | None:
    """The namespaces a match searches (None: all) for ``namespace_scope`` ``scope``;
    with a principal, only readable ones (a named unreadable one raises):
    ``check_scope``, then ``resolve_scope``."""
    fan_out = check_scope(scope, namespace, principal, fan_out)
    return resolve_scope(scope, namespace, principal, grants, fan_out)


def check_scope(
    scope: str, namespace: str | Iterable[str] | None, principal: str | None, fan_out: int
) -> int:
    """A namespace scope's arguments checked as far as grants do not change them (a
    prepared match checks them once, ``StoreReads.prepare_match``); the fan-out as an int."""
    check_choice("namespace_scope", scope, NAMESPACE_SCOPES)
    fan_out = check_int("fan_out", fan_out, minimum=1)
    if namespace is not None and scope == "given":
        check_namespaces(namespace)
    if scope == "all_mine":
        check_principal("principal", principal, required=True)
        if namespace is not None:
            raise ParameterError(
                "namespace", namespace, "None with namespace_scope='all_mine' (it picks them)"
            )
    return fan_out


def resolve_scope(
    scope: str,
    namespace: str | Iterable[str] | None,
    principal: str | None,
    grants: Grants,
    fan_out: int,
) -> list[str] | None:
    """``scope_namespaces`` with the grants as they are now, for arguments ``check_scope``
    passed: None (all) without a namespace or a principal, else the readable ones."""
    readable = None if principal is None else readable_namespaces(principal, grants)
    if scope == "all_mine":
        return list(readable[:fan_out])
    if namespace is None:
        return None if readable is None else list(readable)
    named = check_namespaces(namespace)
    for ns in named:
        check_can_read(principal, ns, grants)
    return named
