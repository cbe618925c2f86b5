"""coursekit/feedback.py: the feedback HTML nbgrader renders from a submission holds neither its hidden tests nor any
active content a student put in (issue 34): script, event handlers, javascript: links, SVG, JavaScript outputs; and
ordinary formatting, tables and images still show."""

from __future__ import annotations

from html.parser import HTMLParser

import nbformat
import pytest
from nbconvert import HTMLExporter
from traitlets.config import Config

from coursekit.feedback import SanitizeSubmission

MARK = "xena-was-here"  # in every piece of active content the student wrote: none may reach anything active

MARKDOWN = f"""# My answer

**bold**, *italic*, `a < b`, a [link](https://pytorch.org) and a formula $x^2$.

<script>alert("{MARK}")</script>
<img src="x" onerror="alert('{MARK}')">
<a href="javascript:alert('{MARK}')">click</a>
<a href="JaVaScRiPt:alert('{MARK}')">click again</a>
<div onmouseover="alert('{MARK}')" style="background:url(javascript:alert('{MARK}'))">hover</div>
<iframe src="javascript:alert('{MARK}')"></iframe>
<svg onload="alert('{MARK}')"></svg>
<form action="javascript:alert('{MARK}')"><button>go</button></form>

| step | loss |
|------|------|
| 1    | 0.5  |

![plot](data:image/png;base64,iVBORw0KGgo=)

> a quote

```
line one

line three
```
"""

OUTPUTS = [
    nbformat.v4.new_output("display_data", data={"text/html": f"<b>ok</b><script>alert('{MARK}')</script>"
                                                               f"<img src=x onerror=\"alert('{MARK}')\">",
                                                 "text/plain": "<IPython.core.display.HTML object>"}),
    nbformat.v4.new_output("display_data", data={"application/javascript": f"alert('{MARK}')",
                                                 "text/plain": "<IPython.core.display.Javascript object>"}),
    nbformat.v4.new_output("display_data", data={"image/svg+xml": f"<svg onload=\"alert('{MARK}')\"></svg>",
                                                 "text/plain": "<Figure>"}),
    nbformat.v4.new_output("display_data", data={"text/markdown": f"[x](javascript:alert('{MARK}'))"}),
    nbformat.v4.new_output("execute_result", data={"text/plain": f"'<script>{MARK}</script>'"}, execution_count=1),
]


class _Active(HTMLParser):
    """Every place in an HTML page where a browser runs something: script elements, event handler attributes,
    javascript: URLs, and the elements that load or run content of their own."""

    def __init__(self):
        super().__init__()
        self.found, self._in_script, self.tags = [], False, []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "script":
            self._in_script = True
        if tag in ("iframe", "object", "embed", "svg", "form", "base", "meta"):
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            value = (value or "").strip().lower()
            if name.startswith("on") or value.startswith("javascript:") or "javascript:" in value and name == "style":
                self.found.append(f"<{tag} {name}={value[:60]}>")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script and MARK in data:
            self.found.append(f"<script>{data[:60]}")


def _feedback_html(notebook) -> str:
    config = Config()
    config.HTMLExporter.preprocessors = [SanitizeSubmission]
    html, _ = HTMLExporter(config=config).from_notebook_node(notebook)
    return html


@pytest.fixture(scope="module")
def rendered():
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell(MARKDOWN),
                      nbformat.v4.new_raw_cell(f"<script>alert('{MARK}')</script>"),
                      nbformat.v4.new_code_cell("display(HTML(...))", outputs=OUTPUTS)]
    return _feedback_html(notebook)


def test_without_it_the_attacks_are_active():
    """The attacks are real: rendered as nbgrader does without the preprocessor, they reach the page."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell(MARKDOWN), nbformat.v4.new_code_cell("x", outputs=OUTPUTS)]
    html, _ = HTMLExporter().from_notebook_node(notebook)
    parser = _Active()
    parser.feed(_body(html))
    assert len(parser.found) >= 8, parser.found


def _body(html: str) -> str:
    """The page's body: the notebook (the template's head holds its own meta, style and script elements)."""
    return html.split("<body", 1)[1]


def test_no_active_content_of_the_student_reaches_the_feedback(rendered):
    parser = _Active()
    parser.feed(_body(rendered))
    assert parser.found == [], parser.found


def test_ordinary_formatting_tables_and_images_still_show(rendered):
    parser = _Active()
    parser.feed(rendered)
    for tag in ("strong", "em", "code", "table", "th", "td", "img", "blockquote", "pre", "h1", "b"):
        assert tag in parser.tags, f"<{tag}> is gone"
    assert "<code>a &lt; b</code>" in rendered  # markdown's own meaning kept (bleach on the source escaped it twice)
    assert 'href="https://pytorch.org"' in rendered and 'src="data:image/png;base64,iVBORw0KGgo="' in rendered
    assert "line one\n\nline three" in rendered.replace("<!-- -->", "")  # a code block's blank line
    assert "$x^2$" in rendered  # left for MathJax
    assert "&lt;script&gt;" in rendered  # what the student wrote is shown as text, not dropped silently


def test_outputs_keep_text_and_bitmaps_and_lose_everything_active():
    cell = nbformat.v4.new_code_cell("x", outputs=[dict(o) for o in OUTPUTS])
    cell = nbformat.from_dict(cell)
    SanitizeSubmission().preprocess_cell(cell, {}, 0)
    kinds = [sorted(o.get("data", {})) for o in cell.outputs]
    assert kinds == [["text/html", "text/plain"], ["text/plain"], ["text/plain"], ["text/markdown"], ["text/plain"]]
    assert "<script" not in cell.outputs[0].data["text/html"] and "onerror" not in cell.outputs[0].data["text/html"]
