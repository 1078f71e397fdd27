"""The live loop (``experiment=live``): procmem's memory inside real agent sessions.

A model answers tasks with the memory's system prompt, a checker or a judge scores each
session, the model extracts procedures from transcripts, the memory keeps or drops them
and the explore rate withholds the top one. Modules:

- ``tasks``: the task file (JSON Lines), its deterministic checkers and ``load_tasks``;
- ``memory``: the flat memory the loop drives (records, pack, outcomes, learned procedures);
- ``graph_memory``: the graph memory, a ``ProcedureStore`` behind ``procmem_core.Agent``;
- ``revisions``: the graph memory's revision proposals and its revisions log;
- ``session``: one session through an OpenAI-compatible endpoint, scored;
- ``journal``: the append-only record of finished sessions (resume, ``sessions.csv``);
- ``loop``: rounds of sessions, bounded concurrency, the token budget;
- ``traces``: each session as an MLflow 3 trace with its outcome as feedback.

docs/live.md describes all of it.
"""
