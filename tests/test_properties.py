"""Generated input for every parser and loader that reads what a user (or a damaged
file) gives linklab: units, run directories, link state files, keystores, report exports.

The property is the same everywhere: any input ends in success or in linklab's own
one-line error (a ``LinklabError`` whose message is one line) -- never another
exception. Seeded (``derandomize``), so a run is reproducible; thousands of inputs per
parser, the whole file in well under a minute.
"""

from __future__ import annotations

import json
import math
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from conftest import examples
from linklab import units
from linklab.errors import LinklabError
from linklab.link import made
from linklab.link.journal import Journal, parse_state
from linklab.link.statedir import StateDir
from linklab.report import export
from linklab.rundir import CELLS_JSONL, CELLS_PARQUET, RUN_JSON, RunStore, check_row
from linklab.security.keystore import create_keystore, load_keystore

MANY = settings(derandomize=True, max_examples=examples(2000), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.function_scoped_fixture])
SOME = settings(MANY, max_examples=examples(600))


def one_line_error_or(call, *args, **kwargs):
    """Run ``call``; a LinklabError must be one line. Returns (result, error)."""
    try:
        return call(*args, **kwargs), None
    except LinklabError as error:
        message = str(error)
        assert message and "\n" not in message and "\r" not in message, repr(message)
        return None, error


# --- units ----------------------------------------------------------------------------------

UNIT_WORDS = sorted({*units.SIZE_UNITS, *units.BITRATE_UNITS, *units.FREQUENCY_UNITS,
                     *units.DURATION_UNITS, "%", "", "b", "KB/s", "Mb", "hz", "sec"})
numbers_as_text = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-10**400, max_value=10**400).map(str),
    st.from_regex(r"\A[+-]?(\d{0,400}(\.\d{0,20})?|\.\d{1,5})([eE][+-]?\d{1,4})?\Z"),
    st.sampled_from(["inf", "-inf", "nan", "NaN", "1e308", "1e-400", "0x10", "1_000", ""]),
)
unit_text = st.one_of(
    st.builds(lambda n, sp, u, tail: f"{n}{sp}{u}{tail}", numbers_as_text,
              st.sampled_from(["", " ", "\t", "\n"]), st.sampled_from(UNIT_WORDS),
              st.sampled_from(["", " ", "\n", "x", "/s"])),
    st.text(max_size=40),
)
unit_values = st.one_of(unit_text, st.floats(), st.integers(min_value=-10**400,
                                                            max_value=10**400),
                        st.booleans(), st.none(), st.lists(st.integers(), max_size=2))

LIMITS = {units.parse_size: units.MAX_SIZE, units.parse_bitrate: units.MAX_BITRATE,
          units.parse_frequency: units.MAX_FREQUENCY, units.parse_duration: units.MAX_DURATION,
          units.parse_fraction: 1.0}


@pytest.mark.parametrize("parse", list(LIMITS), ids=lambda f: f.__name__)
@MANY
@given(value=unit_values, allow_zero=st.booleans())
def test_unit_parsers_return_a_finite_value_in_range_or_one_line_error(parse, value,
                                                                       allow_zero):
    kwargs = {} if parse is units.parse_fraction else {"allow_zero": allow_zero}
    result, _ = one_line_error_or(parse, value, "--x", **kwargs)
    if result is not None:
        assert isinstance(result, (int, float)) and math.isfinite(result)
        assert 0 <= result <= LIMITS[parse]
        if parse is units.parse_size:
            assert type(result) is int


# --- link state files -------------------------------------------------------------------------

names = st.one_of(st.sampled_from(["linklab-r-robot", "eth0", "lo", "br-1", "a" * 16, "-rf",
                                   "", "x y", "../x", "10.0.0.1/24", "default", "1:",
                                   "net.ipv4.ip_forward", "4096 131072", "root", "ingress",
                                   "inet", "linklab_r", "r.emu-x.log", "r.json"]),
                  st.text(max_size=20))
field_values = st.one_of(names, st.integers(min_value=-2, max_value=2**40), st.none(),
                         st.booleans(), st.floats(), st.lists(names, max_size=3))
record_like = st.builds(
    lambda kind, fields, what: {"kind": kind, **fields, **({"what": what} if what else {})},
    st.one_of(st.sampled_from(made.KINDS), st.text(max_size=8)),
    st.dictionaries(st.sampled_from(["netns", "ifname", "dev", "cidr", "destination", "via",
                                     "features", "key", "old", "family", "table", "parent",
                                     "pid", "start", "role", "names", "undo", "argv"]),
                    field_values, max_size=5),
    st.one_of(st.none(), st.text(max_size=30)))
ns_names = st.from_regex(r"\Alinklab-[a-z0-9]{1,8}-(robot|edge|ap)\Z")
if_names = st.from_regex(r"\A[a-z][a-z0-9_]{0,14}\Z")
valid_records = st.one_of(
    st.builds(made.netns, ns_names), st.builds(made.link, ns_names, if_names),
    st.builds(made.link_up, ns_names, if_names), st.builds(made.master, ns_names, if_names),
    st.builds(made.address, ns_names, if_names, st.sampled_from(["10.77.0.1/24",
                                                                  "10.0.0.2/32"])),
    st.builds(made.route, ns_names, st.sampled_from(["default", "10.1.0.0/16"]),
              st.sampled_from([None, "10.77.0.1"]), if_names),
    st.builds(made.neighbours, ns_names, if_names), st.builds(made.offloads, ns_names, if_names),
    st.builds(made.sysctl, ns_names, st.sampled_from(["net.ipv4.ip_forward",
                                                      "net.ipv4.tcp_rmem"]),
              st.sampled_from(["0", "4096 131072 6291456"])),
    st.builds(made.nft_table, ns_names, st.sampled_from(["netdev", "inet"]),
              st.from_regex(r"\Alinklab_[a-z0-9]{1,8}\Z")),
    st.builds(made.qdisc, ns_names, if_names, st.sampled_from(["root", "ingress"])),
    st.builds(made.process, st.integers(2, 4_000_000), st.sampled_from([None, "12345"]),
              st.sampled_from(["helper", "host"])),
    st.builds(made.files, st.lists(st.sampled_from(["r.emu-x.conf", "r.outage.log"]))))
json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(),
                                     st.text(max_size=10)),
                           lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                           max_leaves=10)
states = st.fixed_dictionaries(
    {"version": st.sampled_from([2, 2, 2, 1, 0, "2", None]),
     "name": st.sampled_from(["r", "r", "other", None]),
     "steps": st.one_of(st.lists(valid_records, max_size=6),
                        st.lists(st.one_of(valid_records, record_like), max_size=6),
                        json_values)},
    optional={"owner": st.one_of(st.none(), json_values,
                                 st.fixed_dictionaries({"pid": st.integers(-5, 2**23),
                                                        "start": st.one_of(
                                                            st.none(), names)})),
              "holder": json_values, "inputs": json_values})
state_bytes = st.one_of(st.binary(max_size=200),
                        states.map(lambda s: json.dumps(s).encode()),
                        states.map(lambda s: json.dumps(s).encode()[:-3]),
                        json_values.map(lambda v: json.dumps(v).encode()))


@MANY
@given(data=state_bytes)
def test_state_file_parser_accepts_exact_records_or_says_one_line(data):
    state, _ = one_line_error_or(parse_state, data, "r", "/state/r.json")
    if state is not None:
        for step in state["steps"]:  # what is accepted can be undone by code alone
            assert step["kind"] in made.KINDS
            command = made.undo_command(step)
            assert command is None or all(isinstance(a, str) and a for a in command[0])


def test_the_state_file_inputs_reach_both_outcomes():
    """The strategy above makes files the parser accepts and files it refuses (else the
    property would hold vacuously). Found here, not read from a list the property test
    fills: that list was empty whenever the property did not run first in the same
    session (``-k reach_both``, a deselection, another order) and this test failed."""
    def accepted(data: bytes) -> bool:
        return one_line_error_or(parse_state, data, "r", "/state/r.json")[0] is not None

    quick = settings(MANY, max_examples=examples(500))
    assert accepted(find(state_bytes, accepted, settings=quick))
    assert not accepted(find(state_bytes, lambda data: not accepted(data), settings=quick))


@SOME
@given(data=state_bytes, mode=st.sampled_from([0o600, 0o644, 0o666, 0o620]))
def test_journal_loader_reads_files_or_refuses_in_one_line(tmp_path, data, mode):
    directory = tmp_path / "state"
    directory.mkdir(mode=0o700, exist_ok=True)
    os.chmod(directory, 0o700)
    (directory / "r.json").write_bytes(data)
    os.chmod(directory / "r.json", mode)
    with StateDir.open(directory) as store:
        journal, error = one_line_error_or(Journal.load, store, "r")
    if mode & 0o022:
        assert error is not None
    if journal is not None:
        assert journal.name == "r"


# --- run directories ----------------------------------------------------------------------------

cell_values = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**63,
                                                              max_value=2**63 - 1),
                        st.floats(), st.text(max_size=8),
                        st.lists(st.one_of(st.floats(), st.integers(-5, 5), st.text(max_size=2)),
                                 max_size=3))
COLUMNS = ["index", "cell_id", "payload_bytes", "profile", "link", "middleware", "rate_hz",
           "qos", "history", "status", "failure_reason", "received", "published",
           "reception_rate_hz", "latency_mean_ms", "jitter_ms", "rate_bins_hz", "outage_s",
           "outage_at_s", "wire_amplification", "model_amplification", "count",
           "duration_s", "polled_samples"]
rows = st.one_of(
    st.fixed_dictionaries({"index": st.integers(0, 50), "cell_id": st.text(min_size=1,
                                                                             max_size=6),
                           "payload_bytes": st.sampled_from([1024, 32768, 262144, 4000]),
                           "link": st.sampled_from(["wifi-mild", "ethernet-1g", "x"]),
                           "profile": st.sampled_from(["default", "large_data", "a/b.xml"])},
                          optional={c: cell_values for c in COLUMNS
                                    if c not in ("index", "cell_id", "payload_bytes", "link",
                                                 "profile")}),
    st.dictionaries(st.sampled_from(COLUMNS), cell_values, max_size=8),
    json_values)
infos = st.one_of(
    st.fixed_dictionaries({"format_version": st.sampled_from([1, 1, 2, "1", None])},
                          optional={"planned": st.one_of(st.lists(st.text(max_size=4)),
                                                         json_values),
                                    "scenario": json_values, "options": json_values,
                                    "versions": json_values, "links": json_values,
                                    "profiles": json_values, "finished": json_values}),
    json_values)


def _jsonl(line_rows, cut):
    text = "".join(json.dumps(r, allow_nan=True) + "\n" for r in line_rows).encode()
    return text[:-cut] if cut else text


@MANY
@given(info=st.one_of(infos.map(lambda i: json.dumps(i).encode()), st.binary(max_size=80)),
       line_rows=st.lists(rows, max_size=4), cut=st.integers(0, 5),
       extra=st.sampled_from([b"", b"\xff\xfe\n", b"{not json\n", b"[1]\n"]))
def test_run_directory_loader_reads_run_json_and_cells_jsonl_or_says_one_line(
        tmp_path, info, line_rows, cut, extra):
    root = tmp_path / "run"
    root.mkdir(exist_ok=True)
    (root / RUN_JSON).write_bytes(info)
    (root / CELLS_JSONL).write_bytes(_jsonl(line_rows, cut) + extra)
    store, _ = one_line_error_or(RunStore.open, root)
    if store is not None:
        assert isinstance(store.info, dict)
        assert all(isinstance(r["cell_id"], str) and type(r["index"]) is int
                   for r in store.rows)
        _exports_hold(store.info, store.rows, tmp_path)


@settings(SOME, max_examples=examples(400))
@given(table_rows=st.lists(st.fixed_dictionaries(
    {"index": st.one_of(st.integers(0, 9), st.none()), "cell_id": st.one_of(
        st.text(max_size=4), st.none()), "payload_bytes": st.one_of(st.integers(0, 10**6),
                                                                      st.none())},
    optional={"reception_rate_hz": st.one_of(st.floats(), st.none()),
              "rate_bins_hz": st.one_of(st.lists(st.floats(), max_size=3), st.none()),
              "status": st.sampled_from(["ok", "failed"]),
              "link": st.sampled_from(["wifi-mild", "lan"]),
              "profile": st.sampled_from(["default", "large_data"])}), max_size=4),
    damage=st.one_of(st.none(), st.integers(0, 400)))
def test_run_directory_loader_reads_cells_parquet_or_says_one_line(tmp_path, table_rows,
                                                                   damage):
    root = tmp_path / "run"
    root.mkdir(exist_ok=True)
    (root / RUN_JSON).write_text(json.dumps({"format_version": 1, "planned": []}))
    (root / CELLS_JSONL).unlink(missing_ok=True)
    path = root / CELLS_PARQUET
    try:
        pq.write_table(pa.Table.from_pylist(table_rows), path)
    except (pa.ArrowException, ValueError):
        path.write_bytes(b"PAR1 not a table")
    if damage is not None:
        data = path.read_bytes()
        path.write_bytes(data[:damage] + b"\x00" * 7 + data[damage + 7:])
    store, _ = one_line_error_or(RunStore.open, root)
    if store is not None:
        _exports_hold(store.info, store.rows, tmp_path)


def _exports_hold(info, loaded_rows, tmp_path):
    """What the loader accepts, the exports take: CSV, the JSON document, Markdown."""
    out = tmp_path / "csv"
    shutil.rmtree(out, ignore_errors=True)
    one_line_error_or(export.write_csv, loaded_rows, out)
    json.dumps(export.run_document(info, loaded_rows), default=str)
    export.markdown(info, loaded_rows)


@MANY
@given(row=rows, info=json_values)
def test_report_exports_take_any_row_the_loader_accepts(tmp_path, row, info):
    checked, _ = one_line_error_or(check_row, row, "cells.jsonl, line 1")
    if checked is not None:
        _exports_hold(info if isinstance(info, dict) else {}, [checked], tmp_path)


def test_csv_export_onto_a_file_or_unwritable_place_is_one_line(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("keep me")
    _, error = one_line_error_or(export.write_csv, [], target)
    assert error is not None and "--csv" in str(error) and target.read_text() == "keep me"
    _, error = one_line_error_or(export.write_csv, [], target / "below")
    assert error is not None


# --- keystores ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def keystore_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("ks") / "ks"
    create_keystore(root, enclaves=("/linklab/robot",))
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return root, {p: p.read_bytes() for p in files}


@settings(SOME, max_examples=examples(500))
@given(pick=st.integers(0, 10**6), how=st.sampled_from(["garbage", "truncate", "empty",
                                                        "swap", "remove"]),
       garbage=st.binary(max_size=300), at=st.integers(0, 2000))
def test_keystore_loader_checks_every_file_or_says_one_line(keystore_files, pick, how,
                                                            garbage, at):
    root, original = keystore_files
    files = list(original)
    target = files[pick % len(files)]
    other = files[(pick // 7) % len(files)]
    try:
        if how == "garbage":
            target.write_bytes(garbage)
        elif how == "truncate":
            target.write_bytes(original[target][:at % (len(original[target]) + 1)])
        elif how == "empty":
            target.write_bytes(b"")
        elif how == "swap":
            target.write_bytes(original[other])
        else:
            target.unlink()
        keystore, error = one_line_error_or(load_keystore, root)
        if keystore is not None:
            assert [e.name for e in keystore.enclaves] == ["/linklab/robot"]
    finally:
        for path, data in original.items():
            path.write_bytes(data)


def test_keystore_loader_reads_what_create_made(keystore_files):
    root, _ = keystore_files
    assert [e.name for e in load_keystore(root).enclaves] == ["/linklab/robot"]


def test_the_property_suite_is_seeded():
    # derandomize: the same inputs on every run (a failure is reproducible), no database
    assert MANY.derandomize and SOME.derandomize and MANY.database is None
