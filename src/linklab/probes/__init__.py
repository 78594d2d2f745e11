"""Native probes: one small binary per middleware, one command line, one output.

The binaries live in ``build/probes/<middleware>/linklab-probe-<middleware>`` (built by
``scripts/setup.sh`` from ``probes/``). This package finds them, builds their command
lines, runs them, and reads what they leave behind. The contract every probe keeps:

Command line::

    linklab-probe-<mw> pub|sub --topic T --type TYPE [--size BYTES] --rate HZ
        [--count N] [--duration S] [--warmup S] [--qos reliable|best_effort]
        [--history keep_all|keep_last:N] [--profile FILE] [--profile-name NAME]
        [--peer ADDR ...] [--domain ID] [--interface IFNAME|ADDR] --records FILE.bin
        [--match-timeout S] [--idle-timeout S] [--linger S] [--subscribers N]

* ``TYPE``: ``Bytes`` (any ``--size``) or performance_test's fixed layouts
  ``Array1k Array4k Array16k Array32k Array60k Array64k Array256k Array1m Array2m Array4m
  PointCloud512k PointCloud1m PointCloud2m PointCloud4m`` (``--size`` optional, must
  match). DDS names follow ROS 2: topic ``rt/T``, type
  ``performance_test_msgs::msg::dds_::Array64k_`` / ``linklab_msgs::msg::dds_::Bytes_``.
* QoS: the profile file (Fast DDS XML profiles, ``is_default_profile`` or
  ``--profile-name``; Cyclone: a CYCLONEDDS_URI configuration file), then the flags,
  which win. Without either, ROS 2's defaults: RELIABLE, KEEP_LAST 10, VOLATILE.
* ``--peer`` gives unicast discovery peers and turns multicast discovery off;
  ``--interface`` binds the transports to one interface.
* The publisher waits until ``--subscribers`` readers matched (``--match-timeout``,
  default 60 s), settles 1 s, publishes ``--warmup`` seconds of warm-up samples (seq
  has bit 63 set; never counted), then ``--count`` samples seq 0..N-1 at ``--rate`` on
  absolute CLOCK_MONOTONIC deadlines (a late tick skips missed deadlines, like an rcl
  timer, and is counted in ``skipped_deadlines``), stops early at ``--duration``, sends
  an end-of-stream sample (seq 2**64-1) and waits up to ``--linger`` (5 s) for
  acknowledgements.
* The subscriber ends on end-of-stream, after ``--count`` distinct samples, after
  ``--duration`` from the first match, or when nothing arrived for ``--idle-timeout``
  (30 s; 0 = never). SIGINT/SIGTERM end either role cleanly (records flushed, summary
  printed, exit 0).

Record file (little-endian): a 16-byte header, magic ``b"LLREC1\\0\\0"``, u32
record_size (28), u32 role (0 subscriber, 1 publisher); then records ``<QqqI``: seq,
t_send_ns, t_recv_ns (0 in publisher files), bytes (payload bytes of the sample). Times
are CLOCK_MONOTONIC ns; all hosts are namespaces of one kernel, so
``t_recv_ns - t_send_ns`` is the one-way latency. t_send is taken just before the
write; t_recv in the middleware's data-available listener, on its receive thread, when
the sample is taken (as ddsperf does). The subscriber writes one record per sample
taken, the publisher one per successful write.

Output: exactly one JSON line on stdout at exit::

    {"probe": "fastdds", "role": "pub", "version": "2.9.1", "topic": "rt/T",
     "type": "...", "size": N, "applied": {...}, "samples": N, "errors": [...],
     "end_reason": "count|end_of_stream|duration|idle|signal|no_match|error", ...}

``applied`` is read back from the created entities (Fast DDS: participant transports,
max message size, discovery, writer/reader reliability, history, resource limits,
heartbeat period, publish mode; Cyclone: dds_get_qos of writer/reader and the
configuration handed to the domain). Logs go to stderr. Exit status: 0 run completed (or
stopped by a signal), 1 the run failed (``errors`` says why), 2 bad arguments (one line
``linklab-probe-<mw>: error: ...`` on stderr).
"""

from linklab.probes.binaries import MIDDLEWARES, binary_path
from linklab.probes.command import ProbeCommand
from linklab.probes.process import ProbeProcess, ProbeResult
from linklab.probes.records import RECORD_DTYPE, RecordFile, read_records
from linklab.probes.summary import ProbeSummary, parse_summary
from linklab.probes.types import FIXED_TYPE_BYTES, TYPES, dds_type_name

__all__ = [
    "FIXED_TYPE_BYTES",
    "MIDDLEWARES",
    "RECORD_DTYPE",
    "TYPES",
    "ProbeCommand",
    "ProbeProcess",
    "ProbeResult",
    "ProbeSummary",
    "RecordFile",
    "binary_path",
    "dds_type_name",
    "parse_summary",
    "read_records",
]
