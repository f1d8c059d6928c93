"""SPARQL guard and normaliser: what runs in front of every query execution.

`guard_and_normalise` takes query text from the agent (or from a dataset) and either
returns a `PreparedQuery` ready to execute, or raises `kb.base.QueryRejected` with one
clear line. It:

- rejects anything but a SELECT or ASK query (updates, LOAD, SERVICE, CONSTRUCT...),
  unterminated strings, unbalanced brackets and text that does not parse;
- rewrites the Virtuoso dialect found in real Freebase SPARQL (CWQ, WebQSP) into
  SPARQL 1.1: `OR`/`AND` -> `||`/`&&`, `xsd:datetime` -> `xsd:dateTime`, undeclared
  known prefixes (`ns:`, `xsd:`, ...) get a PREFIX line, and prefixed names whose local
  part contains a dot (`ns:type.object.name`) become full IRIs, because pyoxigraph
  0.5.13 refuses local names with two or more dots;
- caps the rows of a SELECT at `max_rows + 1` so the caller can tell a truncated
  result from a complete one.

It works on a hand-written tokeniser (strings, IRIs, comments, prefixed names,
variables, words), so string literals are never touched. Every step is linear in the
text, and limits are checked before any parser sees it: length (`MAX_QUERY_CHARS`),
bracket nesting (`MAX_NESTING`: pyoxigraph's recursive parser crashed the process at
3,000 nested `{`) and triple patterns (`MAX_TRIPLE_PATTERNS`: 1,000 unconnected patterns
kept the planner busy for minutes even on an empty store). It knows nothing of any store
except that the final parse check runs the query on an empty pyoxigraph store (pyoxigraph
0.5.13 exposes no parse-only API; an empty store evaluates nothing) in a child process
(`kb.query_worker`) killed at `PARSE_TIMEOUT_S`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from kb.base import QueryRejected

QueryForm = Literal["select", "ask"]

FREEBASE_NS = "http://rdf.freebase.com/ns/"
XSD_NS = "http://www.w3.org/2001/XMLSchema#"

# Prefixes known even when the caller passes none: real Freebase queries use `ns:` and
# `xsd:` without declaring them (Virtuoso predeclares both).
DEFAULT_PREFIXES: dict[str, str] = {
    "ns": FREEBASE_NS,
    "xsd": XSD_NS,
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
}

# Keywords of SPARQL Update: never a legal bare word in a SELECT/ASK query, so their
# presence anywhere outside strings, IRIs and comments means an update was attempted.
_UPDATE_WORDS = frozenset(
    {"INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH"}
)
_OTHER_FORMS = frozenset({"CONSTRUCT", "DESCRIBE"})

# Limits a query must meet before any parser sees it. Real Freebase queries (the fbqa
# corpus and dev set) reach 924 characters, nesting 5 and 13 patterns.
MAX_QUERY_CHARS = 10_000
MAX_NESTING = 32  # ( { [ open at once
MAX_TRIPLE_PATTERNS = 64  # counted as `.`, `;` and `,` separators plus groups
PARSE_TIMEOUT_S = 5.0

_PLX = r"%[0-9A-Fa-f]{2}|\\[_~.\-!$&'()*+,;=/?#@%]"
_PN_CHAR = r"[\w\-\u00B7]"
_TOKEN = re.compile(
    rf"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>'''(?:(?:'|'')?(?:[^'\\]|\\.))*'''
             | \"\"\"(?:(?:"|"")?(?:[^"\\]|\\.))*\"\"\"
             | '(?:[^'\\\n\r]|\\.)*'
             | "(?:[^"\\\n\r]|\\.)*")
  | (?P<badstring>['"])
  | (?P<iri><[^<>"{{}}|^`\\\x00-\x20]*>)
  | (?P<var>[?$]\w+)
  | (?P<bnode>_:[\w\-.]*[\w\-])
  | (?P<lang>@[A-Za-z]+(?:-[A-Za-z0-9]+)*)
  | (?P<pname>(?:[^\W\d_](?:(?:{_PN_CHAR}|\.)*{_PN_CHAR})?)?:
               (?:(?:[\w:]|{_PLX})(?:(?:{_PN_CHAR}|[.:]|{_PLX})*(?:{_PN_CHAR}|:|{_PLX}))?)?)
  | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)
  | (?P<word>[^\W\d](?:[\w\-\u00B7.]*[\w\-\u00B7])?)
  | (?P<punct>\|\||&&|\^\^|!=|<=|>=|.)
    """,
    re.VERBOSE | re.DOTALL,
)
# A word token runs over dots and hyphens (`a.a.a`): the pname alternative has already
# scanned that far looking for a `:`, and stopping the word earlier made the tokeniser
# rescan the run from every dot (quadratic: 16 KB of `a.` took 5 s).
_WORD_PARTS = re.compile(r"[.\-\u00B7]")
_UNESCAPE_LOCAL = re.compile(r"\\(.)")
_OPEN = {"{": "}", "(": ")", "[": "]"}
_CLOSE = {v: k for k, v in _OPEN.items()}


@dataclass(frozen=True)
class PreparedQuery:
    """A guarded, normalised query ready to execute."""

    sparql: str
    form: QueryForm
    limit_added: bool = False  # a LIMIT was added or lowered to cap the rows


@dataclass
class _Tok:  # mutable on purpose: the rewrite passes edit tokens in place
    kind: str
    text: str


def tokenise(text: str) -> list[_Tok]:
    """Split SPARQL text into tokens; raises QueryRejected on an unterminated string."""
    tokens: list[_Tok] = []
    # The `punct` alternative matches any character, so the matches tile the text.
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "punct"
        if kind == "badstring":
            line = text.count("\n", 0, m.start()) + 1
            raise QueryRejected(f"unterminated string literal starting at line {line}")
        tokens.append(_Tok(kind, m.group()))
    return tokens


def _significant(tokens: list[_Tok]) -> list[int]:
    return [i for i, t in enumerate(tokens) if t.kind not in ("ws", "comment")]


def _declared_prefixes(tokens: list[_Tok], sig: list[int]) -> dict[str, str]:
    declared: dict[str, str] = {}
    for n, i in enumerate(sig[:-2]):
        t = tokens[i]
        if t.kind == "word" and t.text.upper() == "PREFIX":
            name, iri = tokens[sig[n + 1]], tokens[sig[n + 2]]
            if name.kind == "pname" and name.text.endswith(":") and iri.kind == "iri":
                declared[name.text[:-1]] = iri.text[1:-1]
    return declared


def _query_form(tokens: list[_Tok], sig: list[int]) -> QueryForm:
    """The query form: the first keyword after the prologue (PREFIX/BASE lines)."""
    n = 0
    while n < len(sig):
        word = tokens[sig[n]].text.upper() if tokens[sig[n]].kind == "word" else ""
        if word == "PREFIX":
            n += 3
        elif word == "BASE":
            n += 2
        else:
            break
    if n >= len(sig):
        raise QueryRejected("no query after the PREFIX declarations")
    tok = tokens[sig[n]]
    word = tok.text.upper()
    if tok.kind == "word" and word in ("SELECT", "ASK"):
        return "select" if word == "SELECT" else "ask"
    if tok.kind == "word" and word in _OTHER_FORMS:
        raise QueryRejected(f"only SELECT and ASK queries are allowed, not {word}")
    raise QueryRejected(f"a query must start with SELECT or ASK, found {tok.text[:30]!r}")


def _check_forbidden(tokens: list[_Tok]) -> None:
    for t in tokens:
        if t.kind != "word":
            continue
        for word in _WORD_PARTS.split(t.text.upper()):
            if word in _UPDATE_WORDS:
                raise QueryRejected(f"update operations are not allowed ({word}); only SELECT and ASK")
            if word == "SERVICE":
                raise QueryRejected("SERVICE (federated query) is not allowed")


def _check_balanced(tokens: list[_Tok]) -> None:
    """Brackets balanced, nested at most MAX_NESTING deep, at most MAX_TRIPLE_PATTERNS."""
    stack: list[str] = []
    patterns = 0
    for t in tokens:
        if t.kind != "punct":
            continue
        if t.text in _OPEN:
            stack.append(t.text)
            if len(stack) > MAX_NESTING:
                raise QueryRejected(f"brackets nested more than {MAX_NESTING} deep")
            patterns += t.text == "{"
        elif t.text in _CLOSE:
            if not stack or stack[-1] != _CLOSE[t.text]:
                raise QueryRejected(f"unbalanced brackets: unexpected {t.text!r}")
            stack.pop()
        elif t.text in ".;," and "{" in stack:
            patterns += 1
        if patterns > MAX_TRIPLE_PATTERNS:
            raise QueryRejected(f"more than {MAX_TRIPLE_PATTERNS} triple patterns or groups; split the query")
    if stack:
        raise QueryRejected(f"unbalanced brackets: {stack[-1]!r} is never closed")


def _rewrite(tokens: list[_Tok], known: Mapping[str, str], declared: Mapping[str, str]) -> set[str]:
    """Rewrite dialect tokens in place; returns the prefixes still used as prefixed names."""
    used: set[str] = set()
    in_prefix_decl = False
    for i, t in enumerate(tokens):
        if t.kind == "word":
            upper = t.text.upper()
            in_prefix_decl = upper == "PREFIX"
            # SPARQL has no OR/AND keywords, so a bare OR/AND is Virtuoso's operator.
            if upper == "OR":
                tokens[i] = _Tok("punct", "||")
            elif upper == "AND":
                tokens[i] = _Tok("punct", "&&")
        elif t.kind == "pname":
            if in_prefix_decl:  # the `ns:` of `PREFIX ns: <...>`
                in_prefix_decl = False
                continue
            prefix, local = t.text.split(":", 1)
            namespace = declared.get(prefix, known.get(prefix))
            if namespace == XSD_NS and local == "datetime":  # Virtuoso's lower-case cast
                local = "dateTime"
                t = tokens[i] = _Tok("pname", f"{prefix}:{local}")
            if namespace is not None and "." in local:
                full = namespace + _UNESCAPE_LOCAL.sub(r"\1", local)
                tokens[i] = _Tok("iri", f"<{full}>")
            else:
                used.add(prefix)
        elif t.kind == "iri" and t.text == f"<{XSD_NS}datetime>":
            tokens[i] = _Tok("iri", f"<{XSD_NS}dateTime>")
    return used


def _cap_rows(tokens: list[_Tok], max_rows: int) -> bool:
    """Make the outer SELECT return at most max_rows + 1 rows; True if the text changed."""
    cap = max_rows + 1
    depth = 0
    values_at: int | None = None
    sig = _significant(tokens)
    for n, i in enumerate(sig):
        t = tokens[i]
        if t.kind == "punct" and t.text == "{":
            depth += 1
        elif t.kind == "punct" and t.text == "}":
            depth -= 1
        elif depth == 0 and t.kind == "word":
            word = t.text.upper()
            if word == "LIMIT" and n + 1 < len(sig) and tokens[sig[n + 1]].kind == "number":
                number = tokens[sig[n + 1]]
                if number.text.isdigit() and int(number.text) <= max_rows:
                    return False
                number.text = str(cap)
                return True
            if word == "VALUES":
                values_at = i
    # No outer LIMIT: add one, before a trailing VALUES block (the grammar puts
    # solution modifiers before it).
    clause = _Tok("ws", f"\nLIMIT {cap}\n")
    if values_at is None:
        tokens.append(clause)
    else:
        tokens.insert(values_at, clause)
    return True


def check_parses(sparql: str, *, timeout_s: float = PARSE_TIMEOUT_S) -> None:
    """Raise QueryRejected (one line) if pyoxigraph cannot parse `sparql`; QueryTimeout
    or KBError if the check itself is stopped (its worker is killed at `timeout_s`)."""
    from kb.query_worker import parser_pool

    parser_pool().request("parse", sparql, timeout_s=timeout_s)


def guard_and_normalise(
    text: str, prefixes: Mapping[str, str] | None = None, *, max_rows: int | None = None
) -> PreparedQuery:
    """Guard and normalise one query (see the module docstring). Raises QueryRejected.

    `prefixes` (e.g. a KB flavour's) are added to DEFAULT_PREFIXES; a PREFIX declared
    in the query wins over both. `max_rows=None` leaves LIMIT alone.
    """
    if not text or not text.strip():
        raise QueryRejected("empty query")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryRejected(f"query too long ({len(text):,} characters; at most {MAX_QUERY_CHARS:,})")
    tokens = tokenise(text)
    sig = _significant(tokens)
    if not sig:
        raise QueryRejected("empty query (only comments)")
    _check_forbidden(tokens)
    form = _query_form(tokens, sig)
    _check_balanced(tokens)

    known = {**DEFAULT_PREFIXES, **(prefixes or {})}
    declared = _declared_prefixes(tokens, sig)
    used = _rewrite(tokens, known, declared)
    # Comments go: a trailing comment would swallow an appended LIMIT, and leading
    # `#MANUAL SPARQL` markers carry nothing the engine needs.
    tokens = [t for t in tokens if t.kind != "comment"]
    limit_added = False
    if form == "select" and max_rows is not None:
        limit_added = _cap_rows(tokens, max_rows)

    missing = sorted(p for p in used if p not in declared and p in known)
    header = "".join(f"PREFIX {p}: <{known[p]}>\n" for p in missing)
    sparql = header + "".join(t.text for t in tokens).strip()
    check_parses(sparql)
    return PreparedQuery(sparql=sparql, form=form, limit_added=limit_added)
