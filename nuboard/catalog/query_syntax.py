"""The query language's syntax: the text to a small tree of frozen dataclasses (stdlib only).

`parse_query` checks every value as it reads it, so a query that parses also compiles; the
compiler is `nuboard.catalog.query`. docs/query.md is the user's reference; keep them in step.
"""
from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field, replace
from typing import Union

from nuboard.errors import NuBoardError

MAX_LENGTH = 10_000
MAX_DEPTH = 100          # parentheses inside parentheses
MAX_LEVELS = 16          # AND / OR groups inside each other once simplified (SQLite's parser)
CHAIN = 8                # terms the compiler joins in one chain before it balances a tree
STATUSES = ("running", "finished", "crashed", "killed", "failed", "lost")
SUMMARIES = ("min", "max", "last", "count", "last_step")
TEXT_FIELDS = {"tag": "a tag", "name": "a name", "group": "a group", "host": "a host",
               "project": "a project", "id": "a run id", "parent": "a parent run id",
               "status": "one of " + ", ".join(STATUSES)}
DATE_FIELDS = ("created", "ended")
DATE_NOUN = "a date like 2026-10-01, a time like 2026-10-01T12:00 or an age like 7d"
FIELDS = (*TEXT_FIELDS, *DATE_FIELDS)
ALIASES = {"started": "created", "start": "created", "date": "created", "time": "created",
           "end": "ended", "finished": "ended", "tags": "tag", "state": "status",
           "groups": "group", "run": "name"}   # keys people type for a field
OPERATORS = ("!=", "<=", ">=", "==", "<", ">", "=", ":")      # longest first
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")
BEYOND_DOUBLES_DIGITS = 400   # an int of more digits is past every double (and Python's int())
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?Z?")
_AGE = re.compile(r"(\d+(?:\.\d+)?)([mhdw])")
_AGE_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_PRECISION = {3: dt.timedelta(days=1), 5: dt.timedelta(minutes=1), 6: dt.timedelta(seconds=1)}
_UTC = dt.timezone.utc


class QuerySyntaxError(NuBoardError, ValueError):
    """A query does not parse: says at which 1-based column, and what was expected there."""

    def __init__(self, expected: str, column: int, *, after: str | None = None,
                 got: str | None = None):
        self.expected, self.column, self.after, self.got = expected, column, after, got
        message = f"expected {expected}"
        if after is not None:
            message += f" after {_clip(after)!r}"
        message += f" at column {column}"
        if got:
            message += f", not {_clip(got)!r}"
        super().__init__(message)


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


# ---- the tree ----

@dataclass(frozen=True)
class Word:
    """A free word or quoted phrase: a case-insensitive substring of the name or the notes."""
    text: str


@dataclass(frozen=True)
class Field:
    """tag (exact), status (one of STATUSES) or a glob on name, group, host, project or id."""
    name: str
    value: str


@dataclass(frozen=True)
class Date:
    """created or ended against the interval [start, end) a date names, or an age before now."""
    name: str
    op: str                                   # =, <, <=, >, >=
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    age: dt.timedelta | None = None


@dataclass(frozen=True)
class Compare:
    """A config value and/or a rank-0 scalar summary compared with a number or a text."""
    key: str
    op: str                                   # =, <, <=, >, >=
    value: int | float | str                  # a number compares numbers (an int exactly), a str text
    source: str                               # "config", "scalar" or "either"
    summary: str = "last"                     # the scalars column a scalar compares


@dataclass(frozen=True)
class Not:
    term: Node


@dataclass(frozen=True)
class And:
    terms: tuple[Node, ...]
    column: int = field(default=1, compare=False, repr=False)     # where it starts, for messages


@dataclass(frozen=True)
class Or:
    terms: tuple[Node, ...]
    column: int = field(default=1, compare=False, repr=False)


Node = Union[Word, Field, Date, Compare, Not, And, Or]


def _negate(node: Node) -> Node:
    return node.term if isinstance(node, Not) else Not(node)


# ---- the parser ----

def _stops(ch: str) -> bool:
    """Whether `ch` ends a bare word: whitespace, a parenthesis, a quote, or the end."""
    return ch == "" or ch.isspace() or ch in '()"'


class _Parser:
    """Recursive descent over the characters, keeping the position for messages."""

    def __init__(self, text: str):
        self.text, self.pos, self.depth = text, 0, 0

    def fail(self, expected: str, index: int, *, after: str | None = None,
             got: str | None = None):
        raise QuerySyntaxError(expected, index + 1, after=after, got=got)

    def char(self, offset: int = 0) -> str:
        i = self.pos + offset
        return self.text[i] if i < len(self.text) else ""

    def skip(self) -> None:
        while self.char().isspace():
            self.pos += 1

    def bare(self, start: int) -> int:
        """The index where the bare word that begins at `start` ends."""
        end = start
        while not _stops(self.text[end:end + 1]):
            end += 1
        return end

    def keyword(self) -> str | None:
        word = self.text[self.pos:self.bare(self.pos)]
        return word if word in ("OR", "AND", "NOT") else None

    def at_stop(self) -> bool:
        """At the end, a ')' or an OR / AND keyword: where no term can start."""
        return self.char() in ("", ")") or self.keyword() in ("OR", "AND")

    def parse(self) -> Node:
        if not self.text.strip():
            return And(())
        node = self.parse_or(None)
        if self.pos < len(self.text):               # only an unmatched ')' stops parse_or early
            self.fail("a matching '(' before ')'", self.pos)
        return node

    def parse_or(self, after: str | None) -> Node:
        self.skip()
        start = self.pos
        terms = [self.parse_and(after)]
        while self.keyword() == "OR":
            self.pos += 2
            terms.append(self.parse_and("OR"))
        return terms[0] if len(terms) == 1 else Or(tuple(terms), start + 1)

    def parse_and(self, after: str | None) -> Node:
        self.skip()
        start = self.pos
        terms: list[Node] = []
        while True:
            self.skip()
            word = self.keyword()
            if self.char() in ("", ")") or word == "OR":
                break
            if word == "AND":
                if not terms:
                    self.fail("a term before 'AND'", self.pos)
                self.pos += 3
                self.skip()
                if self.at_stop():
                    self.fail("a term", self.pos, after="AND")
                continue
            terms.append(self.parse_unary())
        if not terms:
            if after is not None:
                self.fail("a term", self.pos, after=after)
            if word == "OR":
                self.fail("a term before 'OR'", self.pos)
            self.fail("a matching '(' before ')'", self.pos)
        return terms[0] if len(terms) == 1 else And(tuple(terms), start + 1)

    def parse_unary(self) -> Node:
        negate = False
        while True:
            if self.char() == "-":
                if _stops(self.char(1)) and self.char(1) not in ('(', '"'):
                    self.fail("a term", self.pos + 1, after="-")
                negate = not negate
                self.pos += 1
            elif self.keyword() == "NOT":
                negate = not negate
                self.pos += 3
                self.skip()
                if self.at_stop():
                    self.fail("a term", self.pos, after="NOT")
            else:
                break
        node = self.parse_primary()
        return _negate(node) if negate else node

    def parse_primary(self) -> Node:
        if self.char() == "(":
            if self.depth >= MAX_DEPTH:
                self.fail(f"at most {MAX_DEPTH} nested parentheses", self.pos)
            start = self.pos
            self.pos += 1
            self.depth += 1
            node = self.parse_or("(")
            if self.char() != ")":
                self.fail("')'", self.pos, after=self.text[start:self.pos].rstrip())
            self.pos += 1
            self.depth -= 1
            return replace(node, column=start + 1) if isinstance(node, (And, Or)) else node
        if self.char() == '"':
            return Word(self.read_quoted())
        return self.parse_term()

    def read_quoted(self) -> str:
        """The text of the quoted string at pos; a backslash escapes '"' and itself."""
        text, start = self.text, self.pos
        out, i = [], start + 1
        while i < len(text):
            ch = text[i]
            if ch == "\\" and text[i + 1:i + 2] in ('"', "\\"):
                out.append(text[i + 1])
                i += 2
            elif ch == '"':
                self.pos = i + 1
                return "".join(out)
            else:
                out.append(ch)
                i += 1
        self.fail("a closing '\"'", len(text), after=text[start:])

    def read_operator(self) -> str | None:
        op = next((o for o in OPERATORS if self.text.startswith(o, self.pos)), None)
        if op is not None:
            self.pos += len(op)
        return op

    def parse_term(self) -> Node:
        text, start = self.text, self.pos
        end = start
        while not _stops(text[end:end + 1]) and text[end] not in ":=<>" \
                and text[end:end + 2] != "!=":
            end += 1
        key, self.pos = text[start:end], end
        if self.char() == "(":
            return self.parse_summary(key, start)
        op = self.read_operator()
        if op is None:
            return Word(key)
        if not key:
            self.fail(f"a field name before {op!r}", start)
        return self.parse_comparison(key, op, text[start:self.pos], start + len(key))

    def parse_summary(self, func: str, start: int) -> Node:
        summary = func.lower()
        if summary not in SUMMARIES:
            self.fail(f"one of {', '.join(SUMMARIES)} before '('", start, got=func)
        self.pos += 1
        self.skip()
        if self.char() == '"':
            name = self.read_quoted()
        else:
            end = self.bare(self.pos)
            name, at, self.pos = self.text[self.pos:end], self.pos, end
            if not name:
                self.fail("a scalar name", at, after=self.text[start:at].rstrip())
        self.skip()
        if self.char() != ")":
            self.fail("')'", self.pos, after=self.text[start:self.pos].rstrip(),
                      got=self.text[self.pos:self.bare(self.pos)])
        self.pos += 1
        op_at = self.pos
        op = self.read_operator()
        if op is None:
            self.fail("an operator (:, =, !=, <, <=, >, >=)", op_at,
                      after=self.text[start:op_at], got=self.text[op_at:self.bare(op_at)])
        return self.parse_comparison(name, op, self.text[start:self.pos], op_at, summary)

    def read_value(self, noun: str, written: str) -> tuple[str, int, bool]:
        """The value after an operator: (its text, its index, whether it was quoted)."""
        at = self.pos
        if self.char() == '"':
            return self.read_quoted(), at, True
        self.pos = self.bare(at)
        if self.pos == at:
            self.fail(noun, at, after=written)
        return self.text[at:self.pos], at, False

    def parse_comparison(self, key: str, op: str, written: str, op_at: int,
                         summary: str | None = None) -> Node:
        written_op = op
        op = "=" if op in (":", "==") else op
        negated, op = op == "!=", ("=" if op == "!=" else op)
        if summary is None and key in TEXT_FIELDS:
            if op != "=":
                self.fail("':', '=' or '!='", op_at, after=key, got=written_op)
            value, at, _ = self.read_value(TEXT_FIELDS[key], written)
            if key == "status":
                value = value.lower()
                if value not in STATUSES:
                    self.fail(TEXT_FIELDS[key], at, after=written, got=value)
            node: Node = Field(key, value)
        elif summary is None and key in DATE_FIELDS:
            value, at, _ = self.read_value(DATE_NOUN, written)
            node = self.parse_date(key, op, value, at, written)
        else:
            source = "scalar" if summary else "either"
            if summary is None and key.startswith("config."):
                source, key = "config", key[len("config."):]
                if not key:
                    self.fail("a config key", op_at, after="config.", got=written_op)
            elif "/" in key:
                source = "scalar"
            noun = "a number" if source == "scalar" else "a value"
            value, at, quoted = self.read_value(noun, written)
            number = read_number(value)
            if quoted and source != "scalar":
                number = None                   # a quoted value is text, even "512"
            if source == "scalar" and number is None:
                self.fail(noun, at, after=written, got=value or '""')
            node = Compare(key, op, value if number is None else number, source,
                           summary or "last")
        return _negate(node) if negated else node

    def parse_date(self, key: str, op: str, value: str, at: int, written: str) -> Date:
        try:
            age = _AGE.fullmatch(value)
            if age:
                delta = dt.timedelta(**{_AGE_UNITS[age[2]]: float(age[1])})
                return Date(key, op, age=delta)
            date = _DATE.fullmatch(value)
            if date:
                parts = [int(g) for g in date.groups() if g is not None]
                start = dt.datetime(*parts, tzinfo=_UTC)
                last = dt.datetime.max.replace(tzinfo=_UTC)
                return Date(key, op, start=start, end=min(last - _PRECISION[len(parts)], start)
                            + _PRECISION[len(parts)])
        except (ValueError, OverflowError):
            pass
        self.fail(DATE_NOUN, at, after=written, got=value or '""')


def read_number(text: str) -> int | float | None:
    """A number as the query writes it: an int when it has no '.' and no exponent (exactly,
    however large), else a float (None when the text is not a number)."""
    if _INTEGER.fullmatch(text):
        sign, digits = -1 if text.startswith("-") else 1, text.lstrip("+-").lstrip("0")
        if len(digits) > BEYOND_DOUBLES_DIGITS:     # past every double: compares as 10**400 would
            return sign * 10 ** BEYOND_DOUBLES_DIGITS
        return sign * int(digits or "0")
    return float(text) if _NUMBER.fullmatch(text) else None


def parse_query(text: str) -> Node:
    """The tree of a query; an empty or blank query is `And(())`, which matches every run.

    Raises:
        QuerySyntaxError: the query does not parse, is over 10,000 characters or nests too
            deep; it says at which column and what was expected there.
    """
    if not isinstance(text, str):
        raise TypeError(f"A query is text, not {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise QuerySyntaxError(f"the end of the query (a query has at most {MAX_LENGTH:,} "
                               f"characters; this one has {len(text):,})", MAX_LENGTH + 1)
    tree = _Parser(text).parse()
    _check_levels(normalize(tree), 0)
    return tree


def normalize(node: Node, negate: bool = False) -> Node:
    """The same query with NOT moved onto the leaves (De Morgan), the groups inside a group of
    the same kind merged into it, and in each group its leaves before its groups."""
    while isinstance(node, Not):
        node, negate = node.term, not negate
    if not isinstance(node, (And, Or)):
        return Not(node) if negate else node
    kind = And if isinstance(node, And) != negate else Or
    leaves: list[Node] = []
    groups: list[Node] = []
    for term in node.terms:
        part = normalize(term, negate)
        for t in (part.terms if isinstance(part, kind) else (part,)):
            (groups if isinstance(t, (And, Or)) else leaves).append(t)
    return kind(tuple(leaves + groups), node.column)


def chain_levels(count: int) -> int:
    """How many levels the compiler's balanced tree of `count` terms adds."""
    levels = 0
    while count > CHAIN:
        count, levels = count - count // 2, levels + 1
    return levels


def _check_levels(node: Node, depth: int) -> None:
    if isinstance(node, (And, Or)):
        depth += 1 + chain_levels(len(node.terms))
        if depth > MAX_LEVELS:
            raise QuerySyntaxError(f"at most {MAX_LEVELS} levels of groups that alternate "
                                   "AND and OR", node.column)
        for term in node.terms:
            _check_levels(term, depth)


# ---- warnings: keys no run has ----

def compared(node: Node) -> Iterator[Compare]:
    """The comparisons of config values and scalars in the tree, in the order written."""
    if isinstance(node, Compare):
        yield node
    elif isinstance(node, Not):
        yield from compared(node.term)
    elif isinstance(node, (And, Or)):
        for term in node.terms:
            yield from compared(term)


def is_known(term: Compare, config: Collection[str], scalar: Collection[str]) -> bool:
    """Whether some run has the key the comparison reads (a config key, a scalar, either)."""
    if term.source == "config":
        return term.key in config
    if term.source == "scalar":
        return term.key in scalar
    return term.key in config or term.key in scalar


def nearest_key(term: Compare, config: Collection[str], scalar: Collection[str]) -> str | None:
    """The known key the comparison most likely meant, written as a query writes it: a field
    it is another name for ('started' -> created), a key it ends or that ends it ('lr' ->
    optimizer.lr, 'optimizer.lr' -> lr; the shortest, config keys before scalars), else the
    closest spelling (difflib) of the whole key, else of its last part ('los' -> eval/loss),
    else None."""
    key = term.key
    if term.source == "either" and key.lower() in ALIASES:
        return ALIASES[key.lower()]
    groups = {"config": [sorted(config)], "scalar": [sorted(scalar)],
              "either": [sorted(config), sorted(scalar), list(FIELDS)]}[term.source]
    lowered = key.lower()
    for names in groups:
        ends = [n for n in names if n.lower() != lowered
                and (n.lower().endswith(("." + lowered, "/" + lowered))
                     or lowered.endswith(("." + n.lower(), "/" + n.lower())))]
        same = [n for n in names if n.lower() == lowered]
        if same or ends:
            return _written(term, min(same or ends, key=len))
    everything = [n for names in groups for n in names]
    close = difflib.get_close_matches(key, everything, n=1, cutoff=0.6)
    if close:
        return _written(term, close[0])
    last = {}                                  # 'los' -> train/loss, by the name's last part
    for n in everything:
        last.setdefault(re.split(r"[./]", n)[-1], n)
    close = difflib.get_close_matches(key, list(last), n=1, cutoff=0.6)
    return _written(term, last[close[0]]) if close else None


def _written(term: Compare, key: str) -> str:
    return "config." + key if term.source == "config" else key


def key_warnings(node: Node, config: Collection[str], scalar: Collection[str]) -> list[str]:
    """One line for each key the query compares that no run has, naming the nearest known key:
    "unknown key 'lr' — did you mean optimizer.lr?". The query still runs; such a term matches
    no run (a negated one, every run)."""
    out: list[str] = []
    for term in compared(node):
        if is_known(term, config, scalar):
            continue
        written = _written(term, term.key)
        near = nearest_key(term, config, scalar)
        line = (f"unknown key {written!r} — did you mean {near}?" if near else
                f"unknown key {written!r} — no run has a config key or scalar of that name")
        if line not in out:
            out.append(line)
    return out
