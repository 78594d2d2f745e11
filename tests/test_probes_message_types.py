"""The message-type list is written once (linklab.probes.message_types): the C++ header
the probes build with is the table's current rendering, the IDL declares every row, and
the Python lists and the scenario field come from the same rows."""

from __future__ import annotations

import re
from pathlib import Path

from linklab.bench.fields import MESSAGE_TYPES as SCENARIO_TYPES
from linklab.probes.message_types import HEADER, MESSAGE_TYPES, cpp_header
from linklab.probes.types import TYPES, dds_type_name

REPO = Path(__file__).resolve().parents[1]
IDL = REPO / "probes" / "idl" / "linklab_types.idl"


def test_the_checked_in_header_is_the_tables_rendering():
    assert (REPO / HEADER).read_text() == cpp_header(), \
        "run scripts/message_types_header.py and rebuild the probes"


def test_the_idl_declares_every_type_of_the_table():
    idl = IDL.read_text()
    declared = set(re.findall(r"struct\s+(\w+)_\s*\{", idl)) | set(
        re.findall(r"LINKLAB_POINTCLOUD\((\w+)_,", idl))
    for t in MESSAGE_TYPES:
        module = t.dds_name.split("::")[0]
        assert t.name in declared, f"{t.name} is not a struct of {IDL.name}"
        assert f"module {module}" in idl, t.dds_name


def test_the_cpp_sources_list_no_type_of_their_own():
    for source in ("probes/common/probe.cpp", "probes/fastdds/codecs.cpp",
                   "probes/cyclonedds/codecs.cpp"):
        text = (REPO / source).read_text()
        assert "Array1k" not in text and "PointCloud512k" not in text, source


def test_the_python_lists_follow_the_table():
    # the lists as they were written by hand before the table
    assert TYPES == (
        "Bytes", "Image", "PointCloud2", "String", "UInt8MultiArray", "Array1k", "Array4k",
        "Array16k", "Array32k", "Array60k", "Array64k", "Array256k", "Array1m", "Array2m",
        "Array4m", "PointCloud512k", "PointCloud1m", "PointCloud2m", "PointCloud4m")
    assert SCENARIO_TYPES == tuple(t for t in TYPES if t not in ("Array4m", "PointCloud4m"))
    assert all(dds_type_name(t.name) == t.dds_name for t in MESSAGE_TYPES)
    assert len({t.name for t in MESSAGE_TYPES}) == len(MESSAGE_TYPES)
