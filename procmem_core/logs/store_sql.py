"""The queries that read a ``ProcedureStore`` as a session log, per backend.

``logs.store`` reads a store the same way on SQLite and on PostgreSQL: one query per table
that turns each column into one string in ``seq`` order, split in C by numpy. The two
backends differ in how they say it (SQLite's ``group_concat``, ``json_extract``,
``json_each`` and ``typeof``; PostgreSQL's ``string_agg``, ``jsonb``, ``jsonb_typeof``),
so each has a ``StoreSql``; both give the same values, so a store read on either gives
the same log:

- numbers: SQLite prints an integer as an integer and other reals with 17 significant
  digits (``%!.17g``); PostgreSQL prints a double as its shortest exact decimal (the
  default since version 12); both read back to the same double;
- a run's ``path``: the JSON text of the list as the store wrote it, without spaces
  (SQLite's ``json_extract``; on PostgreSQL each element's own JSON text, joined by ``,``);
- the pack log's clocks: SQLite keeps an integer or a string as it is; PostgreSQL as
  JSONB, read as a number or (``#>>``) as the string itself.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StoreSql:
    """One backend's reading queries (see the module doc)."""

    runs_source: str
    revisions_source: str
    kinds: str
    is_number: str  # "{name}" holds a number (a clock column's kind)
    number: str  # "{e}" as text, NULL as 'nan'
    integer: str  # the integer "{e}" as text
    text_clock: str  # the clock column "{name}" as its string
    agg: str  # "{value}" of every row joined by "{sep}", in seq order
    unit_sep: str

    def concat(self, expr: str, kind: str) -> str:
        """One column of every row as one string (numbers joined by spaces, strings by
        U+001F)."""
        if kind == "number":
            return self.agg.format(value=self.number.format(e=expr), sep="' '")
        return self.agg.format(value=f"COALESCE({expr}, '')", sep=self.unit_sep)

    def seq(self) -> str:
        """The ``seq`` column of every row as one string (integers joined by spaces)."""
        return self.agg.format(value=self.integer.format(e="seq"), sep="' '")


_REVISIONS = """
SELECT ROW_NUMBER() OVER (ORDER BY a.pr, a.i) AS seq, a.ns || '/' || a.k AS key,
       CAST(a.rev AS TEXT) AS revision,
       CAST((SELECT b.rev FROM h b WHERE b.pr = a.pr AND b.i < a.i
             AND b.o IN ('original', 'accepted') ORDER BY b.i DESC LIMIT 1) AS TEXT)
         AS prior_revision,
       CASE WHEN a.o = 'original' THEN 0
            ELSE COALESCE(a.proposed, CASE WHEN a.o = 'pending' THEN a.since END,
                          (SELECT MIN(r.run_id) - 1 FROM runs r WHERE r.namespace = a.ns
                           AND r.key = a.k AND r.revision = a.rev), a.since) END
         AS proposed_at,
       a.decided AS decided_at,
       CASE WHEN a.o = 'original' THEN 'accepted' ELSE a.o END AS verdict
FROM h a
"""
"""Each procedure's history rows ``h`` as the revisions table (the backends build ``h``)."""

SQLITE = StoreSql(
    runs_source="""
SELECT run_id AS seq, namespace || '/' || key AS k, CAST(revision AS TEXT) AS revision,
       json_extract(body, '$.ok') AS ok, json_extract(body, '$.path') AS path,
       json_extract(body, '$.cost') AS cost, json_extract(body, '$.agent') AS agent
FROM runs
""",
    revisions_source="""
WITH h AS (
  SELECT p.rowid AS pr, p.namespace AS ns, p.key AS k, CAST(j.key AS INTEGER) AS i,
         json_extract(j.value, '$.revision') AS rev, json_extract(j.value, '$.outcome') AS o,
         json_extract(j.value, '$.proposed_at') AS proposed,
         json_extract(j.value, '$.decided_at') AS decided,
         json_extract(p.state, '$.pending_since') AS since
  FROM procedures p, json_each(p.state, '$.history') j)"""
    + _REVISIONS,
    kinds="""
SELECT COUNT(*), TOTAL(typeof(time) IN ('integer', 'real')), TOTAL(rated_at IS NOT NULL),
       TOTAL(typeof(rated_at) IN ('integer', 'real')), TOTAL(user_id IS NOT NULL),
       TOTAL(agent IS NOT NULL)
FROM pack_log
""",
    is_number="(typeof({name}) IN ('integer', 'real'))",
    number=(
        "CASE WHEN {e} IS NULL THEN 'nan' WHEN typeof({e}) = 'integer' THEN {e} "
        "WHEN {e} = CAST({e} AS INTEGER) THEN CAST({e} AS INTEGER) "
        "ELSE printf('%!.17g', {e}) END"
    ),
    integer="{e}",
    text_clock="{name}",
    agg="group_concat({value}, {sep})",
    unit_sep="char(31)",
)

POSTGRES = StoreSql(
    runs_source="""
SELECT run_id AS seq, namespace || '/' || key AS k, CAST(revision AS TEXT) AS revision,
       (j.b ->> 'ok')::boolean::int AS ok,
       CASE WHEN json_typeof(j.t -> 'path') = 'array' THEN '[' || COALESCE(
         (SELECT string_agg(e.v::text, ',' ORDER BY e.i)
          FROM json_array_elements(j.t -> 'path') WITH ORDINALITY AS e(v, i)), '') || ']'
       END AS path,
       (j.b ->> 'cost')::float8 AS cost, j.b ->> 'agent' AS agent
FROM runs, LATERAL (SELECT body::jsonb AS b, body::json AS t) AS j
""",
    revisions_source="""
WITH h AS (
  SELECT p.seq AS pr, p.namespace AS ns, p.key AS k, j.i AS i,
         (j.v ->> 'revision')::bigint AS rev, j.v ->> 'outcome' AS o,
         (j.v ->> 'proposed_at')::float8 AS proposed,
         (j.v ->> 'decided_at')::float8 AS decided,
         (p.state::jsonb ->> 'pending_since')::float8 AS since
  FROM procedures p,
       jsonb_array_elements(p.state::jsonb -> 'history') WITH ORDINALITY AS j(v, i))"""
    + _REVISIONS,
    kinds="""
SELECT COUNT(*), COUNT(*) FILTER (WHERE jsonb_typeof(time) = 'number'), COUNT(rated_at),
       COUNT(*) FILTER (WHERE jsonb_typeof(rated_at) = 'number'), COUNT(user_id),
       COUNT(agent)
FROM pack_log
""",
    is_number="(jsonb_typeof({name}) = 'number')",
    number="CASE WHEN {e} IS NULL THEN 'nan' ELSE ({e})::float8::text END",
    integer="({e})::text",
    text_clock="({name} #>> '{{}}')",
    agg="string_agg({value}, {sep} ORDER BY seq)",
    unit_sep="chr(31)",
)
