"""Rebuild the app's screenshots in docs/img/ (what docs/app.md and the README show).

    .venv/bin/python scripts/screenshots.py [--out docs/img] [--no-model]

Starts the app on 127.0.0.1 on a free port and drives it in headless Debian Chromium
(`/usr/bin/chromium`, `make browser-deps`), as tests/app/test_browser.py does. No search is
run: the shipped traces (examples/traces/) are put into a private run cache, so the
example questions replay them (the app's instant examples). Only the lab's re-score loads
the bundled IG scorer (SmolLM2-135M, about a minute on a CPU); `--no-model` skips that
shot. Each PNG is reduced to 256 colours so it stays small (well under 300 KB).

Writes: search-1280.png (a finished example run, the tree under its status line),
inspector-1280.png (a node inspected beside the answer panel), form-notice-1280.png (the
Search form after a trace load switched the method), replay-1280.png (a trace replayed
half-way), lab-1280.png (a re-score with a rule switched off), phone-390.png and
phone-tree-390.png (the first screen at phone width, and the tree there after a run), and tree.png
(the tree of the finished example run alone), truth-1280.png (the truth overlay and the
constant-reward twin of an example question; `--only-truth` writes this one alone), and
lens-1280.png, lens-evidence-1280.png and lens-whatif-1280.png (the IG lens of an Inception
node: read from the trace, then its evidence and a what-if edit scored by the bundled
scorer; `--only-lens` writes these alone, `--no-model` skips the two that score).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
QUESTION = "Where was Barack Obama born?"  # an example question with a shipped trace
WIDE = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
LENS_NODE = 3  # Inception: a SPARQL step with two siblings and a result in its history


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def seed_run_cache(folder: Path) -> None:
    """The shipped traces as cached runs of this machine: the examples replay them even
    when the agent code's fingerprint has moved on from the shipped manifest's."""
    from mcts.search.trace import load_trace
    from ui import run_cache
    from ui.config import TRACES_DIR

    for path in sorted(TRACES_DIR.glob("*-*.json")):
        trace = load_trace(path)
        run_cache.store(trace, run_cache.trace_key(trace), folder=folder)


def save_small(png: bytes, path: Path) -> None:
    """A palette PNG: UI screenshots have few colours, so 256 keep them sharp at a third the size."""
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        path, optimize=True
    )
    print(
        f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}  {path.stat().st_size / 1024:.0f} KB"
    )


def run_example(page, question: str = QUESTION) -> None:
    page.locator("#question textarea").fill(question)
    page.locator("#run-btn").click()
    page.locator("#status").filter(has_text="Finished").wait_for(timeout=120_000)
    time.sleep(1.0)  # the smooth scroll to the status line and the last redraw


def inspect_node(page, node_id: int) -> None:
    dd = page.locator("#node-dd input")
    dd.focus()
    page.keyboard.press("Control+A")
    page.keyboard.type(f"{node_id} · d")
    page.get_by_role("option", name=re.compile(rf"^{node_id} · ")).click()  # "3 · d3 · …", not "4 · d3 · …"
    page.locator("#node-detail").filter(has_text=f"Node {node_id} ·").wait_for(timeout=30_000)


def load_trace(page, name: str) -> None:
    """Open a shipped trace and wait for its own last round (the tab may show another run's)."""
    from mcts.search.trace import load_trace as read_trace
    from ui.config import TRACES_DIR
    from viz import replay_rounds

    trace = read_trace(TRACES_DIR / name)
    total, nodes = replay_rounds(trace.events), len(trace.to_tree())
    page.get_by_role("tab", name="Traces & replay").click()
    page.locator("#bundled-trace input").click()
    page.get_by_role("option", name=name).click()
    page.locator("#replay-status").filter(has_text=f"Round {total} of {total} · {nodes} nodes").wait_for(
        timeout=30_000
    )


def shoot_truth(browser, url: str, out: Path) -> None:
    """The truth overlay switched on, then the twin (both runs replay their shipped traces)."""
    page = browser.new_page(viewport=WIDE)
    page.goto(url)
    page.locator("#question textarea").wait_for()
    run_example(page, "Who directed Inception?")
    page.locator("#truth-toggle input[type=checkbox]").check()
    page.locator("#truth-summary").filter(has_text="picked the truly best child").wait_for(timeout=30_000)
    page.locator("#twin-btn").click()
    page.locator("#twin-diff").filter(has_text="only the reward differs").wait_for(timeout=60_000)
    time.sleep(1.0)
    save_small(page.locator("#truth-box").screenshot(), out / "truth-1280.png")
    page.close()


def shoot_lens(browser, url: str, out: Path, with_model: bool) -> None:
    """The IG lens of one Inception node: its anatomy, lit question and restatements (from
    the trace), then the evidence and a what-if edit (these two run the bundled scorer)."""
    page = browser.new_page(viewport={"width": 1280, "height": 1600})
    page.goto(url)
    page.locator("#question textarea").wait_for()
    run_example(page, "Who directed Inception?")
    inspect_node(page, LENS_NODE)
    lens = page.locator("#node-detail h4").filter(has_text="IG lens")
    lens.scroll_into_view_if_needed()
    time.sleep(0.5)
    save_small(page.locator("#node-detail").screenshot(), out / "lens-1280.png")
    if with_model:
        page.locator("#lens-evidence").get_by_text("IG lens: the evidence").click()
        page.locator("#evidence-btn").click()
        page.locator("#evidence-status").filter(has_text="Evidence that moved").wait_for(timeout=600_000)
        time.sleep(0.5)
        save_small(page.locator("#lens-evidence").screenshot(), out / "lens-evidence-1280.png")
        page.locator("#lens-whatif").get_by_text("IG lens: what if").click()
        box = page.locator("#whatif-text textarea")
        box.fill(box.input_value().replace("Inception", "the film"))  # the restated name masked by hand
        page.locator("#whatif-btn").click()
        page.locator("#whatif-result").filter(has_text="would rank").wait_for(timeout=600_000)
        time.sleep(0.5)
        save_small(page.locator("#lens-whatif").screenshot(), out / "lens-whatif-1280.png")
    page.close()


def shoot(url: str, out: Path, with_model: bool, only_truth: bool = False, only_lens: bool = False) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        if only_lens:
            shoot_lens(browser, url, out, with_model)
            browser.close()
            return
        shoot_truth(browser, url, out)
        if only_truth:
            browser.close()
            return
        page = browser.new_page(viewport=WIDE)
        page.goto(url)
        page.locator("#question textarea").wait_for()
        run_example(page)
        save_small(page.screenshot(), out / "search-1280.png")
        # The tree alone, without Plotly's toolbar: the picture the README shows.
        handle = page.add_style_tag(content="#tree-plot .modebar-container { display: none !important; }")
        save_small(page.locator("#tree-plot").screenshot(), out / "tree.png")
        handle.evaluate("(el) => el.remove()")
        inspect_node(page, 6)
        page.locator("#inspector").scroll_into_view_if_needed()
        page.evaluate("() => document.getElementById('inspector').scrollIntoView({block: 'start'})")
        time.sleep(0.5)
        save_small(page.screenshot(), out / "inspector-1280.png")

        load_trace(page, "constant-inception.json")
        slider = page.locator("#replay-slider input[type=number]")
        slider.fill("3")
        slider.press("Enter")
        page.locator("#replay-status").filter(has_text="Round 3 of").wait_for(timeout=30_000)
        time.sleep(0.5)
        save_small(page.screenshot(), out / "replay-1280.png")
        page.get_by_role("tab", name="Search").click()
        page.locator("#form-note").filter(has_text="changed this form").wait_for(timeout=30_000)
        page.evaluate("() => window.scrollTo(0, 0)")
        time.sleep(0.5)
        save_small(page.screenshot(), out / "form-notice-1280.png")
        shoot_lens(browser, url, out, with_model)

        if with_model:
            load_trace(page, "fast-obama.json")
            page.get_by_role("tab", name="Cleaning-rule lab").click()
            page.locator("#rules label").first.click()  # "drop thoughts" off: thoughts reach the scorer
            page.locator("#rescore-btn").click()
            page.locator("#lab-status").filter(has_text="Re-scored").wait_for(timeout=600_000)
            time.sleep(1.0)
            save_small(page.screenshot(), out / "lab-1280.png")
        page.close()

        phone = browser.new_page(viewport=PHONE)
        phone.goto(url)
        phone.locator("#question textarea").wait_for()
        time.sleep(0.5)
        save_small(phone.screenshot(), out / "phone-390.png")
        run_example(phone)
        phone.evaluate("() => document.getElementById('tree-plot').scrollIntoView({block: 'start'})")
        time.sleep(0.5)
        save_small(phone.screenshot(), out / "phone-tree-390.png")
        phone.close()
        browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="folder for the PNGs")
    parser.add_argument("--no-model", action="store_true", help="skip the lab shot (it loads the IG scorer)")
    parser.add_argument("--only-truth", action="store_true", help="only the truth-overlay and twin shot")
    parser.add_argument("--only-lens", action="store_true", help="only the IG lens shots")
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print("chromium not found at /usr/bin/chromium: run `make browser-deps`", file=sys.stderr)
        return 2
    os.chdir(ROOT)
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="mcts-kbqa-shots-") as cache:
        os.environ["MCTS_KBQA_RUN_CACHE"] = cache  # private: nothing of the user's cache is shown
        seed_run_cache(Path(cache))
        import app

        demo = app.build_app()  # this machine's defaults (the small preset on a CPU), as the traces ran
        demo.launch(
            prevent_thread_lock=True, server_name="127.0.0.1", server_port=free_port(), quiet=True,
            **app.launch_kwargs(demo),
        )  # fmt: skip
        try:
            args.out.mkdir(parents=True, exist_ok=True)
            shoot(
                demo.local_url,
                args.out.resolve(),
                with_model=not args.no_model,
                only_truth=args.only_truth,
                only_lens=args.only_lens,
            )
        finally:
            demo.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
