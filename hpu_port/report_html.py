"""A migration report as one self-contained HTML page.

Everything is inline (CSS, script, an SVG chart); a Content-Security-Policy
forbids every request, so the page works from a file, offline. Rows are
rendered here, so the page reads without script; the script only sorts and
filters the findings table.
"""

from __future__ import annotations

from html import escape
from typing import Optional

from hpu_port import __version__
from hpu_port.planning import Plan, Tally, has_work, make_plan, numbered_findings, plural, rule_names, work_packages
from hpu_port.results import FileResult, Finding, modes_in

POLICY = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}
table{border-collapse:collapse;max-width:100%}td{overflow-wrap:anywhere}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th.sortable{cursor:pointer;background:#f3f3f3}th.sortable[aria-sort]::after{content:" \\2195"}
td.num{text-align:right}.blocker{color:#a40000}.advice{color:#075985}
#filters{margin:.6em 0}#filters input,#filters select{margin-right:1em}
.legend span{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 1em;vertical-align:middle}
code{font-size:.95em}
#plan{border:1px solid #ccc;padding:.2em 1em 1em;background:#fafafa;max-width:60em}
#plan dt{font-weight:600;margin-top:.5em}#plan dd{margin-left:1.2em}
#rules details{margin:.4em 0}#rules summary{cursor:pointer}#rules pre{background:#f6f6f6;padding:.5em;overflow:auto}
"""

SCRIPT = """
(function () {
  var table = document.getElementById("findings");
  var body = table.tBodies[0];
  var text = document.getElementById("filter-text");
  var severity = document.getElementById("filter-severity");
  var manual = document.getElementById("filter-manual");
  var shown = document.getElementById("shown");
  function applyFilter() {
    var needle = text.value.trim().toLowerCase();
    var count = 0;
    Array.prototype.forEach.call(body.rows, function (row) {
      var visible = (!needle || row.textContent.toLowerCase().indexOf(needle) >= 0)
        && (!severity.value || row.dataset.severity === severity.value)
        && (!manual.checked || row.dataset.manual === "yes");
      row.hidden = !visible;
      if (visible) { count += 1; }
    });
    shown.textContent = String(count);
  }
  function sortBy(header) {
    var index = header.cellIndex;
    var numeric = header.dataset.type === "number";
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) { cell.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[index].dataset.key || a.cells[index].textContent;
      var y = b.cells[index].dataset.key || b.cells[index].textContent;
      var order = numeric ? Number(x) - Number(y) : x.localeCompare(y);
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header) {
    header.addEventListener("click", function () { sortBy(header); });
  });
  [text, severity, manual].forEach(function (control) {
    control.addEventListener("input", applyFilter);
    control.addEventListener("change", applyFilter);
  });
  applyFilter();
})();
"""

# Summary rows: label, the JSON report's summary key, the Tally counter.
SUMMARY_ROWS = (
    ("findings", "findings", lambda t: t.findings),
    ("items (root causes)", "items", lambda t: t.items),
    ("fixed by hpu-port rewrite", "fixed_by_rewrite", lambda t: t.fixed),
    ("need a person", "need_a_person", lambda t: t.manual),
)


MODE_MEANING = {
    "lazy": "mark_step() after each backward pass and optimizer step; run with PT_HPU_LAZY_MODE=1",
    "eager": "no mark_step(); torch.compile with backend=\"hpu_backend\"; PT_HPU_LAZY_MODE=0",
}


def _plan(plan: Plan, results: list[FileResult], names: dict, base: Optional[str]) -> list[str]:
    """The first screen: the mode, what the rewrite changes, and the work a
    person is left with, the five largest work packages first."""
    modes = modes_in(results)
    mode_text = "; ".join(
        f"<strong>{escape(mode)}</strong> ({plural(files, 'file')}): {escape(MODE_MEANING.get(mode, ''))}" for mode, files in modes.items()
    ) or "no file was ported"
    changing = sorted({r.path for r in results if any(f.fixable for f in r.findings) and not r.failed})
    packages = work_packages(plan)
    total = plan.total
    rows = "".join(
        f'<tr><td><a href="{escape(_rule_link(p.code, base))}">{p.code}</a> {escape(names.get(p.code, ""))}</td>'
        f"<td class=num>{p.items}</td><td class=num>{p.files}</td><td>{p.effort}</td></tr>"
        for p in packages[:5]
    )
    more = f"<p>{plural(len(packages) - 5, 'more work package')} in the findings below.</p>" if len(packages) > 5 else ""
    table = (
        '<table id="work-packages"><thead><tr><th>work package (rule)</th><th>items</th><th>files</th><th>effort</th>'
        f"</tr></thead><tbody>{rows}</tbody></table>{more}"
        if packages else "<p>Nothing is left for a person.</p>"
    )
    return [
        '<section id="plan"><h2>Plan</h2><dl>',
        f'<dt>Mode</dt><dd id="plan-mode">{mode_text}</dd>',
        f'<dt>Done by <code>hpu-port rewrite</code></dt><dd id="plan-rewrite">'
        f'<span data-plan="files_to_change">{len(changing)}</span> {"file changes" if len(changing) == 1 else "files change"}; '
        f'<span data-plan="fixed_items">{total.fixed["blocker"]}</span> blocker items are fixed by the rewrite.</dd>',
        f'<dt>Left for a person</dt><dd id="plan-manual"><span data-plan="manual_items">{total.manual["blocker"]}</span> '
        f'blocker items ({total.effort_points} effort points), '
        f'<span data-plan="advice_items">{total.items["advice"]}</span> items of optional advice.</dd>',
        "</dl>",
        table,
        "</section>",
    ]


def _summary(total: Tally) -> list[str]:
    """The numbers of the JSON report's summary, each marked with its key."""
    html = [
        "<h2>Summary</h2>",
        f'<p><span data-summary="files">{total.files}</span> files scanned, '
        f'<span data-summary="files_with_findings">{total.files_with_findings}</span> with findings, '
        f'<span data-summary="files_failed">{total.failed}</span> could not be read or parsed.</p>',
        '<table id="summary"><thead><tr><th></th><th class="blocker">blockers</th><th class="advice">advice</th>'
        '<th class="review">to review</th></tr></thead><tbody>',
    ]
    for label, key, counter in SUMMARY_ROWS:
        counts = counter(total)
        html.append(
            f'<tr><th>{label}</th><td class="num" data-summary="{key}.blockers">{counts["blocker"]}</td>'
            f'<td class="num" data-summary="{key}.advice">{counts["advice"]}</td>'
            f'<td class="num" data-summary="{key}.review">{counts["review"]}</td></tr>'
        )
    html.append("</tbody></table>")
    html.append(
        "<p>Blockers keep the code from running on Gaudi, or make it run wrong; advice is optional "
        "optimization; lines to review only mention CUDA (a name such as <code>use_cuda</code>). An item is one root cause: the findings of one kind that start on the same line "
        "of a file count once.</p>"
    )
    return html


BAR_HEIGHT, LABEL_WIDTH, CHART_WIDTH = 22, 260, 420
SERIES = (
    ("need a person", "#c62828", lambda t: t.manual["blocker"]),
    ("fixed by rewrite", "#f0a202", lambda t: t.fixed["blocker"]),
    ("advice", "#1f77b4", lambda t: t.items["advice"]),
)


def _chart(plan: Plan) -> list[str]:
    """Per directory, a stacked bar of blocker items (needing a person, then
    fixed by rewrite) and advice items, in the rollup's order."""
    rows = [(path, tally) for path, tally in plan.directories if has_work(tally)]
    largest = max((sum(value(t) for _, _, value in SERIES) for _, t in rows), default=0) or 1
    height = BAR_HEIGHT * len(rows) + 10
    parts = [
        f'<svg id="chart" role="img" aria-label="blocker and advice items per directory" '
        f'xmlns="http://www.w3.org/2000/svg" width="{LABEL_WIDTH + CHART_WIDTH + 60}" height="{height}">'
    ]
    for index, (path, tally) in enumerate(rows):
        y = index * BAR_HEIGHT + 5
        parts.append(f'<text x="{LABEL_WIDTH - 6}" y="{y + 14}" text-anchor="end" font-size="12">{escape(_short(path))}</text>')
        x = LABEL_WIDTH
        for label, colour, value in SERIES:
            width = value(tally) * CHART_WIDTH / largest
            if width:
                parts.append(
                    f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="{BAR_HEIGHT - 6}" fill="{colour}">'
                    f"<title>{escape(path)}: {value(tally)} {label}</title></rect>"
                )
            x += width
        total = sum(value(tally) for _, _, value in SERIES)
        parts.append(f'<text x="{x + 4:.1f}" y="{y + 14}" font-size="12">{total}</text>')
    parts.append("</svg>")
    legend = "".join(f'<span style="background:{colour}"></span>{label}' for label, colour, _ in SERIES)
    return ["<h2>Items per directory (most manual work first)</h2>", f'<p class="legend">{legend}</p>'] + parts


def _short(path: str, limit: int = 40) -> str:
    return path if len(path) <= limit else "\u2026" + path[-(limit - 1):]


def _directories(plan: Plan) -> list[str]:
    """Directories with something to do, most manual work first."""
    html = [
        '<table id="directories"><thead><tr><th>directory</th><th>files</th><th>blockers: need a person</th>'
        "<th>manual effort</th><th>blockers fixed by rewrite</th><th>advice items</th></tr></thead><tbody>"
    ]
    for path, tally in plan.directories:
        if not has_work(tally):
            continue
        effort = ", ".join(f"{n} {level}" for level, n in tally.effort.items() if n) or "none"
        html.append(
            f"<tr><td><code>{escape(path)}</code></td><td class=num>{tally.files}</td>"
            f"<td class=num>{tally.manual['blocker']}</td><td>{escape(effort)}</td>"
            f"<td class=num>{tally.fixed['blocker']}</td><td class=num>{tally.items['advice']}</td></tr>"
        )
    return html + ["</tbody></table>"]


def _rule_link(code: str, base: Optional[str]) -> str:
    """The rule's page: embedded in the report, or at ``base`` when given."""
    return f"{base.rstrip('/')}/{code}.md" if base else f"#rule-{code}"


def _rule_pages(rules, codes: set) -> list[str]:
    """Each reported rule's documentation, in the page: what it does, why,
    its fix safety and its examples (no link leads out of the report)."""
    shown = [rule for rule in rules if rule.code in codes]
    if not shown:
        return []
    html = ['<section id="rules"><h2>Rules</h2>']
    for rule in shown:
        fix = "no fix: reported for a person" if rule.fix == "none" else f"{rule.fix} fix"
        paragraphs = "".join(f"<p>{escape(' '.join(part.split()))}</p>" for part in rule.why.strip().split("\n\n") if part.strip())
        examples = "".join(_example(example) for example in rule.examples[:2])
        html.append(
            f'<details id="rule-{rule.code}"><summary><strong>{rule.code}</strong> {escape(rule.name)}: '
            f"{escape(rule.summary)}</summary><p><em>{escape(fix)}</em></p>{paragraphs}{examples}</details>"
        )
    return html + ["</section>"]


def _example(example) -> str:
    before = f"<pre>{escape(example.before.strip())}</pre>"
    if example.valid:
        return f"<p>Left as it is:</p>{before}"
    if example.after is None:
        return f"<p>Reported:</p>{before}"
    return f"<p>Before:</p>{before}<p>After:</p><pre>{escape(example.after.strip())}</pre>"


def _finding_row(path: str, finding: Finding, item: int, names: dict, base: Optional[str]) -> str:
    place = f"cell {finding.cell}:{finding.line}" if finding.cell is not None else str(finding.line)
    sort_line = (finding.cell or 0) * 1_000_000 + finding.line
    return (
        f'<tr data-severity="{finding.severity}" data-manual="{"yes" if finding.needs_person else "no"}">'
        f'<td>{escape(path)}</td><td class=num data-key="{sort_line}">{place}</td>'
        f'<td><a href="{escape(_rule_link(finding.code, base))}">{finding.code}</a></td>'
        f"<td>{escape(names.get(finding.code, ''))}</td>"
        f'<td class="{finding.severity}">{finding.severity}</td><td>{"yes" if finding.fixable else "no"}</td>'
        f"<td>{escape(finding.message)}</td><td class=num>{item}</td><td>{finding.taken}</td></tr>"
    )


HEADERS = (("file", "text"), ("line", "number"), ("code", "text"), ("rule", "text"), ("kind", "text"),
           ("fixed by rewrite", "text"), ("what to do", "text"), ("item", "number"), ("action", "text"))


def _findings(results: list[FileResult], names: dict, base: Optional[str]) -> list[str]:
    rows = [_finding_row(path, f, item, names, base) for path, f, item in numbered_findings(results)]
    head = "".join(f'<th class="sortable" data-type="{kind}">{label}</th>' for label, kind in HEADERS)
    return [
        "<h2>Findings</h2>",
        '<div id="filters"><label>Filter <input id="filter-text" type="search" placeholder="path, code, text"></label>'
        '<label>Kind <select id="filter-severity"><option value="">all</option><option value="blocker">blockers</option>'
        '<option value="advice">advice</option><option value="review">lines to review</option></select></label>'
        '<label><input id="filter-manual" type="checkbox"> only what needs a person</label>'
        f' <span id="shown">{len(rows)}</span> of <span id="total">{len(rows)}</span> shown</div>',
        f'<table id="findings"><thead><tr>{head}</tr></thead><tbody>',
        *rows,
        "</tbody></table>",
    ]


def _errors(results: list[FileResult]) -> list[str]:
    failed = [r for r in results if r.failed]
    if not failed:
        return []
    items = "".join(f"<li><code>{escape(r.path)}</code>: {escape(r.error or '')}</li>" for r in failed)
    return ["<h2>Files not processed</h2>", f'<ul id="errors">{items}</ul>']


def _toolkit(toolkit: Optional[dict]) -> list[str]:
    if toolkit is None:
        return []
    return [
        "<h2>GPU Migration Toolkit log</h2>",
        f'<p><span data-toolkit="sites">{toolkit["sites"]}</span> intercepted call sites; '
        f'<span data-toolkit="sites_in_scanned_files">{toolkit["sites_in_scanned_files"]}</span> in the scanned files, '
        f'of which the static port covers <span data-toolkit="covered_by_static_findings">'
        f'{toolkit["covered_by_static_findings"]}</span>; {len(toolkit["library_sites"])} in installed libraries.</p>',
    ]


def _not_examined(counts) -> list[str]:
    if not counts:
        return []
    items = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    shown = ", ".join(f'<span data-not-examined="{escape(kind)}">{escape(kind)} {count}</span>' for kind, count in items)
    return [f'<p id="not-examined">Files not examined: {shown}.</p>']


def render_html(
    results: list[FileResult], rules=(), rule_docs_url: Optional[str] = None, toolkit: Optional[dict] = None,
    not_examined=None,
) -> str:
    names = rule_names(rules)
    plan = make_plan(results)
    base = rule_docs_url
    reported = {f.code for r in results for f in r.findings}
    body = (
        [f"<h1>Migration report (hpu-port {escape(__version__)})</h1>"]
        + _plan(plan, results, names, base)
        + _summary(plan.total)
        + _not_examined(not_examined)
        + _toolkit(toolkit)
        + (_chart(plan) + _directories(plan) if plan.directories else [])
        + _errors(results)
        + _findings(results, names, base)
        + ([] if base else _rule_pages(rules, reported))
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<link rel="icon" href="data:,">',  # no request for /favicon.ico
            f"<title>hpu-port migration report</title><style>{STYLE}</style></head><body>",
            *body,
            f"<script>{SCRIPT}</script>",
            "</body></html>",
            "",
        ]
    )
