"""Native probes: one small binary per middleware, one command line, one output.

The binaries live in ``build/probes/<middleware>/linklab-probe-<middleware>`` (built by
``scripts/setup.sh`` from ``probes/``). This package finds them, builds their command
lines, runs them, and reads what they leave behind. The contract every probe keeps:

Command line::

    linklab-probe-<mw> pub|sub --topic T --type TYPE [--size BYTES] --rate HZ
        [--count N] [--duration S] [--warmup S] [--qos reliable|best_effort]
        [--history keep_all|keep_last:N] [--durability volatile|transient_local]
        [--system-default] [--profile FILE] [--profile-name NAME]
        [--peer ADDR ...] [--domain ID] [--interface IFNAME|ADDR] --records FILE.bin
        [--match-timeout S] [--idle-timeout S] [--linger S] [--subscribers N]

* ``TYPE``: of any ``--size`` (the payload; required for a publisher) ``Bytes`` and
  ROS 2's ``Image``, ``PointCloud2``, ``String``, ``UInt8MultiArray``; or
  performance_test's fixed layouts ``Array1k Array4k Array16k Array32k Array60k Array64k
  Array256k Array1m Array2m Array4m PointCloud512k PointCloud1m PointCloud2m
  PointCloud4m`` (``--size`` optional, must match). DDS names follow ROS 2: topic
  ``rt/T``, type ``sensor_msgs::msg::dds_::Image_``, ``sensor_msgs::msg::dds_::
  PointCloud2_``, ``std_msgs::msg::dds_::String_``, ``std_msgs::msg::dds_::
  UInt8MultiArray_``, ``performance_test_msgs::msg::dds_::Array64k_``,
  ``linklab_msgs::msg::dds_::Bytes_``.
* ROS 2's types keep ROS 2's fields (``linklab.probes.ros_types``, probes/idl); seq and
  send time go where ROS 2 has room: ``Image``/``PointCloud2`` ``header.stamp`` = send
  time (sec = t // 1e9, nanosec = t % 1e9), ``header.frame_id`` = seq as 16 lowercase
  hex digits; ``String`` its first 32 characters (seq, send time as u64, 16 hex digits
  each; N >= 32); ``UInt8MultiArray`` octets 0-15 (seq u64, send time i64,
  little-endian; ``layout.data_offset`` 16, one dimension ``linklab`` of N - 16; N >= 16).
  ``Image`` is ``rgb8`` with height h = the largest divisor of N with 3h² <= N, step
  N / h, width step // 3; ``PointCloud2`` has 16-byte points x, y, z, intensity
  (FLOAT32), height 1, width N / 16 (N a multiple of 16). A size a type cannot carry is
  a usage error. Payload buffers are allocated and filled once; only seq and send time
  change per sample. The payload (a record's bytes) is the data field's length, N; the
  type's own XCDR1 bytes besides it (after the 4-byte encapsulation): Image 60,
  PointCloud2 149, String 5, UInt8MultiArray 32, Bytes 20. MQTT and Zenoh carry a ROS 2
  type as its CDR-serialized sample (encapsulation + XCDR1, byte for byte what Fast DDS
  writes), ``Bytes`` and the fixed types as seq u64 + t_send_ns i64 + payload.
* QoS: the profile file (Fast DDS XML profiles, ``is_default_profile`` or
  ``--profile-name``; Cyclone: a CYCLONEDDS_URI configuration file), then the flags,
  which win. Without either, ROS 2's default profile: RELIABLE, KEEP_LAST 10, VOLATILE.
  ``--system-default`` is rclcpp's system_default profile: a policy without a flag is
  left to the middleware (Fast DDS reader BEST_EFFORT KEEP_LAST 1 VOLATILE, writer
  RELIABLE KEEP_LAST 1 TRANSIENT_LOCAL; Cyclone reader BEST_EFFORT, writer RELIABLE,
  both KEEP_LAST 1 VOLATILE; MQTT QoS 0; Zenoh's publisher default RELIABLE with
  congestion control DROP). ``--durability transient_local`` on the DDS probes keeps
  the writer's history for late-joining transient_local readers (Cyclone: its
  durability_service history is set to the writer's history, as rmw_cyclonedds does).
  What a middleware cannot take is a usage error before anything runs: MQTT and Zenoh
  refuse ``--history`` (no history cache) and ``--durability transient_local`` (MQTT
  keeps at most one retained message per topic; zenoh pub/sub keeps nothing for late
  joiners); they take ``--durability volatile``, which is what they do.
  ``linklab.probes.qos`` turns rclcpp's named profiles into these flags.
* ``--peer`` gives unicast discovery peers and turns multicast discovery off;
  ``--interface`` binds the transports to one interface.
* The publisher waits until ``--subscribers`` readers matched (``--match-timeout``,
  default 60 s), settles 1 s (with ``--start-file``: waits for that file instead),
  publishes ``--warmup`` seconds of warm-up samples (seq has bit 63 set; never
  counted), then ``--count`` samples seq 0..N-1 at ``--rate`` on
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
configuration handed to the domain). ``applied.ros_qos`` has the same keys for every
probe: ``reliability`` ("reliable" | "best_effort"), ``history`` ("keep_last" |
"keep_all" | null), ``depth`` (int, keep_last only, else null), ``durability``
("volatile" | "transient_local" | "transient" | "persistent" | null) and
``unsupported`` (policy -> one sentence why this middleware has no such policy; empty
for DDS). A listed policy is null; apart from depth with keep_all, only a listed one is.
Read back: Fast DDS get_qos(), Cyclone dds_get_qos; MQTT the QoS level on every PUBLISH
/ granted in the SUBACK (0 best_effort, 1-2 reliable) and volatile (nothing is
retained); Zenoh the declared publisher's reliability (a zenoh subscriber has none:
null) and volatile. Every subscriber reports ``malformed_samples``: samples that
carried no linklab seq/send time (not recorded; an error when not 0). The Fast DDS
subscriber also reports ``polled_samples``: samples its
50 ms poll took that the data-available listener had not (their receive time is the
poll's, up to 50 ms late; with a ``notes`` entry when there are any). The DDS
publishers report ``readers_unmatched_while_publishing`` and
``readers_matched_while_publishing``: matches lost and made between the go and the last
sample (DDS total_count against current_count; a lost discovery lease in an outage
shows here, and the runner names it in the cell's failure reason). Logs go to stderr.
Exit status: 0 run completed (or stopped by a signal), 1 the run failed (``errors`` says
why), 2 bad arguments (one line ``linklab-probe-<mw>: error: ...`` on stderr).
"""

from linklab.probes.binaries import MIDDLEWARES, binary_path
from linklab.probes.command import ProbeCommand
from linklab.probes.process import ProbeProcess, ProbeResult
from linklab.probes.qos import ROS2_PROFILES, QosRequest, probe_qos_args, unsupported_policies
from linklab.probes.records import RECORD_DTYPE, RecordFile, read_records
from linklab.probes.summary import ProbeSummary, parse_summary
from linklab.probes.types import FIXED_TYPE_BYTES, TYPES, dds_type_name

__all__ = [
    "FIXED_TYPE_BYTES",
    "MIDDLEWARES",
    "RECORD_DTYPE",
    "ROS2_PROFILES",
    "TYPES",
    "ProbeCommand",
    "ProbeProcess",
    "ProbeResult",
    "ProbeSummary",
    "QosRequest",
    "RecordFile",
    "binary_path",
    "dds_type_name",
    "parse_summary",
    "probe_qos_args",
    "read_records",
    "unsupported_policies",
]
