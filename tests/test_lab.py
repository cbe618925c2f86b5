"""``make lab``: the student edition it builds, and the JupyterLab server it starts."""

from __future__ import annotations

import json
import re
import secrets
import socket
import subprocess
import time
import urllib.request

import nbformat
import pytest

from coursekit import lab

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode()


def test_jupyterlab_starts_with_the_nbgrader_extension_enabled(tmp_path):
    port, token = _free_port(), secrets.token_hex(16)
    command = lab.lab_command(tmp_path, port=port, open_browser=False, token=token)
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline and status is None:
            assert server.poll() is None, f"JupyterLab exited: {server.stderr.read()[-2000:]}"
            try:
                status = json.loads(_get(f"http://127.0.0.1:{port}/api/status?token={token}"))
            except OSError:
                time.sleep(0.5)
        assert status is not None, "JupyterLab did not answer within 60 s"
        assert "started" in status

        page = _get(f"http://127.0.0.1:{port}/lab?token={token}")
        config = json.loads(re.search(r'id="jupyter-config-data"[^>]*>\s*(\{.*?\})\s*</script>', page, re.S).group(1))
        federated = {e["name"] for e in config["federated_extensions"]}
        assert "@jupyter/nbgrader" in federated, federated
        disabled = config.get("disabledExtensions", [])
        assert not any(d.startswith("@jupyter/nbgrader") for d in (disabled if isinstance(disabled, list) else disabled.keys()))
        # nbgrader's server side answers too: the lab extension asks it for its version
        version = _get(f"http://127.0.0.1:{port}/nbgrader_version?version=0.9.6&token={token}")
        assert json.loads(version)["success"] is True, version
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def test_student_edition_strips_answers_and_hidden_tests_and_keeps_student_work(tmp_path, monkeypatch):
    chapters = lab.course_chapters()
    added, kept = lab.build_student_edition(tmp_path)
    assert added == chapters and kept == []
    for chapter in chapters:
        nb = nbformat.read(tmp_path / chapter / f"{chapter}.ipynb", as_version=4)
        text = "\n".join(c.source for c in nb.cells)
        assert "BEGIN SOLUTION" not in text and "from solutions" not in text
        assert "BEGIN HIDDEN TESTS" not in text and "raise NotImplementedError()" in text
        assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "outputs are cleared"

    # the student works on chapter one...
    first = tmp_path / chapters[0] / f"{chapters[0]}.ipynb"
    nb = nbformat.read(first, as_version=4)
    nb.cells[0].source += "\n\nMy notes."
    nbformat.write(nb, first)
    edited = first.read_text()
    # ...and a chapter goes missing (deleted, or new in the course since the last run)
    missing = chapters[-1] if len(chapters) > 1 else None
    if missing:
        import shutil

        shutil.rmtree(tmp_path / missing)
    added, kept = lab.build_student_edition(tmp_path)
    assert first.read_text() == edited, "a student's notebook was overwritten"
    assert chapters[0] in kept
    assert added == ([missing] if missing else [])
