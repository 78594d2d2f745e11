"""What linklab calls a run's things: the run name, its hosts' network namespaces
(``linklab-<run>-<host>``) and the short tag every interface of the run carries. Pure;
``clean`` recognises what a run made by these names."""

from __future__ import annotations

import hashlib
import re

from linklab.errors import UsageError

NETNS_PREFIX = "linklab-"
RUN_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
# (a cluster's pods are hosts too: robotpod1, edgepod2, robot3pod1)
HOST_NAME = re.compile(r"^(robot\d*|edge|ap)(pod\d+)?$")


def check_name(name: str) -> str:
    if not RUN_NAME.match(name):
        raise UsageError(f"{name!r} is not a run name; use 1-32 of a-z 0-9 _ - "
                         "(starting with a letter or digit)", argument="--name")
    return name


def run_tag(name: str) -> str:
    """Short prefix (6 characters) carried by every interface of run ``name``.

    Interface names are limited to 15 characters, so the run name itself cannot be
    part of them; the tag is derived from it, and ``clean`` recognises it.
    """
    return "l" + hashlib.sha1(name.encode()).hexdigest()[:5]


def netns_name(run: str, host: str) -> str:
    return f"{NETNS_PREFIX}{run}-{host}"


def parse_netns_name(netns: str) -> tuple[str, str] | None:
    """``linklab-<run>-<host>`` -> (run, host), or None if not a linklab host name."""
    if not netns.startswith(NETNS_PREFIX):
        return None
    run, sep, host = netns[len(NETNS_PREFIX):].rpartition("-")
    if not sep or not run or not HOST_NAME.match(host):
        return None
    return run, host
