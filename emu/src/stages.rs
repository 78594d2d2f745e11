//! The impairment stages. Each stage does one thing (after Mahimahi's queues): it
//! takes a frame (`push`), hands frames on when they are due (`release`), and says
//! when it next has something due (`next_due`). A direction is a list of stages;
//! see pipeline.rs.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::fs::File;
use std::io::{BufWriter, Write};

use crate::config::{Params, StageSpec};
use crate::packet::{Packet, Pool};
use crate::rng::{jitter_sample, Distribution, Rng};

/// Ethernet header length: stages that charge IP bytes (trace) subtract it.
const ETH_HEADER: usize = 14;
/// One delivery opportunity of a Mahimahi trace line carries this many bytes
/// (Mahimahi's PACKET_SIZE: a 1500-byte MTU plus its 4-byte TUN header).
pub const TRACE_OPPORTUNITY_BYTES: u64 = 1504;

#[derive(Default, Clone, Debug)]
pub struct Counters {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    pub queue_packets: u64,
    pub queue_bytes: u64,
    pub queue_max_packets: u64,
    pub queue_max_bytes: u64,
}

impl Counters {
    #[inline]
    fn arrive(&mut self, p: &Packet) {
        self.packets_in += 1;
        self.bytes_in += p.len as u64;
    }
    #[inline]
    fn emit(&mut self, p: Packet, out: &mut Vec<Packet>) {
        self.packets_out += 1;
        self.bytes_out += p.len as u64;
        out.push(p);
    }
    #[inline]
    fn drop(&mut self, p: Packet, pool: &mut Pool) {
        self.dropped_packets += 1;
        self.dropped_bytes += p.len as u64;
        pool.recycle(p);
    }
    #[inline]
    fn enqueued(&mut self, len: usize) {
        self.queue_packets += 1;
        self.queue_bytes += len as u64;
        self.queue_max_packets = self.queue_max_packets.max(self.queue_packets);
        self.queue_max_bytes = self.queue_max_bytes.max(self.queue_bytes);
    }
    #[inline]
    fn dequeued(&mut self, len: usize) {
        self.queue_packets -= 1;
        self.queue_bytes -= len as u64;
    }
}

// ---------------------------------------------------------------- delay -------

struct Timed {
    due: u64,
    seq: u64,
    packet: Packet,
}
impl PartialEq for Timed {
    fn eq(&self, other: &Self) -> bool {
        self.due == other.due && self.seq == other.seq
    }
}
impl Eq for Timed {}
impl PartialOrd for Timed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timed {
    // BinaryHeap is a max-heap: the earliest (due, seq) must compare greatest.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.due, other.seq).cmp(&(self.due, self.seq))
    }
}

/// Constant delay plus jitter (netem `delay D J distribution X`). By default
/// frames keep their order: a frame never leaves before the one ahead of it
/// (its delay becomes max(own, previous)); `reorder=1` lets each frame leave at
/// its own time, so jitter reorders as on a multi-path link.
pub struct Delay {
    delay_ns: f64,
    jitter_ns: f64,
    dist: Distribution,
    reorder: bool,
    rng: Rng,
    fifo: VecDeque<(u64, Packet)>,
    heap: BinaryHeap<Timed>,
    seq: u64,
    last_due: u64,
    log: Option<BufWriter<File>>,
}

impl Delay {
    fn sample_ns(&mut self) -> u64 {
        let mut d = self.delay_ns;
        if self.jitter_ns > 0.0 {
            d += self.jitter_ns * jitter_sample(&mut self.rng, self.dist);
        }
        if d < 0.0 {
            0
        } else {
            d.round() as u64
        }
    }

    fn push(&mut self, c: &mut Counters, p: Packet, now: u64) {
        let drawn = self.sample_ns();
        if let Some(log) = self.log.as_mut() {
            let _ = log.write_all(&drawn.to_le_bytes());
        }
        let mut due = now + drawn;
        c.enqueued(p.len);
        if self.reorder {
            self.seq += 1;
            self.heap.push(Timed { due, seq: self.seq, packet: p });
        } else {
            due = due.max(self.last_due);
            self.last_due = due;
            self.fifo.push_back((due, p));
        }
    }

    fn release(&mut self, c: &mut Counters, now: u64, out: &mut Vec<Packet>) {
        if self.reorder {
            while self.heap.peek().is_some_and(|t| t.due <= now) {
                let t = self.heap.pop().unwrap();
                c.dequeued(t.packet.len);
                c.emit(t.packet, out);
            }
        } else {
            while self.fifo.front().is_some_and(|(due, _)| *due <= now) {
                let (_, p) = self.fifo.pop_front().unwrap();
                c.dequeued(p.len);
                c.emit(p, out);
            }
        }
    }

    fn next_due(&self) -> Option<u64> {
        if self.reorder {
            self.heap.peek().map(|t| t.due)
        } else {
            self.fifo.front().map(|(due, _)| *due)
        }
    }
}

// ---------------------------------------------------------------- loss --------

enum LossModel {
    /// Independent loss with probability p.
    Bernoulli { p: f64 },
    /// Gilbert-Elliott as netem's `gemodel p r 1-h 1-k`: Good -> Bad with p,
    /// Bad -> Good with r; a frame is lost with 1-k in Good and 1-h in Bad.
    /// The frame's fate is drawn in the state it finds, then the state moves.
    Gilbert { p: f64, r: f64, loss_bad: f64, loss_good: f64, bad: bool },
    /// netem's `loss state p13 p31 p32 p23 p14` (Salsano et al., "Definition of a
    /// general and intuitive loss model for packet networks and its implementation
    /// in the Netem module"): states 1 = received in gap, 2 = received in burst,
    /// 3 = lost in burst, 4 = isolated loss. Each frame moves the chain one step
    /// and is lost when the new state is 3 or 4.
    FourState { p13: f64, p31: f64, p32: f64, p23: f64, p14: f64, state: u8 },
}

pub struct Loss {
    model: LossModel,
    rng: Rng,
}

impl Loss {
    fn lose(&mut self) -> bool {
        let rng = &mut self.rng;
        match &mut self.model {
            LossModel::Bernoulli { p } => rng.chance(*p),
            LossModel::Gilbert { p, r, loss_bad, loss_good, bad } => {
                let lost = rng.chance(if *bad { *loss_bad } else { *loss_good });
                if *bad {
                    if rng.chance(*r) {
                        *bad = false;
                    }
                } else if rng.chance(*p) {
                    *bad = true;
                }
                lost
            }
            LossModel::FourState { p13, p31, p32, p23, p14, state } => {
                let u = rng.uniform();
                *state = match *state {
                    1 => {
                        if u < *p13 {
                            3
                        } else if u < *p13 + *p14 {
                            4
                        } else {
                            1
                        }
                    }
                    2 => {
                        if u < *p23 {
                            3
                        } else {
                            2
                        }
                    }
                    3 => {
                        if u < *p31 {
                            1
                        } else if u < *p31 + *p32 {
                            2
                        } else {
                            3
                        }
                    }
                    _ => 1,
                };
                *state >= 3
            }
        }
    }

    fn state_name(&self) -> Option<String> {
        match &self.model {
            LossModel::Bernoulli { .. } => None,
            LossModel::Gilbert { bad, .. } => Some(if *bad { "bad" } else { "good" }.into()),
            LossModel::FourState { state, .. } => Some(format!("{state}")),
        }
    }
}

// ---------------------------------------------------------------- rate --------

/// Rate limit with a drop-tail queue. Without `burst` the link is a serializer:
/// a frame leaves when its last bit has been sent at `rate_bps` (netem `rate`,
/// Mahimahi's fixed-rate link). With `burst` it is a token bucket of that many
/// bytes (tbf). `overhead` bytes are charged per frame on top of its length
/// (e.g. 24 for Ethernet preamble + FCS + inter-frame gap).
pub struct Rate {
    ns_per_byte: f64,
    overhead: i64,
    burst: f64,
    limit_packets: u64,
    limit_bytes: u64,
    queue: VecDeque<Packet>,
    head_due: u64,
    last_departure: u64,
    tokens: f64,
    tokens_at: u64,
}

impl Rate {
    #[inline]
    fn charge(&self, p: &Packet) -> f64 {
        (p.len as i64 + self.overhead).max(0) as f64
    }

    fn tx_ns(&self, p: &Packet) -> u64 {
        (self.charge(p) * self.ns_per_byte).round() as u64
    }

    fn refill(&mut self, now: u64) {
        if now > self.tokens_at {
            self.tokens = (self.tokens + (now - self.tokens_at) as f64 / self.ns_per_byte)
                .min(self.burst);
            self.tokens_at = now;
        }
    }

    fn schedule_head(&mut self, now: u64) {
        if let Some(p) = self.queue.front() {
            if self.burst > 0.0 {
                let need = self.charge(p) - self.tokens;
                self.head_due = if need <= 0.0 {
                    now
                } else {
                    now + (need * self.ns_per_byte).ceil() as u64
                };
            } else {
                self.head_due = now.max(self.last_departure) + self.tx_ns(p);
            }
        }
    }

    fn push(&mut self, c: &mut Counters, p: Packet, now: u64, pool: &mut Pool) {
        if c.queue_packets + 1 > self.limit_packets
            || c.queue_bytes + p.len as u64 > self.limit_bytes
        {
            c.drop(p, pool);
            return;
        }
        c.enqueued(p.len);
        self.queue.push_back(p);
        if self.queue.len() == 1 {
            self.refill(now);
            self.schedule_head(now);
        }
    }

    fn release(&mut self, c: &mut Counters, now: u64, out: &mut Vec<Packet>) {
        while !self.queue.is_empty() && self.head_due <= now {
            let p = self.queue.pop_front().unwrap();
            if self.burst > 0.0 {
                self.refill(now);
                self.tokens -= self.charge(&p);
            } else {
                self.last_departure = self.head_due;
            }
            c.dequeued(p.len);
            c.emit(p, out);
            if self.burst > 0.0 {
                self.schedule_head(now);
            } else {
                // the next frame has been waiting: it starts when this one ended
                let start = self.last_departure;
                self.schedule_head(start);
            }
        }
    }

    fn next_due(&self) -> Option<u64> {
        if self.queue.is_empty() {
            None
        } else {
            Some(self.head_due)
        }
    }
}

// ---------------------------------------------------------------- outage ------

/// Scheduled outage windows, relative to the epoch and optionally repeating with
/// `period_ns`: frames arriving inside a window are dropped.
pub struct Outage {
    epoch: u64,
    windows: Vec<(u64, u64)>,
    period: u64,
}

impl Outage {
    fn down(&self, now: u64) -> bool {
        if now < self.epoch {
            return false;
        }
        let mut t = now - self.epoch;
        if self.period > 0 {
            t %= self.period;
        }
        self.windows.iter().any(|&(start, len)| t >= start && t < start + len)
    }
}

/// Stochastic on/off link (Mahimahi's mm-onoff): exponentially distributed on and
/// off times; frames arriving while off are dropped. The link starts on at the
/// epoch. Transitions are computed at their exact times and, with `log=PATH`,
/// written there as lines `on|off <CLOCK_MONOTONIC ns>`.
pub struct OnOff {
    mean_on_ns: f64,
    mean_off_ns: f64,
    rng: Rng,
    on: bool,
    next_switch: u64,
    transitions: u64,
    log: Option<BufWriter<File>>,
}

impl OnOff {
    fn advance(&mut self, now: u64) {
        while self.next_switch <= now {
            self.on = !self.on;
            self.transitions += 1;
            if let Some(log) = self.log.as_mut() {
                let _ = writeln!(log, "{} {}", if self.on { "on" } else { "off" }, self.next_switch);
            }
            let mean = if self.on { self.mean_on_ns } else { self.mean_off_ns };
            self.next_switch += (self.rng.exponential(mean).round() as u64).max(1);
        }
    }
}

// ---------------------------------------------------------------- trace -------

/// Mahimahi trace replay: each line of the trace is a millisecond timestamp at
/// which the link may deliver 1504 bytes; the trace repeats with the period of
/// its last timestamp. Opportunities with nothing queued are lost. A frame is
/// charged its IP length (frame minus the Ethernet header), as Mahimahi (on a TUN
/// device) charges IP packets; a frame larger than what is left of an
/// opportunity uses up the rest and continues in the next one.
pub struct Trace {
    times_ns: Vec<u64>,
    period_ns: u64,
    epoch: u64,
    index: usize,
    cycle: u64,
    queue: VecDeque<Packet>,
    head_left: u64,
    limit_packets: u64,
    limit_bytes: u64,
}

impl Trace {
    #[inline]
    fn opportunity(&self) -> u64 {
        self.epoch + self.cycle * self.period_ns + self.times_ns[self.index]
    }

    fn step(&mut self) {
        self.index += 1;
        if self.index == self.times_ns.len() {
            self.index = 0;
            self.cycle += 1;
        }
    }

    /// Move to the first opportunity at or after `now` (the queue was empty, so
    /// the ones before were wasted).
    fn skip_to(&mut self, now: u64) {
        if self.opportunity() >= now {
            return;
        }
        let rel = now - self.epoch;
        self.cycle = rel / self.period_ns;
        let within = rel - self.cycle * self.period_ns;
        self.index = self.times_ns.partition_point(|&t| t < within);
        if self.index == self.times_ns.len() {
            self.index = 0;
            self.cycle += 1;
        }
    }

    #[inline]
    fn charge(p: &Packet) -> u64 {
        (p.len.saturating_sub(ETH_HEADER)).max(1) as u64
    }

    fn push(&mut self, c: &mut Counters, p: Packet, now: u64, pool: &mut Pool) {
        if c.queue_packets + 1 > self.limit_packets
            || c.queue_bytes + p.len as u64 > self.limit_bytes
        {
            c.drop(p, pool);
            return;
        }
        if self.queue.is_empty() {
            self.skip_to(now);
            self.head_left = Self::charge(&p);
        }
        c.enqueued(p.len);
        self.queue.push_back(p);
    }

    fn release(&mut self, c: &mut Counters, now: u64, out: &mut Vec<Packet>) {
        while !self.queue.is_empty() && self.opportunity() <= now {
            let mut budget = TRACE_OPPORTUNITY_BYTES;
            while budget > 0 && !self.queue.is_empty() {
                if self.head_left <= budget {
                    budget -= self.head_left;
                    let p = self.queue.pop_front().unwrap();
                    c.dequeued(p.len);
                    c.emit(p, out);
                    if let Some(next) = self.queue.front() {
                        self.head_left = Self::charge(next);
                    }
                } else {
                    self.head_left -= budget;
                    budget = 0;
                }
            }
            self.step();
        }
    }

    fn next_due(&self) -> Option<u64> {
        if self.queue.is_empty() {
            None
        } else {
            Some(self.opportunity())
        }
    }
}

pub fn read_trace(path: &str) -> Result<Vec<u64>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("trace {path}: {e}"))?;
    let mut times = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let ms: u64 = line
            .parse()
            .map_err(|_| format!("trace {path} line {}: expected a millisecond integer", i + 1))?;
        if times.last().is_some_and(|&last| ms < last) {
            return Err(format!("trace {path} line {}: timestamps must not decrease", i + 1));
        }
        times.push(ms);
    }
    match times.last() {
        None => Err(format!("trace {path}: no delivery opportunities")),
        Some(0) => Err(format!("trace {path}: the last timestamp must be > 0 ms")),
        Some(_) => Ok(times),
    }
}

// ---------------------------------------------------------------- stage -------

enum Behaviour {
    Delay(Delay),
    Loss(Loss),
    Rate(Rate),
    Outage(Outage),
    OnOff(OnOff),
    Trace(Trace),
    Duplicate { p: f64, rng: Rng },
    Corrupt { p: f64, rng: Rng },
}

pub struct Stage {
    pub name: String,
    pub kind: String,
    pub counters: Counters,
    behaviour: Behaviour,
}

fn open_log(path: &str) -> Result<Option<BufWriter<File>>, String> {
    if path.is_empty() {
        return Ok(None);
    }
    File::create(path).map(|f| Some(BufWriter::new(f))).map_err(|e| format!("log {path}: {e}"))
}

fn limits(params: &Params) -> Result<(u64, u64), String> {
    let packets = params.u64_or("limit_packets", 0)?;
    let bytes = params.u64_or("limit_bytes", 0)?;
    Ok(match (packets, bytes) {
        (0, 0) => (1000, u64::MAX), // netem's default limit
        (0, b) => (u64::MAX, b),
        (p, 0) => (p, u64::MAX),
        (p, b) => (p, b),
    })
}

impl Stage {
    pub fn build(spec: &StageSpec, seed: u64, stream: u64, epoch: u64) -> Result<Stage, String> {
        let params = Params::new(spec);
        let rng = Rng::new(seed, stream);
        let behaviour = match spec.kind.as_str() {
            "delay" => {
                params.unknown_keys(&["delay_ns", "jitter_ns", "dist", "reorder", "log"])?;
                let dist_name = params.str_or("dist", "uniform");
                let dist = Distribution::parse(dist_name).ok_or_else(|| {
                    format!("config line {}: dist must be uniform, normal, pareto or paretonormal", spec.line)
                })?;
                Behaviour::Delay(Delay {
                    delay_ns: params.f64_or("delay_ns", 0.0)?.max(0.0),
                    jitter_ns: params.f64_or("jitter_ns", 0.0)?.max(0.0),
                    dist,
                    reorder: params.bool_or("reorder", false)?,
                    rng,
                    fifo: VecDeque::new(),
                    heap: BinaryHeap::new(),
                    seq: 0,
                    last_due: 0,
                    log: open_log(params.str_or("log", ""))?,
                })
            }
            "loss" => {
                params.unknown_keys(&["model", "p", "r", "1-h", "1-k", "p13", "p31", "p32", "p23", "p14"])?;
                let model = match params.str_or("model", "bernoulli") {
                    "bernoulli" => LossModel::Bernoulli { p: params.prob("p", 0.0)? },
                    "gemodel" => {
                        let p = params.prob("p", 0.0)?;
                        LossModel::Gilbert {
                            p,
                            r: params.prob("r", 1.0 - p)?,
                            loss_bad: params.prob("1-h", 1.0)?,
                            loss_good: params.prob("1-k", 0.0)?,
                            bad: false,
                        }
                    }
                    "state" => {
                        let p13 = params.prob("p13", 0.0)?;
                        let m = LossModel::FourState {
                            p13,
                            p31: params.prob("p31", 1.0 - p13)?,
                            p32: params.prob("p32", 0.0)?,
                            p23: params.prob("p23", 1.0)?,
                            p14: params.prob("p14", 0.0)?,
                            state: 1,
                        };
                        if let LossModel::FourState { p13, p14, p31, p32, .. } = &m {
                            if p13 + p14 > 1.0 || p31 + p32 > 1.0 {
                                return Err(format!("config line {}: p13+p14 and p31+p32 must be <= 1", spec.line));
                            }
                        }
                        m
                    }
                    other => return Err(format!("config line {}: unknown loss model {other}", spec.line)),
                };
                Behaviour::Loss(Loss { model, rng })
            }
            "rate" => {
                params.unknown_keys(&["rate_bps", "overhead", "burst", "limit_packets", "limit_bytes"])?;
                let rate = params.positive("rate_bps")?;
                let (limit_packets, limit_bytes) = limits(&params)?;
                let burst = params.f64_or("burst", 0.0)?.max(0.0);
                Behaviour::Rate(Rate {
                    ns_per_byte: 8e9 / rate,
                    overhead: params.f64_or("overhead", 0.0)? as i64,
                    burst,
                    limit_packets,
                    limit_bytes,
                    queue: VecDeque::new(),
                    head_due: 0,
                    last_departure: 0,
                    tokens: burst,
                    tokens_at: epoch,
                })
            }
            "outage" => {
                params.unknown_keys(&["windows", "period_ns"])?;
                Behaviour::Outage(Outage {
                    epoch,
                    windows: params.pairs("windows")?,
                    period: params.u64_or("period_ns", 0)?,
                })
            }
            "onoff" => {
                params.unknown_keys(&["mean_on_ns", "mean_off_ns", "log"])?;
                let mut rng = rng;
                let mean_on_ns = params.positive("mean_on_ns")?;
                let first = rng.exponential(mean_on_ns).round() as u64;
                Behaviour::OnOff(OnOff {
                    mean_on_ns,
                    mean_off_ns: params.positive("mean_off_ns")?,
                    rng,
                    on: true,
                    next_switch: epoch + first.max(1),
                    transitions: 0,
                    log: open_log(params.str_or("log", ""))?,
                })
            }
            "trace" => {
                params.unknown_keys(&["file", "limit_packets", "limit_bytes"])?;
                let path = params.str_or("file", "");
                if path.is_empty() {
                    return Err(format!("config line {}: trace needs file=PATH", spec.line));
                }
                let times_ms = read_trace(path)?;
                let (limit_packets, limit_bytes) = if params.has("limit_packets") || params.has("limit_bytes") {
                    limits(&params)?
                } else {
                    (u64::MAX, u64::MAX) // Mahimahi's default queue is unbounded
                };
                Behaviour::Trace(Trace {
                    period_ns: times_ms.last().unwrap() * 1_000_000,
                    times_ns: times_ms.iter().map(|ms| ms * 1_000_000).collect(),
                    epoch,
                    index: 0,
                    cycle: 0,
                    queue: VecDeque::new(),
                    head_left: 0,
                    limit_packets,
                    limit_bytes,
                })
            }
            "duplicate" => {
                params.unknown_keys(&["p"])?;
                Behaviour::Duplicate { p: params.prob("p", 0.0)?, rng }
            }
            "corrupt" => {
                params.unknown_keys(&["p"])?;
                Behaviour::Corrupt { p: params.prob("p", 0.0)?, rng }
            }
            other => return Err(format!("config line {}: unknown stage kind {other}", spec.line)),
        };
        Ok(Stage {
            name: params.str_or("name", &spec.kind).to_string(),
            kind: spec.kind.clone(),
            counters: Counters::default(),
            behaviour,
        })
    }

    /// A frame arrives at `now`: hand it on (into `out`), keep it, or drop it.
    pub fn push(&mut self, mut p: Packet, now: u64, pool: &mut Pool, out: &mut Vec<Packet>) {
        let c = &mut self.counters;
        c.arrive(&p);
        match &mut self.behaviour {
            Behaviour::Delay(d) => d.push(c, p, now),
            Behaviour::Loss(l) => {
                if l.lose() {
                    c.drop(p, pool)
                } else {
                    c.emit(p, out)
                }
            }
            Behaviour::Rate(r) => r.push(c, p, now, pool),
            Behaviour::Outage(o) => {
                if o.down(now) {
                    c.drop(p, pool)
                } else {
                    c.emit(p, out)
                }
            }
            Behaviour::OnOff(o) => {
                o.advance(now);
                if o.on {
                    c.emit(p, out)
                } else {
                    c.drop(p, pool)
                }
            }
            Behaviour::Trace(t) => t.push(c, p, now, pool),
            Behaviour::Duplicate { p: prob, rng } => {
                if rng.chance(*prob) {
                    let copy = pool.copy_of(&p);
                    c.emit(copy, out);
                }
                c.emit(p, out)
            }
            Behaviour::Corrupt { p: prob, rng } => {
                // flip one bit after the Ethernet header, as netem flips one in the
                // network-layer data
                if p.len > ETH_HEADER && rng.chance(*prob) {
                    let at = ETH_HEADER + (rng.next_u64() % (p.len - ETH_HEADER) as u64) as usize;
                    p.buf[at] ^= 1 << (rng.next_u64() % 8);
                }
                c.emit(p, out)
            }
        }
    }

    /// Hand on every kept frame that is due at `now`.
    pub fn release(&mut self, now: u64, out: &mut Vec<Packet>) {
        let c = &mut self.counters;
        match &mut self.behaviour {
            Behaviour::Delay(d) => d.release(c, now, out),
            Behaviour::Rate(r) => r.release(c, now, out),
            Behaviour::Trace(t) => t.release(c, now, out),
            Behaviour::OnOff(o) => o.advance(now),
            _ => {}
        }
    }

    pub fn next_due(&self) -> Option<u64> {
        match &self.behaviour {
            Behaviour::Delay(d) => d.next_due(),
            Behaviour::Rate(r) => r.next_due(),
            Behaviour::Trace(t) => t.next_due(),
            _ => None,
        }
    }

    /// Stage-specific state for the stats file, as JSON members (may be empty).
    pub fn state_json(&self, now: u64) -> String {
        match &self.behaviour {
            Behaviour::Loss(l) => match l.state_name() {
                Some(s) => format!(",\"state\":\"{s}\""),
                None => String::new(),
            },
            Behaviour::Outage(o) => {
                format!(",\"state\":\"{}\"", if o.down(now) { "down" } else { "up" })
            }
            Behaviour::OnOff(o) => format!(
                ",\"state\":\"{}\",\"transitions\":{}",
                if o.on { "on" } else { "off" },
                o.transitions
            ),
            _ => String::new(),
        }
    }

    pub fn flush_logs(&mut self) {
        match &mut self.behaviour {
            Behaviour::Delay(Delay { log: Some(log), .. })
            | Behaviour::OnOff(OnOff { log: Some(log), .. }) => {
                let _ = log.flush();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StageSpec;
    use std::collections::HashMap;

    const MS: u64 = 1_000_000;

    fn stage(kind: &str, params: &[(&str, &str)]) -> Stage {
        let params: HashMap<String, String> =
            params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Stage::build(&StageSpec { kind: kind.into(), params, line: 1 }, 7, 1, 0).unwrap()
    }

    fn frame(len: usize, tag: u8) -> Packet {
        let mut buf = vec![0u8; 2048];
        buf[0] = tag;
        Packet { buf, len }
    }

    /// Push `frames` at t = 0, then step time in 0.1 ms ticks: (tag, release time).
    fn run(mut st: Stage, frames: Vec<Packet>, until: u64) -> Vec<(u8, u64)> {
        let mut pool = Pool::new(2048);
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for p in frames {
            st.push(p, 0, &mut pool, &mut out);
        }
        let mut now = 0;
        while now <= until {
            st.release(now, &mut out);
            for p in out.drain(..) {
                seen.push((p.buf[0], now));
            }
            now += MS / 10;
        }
        seen
    }

    #[test]
    fn serializer_sends_one_frame_per_transmission_time() {
        // 1000-byte frames at 8 Mbit/s: 1 ms each
        let st = stage("rate", &[("rate_bps", "8000000"), ("limit_packets", "5")]);
        let got = run(st, (0..7).map(|i| frame(1000, i)).collect(), 10 * MS);
        let times: Vec<u64> = got.iter().map(|&(_, t)| t).collect();
        assert_eq!(times, vec![MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS]); // 2 dropped (limit 5)
    }

    #[test]
    fn token_bucket_lets_a_burst_through_then_paces() {
        let st = stage("rate", &[("rate_bps", "8000000"), ("burst", "3000")]);
        let got = run(st, (0..5).map(|i| frame(1000, i)).collect(), 10 * MS);
        let times: Vec<u64> = got.iter().map(|&(_, t)| t).collect();
        assert_eq!(times, vec![0, 0, 0, MS, 2 * MS]);
    }

    #[test]
    fn trace_delivers_1504_bytes_per_line_and_carries_the_rest_over() {
        let path = std::env::temp_dir().join(format!("emu-test-{}.trace", std::process::id()));
        std::fs::write(&path, "1\n2\n").unwrap();
        let st = stage("trace", &[("file", path.to_str().unwrap())]);
        // 1514-byte frames are charged 1500 IP bytes
        let got = run(st, (0..3).map(|i| frame(1514, i)).collect(), 5 * MS);
        std::fs::remove_file(path).unwrap();
        assert_eq!(got, vec![(0, MS), (1, 2 * MS), (2, 3 * MS)]);
    }

    #[test]
    fn delay_keeps_order_unless_reordering_is_allowed() {
        for (reorder, expect_sorted) in [("0", true), ("1", false)] {
            let st = stage("delay", &[("delay_ns", "5000000"), ("jitter_ns", "4000000"),
                                      ("dist", "normal"), ("reorder", reorder)]);
            let mut pool = Pool::new(2048);
            let (mut st, mut out, mut tags) = (st, Vec::new(), Vec::new());
            for i in 0..200u64 {
                st.push(frame(100, i as u8), i * MS / 10, &mut pool, &mut out);
                st.release(i * MS / 10, &mut out);
                tags.extend(out.drain(..).map(|p| p.buf[0]));
            }
            st.release(100 * MS, &mut out);
            tags.extend(out.drain(..).map(|p| p.buf[0]));
            assert_eq!(tags.len(), 200);
            let sorted = tags.windows(2).all(|w| w[1] == w[0].wrapping_add(1));
            assert_eq!(sorted, expect_sorted, "reorder={reorder}");
        }
    }

    #[test]
    fn gilbert_elliott_long_run_loss_matches_the_chain() {
        let mut st = stage("loss", &[("model", "gemodel"), ("p", "0.02"), ("r", "0.25"),
                                     ("1-h", "0.8"), ("1-k", "0.005")]);
        let mut pool = Pool::new(2048);
        let mut out = Vec::new();
        let n = 1_000_000;
        for _ in 0..n {
            st.push(frame(64, 0), 0, &mut pool, &mut out);
            out.clear();
        }
        // pi_B = p / (p + r); loss = pi_G (1-k) + pi_B (1-h)
        let pi_b = 0.02 / 0.27;
        let want = (1.0 - pi_b) * 0.005 + pi_b * 0.8;
        let got = st.counters.dropped_packets as f64 / n as f64;
        assert!((got - want).abs() < 0.03 * want, "{got} vs {want}");
    }

    #[test]
    fn outage_windows_repeat_with_their_period() {
        let st = stage("outage", &[("windows", "1000000:2000000"), ("period_ns", "10000000")]);
        if let Behaviour::Outage(o) = &st.behaviour {
            let down: Vec<bool> = [0, 1, 2, 3, 10, 11, 13].iter().map(|ms| o.down(ms * MS)).collect();
            assert_eq!(down, vec![false, true, true, false, false, true, false]);
        } else {
            panic!("not an outage stage");
        }
    }
}
