"""pad_collate: the reference against the specification, and the grader's own machinery (inputs, causes, a
notebook's answer used as a DataLoader's collate_fn in worker processes)."""

from __future__ import annotations

import linecache

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import graders
from graders.ch04_data import pad_collate as grader
from solutions import ch04_data as reference

# -- the reference meets its specification on random inputs -----------------------------------------
sequences = st.lists(st.lists(st.integers(0, 2**40), max_size=8), min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(sequences, st.data())
def test_reference_pad_collate_round_trip(rows, data):
    labels = data.draw(st.lists(st.integers(0, 2**40), min_size=len(rows), max_size=len(rows)))
    as_lists = data.draw(st.booleans())
    batch = [[torch.tensor(row, dtype=torch.long), label] if as_lists else (torch.tensor(row, dtype=torch.long), label)
             for row, label in zip(rows, labels)]
    before = [seq.clone() for seq, _ in batch]
    padded, lengths, labels_out = reference.pad_collate(batch)
    width = max(len(row) for row in rows)
    assert padded.dtype == lengths.dtype == labels_out.dtype == torch.long
    assert padded.shape == (len(rows), width)
    assert lengths.tolist() == [len(row) for row in rows] and labels_out.tolist() == labels
    for i, row in enumerate(rows):  # unpadding with the lengths gives the inputs back; the rest is 0
        assert padded[i, : lengths[i]].tolist() == row
        assert not padded[i, lengths[i]:].any()
    assert all(torch.equal(seq, old) for (seq, _), old in zip(batch, before))


def test_reference_pad_collate_on_non_contiguous_sequences():
    batch = grader._sequence_batch([3, 5, 0, 4], layouts=["strided", "column", "expanded", "contiguous"])
    assert not batch[0][0].is_contiguous() and batch[2][0].numel() == 0
    padded, lengths, labels = reference.pad_collate(batch)
    rows, expected_lengths, expected_labels = grader._expected(batch)
    assert padded.tolist() == rows and lengths.tolist() == expected_lengths and labels.tolist() == expected_labels


# -- the grader's inputs and its likely causes --------------------------------------------------------
def test_inputs_cover_layouts_large_values_and_item_types():
    batch = grader._sequence_batch([2, 6, 3], big=True, layouts=["strided", "column"], as_lists=True,
                                   labels=[1, 2**33, 300])
    assert all(isinstance(item, list) for item in batch)
    assert not batch[0][0].is_contiguous() and not batch[1][0].is_contiguous()
    assert min(v for seq, _ in batch for v in seq.tolist()) > 2**31
    rows, _, _ = grader._expected(batch)
    assert torch.tensor(rows).float().long().tolist() != rows  # float32 on the way would be visible


def test_causes_name_the_mistake_and_only_it():
    batch = grader._sequence_batch([2, 4, 3], zeros=False)
    rows, lengths, _ = grader._expected(batch)
    padded = torch.tensor(rows)
    assert "time first" in grader._padding_cause(batch, padded.T)
    left = torch.tensor([[0] * (4 - n) + seq.tolist() for (seq, _), n in zip(batch, lengths)])
    assert "on the left" in grader._padding_cause(batch, left)
    assert grader._padding_cause(batch, padded) is None
    assert "padding value is -1" in grader._padding_cause(batch, torch.where(
        torch.arange(4)[None, :] < torch.tensor(lengths)[:, None], padded, -1))
    small = grader._sequence_batch([2, 3], zeros=False)
    rows_small, _, _ = grader._expected(small)
    # small tokens survive float32: the rounding cause must not be named for them
    assert grader._padding_cause(small, torch.tensor(rows_small).float()) is None


def test_a_notebook_answer_works_as_collate_fn_in_worker_processes(device):
    """A function from a notebook reaches the runner by value (cloudpickle); the DataLoader's workers are
    forked from the runner, so they have it too. Its own line is shown when it fails there."""
    filename = "/tmp/ipykernel_4/2.py"
    source = ("import torch\n"
              "def pad_collate(batch):\n"
              "    width = max(len(s) for s, _ in batch)\n"
              "    padded = torch.zeros(len(batch), width, dtype=torch.long)\n"
              "    for i, (s, _) in enumerate(batch):\n"
              "        padded[i, :len(s)] = s\n"
              "    return padded, torch.tensor([len(s) for s, _ in batch]), torch.tensor([y for _, y in batch])\n")
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    linecache.cache[filename] = (0, None, source.splitlines(True), filename)
    report = graders.check_namespace("pad_collate", namespace, ["works_in_dataloader"], device=device)
    assert report.passed, report.as_text()

    # Fails only inside a worker process: the worker's error still names the student's line.
    broken = source.replace("        padded[i, :len(s)] = s\n", "        padded[i, :len(s)] = s\n"
                            "        assert torch.utils.data.get_worker_info() is None, 'no workers here'\n")
    assert broken != source
    namespace = {}
    exec(compile(broken, filename, "exec"), namespace)
    linecache.cache[filename] = (0, None, broken.splitlines(True), filename)
    report = graders.check_namespace("pad_collate", namespace, ["works_in_dataloader"], device=device)
    message = report.results[0].message
    assert not report.passed and "AssertionError: no workers here" in message, message
    assert "in DataLoader worker process 0" in message and "your notebook cell, line 7" in message, message


def test_a_notebook_namedtuple_comes_back_from_the_workers(device):
    """A batch type defined in the notebook is rebuilt in the runner by value, but the workers send each batch
    back pickled by reference (`__main__.Padded`): the runner must find it there. It once did not, and this
    correct answer failed from a notebook while it passed from a file."""
    filename = "/tmp/ipykernel_4/3.py"
    source = ("import collections\nimport torch\n"
              "Padded = collections.namedtuple('Padded', 'padded lengths labels')\n"
              "def pad_collate(batch):\n"
              "    width = max(len(s) for s, _ in batch)\n"
              "    padded = torch.zeros(len(batch), width, dtype=torch.long)\n"
              "    for i, (s, _) in enumerate(batch):\n"
              "        padded[i, :len(s)] = s\n"
              "    lengths = torch.tensor([len(s) for s, _ in batch])\n"
              "    return Padded(padded, lengths, torch.tensor([int(y) for _, y in batch]))\n")
    namespace: dict = {"__name__": "__main__"}
    exec(compile(source, filename, "exec"), namespace)
    linecache.cache[filename] = (0, None, source.splitlines(True), filename)
    report = graders.check_namespace("pad_collate", namespace, ["works_in_dataloader"], device=device)
    assert report.passed, report.as_text()


# -- the generated domain (issue 32): each class the specification allows is drawn ---------------------
def _drawn(generate=None, count: int = 500, seed: int = 0) -> list[dict]:
    import random

    from graders import domain

    random.seed(seed)
    return domain.draw(generate or grader.draw_batch, count, size=grader.batch_size)


def test_generated_batches_cover_sizes_and_length_relations():
    drawn = _drawn()
    lengths = [[len(row) for row in d["values"]] for d in drawn]
    assert any(len(ls) == 1 for ls in lengths) and any(len(ls) >= 12 for ls in lengths)
    assert any(len(ls) > 1 and not any(ls) for ls in lengths)  # every sequence empty
    assert any(len(ls) > 2 and sum(map(bool, ls)) == 1 for ls in lengths)  # one non-empty among empty ones
    assert any(len(ls) > 1 and len(set(ls)) == 1 and ls[0] for ls in lengths)  # all of one length
    assert any(len(ls) > 2 and ls.count(max(ls)) == 1 and ls.index(max(ls)) not in (0, len(ls) - 1) for ls in lengths)
    assert any(max(ls) >= 100 for ls in lengths)
    assert any(max(ls) > 512 for ls in lengths) and any(max(ls) > 1024 for ls in lengths)  # past a "max length" cap


def test_generated_batches_cover_every_layout_and_item_type():
    drawn = _drawn()
    layouts = {layout for d in drawn for layout, row in zip(d["layouts"], d["values"]) if len(row) > 1}
    assert layouts == set(grader.GENERATED_LAYOUTS)
    batch = next(grader.build_batch(d) for d in drawn if "shared" in d["layouts"][1:])
    shared = [i for i in range(1, len(batch)) if batch[i][0] is batch[i - 1][0]]
    assert shared  # the same tensor object twice in one batch
    built = [seq for d in drawn[:200] for seq, _ in grader.build_batch(d)]
    assert any(not s.is_contiguous() for s in built) and any(s.is_contiguous() and s.storage_offset() for s in built)
    assert any(len(s) > 1 and s.stride(0) == 0 for s in built)
    items = {kind for d in drawn for kind in d["items"]}
    assert items == {"tuple", "list"} and any(len(set(d["items"])) == 2 for d in drawn)


def test_generated_batches_cover_the_values_of_int64():
    drawn = _drawn()
    tokens = [v for d in drawn for row in d["values"] for v in row]
    labels = [v for d in drawn for v in d["labels"]]
    assert 0 in tokens and min(tokens) < 0 and any(2**31 < v < 2**53 for v in tokens)
    assert 2**63 - 1 in tokens and -2**63 in tokens and any(v > 2**53 and v % 2 for v in tokens)
    assert any(row and row[-1] == 0 for d in drawn for row in d["values"])  # a real token 0 at the end
    assert min(labels) < 0 and any(v > 2**53 for v in labels)
    assert all(len(d["values"]) == 1 for d in _drawn(grader.draw_single, 100))
    assert all(any(not row for row in d["values"]) for d in _drawn(grader.draw_with_empty, 100))


def test_the_generated_check_rejects_a_float64_round_trip_and_shows_the_smallest_batch():
    """float64 keeps every token of the hand-written cases (ids up to 2**40); generated ids near 2**62 are
    rounded: the check fails on the smallest such batch and shows it in the student's terms."""
    namespace: dict = {}
    exec("import torch\n"
         "def pad_collate(batch):\n"
         "    width = max(len(s) for s, _ in batch)\n"
         "    padded = torch.zeros(len(batch), width, dtype=torch.float64)\n"
         "    for i, (s, _) in enumerate(batch):\n"
         "        padded[i, :len(s)] = s.double()\n"
         "    return (padded.long(), torch.tensor([len(s) for s, _ in batch]),\n"
         "            torch.tensor([y for _, y in batch]))\n", namespace)
    report = graders.check_namespace("pad_collate", namespace, ["returns_int64_tensors"], device="cpu")
    message = report.results[0].message
    assert not report.passed and "the smallest of" in message and "generated batches" in message, message
    shown = message.split("input:")[1].split("\n")[0]
    assert shown.count("(") <= 3, message  # a batch of one short sequence, as the student would write it
