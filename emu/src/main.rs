//! linklab-emu: a userspace link emulator. It creates one TAP device per side of a
//! link, moves each into its host's network namespace, and forwards frames between
//! them through a pipeline of impairment stages per direction (delay and jitter,
//! loss models, rate, outages, Mahimahi trace replay, duplication, corruption).
//!
//! Usage: linklab-emu --config FILE [--cpu N] [--check]
//! The configuration format is described in config.rs. Counters are rewritten to
//! the `stats` file (JSON) every interval and once more at exit. SIGTERM/SIGINT
//! stop the relay cleanly; when it stops, its TAP devices disappear and the link
//! is down.

mod config;
mod lead;
mod os;
mod packet;
mod pipeline;
mod rng;
mod stages;
mod tap;
mod tapio;
mod uring;

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::fd::RawFd;

use config::Spin;
use lead::Lead;
use os::{arm_timer, consume, die, epoll_on, mono_ns, set_scheduling, signal_fd, timer_fd, wait_events};
use packet::{Packet, Pool};
use tapio::BATCH;
use pipeline::Pipeline;
use tapio::TapIo;
use stages::Stage;
use tap::Tap;

struct Args {
    config: String,
    cpu: Option<usize>,
    check_only: bool,
}

fn parse_args() -> Args {
    let mut args = std::env::args().skip(1);
    let mut config = None;
    let mut cpu = None;
    let mut check_only = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--config" => config = args.next(),
            "--cpu" => cpu = args.next().and_then(|v| v.parse().ok()).or_else(|| die("--cpu needs a CPU number")),
            "--check" => check_only = true,
            "--version" => {
                println!("linklab-emu {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            "-h" | "--help" => {
                println!("usage: linklab-emu --config FILE [--cpu N] [--check]");
                std::process::exit(0);
            }
            other => die(&format!("unknown argument {other} (usage: linklab-emu --config FILE [--cpu N] [--check])")),
        }
    }
    let config = config.unwrap_or_else(|| die("--config FILE is required"));
    Args { config, cpu, check_only }
}

fn build_pipeline(specs: &[config::StageSpec], seed: u64, dir: u64, epoch: u64) -> Pipeline {
    let stages: Vec<Stage> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| Stage::build(spec, seed, dir * 1000 + i as u64, epoch).unwrap_or_else(|e| die(&e)))
        .collect();
    Pipeline::new(stages)
}

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

/// The stats file, written off the forwarding loop. A write and rename on a busy disk
/// can block for tens of milliseconds, and frames waiting in the loop meanwhile leave
/// late (measured with a 30 ms delay stage and fsync load beside it: 21-26 % of frames
/// more than 2 ms late, up to 28 ms, with a 50 ms stats interval; 1-5 % and at most
/// 8.4 ms without stats; docs/RESULTS.md, the emulator's accuracy). The loop formats a
/// snapshot (microseconds) and hands it to a writer thread; a snapshot the writer is
/// still busy with is skipped, the next one is newer.
struct StatsWriter {
    path: Option<String>,
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

impl StatsWriter {
    fn new(path: Option<String>) -> Self {
        let tmp = path.as_ref().map(|p| format!("{p}.tmp")).unwrap_or_default();
        let (mut tx, mut writer) = (None, None);
        if let Some(p) = path.clone() {
            let (sender, receiver) = std::sync::mpsc::sync_channel::<String>(1);
            let t = tmp.clone();
            writer = Some(std::thread::spawn(move || {
                for text in receiver {
                    write_stats_file(&t, &p, text);
                }
            }));
            tx = Some(sender);
        }
        StatsWriter { path, tmp, tx, writer }
    }

    fn text(state: &str, started: u64, epoch: u64, taps: (&str, &str), lead: &Lead, ab: &Pipeline, ba: &Pipeline) -> String {
        let now = mono_ns();
        format!(
            "{{\"version\":1,\"pid\":{},\"state\":\"{state}\",\"updated_ns\":{now},\"started_ns\":{started},\
             \"epoch_ns\":{epoch},\"tap_a\":{},\"tap_b\":{},\"wake\":{},\"ab\":{},\"ba\":{}}}\n",
            std::process::id(),
            json_str(taps.0),
            json_str(taps.1),
            lead.describe(),
            pipeline_json(ab, now),
            pipeline_json(ba, now)
        )
    }

    /// Now, in this thread: before the first frame and at exit.
    fn write_now(&self, state: &str, started: u64, epoch: u64, taps: (&str, &str), lead: &Lead, ab: &Pipeline, ba: &Pipeline) {
        if let Some(path) = &self.path {
            write_stats_file(&self.tmp, path, Self::text(state, started, epoch, taps, lead, ab, ba));
        }
    }

    /// From the forwarding loop: never waits for the disk.
    fn hand_over(&self, state: &str, started: u64, epoch: u64, taps: (&str, &str), lead: &Lead, ab: &Pipeline, ba: &Pipeline) {
        if let Some(tx) = &self.tx {
            let _ = tx.try_send(Self::text(state, started, epoch, taps, lead, ab, ba));
        }
    }

    /// Let the writer finish what it holds, so the final file is written last.
    fn stop_writer(&mut self) {
        self.tx = None;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

/// Both TAP devices, each moved into its namespace.
fn open_taps(cfg: &config::Config) -> (Tap, Tap) {
    let spec_a = cfg.tap_a.as_ref().unwrap();
    let spec_b = cfg.tap_b.as_ref().unwrap();
    let tap_a = Tap::create(&spec_a.name).unwrap_or_else(|e| die(&e));
    let tap_b = Tap::create(&spec_b.name).unwrap_or_else(|e| die(&e));
    for (tap, spec) in [(&tap_a, spec_a), (&tap_b, spec_b)] {
        if let Some(ns) = &spec.netns {
            tap.move_to(ns).unwrap_or_else(|e| die(&e));
        }
    }
    (tap_a, tap_b)
}

/// How to wait for the next `deadline` at `now` with a wake-up lead of `lead_ns`:
/// (epoll timeout in ms: 0 polls, -1 sleeps until an event; the time to arm the timer
/// for, when sleeping toward a deadline).
fn plan_wait(deadline: Option<u64>, now: u64, lead_ns: u64) -> (i32, Option<u64>) {
    match deadline {
        None => (-1, None),
        Some(d) if d <= now + lead_ns => (0, None),
        Some(d) => (-1, Some(d.saturating_sub(lead_ns).max(1))),
    }
}

/// What the forwarding loop works with; main sets it up.
struct Relay {
    cfg: config::Config,
    started: u64,
    epoch: u64,
    // `epoch first-packet`: the pipelines are built again, with their zero, when the
    // first frame arrives (nothing has passed them before); until then the stats file
    // says epoch_ns 0
    awaiting_first: bool,
    ab: Pipeline,
    ba: Pipeline,
    taps: (Tap, Tap),
    names: (String, String),
    lead: Lead,
    stats: StatsWriter,
}

impl Relay {
    fn hand_over(&self) {
        self.stats.hand_over("running", self.started, self.epoch, (&self.names.0, &self.names.1), &self.lead, &self.ab, &self.ba);
    }

    fn flush_logs(&mut self) {
        for st in self.ab.stages.iter_mut().chain(self.ba.stages.iter_mut()) {
            st.flush_logs();
        }
    }

    /// The first frame came at `now`: with `epoch first-packet`, the pipelines start now.
    fn first_frame(&mut self, now: u64) {
        if self.awaiting_first {
            self.awaiting_first = false;
            self.epoch = now;
            self.ab = build_pipeline(&self.cfg.ab, self.cfg.seed, 1, now);
            self.ba = build_pipeline(&self.cfg.ba, self.cfg.seed, 2, now);
            self.hand_over();
        }
    }
}

/// Forward frames until a signal comes (None) or a device fails (Some(why)).
fn forward(r: &mut Relay, tfd: RawFd, sfd: RawFd, epfd: RawFd) -> Option<String> {
    // room for jumbo frames (linklab links allow MTUs up to 9000) whatever `mtu` says
    let max_frame = r.cfg.mtu.max(9000) + 64;
    let mut pool = Pool::new(max_frame);
    let mut io = TapIo::new(&[&r.taps.0, &r.taps.1], max_frame);
    let mut ins: [Vec<Packet>; 2] = [Vec::with_capacity(BATCH), Vec::with_capacity(BATCH)];
    let mut out: Vec<Packet> = Vec::with_capacity(4 * BATCH);
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 8];
    let (mut armed, mut wait_ms) = (0u64, -1i32);
    let mut next_stats = r.started + r.cfg.stats_interval_ns;
    loop {
        let slept_at = mono_ns();
        let n = wait_events(epfd, &mut events, wait_ms);
        let mut readable = [false; 2];
        for ev in events.iter().take(n) {
            match ev.u64 {
                token @ (0 | 1) => readable[token as usize] = true,
                2 => {
                    consume(tfd);
                    // lateness counts only when the relay slept through to the deadline
                    if armed != 0 && slept_at < armed {
                        r.lead.observe(armed, mono_ns());
                    }
                    armed = 0;
                }
                _ => {
                    consume(sfd);
                    return None;
                }
            }
        }
        for (side, tap) in [(0usize, &r.taps.0), (1, &r.taps.1)] {
            if readable[side] {
                if let Err(e) = io.read_batch(tap, side as u32, &mut pool, &mut ins[side]) {
                    return Some(e);
                }
            }
        }
        let now = mono_ns();
        if !(ins[0].is_empty() && ins[1].is_empty()) {
            r.first_frame(now);
        }
        r.ab.run(now, &mut ins[0], &mut pool, &mut out);
        io.write_out(&r.taps.1, 1, &mut r.ab, &mut out, &mut pool);
        r.ba.run(now, &mut ins[1], &mut pool, &mut out);
        io.write_out(&r.taps.0, 0, &mut r.ba, &mut out, &mut pool);

        if now >= next_stats && r.stats.path.is_some() {
            r.flush_logs();
            r.hand_over();
            next_stats = now + r.cfg.stats_interval_ns;
        }
        let first_due = [r.ab.next_due(), r.ba.next_due()].into_iter().flatten().min();
        let stats_due = if r.stats.path.is_some() { Some(next_stats) } else { None };
        let (wait, timer) = plan_wait(first_due.into_iter().chain(stats_due).min(), mono_ns(), r.lead.ns());
        wait_ms = wait;
        if let Some(at) = timer.filter(|&at| at != armed) {
            arm_timer(tfd, at);
            armed = at;
        }
    }
}

fn main() {
    let args = parse_args();
    let text = std::fs::read_to_string(&args.config).unwrap_or_else(|e| die(&format!("{}: {e}", args.config)));
    let cfg = config::parse(&text).unwrap_or_else(|e| die(&e));
    let started = mono_ns();
    let awaiting_first = cfg.epoch_first_packet;
    let epoch = if awaiting_first { 0 } else { cfg.epoch_ns.unwrap_or(started) };
    let ab = build_pipeline(&cfg.ab, cfg.seed, 1, epoch);
    let ba = build_pipeline(&cfg.ba, cfg.seed, 2, epoch);
    if args.check_only {
        println!("ok: {} stage(s) a->b, {} stage(s) b->a", ab.stages.len(), ba.stages.len());
        return;
    }

    set_scheduling(cfg.priority, args.cpu);
    let sfd = signal_fd();
    let taps = open_taps(&cfg);
    let tfd = timer_fd();
    let epfd = epoll_on(&[(taps.0.fd, 0u64), (taps.1.fd, 1), (tfd, 2), (sfd, 3)]);

    // The timer wakes the relay `lead` before a deadline; the last stretch is spent
    // polling, so frames leave on time although the kernel wakes us late (lead.rs).
    let lead = match cfg.spin {
        Spin::Fixed(ns) => Lead::fixed(ns),
        Spin::Auto(cap) => Lead::adaptive(cap),
    };
    let stats = StatsWriter::new(cfg.stats_path.clone());
    let names = (taps.0.name.clone(), taps.1.name.clone());
    let mut r = Relay { cfg, started, epoch, awaiting_first, ab, ba, taps, names, lead, stats };
    r.stats.write_now("running", started, epoch, (&r.names.0, &r.names.1), &r.lead, &r.ab, &r.ba);
    println!("ready {} {}", r.taps.0.name, r.taps.1.name);
    let _ = std::io::stdout().flush();

    let failure = forward(&mut r, tfd, sfd, epfd);

    r.flush_logs();
    let state = if failure.is_some() { "failed" } else { "stopped" };
    r.stats.stop_writer();
    r.stats.write_now(state, started, r.epoch, (&r.names.0, &r.names.1), &r.lead, &r.ab, &r.ba);
    drop(r);
    if let Some(e) = failure {
        die(&format!("{e}; stopping (the link is down)"));
    }
}
