import subprocess
import sys


def run(*args):
    return subprocess.run([sys.executable, "-m", "linklab.cli", *args],
                          capture_output=True, text=True, timeout=60)


def test_help_lists_commands_and_exits_zero():
    result = run("--help")
    assert result.returncode == 0
    assert "Usage" in result.stdout


def test_unknown_command_is_one_line_error_exit_2():
    result = run("no-such-command")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("linklab: error:")
    assert "Traceback" not in result.stderr
