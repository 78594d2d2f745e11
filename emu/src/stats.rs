//! The stats file: the relay's counters as one JSON object (per direction, per stage),
//! rewritten every interval and once at exit; written by a thread of its own so the
//! forwarding loop never waits for the disk.

use std::fmt::Write as _;

use crate::lead::Lead;
use crate::medium::Medium;
use crate::mono_ns;
use crate::pipeline::Pipeline;

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn pipeline_json(p: &Pipeline, now: u64) -> String {
    let mut s = format!(
        "{{\"rx_frames\":{},\"rx_bytes\":{},\"tx_frames\":{},\"tx_bytes\":{},\"tx_errors\":{},\"stages\":[",
        p.rx_frames, p.rx_bytes, p.tx_frames, p.tx_bytes, p.tx_errors
    );
    for (i, st) in p.stages.iter().enumerate() {
        let c = &st.counters;
        if i > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            "{{\"name\":{},\"kind\":{},\"packets_in\":{},\"bytes_in\":{},\"packets_out\":{},\"bytes_out\":{},\
             \"dropped_packets\":{},\"dropped_bytes\":{},\"queue_packets\":{},\"queue_bytes\":{},\
             \"queue_max_packets\":{},\"queue_max_bytes\":{}{}}}",
            json_str(&st.name),
            json_str(&st.kind),
            c.packets_in,
            c.bytes_in,
            c.packets_out,
            c.bytes_out,
            c.dropped_packets,
            c.dropped_bytes,
            c.queue_packets,
            c.queue_bytes,
            c.queue_max_packets,
            c.queue_max_bytes,
            st.state_json(now)
        );
    }
    s.push_str("]}");
    s
}

/// One link's devices and pipelines, as the stats file shows them.
pub struct LinkStats<'a> {
    pub tap_a: &'a str,
    pub tap_b: &'a str,
    pub ab: &'a Pipeline,
    pub ba: &'a Pipeline,
}

/// The stats file, written off the forwarding loop. A write and rename on a busy disk
/// can block for tens of milliseconds, and frames waiting in the loop meanwhile leave
/// late (measured with a 30 ms delay stage and fsync load beside it: 21-26 % of frames
/// more than 2 ms late, up to 28 ms, with a 50 ms stats interval; 1-5 % and at most
/// 8.4 ms without stats; docs/RESULTS.md, the emulator's accuracy). The loop formats a
/// snapshot (microseconds) and hands it to a writer thread; a snapshot the writer is
/// still busy with is skipped, the next one is newer.
pub struct StatsWriter {
    pub path: Option<String>,
    tmp: String,
    tx: Option<std::sync::mpsc::SyncSender<String>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

fn write_stats_file(tmp: &str, path: &str, text: String) {
    // write-then-rename so a reader never sees half a file
    if std::fs::write(tmp, text).is_ok() {
        let _ = std::fs::rename(tmp, path);
    }
}

/// The writer thread inherits the relay's SCHED_FIFO priority and CPU (main.rs
/// set_scheduling runs before the relay spawns it); at the same priority a file write
/// would keep the forwarding loop waiting on its CPU until the write blocks or ends.
/// Under normal scheduling the loop preempts it at once.
fn leave_real_time() {
    let param = libc::sched_param { sched_priority: 0 };
    // 0: the calling thread (Linux schedules threads, not processes)
    unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
}

impl StatsWriter {
    pub fn new(path: Option<String>) -> Self {
        let tmp = path.as_ref().map(|p| format!("{p}.tmp")).unwrap_or_default();
        let (mut tx, mut writer) = (None, None);
        if let Some(p) = path.clone() {
            let (sender, receiver) = std::sync::mpsc::sync_channel::<String>(1);
            let t = tmp.clone();
            writer = Some(std::thread::spawn(move || {
                leave_real_time();
                for text in receiver {
                    write_stats_file(&t, &p, text);
                }
            }));
            tx = Some(sender);
        }
        StatsWriter { path, tmp, tx, writer }
    }

    /// The stats object: link 1's taps and pipelines (`tap_a`, `tap_b`, `ab`, `ba`), a
    /// star's links 2..N as `"links": [{...}]` of the same four, and with a medium its
    /// counters as `"medium": {...}` (medium/mod.rs).
    fn text(state: &str, started: u64, epoch: u64, links: &[LinkStats], lead: &Lead, medium: Option<&Medium>) -> String {
        let now = mono_ns();
        let medium = medium.map(|m| format!(",\"medium\":{}", m.json(now))).unwrap_or_default();
        let fields = |l: &LinkStats| {
            format!(
                "\"tap_a\":{},\"tap_b\":{},\"ab\":{},\"ba\":{}",
                json_str(l.tap_a),
                json_str(l.tap_b),
                pipeline_json(l.ab, now),
                pipeline_json(l.ba, now)
            )
        };
        let more = if links.len() > 1 {
            let each: Vec<String> = links[1..].iter().map(|l| format!("{{{}}}", fields(l))).collect();
            format!(",\"links\":[{}]", each.join(","))
        } else {
            String::new()
        };
        format!(
            "{{\"version\":1,\"pid\":{},\"state\":\"{state}\",\"updated_ns\":{now},\"started_ns\":{started},\
             \"epoch_ns\":{epoch},\"wake\":{},{}{more}{medium}}}\n",
            std::process::id(),
            lead.describe(),
            fields(&links[0]),
        )
    }

    /// Now, in this thread: before the first frame and at exit.
    pub fn write_now(&self, state: &str, started: u64, epoch: u64, links: &[LinkStats], lead: &Lead, medium: Option<&Medium>) {
        if let Some(path) = &self.path {
            write_stats_file(&self.tmp, path, Self::text(state, started, epoch, links, lead, medium));
        }
    }

    /// From the forwarding loop: never waits for the disk.
    pub fn hand_over(&self, state: &str, started: u64, epoch: u64, links: &[LinkStats], lead: &Lead, medium: Option<&Medium>) {
        if let Some(tx) = &self.tx {
            let _ = tx.try_send(Self::text(state, started, epoch, links, lead, medium));
        }
    }

    /// Let the writer finish what it holds, so the final file is written last.
    pub fn stop_writer(&mut self) {
        self.tx = None;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}
