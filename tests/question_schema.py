"""The question-file schema both demo question sets share with ../shared/data/fbqa/dev.jsonl,
so every question file is read by the same code."""

QUESTION_FIELDS = {
    "id",
    "source",
    "question",
    "topic_entities",
    "gold_answers",
    "gold_answer_kind",
    "kb_answers",
    "path",
    "hops",
    "kb_sparql",
    "f1_kb_vs_gold",
    "precision_kb_vs_gold",
    "recall_kb_vs_gold",
    "path_matches_gold_relations",
    "gold_sparql",
    "meta",
}
COMPOSITIONALITY_TYPES = {"simple", "composition", "conjunction", "comparative", "superlative", "count"}
