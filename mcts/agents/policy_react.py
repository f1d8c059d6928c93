"""The ReAct policy: a capable model writes the next Thought and Action itself.

The prompt (`mcts.agents.prompts`: tool description, hand-written few-shot demonstrations,
`Q: ...`, the history as Thought / Action / Observation turns) is continued k times
in ONE batched `generate` call (`num_return_sequences=k`, sampling at `temperature`;
one greedy completion when greedy). Generation stops at the next `Observation` (a
stopping criterion on the decoded text; the text is cut there) or at the end of the
model's turn. Each completion is parsed into a thought and an action with
`kb.action_parser`; identical actions are merged (the first thought kept,
`policy_score` = share of the k samples that proposed the action); a completion that
does not parse becomes a Candidate with `action=None` and the parse error, never an
exception.

With `endpoint=URL` the same prompt goes as chat messages to an OpenAI-compatible
server (e.g. vLLM) through the `openai` client (`n=k`, `stop=["Observation"]`). A
server that cannot be reached gives one error candidate whose `parse_error` says so
in one line. Credentials: the server's `OPENAI_API_KEY` (and organisation/project ids)
go only to the endpoint the operator configured in the environment (`POLICY_ENDPOINT`
or `OPENAI_BASE_URL`); any other URL, e.g. one a visitor typed, gets the placeholder key
"EMPTY" (otherwise a visitor's URL would receive the server's key). Redirects are not
followed.

Seeding: torch's RNG is forked and seeded from `rng` around each generate call, so
the same `rng` state gives the same completions on CPU and global RNG state is left
alone. This module knows nothing of tools or search.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Sequence
from typing import Any

from kb.action_parser import parse_thought_action
from kb.actions import ActionParseError
from mcts.agents.prompts import FewshotName, PromptConfig, messages, render_prompt
from mcts.search.protocols import Usage
from mcts.search.steps import Candidate, Step

STOP_TEXT = "Observation"
ENDPOINT_TIMEOUT_S = 60.0
# Env variables naming the endpoint the server's OPENAI_API_KEY belongs to.
OPERATOR_ENDPOINT_VARS = ("POLICY_ENDPOINT", "OPENAI_BASE_URL")


def _normalised(url: str) -> str:
    return url.strip().rstrip("/").lower()


def is_operator_endpoint(endpoint: str) -> bool:
    """Whether `endpoint` is the one the operator configured (env POLICY_ENDPOINT or
    OPENAI_BASE_URL), the only one trusted with the server's credentials."""
    configured = {_normalised(os.environ.get(name, "")) for name in OPERATOR_ENDPOINT_VARS} - {""}
    return _normalised(endpoint) in configured


def api_key_for(endpoint: str) -> str:
    """The API key to send to `endpoint`: the server's own only to the operator's endpoint."""
    key = os.environ.get("OPENAI_API_KEY")
    return key if key and is_operator_endpoint(endpoint) else "EMPTY"


def cut_at_stop(text: str, stop: str = STOP_TEXT) -> str:
    """The completion up to (not including) the first `stop`, trailing space removed."""
    at = text.find(stop)
    return (text if at < 0 else text[:at]).rstrip()


def parse_completion(text: str) -> Candidate:
    """One completion -> a Candidate (action None plus parse_error when it does not parse)."""
    raw = cut_at_stop(text)
    try:
        thought, action = parse_thought_action(raw)
    except ActionParseError as exc:
        return Candidate(thought="", action=None, raw_text=raw, parse_error=str(exc) or "unparsable action")
    return Candidate(thought=thought, action=action, raw_text=raw)


def merge_candidates(cands: Sequence[Candidate]) -> list[Candidate]:
    """Identical actions merged (first occurrence kept, in order); policy_score = share."""
    groups: dict[str, list[Candidate]] = {}
    for c in cands:
        groups.setdefault(c.key(), []).append(c)
    total = max(1, len(cands))
    out = []
    for group in groups.values():
        first = group[0]
        out.append(
            Candidate(
                thought=first.thought,
                action=first.action,
                raw_text=first.raw_text,
                policy_score=len(group) / total,
                parse_error=first.parse_error,
            )
        )
    return out


def _stop_criteria(tokenizer: Any, prompt_len: int) -> Any:
    """A StoppingCriteria that ends each sequence once its decoded new text holds STOP_TEXT."""
    import torch
    from transformers import StoppingCriteria

    class StopAtObservation(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            # Only the last few tokens can complete the stop text: decode a short tail.
            tails = tokenizer.batch_decode(input_ids[:, max(prompt_len, input_ids.shape[1] - 8) :])
            done = [STOP_TEXT in t for t in tails]
            return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    return StopAtObservation()


class ReActPolicy:
    """Free-text ReAct steps from a local model or an OpenAI-compatible server."""

    name = "react"

    def __init__(
        self,
        model: Any = None,
        *,
        endpoint: str | None = None,
        endpoint_model: str | None = None,
        temperature: float = 0.7,
        max_new_tokens: int = 256,
        fewshot: FewshotName = "freebase",
        prompt: PromptConfig | None = None,
    ) -> None:
        if model is None and not endpoint:
            raise ValueError("ReActPolicy needs a loaded model or an endpoint URL")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        self.model = model
        self.endpoint = endpoint.rstrip("/") if endpoint else None
        self.endpoint_model = endpoint_model
        self.temperature = temperature
        self.max_new_tokens = max_new_tokens
        # `prompt` (e.g. `PromptConfig.for_flavour("wikidata")`) overrides `fewshot`.
        self.prompt = prompt or PromptConfig(fewshot=fewshot, max_demos=2)
        self.usage = Usage()
        self._client: Any = None

    def propose(
        self, question: str, history: Sequence[Step], k: int, *, rng: random.Random, greedy: bool = False
    ) -> list[Candidate]:
        if k < 1:
            return []
        started = time.perf_counter()
        self.usage.calls += 1
        n = 1 if greedy or self.temperature == 0 else k
        seed = rng.getrandbits(31)
        try:
            if self.endpoint:
                texts = self._generate_endpoint(question, history, n, seed, greedy)
            else:
                texts = self._generate_local(question, history, n, seed, greedy)
        finally:
            self.usage.seconds += time.perf_counter() - started
        if isinstance(texts, Candidate):  # the endpoint failed: one error candidate
            return [texts]
        return merge_candidates([parse_completion(t) for t in texts])[:k]

    # ----- local model ----------------------------------------------------------------
    def _generate_local(
        self, question: str, history: Sequence[Step], n: int, seed: int, greedy: bool
    ) -> list[str]:
        import torch
        from transformers import StoppingCriteriaList

        loaded = self.model
        tok = loaded.tokenizer
        prompt = render_prompt(tok, question, history, self.prompt)
        ids = tok(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
        room = max(16, loaded.max_context - self.max_new_tokens)
        ids = ids[:, -room:].to(loaded.device)  # keep the question's end and latest steps
        prompt_len = ids.shape[1]
        sample = not greedy and self.temperature > 0
        kwargs: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens,
            "do_sample": sample,
            "num_return_sequences": n,
            "pad_token_id": tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
            "stopping_criteria": StoppingCriteriaList([_stop_criteria(tok, prompt_len)]),
        }
        if sample:
            kwargs.update(temperature=self.temperature, top_k=0, top_p=1.0)
        else:
            kwargs.update(temperature=None, top_k=None, top_p=None)
        devices = [torch.device(loaded.device).index or 0] if str(loaded.device).startswith("cuda") else []
        with torch.random.fork_rng(devices=devices), torch.inference_mode():
            torch.manual_seed(seed)
            out = loaded.model.generate(ids, attention_mask=torch.ones_like(ids), **kwargs)
        new = out[:, prompt_len:]
        self.usage.tokens += int((new != kwargs["pad_token_id"]).sum())
        return [cut_at_stop(t) for t in tok.batch_decode(new, skip_special_tokens=True)]

    # ----- OpenAI-compatible server ----------------------------------------------------
    def _generate_endpoint(
        self, question: str, history: Sequence[Step], n: int, seed: int, greedy: bool
    ) -> list[str] | Candidate:
        try:
            import openai
        except ImportError:
            return _error_candidate("the openai package is not installed (pip install openai)")
        try:
            if self._client is None:
                trusted = is_operator_endpoint(self.endpoint)
                self._client = openai.OpenAI(
                    base_url=self.endpoint,
                    api_key=api_key_for(self.endpoint),
                    # None would read OPENAI_ORG_ID / OPENAI_PROJECT_ID from the env.
                    organization=None if trusted else "",
                    project=None if trusted else "",
                    timeout=ENDPOINT_TIMEOUT_S,
                    max_retries=1,
                    http_client=openai.DefaultHttpxClient(follow_redirects=False),
                )
            model = self.endpoint_model or self._first_model()
            reply = self._client.chat.completions.create(
                model=model,
                messages=messages(question, history, self.prompt),
                n=n,
                temperature=0.0 if greedy else self.temperature,
                max_tokens=self.max_new_tokens,
                stop=[STOP_TEXT],
                seed=seed,
            )
        # APIConnectionError/APITimeoutError included; RecursionError: a reply of deeply
        # nested JSON from a hostile server.
        except (openai.APIError, ValueError, RecursionError) as exc:
            line = " ".join(str(exc).split()) or type(exc).__name__
            return _error_candidate(f"policy endpoint {self.endpoint} failed: {line}")
        if reply.usage is not None:
            self.usage.tokens += int(reply.usage.completion_tokens or 0)
        return [cut_at_stop(choice.message.content or "") for choice in reply.choices]

    def _first_model(self) -> str:
        listed = self._client.models.list()
        ids = [m.id for m in listed.data]
        if not ids:
            raise ValueError(f"policy endpoint {self.endpoint} serves no model; pass endpoint_model")
        self.endpoint_model = ids[0]
        return ids[0]


def _error_candidate(message: str) -> Candidate:
    return Candidate(thought="", action=None, raw_text="", parse_error=message)
