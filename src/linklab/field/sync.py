"""The time-sync state of a host, where chrony, ptp4l or systemd-timesyncd tell it.

Reported with every field run (the clock of one-way latencies, clock.py). Read only:
``chronyc -c tracking`` (chrony's CSV), ``pmc -u -b 0 'GET TIME_STATUS_NP'`` when ptp4l
runs (linuxptp), ``timedatectl show`` (systemd).
"""

from __future__ import annotations

from linklab.field.shell import Host

SCRIPT = r"""
have() { command -v "$1" >/dev/null 2>&1; }
if have chronyc; then echo '== chrony'; chronyc -c tracking 2>&1 | head -1; fi
if have pgrep && pgrep -x ptp4l >/dev/null 2>&1; then
  echo '== ptp4l'
  if have pmc; then
    pmc -u -b 0 'GET TIME_STATUS_NP' 2>&1 | grep -E 'master_offset|gmPresent'
  fi
fi
if have timedatectl; then
  echo '== timedatectl'; timedatectl show -p NTPSynchronized 2>&1
fi
true
"""


def parse_chrony(line: str) -> str:
    """One line of ``chronyc -c tracking`` -> a sentence."""
    fields = line.strip().split(",")
    if len(fields) < 14:
        return f"chrony: {line.strip() or 'no answer from chronyd'}"
    name, stratum, offset_s = fields[1], fields[2], float(fields[4])
    root_delay, root_dispersion, leap = float(fields[10]), float(fields[11]), fields[13]
    if leap.strip().lower().startswith("not"):
        return "chrony: not synchronised"
    bound = abs(offset_s) + root_dispersion + root_delay / 2
    return (f"chrony: synchronised to {name} (stratum {stratum}), system time "
            f"{offset_s * 1e6:+.0f} us from it, within {bound * 1e3:.3g} ms of its "
            f"reference (|offset| + root dispersion + root delay/2)")


def parse(text: str) -> list[str]:
    """The script's output -> one sentence per time service found."""
    out: list[str] = []
    section = None
    lines: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("== "):
            section = line[3:].strip()
            lines[section] = []
        elif section:
            lines[section].append(line.strip())
    if "chrony" in lines:
        out.append(parse_chrony(lines["chrony"][0] if lines["chrony"] else ""))
    if "ptp4l" in lines:
        values = dict(item.split(None, 1) for item in lines["ptp4l"] if " " in item)
        if values:
            out.append(f"ptp4l: master offset {values.get('master_offset', '?')} ns, "
                       f"grandmaster present: {values.get('gmPresent', '?')}")
        else:
            out.append("ptp4l: running (pmc not installed: no offset)")
    if "timedatectl" in lines:
        synced = " ".join(lines["timedatectl"]).replace("NTPSynchronized=", "")
        if synced in ("yes", "no"):
            out.append(f"systemd: NTP synchronised: {synced}")
    return out or ["no chrony, ptp4l or timedatectl: time sync unknown"]


def state(host: Host) -> list[str]:
    result = host.run(["sh", "-c", SCRIPT], check=False, timeout=20)
    return parse(result.stdout.decode(errors="replace"))
