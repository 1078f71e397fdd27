"""``procmem_core.Agent``: the graph seed's async SDK shape over the stores; the seed's own
example runs with only its import changed."""

from __future__ import annotations

import asyncio
import threading

import pytest

from procmem_core import Agent, ProcedureStore, SPRTGate
from procmem_core.errors import ParameterError
from procmem_core.learnings import LearningsQueue
from procmem_core.memory.access import Principal


async def seed_example() -> tuple:
    """The seed's example (loom-procedures.txt, "Example"), its import changed to
    ``from procmem_core import Agent``; returns what it bound."""
    async with Agent(org="acme", namespace="support", agent="triage-bot") as bot:
        added = await bot.procedure.add(
            "refund request",
            "a customer asks for a refund on a paid invoice",
            ["look up the invoice", "check the refund policy window", "issue or decline"],
            tags=["billing"],
        )
        hits = await bot.procedure.match(
            "customer wants money back for last month's invoice", goal="resolve a refund"
        )
        key = added["memory_key"]  # procedure_refund_request
        await bot.procedure.record_run(key, ["n1", "n2", "n3"], ok=True, duration_ms=42_000)
        await bot.procedure.evolve(key)
        listed = await bot.procedure.list()
    return added, hits, key, listed


def test_the_seed_example_runs_verbatim_with_procmem_core_agent():
    added, hits, key, listed = asyncio.run(seed_example())
    assert key == "procedure_refund_request" == added["memory_key"]
    assert added["namespace"] == "support" and added["revision"] == 1
    assert [h.key for h in hits][:1] == [key]
    [stored] = listed
    assert stored.runs == 1 and stored.successes == 1 and stored.tags == ("billing",)
    assert stored.steps == (
        "look up the invoice", "check the refund policy window", "issue or decline",
    )  # fmt: skip


def test_evolve_sends_the_sdk_gate_defaults_unless_told_otherwise(monkeypatch):
    seen = []
    original = ProcedureStore.evolve

    def spy(self, key, **kwargs):
        seen.append(kwargs["gate"])
        return original(self, key, **kwargs)

    monkeypatch.setattr(ProcedureStore, "evolve", spy)

    async def main():
        async with Agent(org="acme", agent="bot") as bot:
            key = (await bot.procedure.add("p", "s", ["a", "b"]))["memory_key"]
            await bot.procedure.evolve(key)
            await bot.procedure.evolve(key, gate_mode="margin")
            await bot.procedure.evolve(key, gate_min_runs=3)

    asyncio.run(main())
    assert seen[0] == SPRTGate(min_runs=5)
    assert (seen[1].name, seen[1].margin, seen[1].min_runs) == ("margin", 0.05, 5)
    assert seen[2] == SPRTGate(min_runs=3)


def test_record_run_carries_the_agent_and_concurrent_calls_all_land():
    async def main():
        async with Agent(org="acme", namespace="ops", agent="bot-7") as bot:
            key = (await bot.procedure.add("deploy", "ship a release", ["build", "ship"]))[
                "memory_key"
            ]
            runs = await asyncio.gather(
                *(bot.procedure.record_run(key, ["n1", "n2"], ok=i % 3 != 0) for i in range(30))
            )
            located = await bot.procedure.locate(key, at="n1")
            forked = await bot.procedure.fork(key, "ops-2")
            return bot.store.runs(f"ops/{key}"), runs, located, forked

    ledger, runs, located, forked = asyncio.run(main())
    assert len(ledger) == 30 and {r.agent for r in ledger} == {"bot-7"}
    assert sorted(r.run_id for r in runs) == [r.run_id for r in ledger]
    assert sum(r.ok for r in ledger) == 20
    assert located.key == "procedure_deploy"
    assert forked["namespace"] == "ops-2" and forked["procedure"].runs == 0


def test_one_agent_called_from_threads_with_their_own_event_loops_lands_every_call():
    """The stores are thread-safe, and so is the facade: three threads, each running its
    own event loop (``asyncio.run``), record 40 runs each at once through one agent. Its
    ``asyncio.Lock`` bound itself to the first loop that waited on it: the others raised
    'is bound to a different event loop' and one thread hung (1 run landed of 120)."""
    bot = Agent(org="acme", namespace="support", agent="triage-bot")
    added = asyncio.run(bot.procedure.add("refund request", "a refund", ["a", "b", "c"]))
    key, errors = added["memory_key"], []

    async def record(n: int) -> None:
        runs = (bot.procedure.record_run(key, ["n1"], ok=i % 2 == 0) for i in range(n))
        await asyncio.gather(*runs)

    def thread() -> None:
        try:
            asyncio.run(record(40))
        except Exception as exc:  # reported below, with the threads left hanging
            errors.append(repr(exc))

    threads = [threading.Thread(target=thread, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads) and errors == []
    assert bot.store.get(f"support/{key}").runs == 120


def test_learnings_list_and_review_through_the_agent():
    queue = LearningsQueue()
    admin = Principal("lead", role="admin")
    queue.propose("Quote the refund window", namespace="support", principal=admin)

    async def main():
        async with Agent(org="acme", namespace="support", agent="bot", queue=queue) as bot:
            pending = await bot.learnings.list()
            result = await bot.learnings.review(
                pending[0].candidate_id, "reject", reason="not a rule we keep"
            )
            return pending, result, await bot.learnings.list(status="rejected")

    pending, result, rejected = asyncio.run(main())
    assert len(pending) == 1 and result.changed
    assert [r.candidate_id for r in rejected] == [pending[0].candidate_id]


def test_bad_arguments_are_refused_naming_them():
    with pytest.raises(ParameterError, match="org"):
        Agent(org="")

    async def main():
        async with Agent(org="acme") as bot:
            key = (await bot.procedure.add("p", "s", ["a", "b"]))["memory_key"]
            await bot.procedure.evolve(key, gate_mode="vibes")

    with pytest.raises(ParameterError, match="gate_mode"):
        asyncio.run(main())


@pytest.mark.parametrize("key", [3, None, ["procedure_p"]])
def test_a_key_that_is_not_text_is_refused_naming_key(key):
    async def main():
        async with Agent(org="acme") as bot:
            await bot.procedure.add("p", "s", ["a", "b"])
            await bot.procedure.record_run(key, ["n1", "n2"], ok=True)

    with pytest.raises(ParameterError, match=r"^key=.* is not allowed: expected a procedure key"):
        asyncio.run(main())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"gate_min_runs": 0}, r"^gate_min_runs=0 is not allowed"),
        ({"gate_alpha": 2}, r"^gate_alpha=2 is not allowed"),
        ({"gate_mode": "margin", "gate_margin": -1}, r"^gate_margin=-1 is not allowed"),
    ],
)
def test_a_bad_gate_argument_of_evolve_is_refused_under_the_name_passed(options, message):
    async def main():
        async with Agent(org="acme") as bot:
            key = (await bot.procedure.add("p", "s", ["a", "b"]))["memory_key"]
            await bot.procedure.evolve(key, **options)

    with pytest.raises(ParameterError, match=message):
        asyncio.run(main())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"org": "acme", "agent": "a" * 300},
            r"^agent='a+\.\.\. \(300 characters\) is not allowed",
        ),
        ({"org": " acme"}, r"^org=' acme' is not allowed: expected no leading or trailing"),
    ],
)
def test_the_agent_or_org_naming_the_default_principal_is_refused_under_its_name(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        Agent(**kwargs)


def test_list_is_the_agents_namespace_as_match_is():
    """Two agents sharing one store in different namespaces: ``bot.procedure.list()``
    inventories the agent's own namespace, as ``match`` searches it (the seed's
    operations act in the agent's namespace). Before, it listed every namespace's
    procedures: the support bot saw sales' procedure."""
    store = ProcedureStore()

    async def main():
        support = Agent(org="acme", namespace="support", agent="a", store=store)
        sales = Agent(org="acme", namespace="sales", agent="b", store=store)
        await support.procedure.add("refund", "a customer asks for a refund", ["a", "b"])
        await sales.procedure.add("upsell", "a customer asks about plans", ["a", "b"])
        return await support.procedure.list(), await sales.procedure.list("procedure_")

    mine, theirs = asyncio.run(main())
    assert [p.ref for p in mine] == ["support/procedure_refund"]
    assert [p.ref for p in theirs] == ["sales/procedure_upsell"]

    async def named():  # another namespace by name, as on match
        async with Agent(org="acme", namespace="support", agent="a", store=store) as support:
            return await support.procedure.list(namespace="sales")

    assert [p.ref for p in asyncio.run(named())] == ["sales/procedure_upsell"]


def test_a_procedure_the_agent_adds_records_the_agent_as_its_actor():
    """The seed: every procedure records who wrote it (the row's actor), and a pack with
    auth on injects only the calling principal's procedures. The SDK's add recorded no
    actor, so the bot's own procedure matched with actor None and an auth-on pack for
    'triage-bot' injected nothing, though the bot had written it."""
    from procmem_core.graph import ContextPacker

    async def run() -> tuple:
        async with Agent(org="acme", namespace="support", agent="triage-bot") as bot:
            added = await bot.procedure.add(
                "refund request",
                "a customer asks for a refund on a paid invoice",
                ["look up the invoice", "check the refund policy window", "issue or decline"],
            )
            hits = await bot.procedure.match("a customer asks for a refund on a paid invoice")
            bot.store.grant("triage-bot", "support", "viewer")
            packed = ContextPacker(bot.store, auth=True, principal="triage-bot").pack(
                "a customer asks for a refund on a paid invoice"
            )
            return added, hits, packed

    added, hits, packed = asyncio.run(run())
    assert added["procedure"].actor == "triage-bot"
    assert [(h.key, h.actor) for h in hits] == [("procedure_refund_request", "triage-bot")]
    assert packed.procedure_keys == ("support/procedure_refund_request",)
