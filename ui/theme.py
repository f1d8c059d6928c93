"""The page's look and words: theme, CSS, the plot-click bridge (JS), header and help text.

Gradio 6 takes theme, css and js in `launch()`. The JS bridge exists because
`gr.Plot` has no click event: it listens for Plotly's `plotly_click` (which Plotly
fires only after hovering a point), writes the point's node id into a hidden textbox
and presses a hidden button wired to the inspector. The same script re-picks each tree level's label
form (`viz.label_fit`) for the size a plot really has, after every draw and zoom.
"""

from __future__ import annotations

from typing import Any


def theme() -> Any:
    import gradio as gr

    return gr.themes.Soft(primary_hue="indigo", secondary_hue="amber", neutral_hue="slate")


HEADER_HTML = """
<div id="app-header">
  <h1>MCTS-KBQA <span class="sub">tree search with information-gain rewards</span></h1>
  <p>An LLM agent answers a question over a knowledge base by calling tools
  (<code>SearchNodes</code>, <code>SearchGraphPatterns</code>, <code>ExecuteSPARQL</code>, <code>SearchTypes</code>,
  <code>Done</code>). Monte Carlo tree search keeps several branches alive, and every new step is scored
  without simulation or a trained reward model, by the <b>IG reward</b>:
  how much more natural the question reads after the (cleaned) history.</p>
  <div class="formula">r = α · σ( β · log( PPL(H′) / PPL(H′, Q) ) )
  <span class="hint">PPL(H′): perplexity of the cleaned history + prompt; PPL(H′, Q): the same followed by the
  question. Ratio &gt; 1 → r &gt; α/2 (blue): the history made the question more likely.</span></div>
</div>
"""

LAB_MD = """
#### What the lab does
Before scoring, the history is **cleaned** so that it cannot simply restate the question (a thought that
repeats the question would make it trivially likely). Switch rules off or edit the prompt, then
**Re-score**: every node of the tree on screen (a live run or a loaded trace) is scored again with the same
scorer; the policy and the tools are not re-run. The inspector on the Search tab shows what each rule
removed, and the list below shows which sibling groups changed their order by reward.
"""

ABOUT_MD = """
### What you are looking at
* **Nodes** are agent steps (thought → tool call → observation); the path from the root is a branch's history.
* **Colour** is the IG reward r of the step, from red (the history made the question *less* likely) through
  white (neutral, r = α/2) to blue (*more* likely). **Size** grows with visits N.
* **Shapes**: ★ terminal with an answer, ▼-star terminal without one, ◆ query with an empty result,
  ✖ tool error, ▲ a step the model wrote that did not parse, ■ the question.
* **Gold line**: the best branch by mean value W/N. **Dashed purple**: the path selected in the last round.
* Hover a node for its numbers; click it (or pick it in the list or table) for the full step, both
  perplexities, the ratio, r, the depth decay, N, W/N, UCT and its UCT rank among its siblings.

### One round of Fast MCTS
1. **Select** from the root by UCT = W/N + c·√(ln N_parent / N) (unvisited children first).
2. **Expand**: sample k candidate steps from the policy, run each tool, add the children.
3. **Score** each child with the IG reward (classic MCTS instead simulates to the end and scores that).
4. **Back up** r·decay(depth) along the path (decay = 1 − 0.1·(depth − 7) beyond depth 7).

The search stops after the round budget or once enough terminal branches returned a non-empty answer; the
final answer is a vote over those branches. The *small* preset (the CPU default) differs: its first rounds
skip Select and walk the greedy path, one node deeper per round, so the tree holds the single path's answer;
later rounds select by PUCT = W/N + c·P·√N_parent / (1 + N) with the policy's prior P, and the answer is
the likeliest answering branch's.

### Run it yourself
`python app.py` (offline, bundled SmolLM2-135M-Instruct and demo KB), or the CLI
`python -m mcts run -q "Who directed Inception?" --trace out.json`, then load the trace here.
"""

CSS = """
#app-header h1 { font-size: 1.7rem; margin: 0.2rem 0 0.4rem 0; }
#app-header h1 .sub { font-weight: 400; color: var(--body-text-color-subdued); font-size: 1.1rem; margin-left: 0.4rem; }
#app-header p { margin: 0.2rem 0; max-width: 70rem; }
#app-header .formula { margin: 0.5rem 0 0.2rem 0; padding: 0.45rem 0.8rem; border-left: 4px solid #4f46e5;
  background: var(--background-fill-secondary); font-family: ui-monospace, monospace; font-size: 0.95rem; }
#app-header .formula .hint { display: block; font-family: var(--font); font-size: 0.82rem;
  color: var(--body-text-color-subdued); margin-top: 0.2rem; }
#status { min-height: 1.6rem; padding: 0.3rem 0.6rem; border-radius: 6px; background: var(--background-fill-secondary); }
#node-detail table, #cost table { font-size: 0.85rem; }
#node-detail pre { max-height: 220px; overflow: auto; }
#node-detail pre, #node-detail pre code, #answer pre, #answer pre code {
  white-space: pre-wrap !important; word-break: break-word; }
#machine-note { font-size: 0.85rem; }
/* The example picker (every example, by kind) scrolls inside its box, so that open after a run
   it does not push the tree down the page. */
.examples-scroll { max-height: 20rem; overflow-y: auto !important; flex-wrap: nowrap !important; }
.examples-scroll > * { flex: none !important; }  /* each group keeps its height; the box scrolls */
/* Tables: headers on one line (no "vo/te/s"), numbers never split a character per line. */
#vote-table th, #vote-table th *, #node-table th, #node-table th * {
  white-space: nowrap !important; word-break: keep-all !important; overflow-wrap: normal !important; }
#node-table td, #vote-table td { font-size: 0.82rem; }

#node-table td *, #vote-table td * { word-break: normal !important; overflow-wrap: anywhere; }
#node-detail table { display: block; overflow-x: auto; max-width: 100%; }
#node-detail td, #node-detail th { white-space: nowrap; padding: 2px 8px; }
footer { display: none !important; }
/* A plot's name badge sits above the plot, not over its top edge where Plotly's toolbar is. */
.block:has(.js-plotly-plot) label[data-testid="block-label"].float {
  position: static !important; margin: var(--block-label-margin) 0 2px var(--block-label-margin); }
/* A trace load changed the Search form (ui.form_notice): hard to miss, one click to undo. */
#form-note-box { border: 2px solid #f59e0b !important; background: #fffbeb !important; border-radius: 8px; }
#form-note { padding: 0.4rem 0.6rem; font-size: 0.9rem; }
#form-note-box, #form-note-box > * { background: #fffbeb !important; }
#restore-defaults { font-weight: 600; border: 1px solid #d97706; }
/* Phone width: the Question box on the first screen, the method's name not cut off. */
@media (max-width: 640px) {
  #app-header p, #app-header .formula .hint { display: none; }
  #app-header h1 { font-size: 1.35rem; }
  #app-header h1 .sub { display: block; margin-left: 0; font-size: 0.9rem; }
  #app-header .formula { font-size: 0.78rem; padding: 0.3rem 0.5rem; }
  #kb-method-row { flex-direction: column; }
  #kb-method-row > * { width: 100%; min-width: 100% !important; }
  #method input { font-size: 0.8rem !important; }
}
"""

# Re-binds after every redraw: Plotly.newPlot purges listeners and replaces `gd._ev`.
JS = """
() => {
  const bind = () => {
    for (const div of document.querySelectorAll('#tree-plot .js-plotly-plot, #lab-plot .js-plotly-plot')) {
      if (typeof div.on !== 'function' || div.__kbqaEv === div._ev) continue;
      div.__kbqaEv = div._ev;
      div.on('plotly_click', (ev) => {
        const pt = ev && ev.points && ev.points[0];
        if (!pt || pt.customdata === undefined || pt.customdata === null) return;
        const box = document.querySelector('#click-node textarea, #click-node input');
        const go = document.querySelector('#click-go');
        if (!box || !go) return;
        box.value = String(pt.customdata) + '@' + Date.now();
        box.dispatchEvent(new Event('input', { bubbles: true }));
        setTimeout(() => go.click(), 60);
      });
    }
  };
  // Tree labels (viz.label_fit): per level, the richest form whose needs (pixels per x and
  // per depth unit) the plot's real size meets, the same rule as `label_fit.choose`; re-run
  // after every draw, resize and zoom. A restyle redraws, and the next pass finds no change.
  const relabel = (gd) => {
    const fl = gd._fullLayout, meta = gd.layout && gd.layout.meta && gd.layout.meta.kbqa_labels;
    if (!fl || !fl.xaxis || !fl.yaxis || !meta || !window.Plotly) return;
    const px = Math.abs(fl.xaxis._m), py = Math.abs(fl.yaxis._m);
    const pick = {};
    for (const [lv, needs] of Object.entries(meta)) {
      const f = needs.findIndex(([nx, ny]) => nx <= px && ny <= py);
      pick[lv] = f < 0 ? needs.length - 1 : f;
    }
    const idx = [], texts = [];
    (gd.data || []).forEach((tr, i) => {
      const k = tr.meta && tr.meta.kbqa;
      if (!k) return;
      const t = k.lv.map((lv, j) => k.forms[pick[lv]][j]);
      if (JSON.stringify(t) !== JSON.stringify(tr.text)) { idx.push(i); texts.push(t); }
    });
    if (idx.length) window.Plotly.restyle(gd, { text: texts }, idx);
  };
  const bindLabels = () => {
    for (const gd of document.querySelectorAll('.js-plotly-plot')) {
      if (typeof gd.on !== 'function') continue;
      if (gd.__kbqaLabelEv === gd._ev) continue;
      gd.__kbqaLabelEv = gd._ev;
      const later = () => setTimeout(() => relabel(gd), 0);
      gd.on('plotly_afterplot', later);
      gd.on('plotly_relayout', later);
      relabel(gd);  // the first draw may have come before the listener
    }
  };
  new MutationObserver(bind).observe(document.body, { childList: true, subtree: true });
  new MutationObserver(bindLabels).observe(document.body, { childList: true, subtree: true });
  // A plot drawn inside a hidden tab keeps its small default width: resize it when shown.
  document.addEventListener('click', (e) => {
    if (e.target.closest && e.target.closest('[role=tab]')) {
      setTimeout(() => window.dispatchEvent(new Event('resize')), 200);
    }
  });
  setInterval(bind, 1000);
  setInterval(bindLabels, 1000);
}
"""
