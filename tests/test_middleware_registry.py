"""The middleware registry (linklab.middleware): every middleware a scenario accepts has
one entry, every entry's probe is a probe linklab builds or installs, and what an entry
refuses it says in one line."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from linklab.bench.fields import MIDDLEWARES as SCENARIO_MIDDLEWARES
from linklab.brokers.bench_adapter import adapter_for
from linklab.errors import UsageError
from linklab.middleware import (
    BUILT_PROBES,
    DDS_FAMILIES,
    FAMILIES,
    MIDDLEWARES,
    family,
    family_of,
    middleware,
)
from linklab.probes.qos import PROBES, unsupported_policies

REPO = Path(__file__).resolve().parents[1]
PROBE_SOURCES = REPO / "probes"


def _scenario_middlewares() -> set[str]:
    names: set[str] = set()
    for path in sorted((REPO / "scenarios").rglob("*.yaml")):
        text = yaml.safe_load(path.read_text()) or {}
        for part in ("fixed", "axes", "quick"):
            value = (text.get(part) or {}).get("middleware") if isinstance(text, dict) else None
            names.update([value] if isinstance(value, str) else value or [])
    return names


def test_every_middleware_a_scenario_accepts_has_one_entry():
    # the names a scenario took before the registry (bench/fields.py), in their order,
    # then the ones added since
    assert SCENARIO_MIDDLEWARES == (
        "fastdds", "cyclonedds", "mqtt", "zenoh-peer", "zenoh-router", "fastdds-secure",
        "mqtt-tls", "zenoh-peer-tls", "zenoh-router-tls", "cyclonedds-secure", "mqtt-bridge",
        "zenoh-bridge", "zenoh-router-bridge")
    assert _scenario_middlewares() <= set(MIDDLEWARES)


def test_an_unknown_middleware_is_a_one_line_usage_error():
    with pytest.raises(UsageError, match="unknown middleware 'dds'; expected one of fastdds"):
        middleware("dds")
    with pytest.raises(UsageError, match="unknown probe"):
        family("fastdds-secure")


def test_every_entrys_probe_is_built_or_installed():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    for entry in MIDDLEWARES.values():
        probe = entry.probe
        assert FAMILIES[probe.name] is probe
        if probe.built:  # a CMake project under probes/, built into build/probes/<name>/
            assert (PROBE_SOURCES / probe.name / "CMakeLists.txt").is_file(), probe.name
            cmake = (PROBE_SOURCES / probe.name / "CMakeLists.txt").read_text()
            assert f"add_executable({probe.binary} " in cmake
            main = next((PROBE_SOURCES / probe.name).glob("probe_*.cpp")).read_text()
            assert re.search(rf'linklab::Middleware mw\{{"{probe.name}"', main), probe.name
        else:  # the Python probe, an entry point of the package
            assert probe.binary in scripts, probe.binary
    assert BUILT_PROBES == ("fastdds", "cyclonedds", "mqtt")
    assert PROBES == ("fastdds", "cyclonedds", "mqtt", "zenoh")


def test_refusals_are_one_line():
    for entry in MIDDLEWARES.values():
        texts = [entry.refusal("not_named", profile="x"), entry.refusal("not_own", profile="x.xml")]
        if entry.only_default:
            texts.append(entry.refusal("only_default"))
        texts += [*entry.probe.refused.values(), *entry.probe.unsupported.values(),
                  *entry.probe.unsupported_sub.values()]
        for text in texts:
            assert text and "\n" not in text and "{" not in text, (entry.name, text)


def test_a_secured_variant_is_its_plain_middleware_with_security():
    for entry in MIDDLEWARES.values():
        if not entry.secured:
            assert entry.security is None and entry.only_default is None
            continue
        plain = middleware(entry.plain)
        assert entry.base == plain.name and not plain.secured
        assert (entry.probe, entry.broker, entry.listening_subscribers) == (
            plain.probe, plain.broker, plain.listening_subscribers)
        assert entry.security in ("dds-security", "tls") and entry.only_default


def test_the_families_carry_what_the_bench_decides_by():
    assert DDS_FAMILIES == ("fastdds", "cyclonedds")
    assert family_of("zenoh-router-tls").name == "zenoh" and family_of("zenoh") is FAMILIES["zenoh"]
    assert [n for n, f in FAMILIES.items() if f.discovery_gate] == ["fastdds", "cyclonedds", "mqtt"]
    assert {n: f.max_message_bytes for n, f in FAMILIES.items() if f.dds} == {
        "fastdds": 65500, "cyclonedds": 14720}
    assert [n for n, m in MIDDLEWARES.items() if m.brokered] == [
        "mqtt", "zenoh-router", "mqtt-tls", "zenoh-router-tls", "mqtt-bridge",
        "zenoh-router-bridge"]
    # seed 004's bridged MQTT: Cyclone DDS endpoints, mosquitto, a bridge per host
    bridged = MIDDLEWARES["mqtt-bridge"]
    assert bridged.probe is FAMILIES["cyclonedds"] and bridged.bridge == "mqtt"
    assert {n: m.bridge for n, m in MIDDLEWARES.items() if m.bridged} == {
        "mqtt-bridge": "mqtt", "zenoh-bridge": "zenoh", "zenoh-router-bridge": "zenoh"}
    # the broker adapter runs every middleware that is not plain DDS
    assert [n for n in MIDDLEWARES if adapter_for(n) is not None] == [
        "mqtt", "zenoh-peer", "zenoh-router", "fastdds-secure", "mqtt-tls", "zenoh-peer-tls",
        "zenoh-router-tls", "cyclonedds-secure", "mqtt-bridge", "zenoh-bridge",
        "zenoh-router-bridge"]
    assert list(unsupported_policies("zenoh", "sub")) == ["reliability", "history", "depth"]
