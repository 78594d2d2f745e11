"""The tuning's explanation as text and Markdown, and how to use the profiles it wrote
(the explanation itself: tune/explain.py)."""

from __future__ import annotations

from linklab.tune.explain import Condition, Explanation
from linklab.tune.inputs import TuningInput
from linklab.tune.settings import TunedSettings
from linklab.units import format_bitrate, format_duration, format_percent, format_size


def usage_lines(t: TuningInput, s: TunedSettings, fastdds_path: str,
                cyclone_path: str) -> list[str]:
    profiles_var = "FASTRTPS_DEFAULT_PROFILES_FILE" if t.ros == "humble" else \
        "FASTDDS_DEFAULT_PROFILES_FILE"
    return [
        "Fast DDS (rmw_fastrtps_cpp):",
        "  export RMW_IMPLEMENTATION=rmw_fastrtps_cpp",
        f"  export {profiles_var}={fastdds_path}",
        "  export RMW_FASTRTPS_USE_QOS_FROM_XML=1   # use the XML's publishMode "
        f"{s.publish_mode} (large data) and memory policy",
        f"  (without it: export RMW_FASTRTPS_PUBLICATION_MODE={s.publish_mode})",
        "Cyclone DDS (rmw_cyclonedds_cpp):",
        "  export RMW_IMPLEMENTATION=rmw_cyclonedds_cpp",
        f"  export CYCLONEDDS_URI=file://{cyclone_path}",
        "Both: QoS set in code wins over XML. Publish and subscribe with RELIABLE, KEEP_LAST "
        f"depth {s.history_depth}",
        "  (or rclcpp::SystemDefaultsQoS() so the Fast DDS XML applies).",
        f"Kernel: sysctl -w net.core.rmem_max={s.socket_buffer_bytes} "
        f"net.core.wmem_max={s.socket_buffer_bytes}   # else buffers are clamped",
    ]


def topic_line(t: TuningInput, s: TunedSettings) -> str:
    return (f"Topic: {format_size(t.payload_bytes)} at {t.rate_hz:g} Hz "
            f"(R_pub = {format_bitrate(s.r_pub_bytes_per_s * 8)}, Eq. 1) over "
            f"{format_bitrate(t.link_bits_per_s)}, omega = {t.utilization:g} "
            f"(T*omega = {format_bitrate(s.budget_bytes_per_s * 8)}), MTU {t.mtu}, "
            f"overlay {t.overlay}, {t.subscribers} subscriber(s)")


SETTINGS_TITLE = "Settings and the failure cause each addresses:"
BEFORE_TITLE = "Before (Fast DDS defaults: 65500 B messages, heartbeat 3 s) -> after:"
CHANGE_COLUMNS = ("PER", "quantity", "before", "after", "")


def change_rows(c: Condition) -> list[tuple[str, str, str, str]]:
    """What one loss rate does before and after tuning: (quantity, before, after, note)."""
    b, a = c.before, c.after
    rows = [("R_DDS (Eq. 4)", format_bitrate(b.r_dds_bytes_per_s * 8),
             format_bitrate(a.r_dds_bytes_per_s * 8),
             f"x{b.amplification:.3g} -> x{a.amplification:.3g} of R_pub"),
            ("burst B_DDS (Eq. 5)", format_size(b.burst_bytes), format_size(a.burst_bytes),
             f"{b.burst_bytes * 8 / 1e6:.4g} Mbit -> {a.burst_bytes * 8 / 1e6:.4g} Mbit"),
            ("repair of a loss", format_duration(b.repair_delay_s),
             format_duration(a.repair_delay_s), ""),
            ("verdict", b.verdict, a.verdict, "")]
    if c.wire:
        fd = "fails" if b.verdict == "fails" else \
            f"{c.wire['fastdds default'].amplification:.3g}"
        ft = c.wire["fastdds optimized"].amplification
        cd, ct = c.wire["cyclonedds default"], c.wire["cyclonedds optimized"]
        rows.append(("wire / payload", fd, f"{ft:.3g}",
                     f"Fast DDS; Cyclone {cd.amplification:.3g} -> {ct.amplification:.3g}; "
                     "model/wire_traffic.py: repairs, repeats, control, headers"))
    return rows


def outage_lines(s: TunedSettings, e: Explanation) -> list[str]:
    plan = s.history
    return [f"after a link outage (Eq. 6): up to {format_size(e.outage_burst_before_bytes)}"
            f" (history 400) -> {format_size(e.outage_burst_after_bytes)} "
            f"(history {s.history_depth}) leave back-to-back"
            + (f", repaid in {format_duration(plan.drain_s)}"
               if plan.drain_s != float("inf") else ""),
            f"the outage ({format_duration(plan.outage_s)}, --outage-tolerance): "
            + ("every sample written during it is kept" if plan.covers_outage else
               f"only the last {s.history_depth} of the {plan.outage_depth} samples "
               "written during it are kept")
            + f" -- {plan.reason}"]


def render_text(t: TuningInput, s: TunedSettings, e: Explanation) -> list[str]:
    lines = [topic_line(t, s), "", SETTINGS_TITLE]
    for r in e.settings:
        lines.append(f"  {r.setting} = {r.value}  [{r.cause}]")
        lines.append(f"      {r.reason}")
    lines += ["", BEFORE_TITLE]
    for c in e.conditions:
        lines.append(f"  PER {format_percent(c.per)}:")
        for quantity, before, after, note in change_rows(c):
            lines.append(f"    {quantity:<21}{before:>14} -> {after}"
                         + (f"  ({note})" if note else ""))
    lines += [f"  {line}" for line in outage_lines(s, e)]
    lines += ["", f"Verdict: {e.summary}"]
    lines += [f"Note: {n}" for n in e.notes]
    return lines


def render_markdown(t: TuningInput, s: TunedSettings, e: Explanation) -> list[str]:
    """:func:`render_text` as Markdown: the settings and the before/after as tables."""
    from linklab.output import markdown_table  # rich, only when Markdown is asked for

    lines = [topic_line(t, s), "", f"**{SETTINGS_TITLE.rstrip(':')}**", ""]
    lines += markdown_table(("setting", "value", "cause", "why"),
                            [(r.setting, str(r.value), r.cause, r.reason) for r in e.settings])
    lines += ["", f"**{BEFORE_TITLE.rstrip(':')}**", ""]
    lines += markdown_table(CHANGE_COLUMNS[:-1] + ("note",),
                            [(f"{format_percent(c.per)}", *row)
                             for c in e.conditions for row in change_rows(c)], right=(2, 3))
    lines += [""] + [f"- {line}" for line in outage_lines(s, e)]
    lines += ["", f"Verdict: {e.summary}"]
    lines += [f"\nNote: {n}" for n in e.notes]
    return lines
