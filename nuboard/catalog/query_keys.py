"""What the query box knows of a project: the keys and values it completes, and the warnings
for keys no run has and for a lowercase `and`/`or` that no run name holds (docs/query.md,
"Warnings" and "Completion").

Reads only; the faces (viewer, `nuboard ls`, nb.runs and the other tables) pass a `Catalog`
and get plain dicts, lists, sets and lines back, so every face words a warning the same.
"""
from __future__ import annotations

from sqlalchemy import select

from .query_syntax import FIELDS, STATUSES, SUMMARIES, And, Node, Not, Or, Word, compared, key_warnings, parse_query
from .run_reads import ID_CHUNK, NAME_LIMIT, column_choices
from .tables import config, runs, scalars, tags


def completion_keys(catalog) -> dict:
    """The lists the query box completes from, each sorted and at most NAME_LIMIT long:
    {'fields', 'summaries', 'config', 'scalar', 'values': {'tag', 'status', 'group'}}."""
    choices = column_choices(catalog)
    with catalog.reader.connect() as conn:
        tag_values = [r[0] for r in conn.execute(
            select(tags.c.tag).distinct().order_by(tags.c.tag).limit(NAME_LIMIT))]
        groups = [r[0] for r in conn.execute(
            select(runs.c.group_name).distinct()
            .where(runs.c.project_id == catalog.project_id, runs.c.group_name.isnot(None))
            .order_by(runs.c.group_name).limit(NAME_LIMIT))]
    return {"fields": list(FIELDS), "summaries": list(SUMMARIES), "config": choices["config"],
            "scalar": choices["scalar"],
            "values": {"tag": tag_values, "status": list(STATUSES), "group": groups}}


OPERATOR_WORDS = {"and": "AND", "or": "OR"}
"""Free words that are almost always a lowercase operator: the language's are upper case."""


def operator_words(node: Node) -> list[str]:
    """The free words `and` / `or` (typed lowercase) of the tree, each once, in the order
    written."""
    out: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Word) and n.text in OPERATOR_WORDS and n.text not in out:
            out.append(n.text)
        elif isinstance(n, Not):
            stack.append(n.term)
        elif isinstance(n, (And, Or)):
            stack.extend(reversed(n.terms))
    return out


def _matched_words(catalog, words: list[str]) -> set[str]:
    """The words some run of the project holds in its name or notes, as a free word matches."""
    found = set()
    with catalog.reader.connect() as conn:
        for word in words:
            pattern = f"%{word}%"
            hit = conn.execute(select(runs.c.run_id).where(
                runs.c.project_id == catalog.project_id,
                runs.c.name.ilike(pattern) | (runs.c.notes.isnot(None) & runs.c.notes.ilike(pattern)))
                .limit(1)).first()
            if hit is not None:
                found.add(word)
    return found


def _matches_a_run(catalog, query: str) -> bool:
    """Whether the query matches at least one run of the project."""
    import datetime as dt

    from .query import compile_query
    where = compile_query(query, now=dt.datetime.now(dt.timezone.utc))
    with catalog.reader.connect() as conn:
        return conn.execute(select(runs.c.id).where(runs.c.project_id == catalog.project_id, where)
                            .limit(1)).first() is not None


def known_names(catalog, query: str) -> dict[str, set[str]]:
    """The config keys and rank-0 scalar names the catalog has, as far as the query's warnings
    need them: every key the query compares that some run has, and the first NAME_LIMIT of
    each kind to suggest from; and which of the query's free words `and`/`or` some run's name
    or notes hold. {'config': set, 'scalar': set, 'words': set}.

    Raises:
        QuerySyntaxError: the query does not parse.
    """
    node = parse_query(query)
    words = operator_words(node)
    matched = _matched_words(catalog, words) if words else set()
    if matched and not _matches_a_run(catalog, query):
        matched = {f"{word} (in an empty result)" for word in matched}
    wanted = list(compared(node))
    if not wanted:
        return {"config": set(), "scalar": set(), "words": matched}
    keys = sorted({t.key for t in wanted if t.source != "scalar"})
    names = sorted({t.key for t in wanted if t.source != "config"})
    found = {"config": set(), "scalar": set()}
    with catalog.reader.connect() as conn:
        for i in range(0, len(keys), ID_CHUNK):
            found["config"].update(r[0] for r in conn.execute(
                select(config.c.key).distinct().where(config.c.key.in_(keys[i:i + ID_CHUNK]))))
        for i in range(0, len(names), ID_CHUNK):
            found["scalar"].update(r[0] for r in conn.execute(
                select(scalars.c.name).distinct().where(scalars.c.rank == 0,
                                                        scalars.c.name.in_(names[i:i + ID_CHUNK]))))
    if all(t.key in found["config"] or t.key in found["scalar"] for t in wanted):
        return {**found, "words": matched}  # nothing unknown: no list to suggest from
    choices = column_choices(catalog)
    return {**{kind: found[kind] | set(choices[kind]) for kind in found}, "words": matched}


def warnings_for(query: str, known: list[dict[str, set[str]]]) -> list[str]:
    """The query's warnings against the names of one or more catalogs (known_names of each):
    one line for each key that none of them has, then one for each free word `and`/`or` that
    no run name (nor notes) of any of them holds.

    Raises:
        QuerySyntaxError: the query does not parse.
    """
    node = parse_query(query)
    config_names = set().union(*(k["config"] for k in known)) if known else set()
    scalar_names = set().union(*(k["scalar"] for k in known)) if known else set()
    matched = set().union(*(k.get("words", set()) for k in known)) if known else set()
    hints = []
    for word in operator_words(node):
        if word in matched:
            continue
        if f"{word} (in an empty result)" in matched:   # some name holds it, yet nothing matched
            hints.append(f"the query matches no run and holds the lowercase word {word!r}, a free "
                         f"word like any other; did you mean {OPERATOR_WORDS[word]}? (the "
                         "operators are upper case)")
        else:
            hints.append(f"the word {word!r} matches no run name; did you mean "
                         f"{OPERATOR_WORDS[word]}? (the operators are upper case)")
    return key_warnings(node, config_names, scalar_names) + hints


def query_warnings(catalog, query: str) -> list[str]:
    """The warnings of a query over one project's catalog ([] for an empty query).

    Raises:
        QuerySyntaxError: the query does not parse.
    """
    if not query.strip():
        return []
    return warnings_for(query, [known_names(catalog, query)])
