//! The medium against hand-derived timings and against Bianchi's model.

use super::airtime::SLOT_NS;
use super::{Load, Medium, MediumSpec};
use crate::packet::{Packet, Pool};

const SECOND: u64 = 1_000_000_000;

fn spec(text: &str) -> MediumSpec {
    let words: Vec<&str> = text.split_whitespace().collect();
    MediumSpec::parse(&words, 1).unwrap()
}

/// An Ethernet frame of `len` bytes to a unicast (or group) address, tagged `tag`.
fn frame(len: usize, tag: u32, group: bool) -> Packet {
    let mut buf = vec![0u8; len.next_multiple_of(128)];
    buf[0] = group as u8;
    buf[14..18].copy_from_slice(&tag.to_le_bytes());
    Packet { buf, len }
}

fn tag(p: &Packet) -> u32 {
    u32::from_le_bytes(p.buf[14..18].try_into().unwrap())
}

/// Push `frames` at station a at `t0`, run until `until`: what reached b, with the time
/// of the advance that delivered it (the medium is advanced in 1 us steps near events).
fn run_a(medium: &mut Medium, frames: Vec<Packet>, t0: u64, until: u64) -> Vec<(u32, u64)> {
    let mut pool = Pool::new(2048);
    let (mut to_b, mut to_a, mut got) = (Vec::new(), Vec::new(), Vec::new());
    let mut input = frames;
    medium.advance(t0, &mut pool, &mut to_b, &mut to_a);
    medium.push(0, &mut input, t0, &mut pool);
    while let Some(t) = medium.next_due() {
        if t > until {
            break;
        }
        medium.advance(t, &mut pool, &mut to_b, &mut to_a);
        got.extend(to_b.drain(..).map(|p| (tag(&p), t)));
    }
    assert!(to_a.is_empty());
    got
}

#[test]
fn one_frame_on_an_idle_medium_takes_aifs_backoff_ppdu_sifs_ack() {
    // 802.11a 54 Mbit/s, DIFS (aifsn 2), the medium idle since 0: the backoff counts on
    // the slot grid 34 us + k x 9 us; the first boundary at or after 1 s is 1 s + 6 us
    // ((1e9 - 34000) / 9000 = 111107.3). Then b x 9 us + 248 us + 16 us + 28 us.
    let mut m = Medium::build(spec("standard=a width_mhz=20 mcs=7 aifsn=2"), 5, 0, [Load::NONE; 2]).unwrap();
    let t0 = SECOND;
    let got = run_a(&mut m, vec![frame(1514, 1, false)], t0, 2 * SECOND);
    assert_eq!(got.len(), 1);
    let backoff = got[0].1 - t0 - 6_000 - 248_000 - 16_000 - 28_000;
    assert!(backoff % SLOT_NS == 0 && backoff <= 15 * SLOT_NS, "backoff {backoff}");
    let c = &m.channel.stations[0].counters;
    assert_eq!((c.delivered_frames, c.transmissions, c.collisions), (1, 1, 0));
    assert_eq!(c.mac_delay.max, got[0].1 - t0);
}

#[test]
fn lost_mpdus_are_retransmitted_and_delivered_in_order() {
    // 802.11ac A-MPDUs with 30 % of MPDUs lost: every frame arrives, in order
    let mut m = Medium::build(spec("standard=ac per=0.3 retry_limit=100"), 11, 0, [Load::NONE; 2]).unwrap();
    let frames: Vec<Packet> = (0..500).map(|i| frame(1514, i, false)).collect();
    let got = run_a(&mut m, frames, 0, 10 * SECOND);
    let tags: Vec<u32> = got.iter().map(|&(t, _)| t).collect();
    assert_eq!(tags, (0..500).collect::<Vec<u32>>());
    let c = &m.channel.stations[0].counters;
    assert!(c.retries > 100, "retries {}", c.retries);
    assert!(m.channel.unicast_mpdus > 10 * m.channel.unicast_ppdus / 2, "aggregated");
    // held frames wait for the lost one before them: some leave together, later
    assert!(got.windows(2).any(|w| w[0].1 == w[1].1));
}

#[test]
fn a_frame_lost_every_time_is_dropped_after_the_retry_limit() {
    // per 1, retry_limit 3: 4 transmissions each, then dropped; CW doubles 15 -> 127,
    // and is reset at the drop
    let mut m = Medium::build(spec("standard=a width_mhz=20 per=1 retry_limit=3"), 2, 0, [Load::NONE; 2]).unwrap();
    let got = run_a(&mut m, (0..5).map(|i| frame(200, i, false)).collect(), 0, 10 * SECOND);
    assert!(got.is_empty());
    let st = &m.channel.stations[0];
    assert_eq!((st.counters.drops_retry, st.counters.transmissions, st.counters.retries), (5, 20, 15));
    assert_eq!(st.cw, 15);
    assert_eq!(st.queued(), 0);
}

#[test]
fn multicast_goes_at_6_mbps_once_without_ack() {
    // a 1500-B group frame (QoS header: 1538-B MPDU) at 6 Mbit/s: (16 + 12304 + 6) / 24
    // -> 514 symbols, 2076 us; no SIFS/ACK after it
    let mut m = Medium::build(spec("standard=ac multicast_per=0"), 3, 0, [Load::NONE; 2]).unwrap();
    let got = run_a(&mut m, vec![frame(1514, 9, true)], 0, SECOND);
    let aifs = 16_000 + 3 * SLOT_NS;
    let backoff = got[0].1 - aifs - 2_076_000;
    assert!(backoff % SLOT_NS == 0 && backoff <= 15 * SLOT_NS, "backoff {backoff}");
    // every group frame lost: sent once each, never retried, CW left at CWmin
    let mut m = Medium::build(spec("standard=ac multicast_per=1 cw_min=15"), 3, 0, [Load::NONE; 2]).unwrap();
    let got = run_a(&mut m, (0..10).map(|i| frame(300, i, true)).collect(), 0, SECOND);
    let st = &m.channel.stations[0];
    assert!(got.is_empty());
    assert_eq!((st.counters.transmissions, st.counters.multicast_lost, st.counters.retries), (10, 10, 0));
    assert_eq!(st.cw, 15);
}

#[test]
fn the_queue_drops_at_its_tail() {
    let mut m = Medium::build(spec("standard=a width_mhz=20 queue_packets=5"), 3, 0, [Load::NONE; 2]).unwrap();
    let got = run_a(&mut m, (0..20).map(|i| frame(1000, i, false)).collect(), 0, SECOND);
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
    assert_eq!(m.channel.stations[0].counters.drops_queue, 15);
}

fn simulate(text: &str, seed: u64, a: Load, seconds: f64) -> String {
    super::simulate::run(spec(text), seed, [a, Load::NONE], seconds).unwrap()
}

fn number(json: &str, key: &str) -> f64 {
    let at = json.find(&format!("\"{key}\":")).unwrap_or_else(|| panic!("{key} in {json}")) + key.len() + 3;
    json[at..].split([',', '}']).next().unwrap().parse().unwrap()
}

#[test]
fn the_same_file_gives_the_same_json() {
    let text = "standard=ac bg_stations=3 bg_load_bps=20000000 per=0.1";
    let a = Load { bps: 50e6, frame_bytes: 1200 };
    assert_eq!(simulate(text, 4, a, 0.5), simulate(text, 4, a, 0.5));
    assert_ne!(simulate(text, 4, a, 0.5), simulate(text, 5, a, 0.5));
}

#[test]
fn aggregation_carries_more_and_stations_collide_more() {
    let saturated = Load { bps: f64::INFINITY, frame_bytes: 1500 };
    let one = number(&simulate("standard=ac ampdu_frames=1", 1, saturated, 0.5), "throughput_bps");
    let many = number(&simulate("standard=ac ampdu_frames=64", 1, saturated, 0.5), "throughput_bps");
    assert!(many > 3.0 * one, "{one} -> {many}");
    // 802.11ac 80 MHz MCS 7 1 stream (292.5 Mbit/s PHY): above 200 Mbit/s of IP
    assert!(many > 200e6 && many < 292.5e6, "{many}");
    let p2 = number(&simulate("standard=ac bg_stations=1 bg_load_bps=inf", 1, saturated, 0.5), "collision_probability");
    let p8 = number(&simulate("standard=ac bg_stations=7 bg_load_bps=inf", 1, saturated, 0.5), "collision_probability");
    assert!(p8 > p2 && p2 > 0.0, "{p2} {p8}");
}

// ------------------------------------------------------------- Bianchi ------

/// Bianchi Eq. 7 (JSAC 2000): tau(p) with W = CWmin + 1, m backoff stages; at p = 1/2
/// its limit 2 / (W + 1 + m W / 2).
fn tau_of(p: f64, w: f64, m: i32) -> f64 {
    if (1.0 - 2.0 * p).abs() < 1e-9 {
        return 2.0 / (w + 1.0 + m as f64 * w / 2.0);
    }
    2.0 * (1.0 - 2.0 * p) / ((1.0 - 2.0 * p) * (w + 1.0) + p * w * (1.0 - (2.0 * p).powi(m)))
}

/// Saturation throughput (bit/s) of n stations, Eq. 7 and 9 solved by bisection on p,
/// then Eq. 13: S = P_s P_tr E[P] / ((1 - P_tr) sigma + P_tr P_s T_s + P_tr (1 - P_s) T_c).
/// Returns (S, p).
fn bianchi(n: i32, payload_bits: f64, t_s: f64, t_c: f64) -> (f64, f64) {
    let (w, m, sigma) = (16.0, 6, SLOT_NS as f64); // CW 15..1023: 2^6 x 16 = 1024
    let p = if n == 1 {
        0.0
    } else {
        let (mut low, mut high) = (0.0, 1.0);
        for _ in 0..200 {
            let mid = (low + high) / 2.0;
            if 1.0 - (1.0 - tau_of(mid, w, m)).powi(n - 1) - mid > 0.0 {
                low = mid;
            } else {
                high = mid;
            }
        }
        (low + high) / 2.0
    };
    let tau = tau_of(p, w, m);
    let p_tr = 1.0 - (1.0 - tau).powi(n);
    let p_s = n as f64 * tau * (1.0 - tau).powi(n - 1) / p_tr;
    let slot = (1.0 - p_tr) * sigma + p_tr * p_s * t_s + p_tr * (1.0 - p_s) * t_c;
    (p_s * p_tr * payload_bits / slot * 1e9, p)
}

#[test]
fn saturation_throughput_agrees_with_bianchi() {
    // 802.11a 54 Mbit/s, DIFS, CW 15..1023, no errors, no retry limit in effect, n
    // saturated stations of 1500-B IP packets. PPDU 248 us, ACK 28 us (airtime.rs).
    let (ppdu, sifs, ack, difs) = (248_000.0, 16_000.0, 28_000.0, 34_000.0);
    let t_s = ppdu + sifs + ack + difs;
    // the collision as simulated (contention.rs): PPDU + ACK timeout (SIFS + ACK + slot)
    // + DIFS; Bianchi's own basic-access T_c is PPDU + DIFS
    let t_c_simulated = ppdu + sifs + ack + SLOT_NS as f64 + difs;
    let t_c_bianchi = ppdu + difs;
    for n in [1, 2, 5, 10, 20] {
        let text = format!("standard=a width_mhz=20 mcs=7 aifsn=2 cw_min=15 cw_max=1023 per=0 retry_limit=1000000 \
                            bg_stations={n} bg_load_bps=inf bg_frame_bytes=1500");
        let json = simulate(&text, 42, Load::NONE, 20.0);
        let got = number(&json, "throughput_bps");
        let p_got = number(&json, "collision_probability");
        let (want, p_want) = bianchi(n, 8.0 * 1500.0, t_s, t_c_simulated);
        let (paper, _) = bianchi(n, 8.0 * 1500.0, t_s, t_c_bianchi);
        let error = (got - want) / want;
        eprintln!(
            "n={n:2}: simulated {:.3} Mbit/s, Bianchi (T_c as simulated) {:.3} ({:+.2} %), Bianchi (T_c = PPDU + DIFS) {:.3} ({:+.2} %); p {:.4} vs {:.4}",
            got / 1e6, want / 1e6, 100.0 * error, paper / 1e6, 100.0 * (got - paper) / paper, p_got, p_want
        );
        assert!(error.abs() < 0.05, "n={n}: {got} vs {want}");
        assert!((p_got - p_want).abs() < 0.03, "n={n}: p {p_got} vs {p_want}");
    }
}

#[test]
fn steps_change_the_robot_and_ap_channel_during_the_run_and_not_the_background() {
    // 802.11ac 80 MHz: MCS 9 (390 Mbit/s) until 0.4 s, MCS 0 (29.3 Mbit/s) until 0.7 s,
    // then MCS 0 with every MPDU lost: station a (saturated) carries far less after the
    // first step and nothing after the second, while the background station keeps the
    // medium line's MCS 9 and loses nothing.
    let mut s = spec("standard=ac width_mhz=80 mcs=9 bg_stations=1 bg_load_bps=inf");
    for line in ["at_ns=400000000 mcs=0 per=0 multicast_per=0", "at_ns=700000000 mcs=0 per=1 multicast_per=1"] {
        s.add_step(&line.split_whitespace().collect::<Vec<_>>(), 2).unwrap();
    }
    let saturated = Load { bps: f64::INFINITY, frame_bytes: 1500 };
    let mut m = Medium::build(s, 3, 0, [saturated, Load::NONE]).unwrap();
    let (mut pool, mut to_b, mut to_a) = (Pool::new(64), Vec::new(), Vec::new());
    let mut at = |m: &mut Medium, t: u64| {
        m.advance(t, &mut pool, &mut to_b, &mut to_a);
        to_b.clear();
        let c = |i: usize| m.channel.stations[i].counters.delivered_bytes;
        (c(0), c(2))
    };
    let (a0, bg0) = at(&mut m, 400_000_000);
    let (a1, _) = at(&mut m, 700_000_000);
    let (a2, bg2) = at(&mut m, 710_000_000); // an exchange begun before 0.7 s may end after
    let (a3, bg3) = at(&mut m, SECOND);
    let rate = |bytes: u64, seconds: f64| 8.0 * bytes as f64 / seconds;
    let (fast, slow) = (rate(a0, 0.4), rate(a1 - a0, 0.3));
    assert!(fast > 5.0 * slow && slow > 5e6, "{fast} then {slow} bit/s");
    assert_eq!(a3, a2, "delivered with every MPDU lost");
    assert!(bg3 - bg2 > 0 && bg0 > 0);
    assert_eq!(m.channel.stations[2].counters.drops_retry, 0);
    let json = m.json(SECOND);
    assert!(json.contains("\"link\":{\"mcs\":0,\"per\":1,\"multicast_per\":1,\"steps_applied\":2,\"steps\":2}"), "{json}");
}

/// A star's medium from `t0`: run until `until`, advancing at every event; what each
/// robot's side a received (tags) and what reached the AP's side b from each robot.
fn run_star(m: &mut Medium, robots: usize, until: u64) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let mut pool = Pool::new(2048);
    let mut to_b: Vec<Vec<Packet>> = (0..robots).map(|_| Vec::new()).collect();
    let mut to_a: Vec<Vec<Packet>> = (0..robots).map(|_| Vec::new()).collect();
    let (mut at_a, mut at_b) = (vec![Vec::new(); robots], vec![Vec::new(); robots]);
    while let Some(t) = m.next_due() {
        if t > until {
            break;
        }
        m.advance_links(t, &mut pool, &mut to_b, &mut to_a);
        for k in 0..robots {
            at_a[k].extend(to_a[k].drain(..).map(|p| tag(&p)));
            at_b[k].extend(to_b[k].drain(..).map(|p| tag(&p)));
        }
    }
    (at_a, at_b)
}

/// `n` unicast frames of 1514 bytes for (or from) robot k, tagged k << 16 | i.
fn robots_frames(k: usize, n: u32) -> Vec<Packet> {
    (0..n).map(|i| frame(1514, (k as u32) << 16 | i, false)).collect()
}

#[test]
fn a_star_ap_delivers_each_robots_frames_to_it_in_order_and_a_lost_frame_holds_no_other_robot() {
    // 802.11ac, three robots; each MPDU lost with 30 % and retried (limit 100, so none is
    // dropped): the AP's frames for each robot reach that robot and no other, in order,
    // although a lost frame to one robot is retried while the others' go on.
    let mut m = Medium::build_star(spec("standard=ac per=0.3 retry_limit=100"), 11, 0, [Load::NONE; 2], 3).unwrap();
    let mut pool = Pool::new(2048);
    for k in 0..3usize {
        m.push_down(k, &mut robots_frames(k, 200), 0, &mut pool);
    }
    let (at_a, at_b) = run_star(&mut m, 3, SECOND);
    for (k, got) in at_a.iter().enumerate() {
        let want: Vec<u32> = (0..200).map(|i| (k as u32) << 16 | i).collect();
        assert_eq!(got, &want, "robot {k}");
        assert!(at_b[k].is_empty());
    }
    let ap = &m.channel.stations[3];
    assert_eq!(ap.name, "b");
    assert_eq!((ap.counters.delivered_to.clone(), ap.counters.dropped_to.clone()), (vec![200; 3], vec![0; 3]));
    // an A-MPDU has one receiver: the AP served its three queues in turn, so it sent at
    // least one PPDU per robot and more MPDUs than PPDUs
    assert!(ap.counters.transmissions >= 3 && ap.counters.mpdus_sent > ap.counters.transmissions);
    let names: Vec<&str> = m.channel.stations.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a", "a2", "a3", "b"]);
}

#[test]
fn a_star_ap_sends_a_group_frame_once_for_every_robot_that_its_bridge_copied_it_to() {
    // the bridge floods a group frame to each robot's port: the AP gets three copies at
    // once and sends one PPDU, which each robot receives on its own (multicast_per 0.5:
    // some robots miss it, never retried); a copy that differs is a frame of its own
    let mut m = Medium::build_star(spec("standard=ac multicast_per=0.5"), 5, 0, [Load::NONE; 2], 3).unwrap();
    let mut pool = Pool::new(2048);
    for i in 0..100u32 {
        for k in 0..3usize {
            let mut copy = vec![frame(300, i, true)];
            m.push_down(k, &mut copy, i as u64 * 2_000_000, &mut pool);
        }
        let (_, _) = run_star(&mut m, 3, i as u64 * 2_000_000 + 1_900_000);
    }
    let ap = &m.channel.stations[3];
    let c = &ap.counters;
    assert_eq!((c.offered_frames, c.multicast_merged, c.transmissions), (100, 200, 100));
    let missed: u64 = c.dropped_to.iter().sum();
    assert_eq!(missed, c.multicast_lost);
    let got: u64 = c.delivered_to.iter().sum();
    assert_eq!(got + missed, 300);
    assert!((100..200).contains(&missed), "missed {missed} of 300 at multicast_per 0.5");
    // different bytes: not a copy; the same robot twice: a second frame, not a copy
    let mut m = Medium::build_star(spec("standard=ac"), 5, 0, [Load::NONE; 2], 2).unwrap();
    m.push_down(0, &mut vec![frame(300, 1, true)], 0, &mut pool);
    m.push_down(1, &mut vec![frame(300, 2, true)], 0, &mut pool);
    m.push_down(0, &mut vec![frame(300, 1, true)], 0, &mut pool);
    let (at_a, _) = run_star(&mut m, 2, SECOND);
    assert_eq!(at_a, vec![vec![1, 1], vec![2]]);
    assert_eq!(m.channel.stations[2].counters.multicast_merged, 0);
}

#[test]
fn a_star_ap_sends_a_robot_only_the_unicast_frames_addressed_to_it() {
    // the AP's bridge floods a frame for an address it has not learnt to every robot
    // port; the AP sends it to the robot it is addressed to only (its association)
    let mut m = Medium::build_star(spec("standard=ac"), 5, 0, [Load::NONE; 2], 2).unwrap();
    let mut pool = Pool::new(2048);
    let addressed = |to: u8, t: u32| {
        let mut p = frame(300, t, false);
        p.buf[..6].copy_from_slice(&[2, 0, 0, 0, 0, to]);
        p
    };
    m.set_robot_mac(0, Some([2, 0, 0, 0, 0, 1]));
    m.set_robot_mac(1, Some([2, 0, 0, 0, 0, 2]));
    m.push_down(0, &mut vec![addressed(1, 10), addressed(2, 11)], 0, &mut pool);
    m.push_down(1, &mut vec![addressed(1, 20), addressed(2, 21)], 0, &mut pool);
    // robot 2's address changes: learnt from its own frames
    let mut moved = frame(300, 30, false);
    moved.buf[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
    m.push_up(1, &mut vec![moved], 0, &mut pool);
    m.push_down(1, &mut vec![addressed(9, 22), addressed(2, 23)], 0, &mut pool);
    let (at_a, at_b) = run_star(&mut m, 2, SECOND);
    assert_eq!(at_a, vec![vec![10], vec![21, 22]]);
    assert_eq!(at_b, vec![vec![], vec![30]]);
    assert_eq!(m.channel.stations[2].counters.not_addressed, 3);
}

#[test]
fn a_stars_robots_contend_and_share_the_channel() {
    // three robots, each handed 2000 of the relay's frames at once: they contend and
    // collide with each other, each gets every frame through, and together they take as
    // long as one channel needs for all 6000
    let mut m = Medium::build_star(spec("standard=a width_mhz=20 queue_packets=5000"), 9, 0, [Load::NONE; 2], 3).unwrap();
    let mut pool = Pool::new(2048);
    for k in 0..3usize {
        m.push_up(k, &mut robots_frames(k, 2000), 0, &mut pool);
    }
    let (at_a, at_b) = run_star(&mut m, 3, 10 * SECOND);
    for k in 0..3 {
        assert_eq!(at_b[k].len(), 2000, "robot {k}");
        assert!(at_a[k].is_empty());
        let c = &m.channel.stations[k].counters;
        assert!(c.collisions > 0 && c.delivered_frames == 2000);
    }
    // 6000 frames of 1500 B at ~29.6 Mbit/s of one channel: ~2.4 s, not 0.8 s
    let last = m.channel.stations[..3].iter().map(|s| s.counters.mac_delay.max).max().unwrap();
    assert!(last > 2 * SECOND, "{last}");
}
