//! The forwarding loop: frames read from each TAP device go through their direction's
//! pipeline to the other device. One epoll set wakes the loop for frames, for the
//! deadline timer and for the stop signals; the counters go to the stats file every
//! interval and once more when the relay stops. With a medium the relay may carry a
//! star's links 1..N (config.rs): every link's frames cross the one medium.

use std::io::Write as _;
use std::os::fd::RawFd;

use crate::config::{Config, LinkConfig, Spin};
use crate::lead::{Lead, SpinBudget};
use crate::medium::{Before, Load, Medium};
use crate::packet::{Packet, Pool};
use crate::pipeline::Pipeline;
use crate::stats::{LinkStats, StatsWriter};
use crate::tap::Tap;
use crate::tapio::{TapIo, BATCH};
use crate::{build_pipeline, check, die, mono_ns};

/// epoll tokens: a link's taps are 2k (a) and 2k + 1 (b); then these.
const TIMER: u64 = u64::MAX - 1;
const SIGNAL: u64 = u64::MAX;

/// One link the relay carries: its two devices, the pipelines of each direction, the
/// frames read this turn.
pub struct Link {
    tap_a: Tap,
    tap_b: Tap,
    pub ab: Pipeline,
    pub ba: Pipeline,
    in_ab: Vec<Packet>,
    in_ba: Vec<Packet>,
}

/// Link k's pipelines, built from its stage lines (link 1's streams are 1 and 2, as
/// before stars; link k's 100 + 2k and one more: clear of the medium's 43).
pub fn build_link_pipelines(link: &LinkConfig, k: usize, seed: u64, epoch: u64) -> (Pipeline, Pipeline) {
    let dir = if k == 0 { 1 } else { 100 + 2 * k as u64 };
    (build_pipeline(&link.ab, seed, dir, epoch), build_pipeline(&link.ba, seed, dir + 1, epoch))
}

/// The relay between its TAP devices: what the loop keeps from one turn to the next.
pub struct Relay {
    cfg: Config,
    links: Vec<Link>,
    /// the deadline timer, the stop signals, and the epoll set over both and the taps
    tfd: RawFd,
    sfd: RawFd,
    epfd: RawFd,
    lead: Lead,
    stats: StatsWriter,
    started: u64,
    epoch: u64,
    awaiting_first: bool,
    pool: Pool,
    /// batched reads and writes of both devices (io_uring where the kernel allows)
    io: TapIo,
    out: Vec<Packet>,
    /// the devices with frames this turn (2k: link k's a, 2k + 1: its b)
    readable: Vec<bool>,
    /// the shared radio medium (medium/): what left the pipelines, and what it delivers
    /// to each link's side b and side a
    medium: Option<Medium>,
    to_medium: Vec<Packet>,
    to_b: Vec<Vec<Packet>>,
    to_a: Vec<Vec<Packet>>,
    armed: u64,
    /// polling's share of the relay's time (lead.rs SpinBudget)
    spin: SpinBudget,
    next_stats: u64,
    wait_ms: i32,
    /// when the relay last woke from epoll_wait, or opened (the medium's late turns)
    woke: u64,
}

impl Relay {
    /// Signals to a signalfd, the TAP devices (each moved to its namespace), the timer
    /// and the epoll set; then the first stats file and `ready` on stdout.
    /// `pipelines`: each link's (ab, ba).
    pub fn open(cfg: Config, started: u64, epoch: u64, pipelines: Vec<(Pipeline, Pipeline)>) -> Relay {
        // signals arrive through a signalfd so shutdown happens in the loop
        let sfd = signal_fd();
        let links: Vec<Link> = cfg.links.iter().zip(pipelines).map(|(spec, (ab, ba))| {
            let (tap_a, tap_b) = open_taps(spec);
            Link { tap_a, tap_b, ab, ba, in_ab: Vec::with_capacity(BATCH), in_ba: Vec::with_capacity(BATCH) }
        }).collect();
        let tfd: RawFd = unsafe { check(libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC), "timerfd") };
        let mut watched: Vec<(RawFd, u64)> = Vec::new();
        for (k, link) in links.iter().enumerate() {
            watched.push((link.tap_a.fd, 2 * k as u64));
            watched.push((link.tap_b.fd, 2 * k as u64 + 1));
        }
        watched.extend([(tfd, TIMER), (sfd, SIGNAL)]);
        let epfd = epoll_over(&watched);
        let taps: Vec<&Tap> = links.iter().flat_map(|l| [&l.tap_a, &l.tap_b]).collect();
        // room for jumbo frames (linklab links allow MTUs up to 9000) whatever `mtu` says
        let max_frame = cfg.mtu.max(9000) + 64;
        let io = TapIo::new(&taps, max_frame);
        // The timer wakes the relay `lead` before a deadline; the last stretch is spent
        // polling, so frames leave on time although the kernel wakes us late (lead.rs).
        let lead = match cfg.spin {
            Spin::Fixed(ns) => Lead::fixed(ns),
            Spin::Auto(cap) => Lead::adaptive(cap),
        };
        let stats = StatsWriter::new(cfg.stats_path.clone());
        // the medium's virtual time is CLOCK_MONOTONIC from now, its devices up; no
        // event of it is due before `opened`, where the relay's first turn counts from
        let opened = mono_ns();
        let medium = cfg.medium.clone().map(|spec| {
            let mut m = Medium::build_star(spec, cfg.seed, opened, [Load::NONE; 2], links.len()).unwrap_or_else(|e| die(&e));
            m.track_lag();
            if links.len() > 1 {
                for (k, link) in links.iter().enumerate() {
                    m.set_robot_mac(k, link.tap_a.mac());
                }
            }
            m
        });
        let n = links.len();
        let relay = Relay {
            medium,
            to_medium: Vec::with_capacity(BATCH),
            to_b: (0..n).map(|_| Vec::with_capacity(4 * BATCH)).collect(),
            to_a: (0..n).map(|_| Vec::with_capacity(4 * BATCH)).collect(),
            pool: Pool::new(max_frame),
            io,
            readable: vec![false; 2 * n],
            out: Vec::with_capacity(4 * BATCH),
            armed: 0,
            spin: SpinBudget::new(started),
            next_stats: started + cfg.stats_interval_ns,
            wait_ms: -1,
            woke: opened,
            awaiting_first: cfg.epoch_first_packet,
            cfg,
            links,
            tfd,
            sfd,
            epfd,
            lead,
            stats,
            started,
            epoch,
        };
        relay.write_stats_now("running");
        let names: Vec<String> = relay.links.iter().map(|l| format!("{} {}", l.tap_a.name, l.tap_b.name)).collect();
        println!("ready {}", names.join(" "));
        let _ = std::io::stdout().flush();
        relay
    }

    /// Forward until a stop signal (None) or until a TAP device is gone (its error).
    pub fn forward_until_stopped(&mut self) -> Option<String> {
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 2 * self.links.len() + 2];
        let mut running = true;
        if self.medium.is_some() {
            // the medium's background stations have events before any frame comes
            self.arm_timer();
        }
        while running {
            let slept_at = mono_ns();
            let n = unsafe { libc::epoll_wait(self.epfd, events.as_mut_ptr(), events.len() as i32, self.wait_ms) };
            // (read only for the medium's late turns)
            let woke = if self.medium.is_some() { mono_ns() } else { 0 };
            if n < 0 {
                let err = std::io::Error::last_os_error();
                if err.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                die(&format!("epoll_wait: {err}"));
            }
            let stop = self.take_events(&events[..n as usize], slept_at);
            if stop {
                running = false;
            }
            if let Err(e) = self.read_devices() {
                return Some(e);
            }
            let now = mono_ns();
            if let Some(m) = self.medium.as_mut() {
                m.turn(Before { slept: woke - slept_at, read: now - woke, previous_turn: slept_at - self.woke });
                self.woke = woke;
            }
            self.start_epoch_at_first_frame(now);
            self.forward(now);
            self.write_stats_when_due(now);
            self.arm_timer();
        }
        None
    }

    /// The last stats file ("failed" or "stopped"), then the devices go (and with them
    /// the link); a failure ends the process with its error.
    pub fn stop(mut self, failure: Option<String>) {
        self.flush_stage_logs();
        let state = if failure.is_some() { "failed" } else { "stopped" };
        self.stats.stop_writer();
        self.write_stats_now(state);
        drop(self.io); // its ring holds the devices' files too
        drop(self.links);
        if let Some(e) = failure {
            die(&format!("{e}; stopping (the link is down)"));
        }
    }

    /// Which devices have frames (`readable`) and whether a stop signal came. The
    /// timer's and the signal's events are read here (the timer's lateness teaches the
    /// lead).
    fn take_events(&mut self, events: &[libc::epoll_event], slept_at: u64) -> bool {
        self.readable.fill(false);
        let mut stop = false;
        for ev in events {
            match ev.u64 {
                TIMER => {
                    let mut buf = [0u8; 8];
                    unsafe { libc::read(self.tfd, buf.as_mut_ptr() as *mut libc::c_void, 8) };
                    // lateness counts only when the relay slept through to the deadline
                    if self.armed != 0 && slept_at < self.armed {
                        self.lead.observe(self.armed, mono_ns());
                    }
                    self.armed = 0;
                }
                SIGNAL => {
                    let mut info = [0u8; 128];
                    unsafe { libc::read(self.sfd, info.as_mut_ptr() as *mut libc::c_void, info.len()) };
                    stop = true;
                }
                tap => self.readable[tap as usize] = true,
            }
        }
        stop
    }

    fn read_devices(&mut self) -> Result<(), String> {
        for (k, link) in self.links.iter_mut().enumerate() {
            if self.readable[2 * k] {
                self.io.read_batch(&link.tap_a, 2 * k as u32, &mut self.pool, &mut link.in_ab)?;
            }
            if self.readable[2 * k + 1] {
                self.io.read_batch(&link.tap_b, 2 * k as u32 + 1, &mut self.pool, &mut link.in_ba)?;
            }
        }
        Ok(())
    }

    /// `epoch first-packet`: the pipelines are built again, with their zero, when the
    /// first frame arrives (nothing has passed them before).
    fn start_epoch_at_first_frame(&mut self, now: u64) {
        if self.awaiting_first && self.links.iter().any(|l| !(l.in_ab.is_empty() && l.in_ba.is_empty())) {
            self.awaiting_first = false;
            self.epoch = now;
            for (k, (link, spec)) in self.links.iter_mut().zip(&self.cfg.links).enumerate() {
                (link.ab, link.ba) = build_link_pipelines(spec, k, self.cfg.seed, self.epoch);
            }
            self.hand_over_stats("running");
        }
    }

    /// a -> b and b -> a: what each pipeline lets out by now goes to the other device.
    fn forward(&mut self, now: u64) {
        let Some(medium) = self.medium.as_mut() else {
            for (k, l) in self.links.iter_mut().enumerate() {
                let (a, b) = (2 * k as u32, 2 * k as u32 + 1);
                l.ab.run(now, &mut l.in_ab, &mut self.pool, &mut self.out);
                self.io.write_out(&l.tap_b, b, &mut l.ab, &mut self.out, &mut self.pool);
                l.ba.run(now, &mut l.in_ba, &mut self.pool, &mut self.out);
                self.io.write_out(&l.tap_a, a, &mut l.ba, &mut self.out, &mut self.pool);
            }
            return;
        };
        // the medium first runs every event up to now (what ended goes out), then the
        // frames that left each pipeline now join their station's queue
        medium.advance_links(now, &mut self.pool, &mut self.to_b, &mut self.to_a);
        for (k, l) in self.links.iter_mut().enumerate() {
            l.ab.run(now, &mut l.in_ab, &mut self.pool, &mut self.to_medium);
            medium.push_up(k, &mut self.to_medium, now, &mut self.pool);
            l.ba.run(now, &mut l.in_ba, &mut self.pool, &mut self.to_medium);
            medium.push_down(k, &mut self.to_medium, now, &mut self.pool);
        }
        for (k, l) in self.links.iter_mut().enumerate() {
            let (a, b) = (2 * k as u32, 2 * k as u32 + 1);
            self.io.write_out(&l.tap_b, b, &mut l.ab, &mut self.to_b[k], &mut self.pool);
            self.io.write_out(&l.tap_a, a, &mut l.ba, &mut self.to_a[k], &mut self.pool);
        }
    }

    fn write_stats_when_due(&mut self, now: u64) {
        if now >= self.next_stats && self.stats.path.is_some() {
            self.flush_stage_logs();
            self.hand_over_stats("running");
            self.next_stats = now + self.cfg.stats_interval_ns;
        }
    }

    /// The next wake-up: the earliest deadline (a stage's or the stats file's) less the
    /// lead; at once (no sleep) when that is already past.
    fn arm_timer(&mut self) {
        let mut deadline = if self.stats.path.is_some() { self.next_stats } else { u64::MAX };
        let medium_due = self.medium.as_ref().and_then(|m| m.next_due());
        let pipelines = self.links.iter().flat_map(|l| [l.ab.next_due(), l.ba.next_due()]);
        for d in pipelines.chain([medium_due]).flatten() {
            deadline = deadline.min(d);
        }
        let now = mono_ns();
        let lead_ns = self.lead.ns();
        // due: work now; near: within the lead, polled to while the budget lasts, else
        // slept to (the timer at the deadline itself)
        let due = deadline != u64::MAX && deadline <= now;
        let near = deadline != u64::MAX && deadline <= now + lead_ns;
        let spin = near && !due && self.spin.allows();
        self.spin.note(now, spin);
        self.wait_ms = if due || spin { 0 } else { -1 };
        let deadline = if deadline == u64::MAX || near { deadline.max(1) } else { deadline.saturating_sub(lead_ns).max(1) };
        if self.wait_ms < 0 && deadline != self.armed && deadline != u64::MAX {
            set_timer(self.tfd, deadline);
            self.armed = deadline;
        }
    }

    fn flush_stage_logs(&mut self) {
        for l in self.links.iter_mut() {
            for st in l.ab.stages.iter_mut().chain(l.ba.stages.iter_mut()) {
                st.flush_logs();
            }
        }
        if let Some(m) = self.medium.as_mut() {
            m.flush_log();
        }
    }

    fn link_stats(&self) -> Vec<LinkStats<'_>> {
        self.links.iter().map(|l| LinkStats { tap_a: &l.tap_a.name, tap_b: &l.tap_b.name, ab: &l.ab, ba: &l.ba }).collect()
    }

    fn write_stats_now(&self, state: &str) {
        self.stats.write_now(state, self.started, self.epoch, &self.link_stats(), &self.lead, self.medium.as_ref());
    }

    fn hand_over_stats(&self, state: &str) {
        self.stats.hand_over(state, self.started, self.epoch, &self.link_stats(), &self.lead, self.medium.as_ref());
    }
}

/// SIGTERM, SIGINT and SIGHUP blocked and readable from the returned signalfd.
fn signal_fd() -> RawFd {
    unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut mask);
        libc::sigaddset(&mut mask, libc::SIGTERM);
        libc::sigaddset(&mut mask, libc::SIGINT);
        libc::sigaddset(&mut mask, libc::SIGHUP);
        check(libc::sigprocmask(libc::SIG_BLOCK, &mask, std::ptr::null_mut()), "sigprocmask");
        check(libc::signalfd(-1, &mask, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC), "signalfd")
    }
}

/// A link's two TAP devices, each moved into its namespace when the config names one.
fn open_taps(link: &LinkConfig) -> (Tap, Tap) {
    let spec_a = link.tap_a.as_ref().unwrap();
    let spec_b = link.tap_b.as_ref().unwrap();
    let tap_a = Tap::create(&spec_a.name).unwrap_or_else(|e| die(&e));
    let tap_b = Tap::create(&spec_b.name).unwrap_or_else(|e| die(&e));
    for (tap, spec) in [(&tap_a, spec_a), (&tap_b, spec_b)] {
        if let Some(ns) = &spec.netns {
            tap.move_to(ns).unwrap_or_else(|e| die(&e));
        }
    }
    (tap_a, tap_b)
}

/// An epoll set watching each fd for input, its events carrying the given token.
fn epoll_over(fds: &[(RawFd, u64)]) -> RawFd {
    let epfd: RawFd = unsafe { check(libc::epoll_create1(libc::EPOLL_CLOEXEC), "epoll") };
    for &(fd, token) in fds {
        let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: token };
        unsafe { check(libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, &mut ev), "epoll_ctl") };
    }
    epfd
}

/// The timer fires once at `deadline` (CLOCK_MONOTONIC ns).
fn set_timer(tfd: RawFd, deadline: u64) {
    let spec = libc::itimerspec {
        it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
        it_value: libc::timespec {
            tv_sec: (deadline / 1_000_000_000) as libc::time_t,
            tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
        },
    };
    unsafe { libc::timerfd_settime(tfd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
}
