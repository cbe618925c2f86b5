"""nbgrader feedback preprocessors: hidden tests stay hidden, and a submission's active HTML stays out.

nbgrader's ``generate_feedback`` renders the autograded notebook, which holds the hidden tests again
(autograde restores them). :class:`HideHiddenTests` removes the hidden test code from the cell sources and
cuts failed cells' tracebacks down to their last line, since IPython's traceback quotes the cell's
code. The graders' own printed PASS/FAIL lines stay: they are the feedback. :class:`SanitizeSubmission` removes
script, event handlers, ``javascript:`` links and other active content a student's cells or outputs hold (issue 34).
"""

from __future__ import annotations

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool, Unicode

HIDDEN_NOTE = "# (hidden tests ran here)"


class HideHiddenTests(Preprocessor):
    # nbconvert's Preprocessor is disabled unless told otherwise; nbgrader registers it by name.
    enabled = Bool(True).tag(config=True)
    begin = Unicode("### BEGIN HIDDEN TESTS").tag(config=True)
    end = Unicode("### END HIDDEN TESTS").tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code" or self.begin not in cell.source:
            return cell, resources
        kept, hidden = [], False
        for line in cell.source.splitlines():
            if self.begin in line:
                hidden = True
                kept.append(line[: len(line) - len(line.lstrip())] + HIDDEN_NOTE)
            elif self.end in line:
                hidden = False
            elif not hidden:
                kept.append(line)
        cell.source = "\n".join(kept)
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources


# ==================================================================================================
# Feedback safe to open: what a submission holds is rendered into the HTML the instructor opens in the browser that
# also runs their Jupyter server. nbconvert's own SanitizeHTML runs bleach over a markdown cell's *source*, which
# escapes what markdown itself means (`a < b` in a code span, a blockquote's `>`), so here a markdown cell is rendered
# first and its HTML cleaned (then kept as the cell's source, which markdown passes through unchanged).
# ==================================================================================================
SAFE_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1", "h2", "h3",
    "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "ol", "p", "pre", "s", "samp", "small", "span", "strong",
    "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul", "var"})
SAFE_OUTPUTS = frozenset({"text/plain", "text/latex", "application/json", "image/png", "image/jpeg", "image/gif"})
_RENDERED_OUTPUTS = frozenset({"text/html", "text/markdown"})  # cleaned; every other kind of output is dropped


def _safe_attribute(tag: str, name: str, value: str) -> bool:
    """Formatting only: no event handler or style; a link's target and an image's source only on the web (an image
    also inline, as data:image/ or a notebook attachment); never javascript:, which bleach refuses by protocol."""
    if name in ("class", "title", "alt") or tag in ("td", "th") and name in ("align", "colspan", "rowspan"):
        return True
    if tag == "img" and name in ("width", "height"):
        return value.isdigit()
    if tag == "img" and name == "src":
        return value.startswith(("https://", "http://", "data:image/png", "data:image/jpeg", "data:image/gif",
                                 "attachment:"))
    if tag == "a" and name == "href":
        return value.startswith(("https://", "http://", "mailto:", "#"))
    return False


def clean_html(html: str) -> str:
    """``html`` with only formatting left: tags outside SAFE_TAGS are escaped (shown as text, nothing hidden), their
    attributes checked by _safe_attribute, comments removed."""
    import bleach

    return bleach.clean(html, tags=SAFE_TAGS, attributes=_safe_attribute,
                        protocols={"http", "https", "mailto", "data", "attachment"}, strip_comments=True)


class SanitizeSubmission(Preprocessor):
    """Before nbgrader renders a submission into feedback HTML: markdown and raw cells rendered and cleaned
    (:func:`clean_html`), outputs of HTML or markdown cleaned, every other output but plain text, JSON, LaTeX and
    bitmaps dropped (JavaScript, SVG, widgets). Code, tracebacks and streams are escaped by the template already."""

    enabled = Bool(True).tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        from nbconvert.filters import markdown2html

        if cell.cell_type == "markdown":
            # As HTML the cell is rendered again as markdown, which passes an HTML block through up to its first
            # blank line: a blank line (in a code block) becomes a comment line, which shows as the same blank line.
            cell.source = clean_html(markdown2html(cell.source)).replace("\n\n", "\n<!-- -->\n")
        elif cell.cell_type == "raw":
            cell.source = clean_html(cell.source)
        elif cell.cell_type == "code":
            for output in cell.get("outputs", []):
                data = output.get("data")
                if not data:
                    continue
                for key in list(data):
                    if key in _RENDERED_OUTPUTS:
                        text = data[key] if isinstance(data[key], str) else "".join(data[key])
                        data[key] = clean_html(markdown2html(text) if key == "text/markdown" else text)
                    elif key not in SAFE_OUTPUTS:
                        del data[key]
        return cell, resources
