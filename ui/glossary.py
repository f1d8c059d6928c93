"""One line for every term the page shows: the app's glossary and docs/app.md's, word for word.

The Search and How-it-works tabs show `glossary_markdown()`; docs/app.md's "Glossary"
section holds the same lines (a test compares them). Plain data, no Gradio.
"""

from __future__ import annotations

# term -> its gloss (Markdown, one line); in the order a class meets them.
GLOSSARY: dict[str, str] = {
    "IG reward r": (
        "how much more likely the question reads after a step's cleaned history: "
        "r = α·σ(β·log(PPL(H′) / PPL(H′, Q))); above α/2 (blue) the history made the question more likely."
    ),
    "cleaned history H′": (
        "the branch's steps with what could restate the question removed (the cleaning rules); "
        "the IG reward scores this text, never the raw history."
    ),
    "PPL(H′), PPL(H′, Q)": (
        "the perplexity of the cleaned history with the IG prompt, and of the same text followed by the question."
    ),
    "α, β": "α is the largest reward (α/2 is neutral); β sets how sharply r moves as the perplexity ratio leaves 1.",
    "a, q, q0, x (IG lens)": (
        "a: the history's mean token loss (log PPL(H′)); q: the question's after the history; q0: the "
        "question's after the prompt alone; x: what goes into σ (the paper's x = m/(n+m)·(a − q))."
    ),
    "m/(n+m) (IG lens)": (
        "the question's share of the scored tokens (m question tokens, n of history and prompt): "
        "a long history shrinks it, and with it how far x can move."
    ),
    "restatement": (
        "a word or id part of the cleaned history that repeats a content word of the question "
        "(ns:m.demo_inception restates Inception); the optional rule Mask restatements blanks them."
    ),
    "evidence (IG lens)": (
        "each piece of the cleaned history removed in turn and the node re-scored: green pieces raised r, "
        "red ones held it down; runs the scorer, never changes the tree."
    ),
    "what-if (IG lens)": (
        "an edited cleaned history scored like the node (same scorer, prompt, variant): its r and its "
        "rank among the siblings; never saved."
    ),
    "N": "visits: how many rounds' selections passed through the node.",
    "W/N": "the node's mean value: the rewards backed up through it (each r times its depth decay) over its visits N.",
    "decay": "the weight of a backed-up reward by depth: 1 down to the expected depth, then 0.1 less per level.",
    "UCT": "W/N + c·√(ln N_parent / N): the selection score of Fast MCTS; among siblings the highest is followed next.",
    "c": "UCT's exploration weight: a larger c gives rarely visited steps their turn sooner.",
    "PUCT": (
        "W/N + c_puct·P·√N_parent / (1 + N): the selection score of the small preset once its greedy path is "
        "walked; the policy's prior P steers which steps are tried first."
    ),
    "prior P": "the probability the policy gave a step among its siblings.",
    "prior term (PUCT)": (
        "c_puct·P·√N_parent / (1 + N): what the prior adds to W/N in PUCT; large for a likely step the "
        "search has rarely visited, shrinking with every visit."
    ),
    "c_puct": "PUCT's weight on the prior term: a larger c_puct trusts the policy's prior more against W/N.",
    "k": "candidates per expansion: how many next steps the policy proposes (and the tools run) for a node.",
    "greedy path": "the policy's top step at every depth, no branching: what a single agent without search would do.",
    "terminal": "a node that ends its branch (Done, or the maximum depth); ★ when it returned an answer.",
    "best branch (W/N)": "the answering terminal with the highest mean value W/N; the gold line in the tree.",
    "likeliest branch": (
        "the answering branch the policy finds most likely (the sum of its steps' log P); the small preset "
        "answers with it."
    ),
    "weight (vote table)": (
        "what the answer rule ranks answers by; under the likeliest-branch rule a log-probability, so ≤ 0, "
        "and the one nearest 0 wins."
    ),
    "CVT": (
        "compound value type: Freebase's unnamed middle node that ties several facts together (a film "
        "performance: actor, film, character); a path through it counts as one relation."
    ),
    "qualifier": "Wikidata's extra fact on a statement (a start time, a point in time, the work an award was for).",
    "SPARQL": "the query language of knowledge graphs; ExecuteSPARQL runs one query on the KB and returns its rows.",
    "true value (gold)": (
        "the mean F1 against gold of the terminal answers below a node; only the truth overlay shows it, "
        "the search never sees it."
    ),
    "F1": "how well an answer set matches the gold answers: 1 when they are equal, 0 when they share nothing.",
    "top-1, best in top-3": (
        "how often r's first child among siblings is truly best, and how often a truly best child is among r's first three."
    ),
    "Kendall tau": (
        "how alike two orders are, from −1 (reversed) through 0 (unrelated) to +1 (the same): here r's order "
        "of siblings against their true values."
    ),
    "constant reward (twin)": (
        "the paper's ablation: every new node gets the same reward, so only the policy's prior and the visit "
        "counts steer the search."
    ),
    "preset": "a named set of search settings: small (the CPU default) or the paper's.",
    "seed": "the random seed: the same question, settings, models and seed give the same tree.",
    "early stop": "the search ends once this many terminal branches have returned a non-empty answer.",
    "fingerprint": (
        "a short hash of the agent code (policy, prompts, cleaning, scorer): a recorded run or study counts "
        "as current only while its fingerprint is the code's."
    ),
}


def glossary_lines() -> list[str]:
    """The glossary as Markdown list items, one per term."""
    return [f"- **{term}**: {gloss}" for term, gloss in GLOSSARY.items()]


def glossary_markdown() -> str:
    return "\n".join(glossary_lines())
