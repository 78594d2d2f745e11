//! linklab-emu: a userspace link emulator. It creates one TAP device per side of a
//! link, moves each into its host's network namespace, and forwards frames between
//! them through a pipeline of impairment stages per direction (delay and jitter,
//! loss models, rate, outages, Mahimahi trace replay, duplication, corruption).
//!
//! Usage: linklab-emu --config FILE [--cpu N] [--check]
//!        linklab-emu --simulate-medium FILE --seconds S   (the medium offline, medium/simulate.rs)
//! The configuration format is described in config.rs. Counters are rewritten to
//! the `stats` file (JSON) every interval and once more at exit. SIGTERM/SIGINT
//! stop the relay cleanly; when it stops, its TAP devices disappear and the link
//! is down.

mod config;
mod lead;
mod medium;
mod packet;
mod pipeline;
mod relay;
mod rng;
mod stages;
mod stats;
mod tap;
mod tapio;
mod uring;

use pipeline::Pipeline;
use relay::Relay;
use stages::Stage;

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

const USAGE: &str = "usage: linklab-emu --config FILE [--cpu N] [--check]\n       \
                     linklab-emu --simulate-medium FILE --seconds S";

struct Args {
    config: String,
    cpu: Option<usize>,
    check_only: bool,
    /// --simulate-medium FILE and --seconds S
    simulate: Option<String>,
    seconds: Option<String>,
}

fn parse_args() -> Args {
    let mut args = std::env::args().skip(1);
    let mut config = None;
    let mut cpu = None;
    let mut check_only = false;
    let (mut simulate, mut seconds) = (None, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--config" => config = args.next(),
            "--simulate-medium" => simulate = Some(args.next().unwrap_or_else(|| die("--simulate-medium needs a FILE"))),
            "--seconds" => seconds = Some(args.next().unwrap_or_else(|| die("--seconds needs a number of seconds"))),
            "--cpu" => cpu = args.next().and_then(|v| v.parse().ok()).or_else(|| die("--cpu needs a CPU number")),
            "--check" => check_only = true,
            "--version" => {
                println!("linklab-emu {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => die(&format!("unknown argument {other} ({USAGE})")),
        }
    }
    if simulate.is_some() {
        if config.is_some() || cpu.is_some() || check_only {
            die("--simulate-medium takes --seconds only (no --config, --cpu, --check)");
        }
        if seconds.is_none() {
            die("--simulate-medium needs --seconds S");
        }
        return Args { config: String::new(), cpu, check_only, simulate, seconds };
    }
    if seconds.is_some() {
        die("--seconds goes with --simulate-medium");
    }
    let config = config.unwrap_or_else(|| die("--config FILE is required"));
    Args { config, cpu, check_only, simulate, seconds }
}

/// `--simulate-medium FILE --seconds S`: one JSON object on stdout.
fn simulate_medium(file: &str, seconds: &str) {
    let seconds = medium::simulate::parse_seconds(seconds).unwrap_or_else(|e| die(&e));
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| die(&format!("{file}: {e}")));
    let cfg = config::parse_offline(&text).unwrap_or_else(|e| die(&e));
    let spec = cfg.medium.unwrap();
    let json = medium::simulate::run(spec, cfg.seed, cfg.sim, seconds).unwrap_or_else(|e| die(&e));
    println!("{json}");
}

fn build_pipeline(specs: &[config::StageSpec], seed: u64, dir: u64, epoch: u64) -> Pipeline {
    let stages: Vec<Stage> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| Stage::build(spec, seed, dir * 1000 + i as u64, epoch).unwrap_or_else(|e| die(&e)))
        .collect();
    Pipeline::new(stages)
}

/// Timers that fire when asked, SCHED_FIFO at `priority` (a warning when refused) and
/// the CPU asked for.
fn set_scheduling(priority: i32, cpu: Option<usize>) {
    unsafe {
        // timers fire when asked, not up to 50 us later (the default slack)
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        // Real-time scheduling: frames leave on time even when other processes keep
        // the CPUs busy (netem runs in the kernel's softirq, ahead of every process).
        if priority > 0 {
            let param = libc::sched_param { sched_priority: priority.min(99) };
            if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) != 0 {
                eprintln!(
                    "linklab-emu: warning: SCHED_FIFO priority {}: {} (running with normal scheduling)",
                    priority,
                    std::io::Error::last_os_error()
                );
            }
        }
        if let Some(cpu) = cpu {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            check(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set), "sched_setaffinity");
        }
    }
}

fn main() {
    let args = parse_args();
    if let (Some(file), Some(seconds)) = (&args.simulate, &args.seconds) {
        simulate_medium(file, seconds);
        return;
    }
    let text = std::fs::read_to_string(&args.config).unwrap_or_else(|e| die(&format!("{}: {e}", args.config)));
    let cfg = config::parse(&text).unwrap_or_else(|e| die(&e));
    let started = mono_ns();
    // `epoch first-packet`: the pipelines are built again, with their zero, when the
    // first frame arrives (relay.rs); until then the stats file says epoch_ns 0
    let epoch = if cfg.epoch_first_packet { 0 } else { cfg.epoch_ns.unwrap_or(started) };
    let pipelines: Vec<(Pipeline, Pipeline)> =
        cfg.links.iter().enumerate().map(|(k, link)| relay::build_link_pipelines(link, k, cfg.seed, epoch)).collect();
    // the medium is built here to refuse what it cannot do (its log file) before any
    // device exists; the relay builds it again once its devices are up (relay.rs)
    if let Some(spec) = cfg.medium.clone() {
        medium::Medium::build_star(spec, cfg.seed, started, [medium::Load::NONE; 2], cfg.links.len()).unwrap_or_else(|e| die(&e));
    }
    if args.check_only {
        let shared = if cfg.medium.is_some() { ", a shared medium" } else { "" };
        let (ab, ba) = &pipelines[0];
        let more = if pipelines.len() > 1 { format!(" on link 1 of {}", pipelines.len()) } else { String::new() };
        println!("ok: {} stage(s) a->b, {} stage(s) b->a{more}{shared}", ab.stages.len(), ba.stages.len());
        return;
    }
    set_scheduling(cfg.priority, args.cpu);
    let mut relay = Relay::open(cfg, started, epoch, pipelines);
    let failure = relay.forward_until_stopped();
    relay.stop(failure);
}
