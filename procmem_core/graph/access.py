"""Who wrote a procedure and who may read a namespace (seed: "Matching", "Whose procedures a
pack injects", ``procedure.fork``).

- Every procedure records its ``actor`` (the principal that wrote it; None when the
  writer did not say). A ``Match`` carries it; ``ContextPacker(auth=True, principal=p)``
  injects only the matches ``p`` wrote, while an explicit ``match`` still returns a
  teammate's procedure with its actor.
- A principal can read the namespaces it was granted (``ProcedureStore.grant``) and those
  it wrote a procedure in: ``readable_namespaces``. ``match(namespace_scope="all_mine",
  principal=p)`` searches them, the first ``fan_out`` in name order
  (``MAX_NAMESPACE_FAN_OUT`` by default: the seed caps its fan-out without stating the
  cap, 16 is procmem's choice, docs/seed-fidelity.md);
  ``fork(key, namespace, actor=p)`` copies only from a namespace ``p`` can read.
- Without a principal (auth off) nothing is checked, as in the seed with auth off.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from procmem_core.errors import ParameterError, ProcmemError, check_choice, check_int

MAX_NAMESPACE_FAN_OUT = 16
"""Default cap on the namespaces ``namespace_scope="all_mine"`` searches."""
NAMESPACE_SCOPES = ("given", "all_mine")
"""``given``: the ``namespace`` argument (None: every namespace); ``all_mine``: the
caller's readable namespaces, up to the fan-out cap."""


class AccessDenied(ProcmemError):
    """A principal asked for a namespace it cannot read."""


def check_principal(field: str, value: object, required: bool = False) -> str | None:
    """None (when allowed) or a non-empty principal name."""
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        need = "a principal name" if required else "None or a principal name"
        raise ParameterError(field, value, f"expected {need} (a non-empty string)")
    return value


def readable_namespaces(
    principal: str,
    grants: Mapping[str, set[str]],
    written: Iterable[tuple[str | None, str]],
) -> tuple[str, ...]:
    """The namespaces ``principal`` may read, in name order: its grants and the namespaces
    holding a procedure it wrote (``written``: (actor, namespace) of every procedure)."""
    mine = set(grants.get(principal, ()))
    mine.update(ns for actor, ns in written if actor == principal)
    return tuple(sorted(mine))


def scope_namespaces(
    scope: str,
    namespace: str | Iterable[str] | None,
    principal: str | None,
    readable: tuple[str, ...] | None,
    fan_out: int,
) -> list[str] | None:
    """The namespaces a match searches (None: all) for ``namespace_scope`` ``scope``."""
    check_choice("namespace_scope", scope, NAMESPACE_SCOPES)
    fan_out = check_int("fan_out", fan_out, minimum=1)
    if scope == "all_mine":
        check_principal("principal", principal, required=True)
        if namespace is not None:
            raise ParameterError(
                "namespace", namespace, "None with namespace_scope='all_mine' (it picks them)"
            )
        return list((readable or ())[:fan_out])
    if namespace is None:
        return None
    return [namespace] if isinstance(namespace, str) else list(namespace)


def check_can_read(principal: str | None, namespace: str, readable: tuple[str, ...]) -> None:
    """Raise ``AccessDenied`` unless ``principal`` (None: auth off) can read ``namespace``."""
    if principal is not None and namespace not in readable:
        raise AccessDenied(
            f"principal {principal!r} cannot read namespace {namespace!r} "
            f"(readable: {list(readable)}); grant it with store.grant({principal!r}, "
            f"{namespace!r})"
        )
