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
