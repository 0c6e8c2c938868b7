"""Tests of the bin-packing instance reader: BPPLIB and OR-Library files, malformed files."""

from __future__ import annotations

import pathlib
import re

import pytest

from raptor_cp.errors import InvalidInputError
from raptor_cp.workload.bpp_reader import BinPackingInstance, read_bin_packing

BPP = pathlib.Path(__file__).parent / "data" / "bpp"
OR_LIBRARY = """ 2
 u_a
 10 3 2
 6
 5
 4
 u_b
 8 2 1
 4
 4
"""


def test_bpplib_file_is_one_instance_named_after_the_file() -> None:
    (instance,) = read_bin_packing(BPP / "N1C1W1_A.BPP")
    assert (instance.name, instance.capacity, len(instance.sizes)) == ("N1C1W1_A", 100, 50)
    assert instance.sizes[:3] == (99, 99, 96) and instance.best_known is None


def test_or_library_file_holds_several_instances(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "binpack.txt"
    path.write_text(OR_LIBRARY)
    assert read_bin_packing(path) == [
        BinPackingInstance("u_a", 10, (6, 5, 4), 2),
        BinPackingInstance("u_b", 8, (4, 4), 1),
    ]


def test_values_may_share_lines_and_blank_lines_are_ignored(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "one.txt"
    path.write_text("3 10\n\n4 5\n6\n\n")
    assert read_bin_packing(path) == [BinPackingInstance("one", 10, (4, 5, 6))]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty file (expected the item count on line 1)"),
        ("  \n\n", "empty file (expected the item count on line 1)"),
        ("3\n10\n4\n5\n", "line 4: file ends before the size of item 3 of 3"),
        ("3\n10\n4\n5\nx\n", "line 5: expected an integer size of item 3 of 3, found 'x'"),
        ("2\n10\n4\n5.5\n", "line 4: expected an integer size of item 2 of 2, found '5.5'"),
        ("2\n10\n4\n11\n", "line 4: item 2 has size 11, larger than the capacity 10"),
        ("2\n10\n4\n0\n", "line 4: size of item 2 of 2 must be at least 1, found 0"),
        ("2\n0\n", "line 2: capacity must be at least 1, found 0"),
        ("-1\n10\n", "line 1: item count must be at least 0, found -1"),
        ("2\n10\n4\n5\n6\n", "line 5: unexpected value '6' after the last item"),
        ("1\nu1\n10 2\n", "line 2: expected an integer capacity, found 'u1'"),
        ("1\nu1\n10 2 1\n", "line 3: file ends before the size of item 1 of 2"),
        ("2\nu1\n10 1 1\n3\n", "line 4: file ends before the instance identifier"),
        ("1\nu1\n10 1 1\n3\n7\n", "line 5: unexpected value '7' after the last item"),
        ("0\nu1\n10 1 1\n3\n", "line 1: instance count must be at least 1, found 0"),
        ("2\nu1\n10 1 1\n3\n4\n", "line 5: expected the instance identifier, found '4'"),
    ],
)
def test_malformed_files_name_the_line(tmp_path: pathlib.Path, text: str, message: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(InvalidInputError, match=f"^{re.escape(str(path))}: {re.escape(message)}$"):
        read_bin_packing(path)


def test_missing_file_is_an_input_error(tmp_path: pathlib.Path) -> None:
    with pytest.raises(InvalidInputError, match=r"none\.txt: no such file$"):
        read_bin_packing(tmp_path / "none.txt")
