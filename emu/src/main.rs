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
mod packet;
mod pipeline;
mod rng;
mod stages;
mod tap;

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::fd::RawFd;

use config::Spin;
use lead::Lead;
use packet::{Packet, Pool};
use pipeline::Pipeline;
use stages::Stage;
use tap::Tap;

const BATCH: usize = 256;

fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn die(message: &str) -> ! {
    eprintln!("linklab-emu: error: {message}");
    std::process::exit(1);
}

fn check(rc: libc::c_int, what: &str) -> libc::c_int {
    if rc < 0 {
        die(&format!("{what}: {}", std::io::Error::last_os_error()));
    }
    rc
}

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

/// Read up to BATCH frames. Err when the device is gone (e.g. its namespace was
/// deleted): the relay then stops, and with it the link.
fn read_batch(tap: &Tap, pool: &mut Pool, into: &mut Vec<Packet>) -> Result<(), String> {
    for _ in 0..BATCH {
        match pool.read_frame(|buf| tap.read(buf)) {
            Ok(None) => return Ok(()),
            Ok(Some(p)) => into.push(p),
            Err(e) => {
                return match e.raw_os_error() {
                    // the interface is down (EIO) or a signal came: try again later
                    Some(libc::EIO) | Some(libc::EINTR) => Ok(()),
                    _ => Err(format!("read {}: {e}", tap.name)),
                };
            }
        }
    }
    Ok(())
}

fn write_out(tap: &Tap, pipe: &mut Pipeline, out: &mut Vec<Packet>, pool: &mut Pool) {
    for p in out.drain(..) {
        if tap.write(p.bytes()) {
            pipe.tx_frames += 1;
            pipe.tx_bytes += p.len as u64;
        } else {
            pipe.tx_errors += 1;
        }
        pool.recycle(p);
    }
}

fn main() {
    let args = parse_args();
    let text = std::fs::read_to_string(&args.config).unwrap_or_else(|e| die(&format!("{}: {e}", args.config)));
    let cfg = config::parse(&text).unwrap_or_else(|e| die(&e));
    let started = mono_ns();
    // `epoch first-packet`: the pipelines are built again, with their zero, when the
    // first frame arrives (nothing has passed them before); until then the stats file
    // says epoch_ns 0
    let mut awaiting_first = cfg.epoch_first_packet;
    let mut epoch = if awaiting_first { 0 } else { cfg.epoch_ns.unwrap_or(started) };
    let mut ab = build_pipeline(&cfg.ab, cfg.seed, 1, epoch);
    let mut ba = build_pipeline(&cfg.ba, cfg.seed, 2, epoch);
    if args.check_only {
        println!("ok: {} stage(s) a->b, {} stage(s) b->a", ab.stages.len(), ba.stages.len());
        return;
    }

    unsafe {
        // timers fire when asked, not up to 50 us later (the default slack)
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        // Real-time scheduling: frames leave on time even when other processes keep
        // the CPUs busy (netem runs in the kernel's softirq, ahead of every process).
        if cfg.priority > 0 {
            let param = libc::sched_param { sched_priority: cfg.priority.min(99) };
            if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) != 0 {
                eprintln!(
                    "linklab-emu: warning: SCHED_FIFO priority {}: {} (running with normal scheduling)",
                    cfg.priority,
                    std::io::Error::last_os_error()
                );
            }
        }
        if let Some(cpu) = args.cpu {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            check(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set), "sched_setaffinity");
        }
    }

    // signals arrive through a signalfd so shutdown happens in the loop
    let sfd: RawFd = unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut mask);
        libc::sigaddset(&mut mask, libc::SIGTERM);
        libc::sigaddset(&mut mask, libc::SIGINT);
        libc::sigaddset(&mut mask, libc::SIGHUP);
        check(libc::sigprocmask(libc::SIG_BLOCK, &mask, std::ptr::null_mut()), "sigprocmask");
        check(libc::signalfd(-1, &mask, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC), "signalfd")
    };

    let spec_a = cfg.tap_a.as_ref().unwrap();
    let spec_b = cfg.tap_b.as_ref().unwrap();
    let tap_a = Tap::create(&spec_a.name).unwrap_or_else(|e| die(&e));
    let tap_b = Tap::create(&spec_b.name).unwrap_or_else(|e| die(&e));
    for (tap, spec) in [(&tap_a, spec_a), (&tap_b, spec_b)] {
        if let Some(ns) = &spec.netns {
            tap.move_to(ns).unwrap_or_else(|e| die(&e));
        }
    }

    let tfd: RawFd = unsafe { check(libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC), "timerfd") };
    let epfd: RawFd = unsafe { check(libc::epoll_create1(libc::EPOLL_CLOEXEC), "epoll") };
    for (fd, token) in [(tap_a.fd, 0u64), (tap_b.fd, 1), (tfd, 2), (sfd, 3)] {
        let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: token };
        unsafe { check(libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, &mut ev), "epoll_ctl") };
    }

    // The timer wakes the relay `lead` before a deadline; the last stretch is spent
    // polling, so frames leave on time although the kernel wakes us late (lead.rs).
    let mut lead = match cfg.spin {
        Spin::Fixed(ns) => Lead::fixed(ns),
        Spin::Auto(cap) => Lead::adaptive(cap),
    };
    let mut stats = StatsWriter::new(cfg.stats_path.clone());
    let names = (tap_a.name.clone(), tap_b.name.clone());
    stats.write_now("running", started, epoch, (&names.0, &names.1), &lead, &ab, &ba);
    println!("ready {} {}", tap_a.name, tap_b.name);
    let _ = std::io::stdout().flush();

    // room for jumbo frames (linklab links allow MTUs up to 9000) whatever `mtu` says
    let mut pool = Pool::new(cfg.mtu.max(9000) + 64);
    let mut in_ab: Vec<Packet> = Vec::with_capacity(BATCH);
    let mut in_ba: Vec<Packet> = Vec::with_capacity(BATCH);
    let mut out: Vec<Packet> = Vec::with_capacity(4 * BATCH);
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 8];
    let mut armed: u64 = 0;
    let mut next_stats = started + cfg.stats_interval_ns;
    let mut running = true;
    let mut failure: Option<String> = None;
    let mut wait_ms: i32 = -1;

    while running {
        let slept_at = mono_ns();
        let n = unsafe { libc::epoll_wait(epfd, events.as_mut_ptr(), events.len() as i32, wait_ms) };
        if n < 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            die(&format!("epoll_wait: {err}"));
        }
        let mut readable = [false; 2];
        for ev in events.iter().take(n as usize) {
            match ev.u64 {
                0 => readable[0] = true,
                1 => readable[1] = true,
                2 => {
                    let mut buf = [0u8; 8];
                    unsafe { libc::read(tfd, buf.as_mut_ptr() as *mut libc::c_void, 8) };
                    // lateness counts only when the relay slept through to the deadline
                    if armed != 0 && slept_at < armed {
                        lead.observe(armed, mono_ns());
                    }
                    armed = 0;
                }
                _ => {
                    let mut info = [0u8; 128];
                    unsafe { libc::read(sfd, info.as_mut_ptr() as *mut libc::c_void, info.len()) };
                    running = false;
                }
            }
        }
        if readable[0] {
            if let Err(e) = read_batch(&tap_a, &mut pool, &mut in_ab) {
                failure = Some(e);
                break;
            }
        }
        if readable[1] {
            if let Err(e) = read_batch(&tap_b, &mut pool, &mut in_ba) {
                failure = Some(e);
                break;
            }
        }
        let now = mono_ns();
        if awaiting_first && !(in_ab.is_empty() && in_ba.is_empty()) {
            awaiting_first = false;
            epoch = now;
            ab = build_pipeline(&cfg.ab, cfg.seed, 1, epoch);
            ba = build_pipeline(&cfg.ba, cfg.seed, 2, epoch);
            stats.hand_over("running", started, epoch, (&names.0, &names.1), &lead, &ab, &ba);
        }
        ab.run(now, &mut in_ab, &mut pool, &mut out);
        write_out(&tap_b, &mut ab, &mut out, &mut pool);
        ba.run(now, &mut in_ba, &mut pool, &mut out);
        write_out(&tap_a, &mut ba, &mut out, &mut pool);

        if now >= next_stats && stats.path.is_some() {
            for st in ab.stages.iter_mut().chain(ba.stages.iter_mut()) {
                st.flush_logs();
            }
            stats.hand_over("running", started, epoch, (&names.0, &names.1), &lead, &ab, &ba);
            next_stats = now + cfg.stats_interval_ns;
        }

        let mut deadline = if stats.path.is_some() { next_stats } else { u64::MAX };
        for d in [ab.next_due(), ba.next_due()].into_iter().flatten() {
            deadline = deadline.min(d);
        }
        let now = mono_ns();
        let lead_ns = lead.ns();
        wait_ms = if deadline != u64::MAX && deadline <= now + lead_ns { 0 } else { -1 };
        let deadline = if deadline == u64::MAX { deadline } else { deadline.saturating_sub(lead_ns).max(1) };
        if wait_ms < 0 && deadline != armed && deadline != u64::MAX {
            let spec = libc::itimerspec {
                it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
                it_value: libc::timespec {
                    tv_sec: (deadline / 1_000_000_000) as libc::time_t,
                    tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
                },
            };
            unsafe { libc::timerfd_settime(tfd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
            armed = deadline;
        }
    }

    for st in ab.stages.iter_mut().chain(ba.stages.iter_mut()) {
        st.flush_logs();
    }
    let state = if failure.is_some() { "failed" } else { "stopped" };
    stats.stop_writer();
    stats.write_now(state, started, epoch, (&names.0, &names.1), &lead, &ab, &ba);
    drop(tap_a);
    drop(tap_b);
    if let Some(e) = failure {
        die(&format!("{e}; stopping (the link is down)"));
    }
}
