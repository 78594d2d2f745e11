"""``linklab sft-bench``: help and input errors (the benchmark itself is in docs/RESULTS.md)."""

from __future__ import annotations

from typer.testing import CliRunner

from linklab.cli import main
from linklab.cli.app import app


def test_sft_bench_has_help() -> None:
    result = CliRunner().invoke(app, ["sft-bench", "--help"])
    assert result.exit_code == 0
    assert "--quick" in result.output and "--middleware" in result.output


def test_unknown_middleware_is_a_usage_error(capsys) -> None:
    assert main(["sft-bench", "--middleware", "fastdds"]) == 2
    err = capsys.readouterr().err
    assert "--middleware" in err and "cyclonedds, zenoh or both" in err


def test_quick_and_overhead_together_is_a_usage_error(capsys) -> None:
    assert main(["sft-bench", "--quick", "--overhead"]) == 2
    assert "--overhead" in capsys.readouterr().err


def test_overhead_settings_are_the_short_grid() -> None:
    from linklab.sft.bench import Settings

    s = Settings.overhead("zenoh")
    assert (s.fields, s.sizes, s.receivers, s.frps, s.repeats) == ((7,), (512,), (1, 3),
                                                                   (0.5, 1.0), 3)
    assert s.fastdds and not s.cases
    assert Settings().cases and not Settings().fastdds   # the full study as it was
