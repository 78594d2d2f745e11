"""A probe type's serialized sample size (linklab.probes.types.sample_bytes) is what Fast
DDS 2.9 serializes for it (linklab-check-cdr --size), for every type the probes carry: the
bench's wire model (bench.search_cells.model_columns) and model-check count these bytes."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import BUILD
from linklab.errors import UsageError
from linklab.probes.types import FIXED_TYPE_BYTES, TYPES, sample_bytes, sample_extra_bytes

CHECK_CDR = BUILD / "probes" / "checks" / "linklab-check-cdr"
# any-size types at sizes their layouts take (odd ones: Image rows with padding)
ANY_SIZE = {"Bytes": (0, 1, 4097, 65536), "Image": (2, 65537), "PointCloud2": (0, 48),
            "String": (32, 100003), "UInt8MultiArray": (16, 70001)}
CASES = [(t, n) for t, sizes in ANY_SIZE.items() for n in sizes] + \
    [(t, n) for t, n in FIXED_TYPE_BYTES.items()]


def check_cdr(*args: str) -> subprocess.CompletedProcess:
    if not CHECK_CDR.exists():
        pytest.fail(f"{CHECK_CDR} is not built: run scripts/setup.sh")
    return subprocess.run([CHECK_CDR, *args], capture_output=True, text=True)


def test_every_type_is_covered():
    assert {t for t, _ in CASES} == set(TYPES)


@pytest.mark.native
@pytest.mark.parametrize("type_name,payload", CASES)
def test_sample_bytes_are_what_fastdds_serializes(type_name, payload):
    done = check_cdr("--size", type_name, str(payload))
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["type"] == type_name and got["payload_bytes"] == payload
    assert got["serialized_bytes"] == sample_bytes(type_name, payload)


def test_extra_bytes_by_family():
    assert sample_extra_bytes("Bytes") == 24
    assert {sample_extra_bytes(t) for t in FIXED_TYPE_BYTES if t.startswith("Array")} == {20}
    assert sample_extra_bytes("PointCloud2") == 153
    with pytest.raises(UsageError, match="unknown type 'Blob'"):
        sample_extra_bytes("Blob")


@pytest.mark.native
@pytest.mark.parametrize("args,needle", [
    (("--size", "Blob", "10"), "TYPE: not a probe type: 'Blob'"),
    (("--size", "Bytes", "ten"), "SIZE: expected payload bytes, got 'ten'"),
    (("--size", "Array1k", "1000"), "SIZE: Array1k carries exactly 1024 bytes"),
    (("--size", "String", "3"), "SIZE:"),
])
def test_check_cdr_size_refuses_bad_arguments(args, needle):
    done = check_cdr(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert needle in done.stderr and len(done.stderr.strip().splitlines()) == 1
