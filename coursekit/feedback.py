"""An nbgrader feedback preprocessor that keeps hidden tests hidden.

nbgrader's ``generate_feedback`` renders the autograded notebook, which holds the hidden tests again
(autograde restores them). This preprocessor removes the hidden test code from the cell sources and
cuts failed cells' tracebacks down to their last line, since IPython's traceback quotes the cell's
code. The graders' own printed PASS/FAIL lines stay: they are the feedback.
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
