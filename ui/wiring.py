"""Wire handlers to components by name.

A handler takes the session, then either a typed form (`ui.forms`) or keyword values
named like its input components, and returns (or yields) a dict keyed by component
name with only what changes: no positional parameter lists, no tuples padded with
`gr.skip()`. `Page.wire` turns that into what a Gradio event listener wants
(`fn`, `inputs`, `inputs_kwargs`, `outputs`) and maps names to components; a name
the event does not list is a programming error and raises.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import gradio as gr

from ui.session import Session

Update = Mapping[str, Any]  # component name -> new value or gr.update(...)


class Page:
    """Every wired component of the page by name, and the per-session state.

    The layout registers each component as it draws it (`add`); the wiring then looks
    them up by the same names the handlers' forms and output dicts use.
    """

    def __init__(self, state: gr.State, components: Mapping[str, Any] | None = None) -> None:
        self.state = state
        self.components = dict(components or {})

    def add(self, name: str, component: Any) -> Any:
        """Register `component` as `name` and return it (so `with page.add(...):` nests a layout)."""
        if name in self.components:
            raise ValueError(f"two components are named {name!r}")
        self.components[name] = component
        return component

    def __getitem__(self, name: str) -> Any:
        return self.components[name]

    def wire(
        self,
        handler: Callable[..., Any],
        *,
        outputs: Sequence[str],
        inputs: Mapping[str, str] | Sequence[str] = (),
        form: type | None = None,
        select: bool = False,
        decorate: Callable[[Callable[..., Any]], Callable[..., Any]] | None = None,
    ) -> dict[str, Any]:
        """Keyword arguments for an event listener (`btn.click(**page.wire(...), api_name=...)`).

        `form`: a dataclass whose fields name its input components; the handler gets one
        instance. Otherwise `inputs` maps the handler's keyword parameters to component
        names (a plain list: the same names). `select=True` passes Gradio's SelectData as `evt`.
        """
        if form is not None:
            by_param = {name: name for name in form.field_names()}  # type: ignore[attr-defined]
        elif isinstance(inputs, Mapping):
            by_param = dict(inputs)
        else:
            by_param = {name: name for name in inputs}
        fn = _bind(handler, self.components, tuple(outputs), form, select)
        return {
            "fn": decorate(fn) if decorate else fn,
            "inputs": [self.state],
            "inputs_kwargs": {param: self.components[name] for param, name in by_param.items()},
            "outputs": [self.components[name] for name in outputs],
        }


def _bind(
    handler: Callable[..., Any],
    components: Mapping[str, Any],
    outputs: tuple[str, ...],
    form: type | None,
    select: bool,
) -> Callable[..., Any]:
    allowed = set(outputs)
    wants_request = "request" in inspect.signature(handler).parameters
    label = getattr(handler, "__name__", "handler")

    def to_components(update: Update) -> dict[Any, Any]:
        unknown = set(update) - allowed
        if unknown:
            raise KeyError(f"{label} set {sorted(unknown)}, which its event does not list as outputs")
        return {components[name]: value for name, value in update.items()}

    def call(session: Session, request: Any, extra: dict[str, Any], values: dict[str, Any]) -> Any:
        args = (form(**values),) if form is not None else ()
        kwargs = {} if form is not None else dict(values)
        kwargs.update(extra)
        if wants_request:
            kwargs["request"] = request
        return handler(session, *args, **kwargs)

    if select:

        def on_select(session: Session, evt: gr.SelectData, **values: Any) -> dict[Any, Any]:
            return to_components(call(session, None, {"evt": evt}, values))

        return on_select
    if inspect.isgeneratorfunction(handler):

        def streamed(session: Session, request: gr.Request = None, **values: Any) -> Iterator[dict[Any, Any]]:  # type: ignore[assignment]
            for update in call(session, request, {}, values):
                yield to_components(update)

        streamed.__doc__ = handler.__doc__
        return streamed

    def single(session: Session, request: gr.Request = None, **values: Any) -> dict[Any, Any]:  # type: ignore[assignment]
        return to_components(call(session, request, {}, values))

    single.__doc__ = handler.__doc__
    return single
