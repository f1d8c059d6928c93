"""The IG lens's two tools that run the scorer: the evidence that moved a reward, and what-if.

- **Evidence** (`find_evidence`): the inspected node's cleaned history cut into segments,
  each removed in turn and the node re-scored (`mcts.agents.ig_probe.occlude`); drawn
  by `viz.occlusion_view`. Cached per (question, history, prompt, scorer, variant, alpha,
  beta) in the session, so a second click costs nothing; Stop ends it between passes.
- **What-if** (`what_if`): a visitor's edit of the node's cleaned history scored like the
  node (`viz.whatif_view`): new PPLs, terms, r, and its rank among the siblings.

Both are model jobs like a re-score (`ui.rescoring`): a place in the run gate (taken by
the event's validator), the operator's scorer in public mode, a cost check before the
scorer starts (`Limits.max_rescore_tokens`, `Limits.max_whatif_chars`) and the per-run
wall clock. Neither touches the tree, a trace, a file or another session: their output
goes to the lens's own components only. Bad input (no tree, a node that does not exist,
the root, an empty or huge edit, text that is not valid Unicode) gets one clear line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mcts.search.loop import one_line
from mcts.search.tree import Node
from ui import public
from ui.inspector import parse_node_id
from ui.rescoring import text_tokens
from ui.session import Session
from ui.worlds import get_scorer, scorer_loaded
from viz.escape import md
from viz.ig_lens import anatomy, anatomy_of
from viz.occlusion_view import SpanEffect, occlusion_html, occlusion_summary
from viz.whatif_view import whatif_markdown

if TYPE_CHECKING:
    from mcts.search.history_segments import HistorySegment

log = logging.getLogger(__name__)
EVIDENCE_OUTPUTS = ("evidence_status", "evidence_view")
WHATIF_OUTPUTS = ("whatif_result",)
LENS_NODE_OUTPUTS = (*EVIDENCE_OUTPUTS, "whatif_text", "whatif_result")
MAX_SEGMENTS = 40  # segments one occlusion re-scores (longer histories are grouped)
_CACHE_SIZE = 32  # occlusions kept per session
# Tokens around the history in every scored text: chat template and the prompt's frame.
_FRAME_TOKENS = 48
EVIDENCE_HINT = (
    "*Find the evidence: each piece of this node's cleaned history (an argument, the semantic "
    "phrase, an observation line, a result value) is removed in turn and the node re-scored. "
    "Runs the scorer; the tree is not changed.*"
)


def _node(session: Session, node: Any) -> Node:
    """The scored node the lens works on; raises ValueError with the line to show."""
    tree = session.tree
    if tree is None:
        raise ValueError("No tree yet: run a search or load a trace, then pick a node.")
    node_id = parse_node_id(node)
    if node_id is None or not 0 <= node_id < len(tree):
        raise ValueError(f"No node {str(node)[:40]} in this tree (ids 0–{len(tree) - 1}).")
    if node_id == 0:
        raise ValueError("The root has no history: pick a node below it.")
    return tree[node_id]


def _scorer_model(scorer_model: str) -> str:
    # Public mode: the operator's scorer, whatever a client sent.
    return public.MODE.scorer_model if public.MODE.enabled else (scorer_model or "")


def occlusion_tokens(question: str, history: str, prompt: str, segments: list[HistorySegment]) -> int:
    """An upper estimate of the tokens one occlusion runs: the whole node once, then per
    segment the text after it (the part before it comes from the node's cached pass)."""
    tail = text_tokens(question) + text_tokens(prompt) + _FRAME_TOKENS
    whole = text_tokens(history) + tail
    return whole + sum(text_tokens(history[s.end :]) + tail for s in segments)


def _cache_key(session: Session, node: Node, scorer_name: str) -> tuple[Any, ...]:
    s = session.settings
    tree = session.tree
    assert tree is not None
    return (
        tree.question,
        node.cleaned_history,
        session.ig_prompt,
        scorer_name,
        s.ig_variant,
        s.alpha,
        s.beta,
    )


def _evidence_view(history: str, occlusion: Any, segments: int) -> dict[str, Any]:
    effects = [
        SpanEffect(e.segment.start, e.segment.end, e.segment.label, e.delta_r) for e in occlusion.effects
    ]
    summary = occlusion_summary(
        effects, occlusion.base.reward, segments=segments, complete=occlusion.complete
    )
    note = (
        f"\n\n*{len(effects)} re-scorings in {occlusion.seconds:.1f} s ({occlusion.model_tokens:,} tokens).*"
    )
    return {"evidence_status": summary + note, "evidence_view": occlusion_html(history, effects)}


def find_evidence(
    session: Session,
    node: Any,
    scorer_model: str,
    request: Any = None,
) -> Iterator[dict[str, Any]]:
    """Occlude the inspected node's cleaned history segment by segment (runs the scorer)."""
    ticket: int | None = None
    try:
        ticket = public.claim(session, request)
        yield from _find_evidence(session, node, _scorer_model(scorer_model))
    except public.Busy as exc:
        yield _problem("evidence_status", str(exc))
    finally:
        public.release(ticket)


def _find_evidence(session: Session, node_value: Any, scorer_model: str) -> Iterator[dict[str, Any]]:
    from mcts.agents.ig_probe import occlude
    from mcts.search.history_segments import history_segments

    try:
        node = _node(session, node_value)
        history = node.cleaned_history
        segments = history_segments(history, MAX_SEGMENTS)
        if not segments:
            raise ValueError("This node's cleaned history is empty: there is no evidence to remove.")
        tree = session.tree
        assert tree is not None
        cost = occlusion_tokens(tree.question, history, session.ig_prompt, segments)
        limit = public.MODE.limits.max_rescore_tokens
        if limit is not None and cost > limit:
            raise ValueError(
                f"Finding this node's evidence would feed the scorer about {cost:,} tokens "
                f"({len(segments)} segments); this demo allows {limit:,}."
            )
    except ValueError as exc:
        yield _problem("evidence_status", str(exc))
        return
    loading = "" if scorer_loaded(scorer_model) else " Loading the IG scorer first (a few seconds)."
    yield {
        "evidence_status": f"*Re-scoring node {node.id} without each of its {len(segments)} segments…{loading}*"
    }
    session.lens_stop = False
    started = time.perf_counter()
    s = session.settings
    try:
        scorer, name = get_scorer(scorer_model)
        key = _cache_key(session, node, name)
        cached = session.lens_cache.get(key)
        if cached is None:
            cached = occlude(
                scorer,
                tree.question,
                history,
                alpha=s.alpha,
                beta=s.beta,
                prompt=session.ig_prompt,
                variant=s.ig_variant,
                max_segments=MAX_SEGMENTS,
                stop=lambda: session.lens_stop or public.over_time(started),
            )
            if cached.complete:  # a stopped one is shown, not kept: the next click finishes it
                if len(session.lens_cache) >= _CACHE_SIZE:
                    session.lens_cache.pop(next(iter(session.lens_cache)))
                session.lens_cache[key] = cached
    except Exception as exc:  # a scorer failure is one line; the page keeps what it shows
        log.exception("occlusion failed")
        yield _problem("evidence_status", f"Finding the evidence failed: {one_line(exc)}")
        return
    yield _evidence_view(history, cached, len(segments))


def stop_evidence(session: Session) -> dict[str, Any]:
    """Stop pressed: the occlusion ends after its current pass and shows what it found."""
    session.lens_stop = True
    return {}


def what_if(
    session: Session,
    node: Any,
    edited: str,
    scorer_model: str,
    request: Any = None,
) -> dict[str, Any]:
    """Score an edited cleaned history of the inspected node (runs the scorer); nothing is saved."""
    ticket: int | None = None
    try:
        ticket = public.claim(session, request)
        return _what_if(session, node, edited, _scorer_model(scorer_model))
    except public.Busy as exc:
        return _problem("whatif_result", str(exc))
    finally:
        public.release(ticket)


def _checked_edit(edited: Any) -> str:
    text = edited if isinstance(edited, str) else ""
    limit = public.MODE.limits.max_whatif_chars
    if len(text) > limit:
        raise ValueError(f"The edited history is too long ({len(text):,} characters; at most {limit:,}).")
    if not text.strip():
        raise ValueError("The edited history is empty: write the history to score (the node's is filled in).")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no model or page can carry it
        raise ValueError("The edited history holds a character that is not valid Unicode.") from None
    return text


def _what_if(session: Session, node_value: Any, edited: Any, scorer_model: str) -> dict[str, Any]:
    try:
        node = _node(session, node_value)
        text = _checked_edit(edited)
    except ValueError as exc:
        return _problem("whatif_result", str(exc))
    tree = session.tree
    assert tree is not None
    s = session.settings
    try:
        scorer, _ = get_scorer(scorer_model)
        (score,) = scorer.score(
            tree.question, [text], alpha=s.alpha, beta=s.beta, prompt=session.ig_prompt, variant=s.ig_variant
        )
    except Exception as exc:
        log.exception("what-if scoring failed")
        return _problem("whatif_result", f"Scoring the edit failed: {one_line(exc)}")
    after = anatomy_of(score.detail, score.ppl_history, score.ppl_with_question, s.alpha, s.beta)
    if after is None:
        return _problem("whatif_result", "The scorer returned no perplexities for this text.")
    siblings = [r for c in tree[node.parent].children if c != node.id and (r := tree[c].reward) is not None]
    return {
        "whatif_result": whatif_markdown(
            anatomy(node, s.alpha, s.beta),
            after,
            variant=s.ig_variant,
            run_r=node.reward,
            new_r=score.reward,
            siblings=siblings,
            chars=(len(node.cleaned_history), len(text)),
        )
    }


def lens_for_node(session: Session, node: Any) -> dict[str, Any]:
    """A node picked: its cached evidence (or the hint), and its cleaned history to edit. Cheap."""
    empty = {"evidence_status": EVIDENCE_HINT, "evidence_view": "", "whatif_text": "", "whatif_result": ""}
    try:
        picked = _node(session, node)
    except ValueError:
        return empty
    history = picked.cleaned_history
    out = {**empty, "whatif_text": history}
    s = session.settings
    wanted = ((session.tree.question, history, session.ig_prompt), (s.ig_variant, s.alpha, s.beta))  # type: ignore[union-attr]
    for key, occlusion in session.lens_cache.items():
        if (key[:3], key[4:]) == wanted:  # any scorer: the app runs one
            out.update(_evidence_view(history, occlusion, len(occlusion.effects)))
            break
    return out


def _problem(output: str, message: str) -> dict[str, Any]:
    return {output: f"**Problem:** {md(message)}"}
