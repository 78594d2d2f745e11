//! The publisher: declare, wait for a subscriber, settle, warm up, publish --count
//! samples (or --duration) at --rate, end the stream (the Python probe's run_pub).

use serde_json::{json, Map, Value};
use zenoh::liveliness::LivelinessToken;
use zenoh::pubsub::Publisher;
use zenoh::qos::{CongestionControl, Reliability};
use zenoh::{Session, Wait};

use crate::options::Options;
use crate::session::{applied, read_session, ros_qos};
use crate::stream::{self, now_ns, Pacer, RecordWriter, Sample, END_OF_STREAM, WARMUP_FLAG};

/// What the Python probe reports for a zenoh enum: its member's name (BLOCK,
/// BEST_EFFORT, DATA), here from the Rust variant's (Block, BestEffort, Data).
fn member_name(value: impl std::fmt::Debug) -> String {
    let mut out = String::new();
    for (i, c) in format!("{value:?}").chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// (publisher, its presence token, whether it is reliable): the QoS read back from the
/// declared publisher into applied. --qos, else ROS 2's reliable, else (with
/// --system-default) nothing, so zenoh's own defaults apply.
fn declare<'a>(session: &'a Session, o: &Options, applied: &mut Map<String, Value>)
               -> zenoh::Result<(Publisher<'a>, LivelinessToken, bool)> {
    let mut builder = session.declare_publisher(o.key());
    let reliable = o.reliable.or(if o.system_default { None } else { Some(true) });
    if let Some(reliable) = reliable {
        builder = builder
            .congestion_control(if reliable { CongestionControl::Block }
                                else { CongestionControl::Drop })
            .reliability(if reliable { Reliability::Reliable } else { Reliability::BestEffort });
    }
    let publisher = builder.wait()?;
    let token = session.liveliness()
        .declare_token(format!("linklab/presence/{}/pub/{}", o.key(), session.zid()))
        .wait()?;
    let reliable = publisher.reliability() == Reliability::Reliable;
    applied.insert("congestion_control".into(), json!(member_name(publisher.congestion_control())));
    applied.insert("reliability".into(), json!(member_name(publisher.reliability())));
    applied.insert("priority".into(), json!(member_name(publisher.priority())));
    let read_back = if reliable { "reliable" } else { "best_effort" };
    applied.insert("ros_qos".into(), ros_qos("pub", Some(read_back)));
    Ok((publisher, token, reliable))
}

/// Waits until a subscriber matches: "" then, else the end reason (signal, no_match).
fn wait_for_subscriber(publisher: &Publisher, o: &Options, summary: &mut Map<String, Value>,
                       errors: &mut Vec<String>) -> &'static str {
    let t0 = now_ns();
    // zenoh's matching status says whether any subscriber matches (not how many)
    while !publisher.matching_status().wait().is_ok_and(|s| s.matching()) {
        if stream::stopped() {
            return "signal";
        }
        if (now_ns() - t0) as f64 > o.match_timeout_s * 1e9 {
            errors.push(format!("no subscriber matched within {} s (matched 0 of {})",
                                fmt_g(o.match_timeout_s), o.subscribers));
            return "no_match";
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    summary.insert("match_wait_s".into(), json!((now_ns() - t0) as f64 / 1e9));
    ""
}

/// Python's "{:g}" for the timeouts a message names (whole seconds print without ".0").
pub fn fmt_g(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{}", v as i64) } else { format!("{v}") }
}

fn put(publisher: &Publisher, sample: &Sample) -> bool {
    publisher.put(sample.bytes().to_vec()).wait().is_ok()
}

/// The warm-up samples (seq bit 63) for --warmup; returns how many were sent.
fn warm_up(o: &Options, sample: &mut Sample, publisher: &Publisher, pacer: &mut Pacer) -> u64 {
    let mut warm = 0;
    let end = now_ns() + (o.warmup_s * 1e9) as i64;
    while o.warmup_s > 0.0 && now_ns() < end && pacer.wait_next() {
        sample.stamp(WARMUP_FLAG | warm, now_ns());
        put(publisher, sample);
        warm += 1;
    }
    warm
}

struct Published {
    reason: &'static str,
    sent: u64,
    failures: u64,
    span_s: f64,
}

/// The measured stream: --count samples or --duration, paced.
fn publish(o: &Options, sample: &mut Sample, publisher: &Publisher, pacer: &mut Pacer,
           records: &mut RecordWriter) -> Published {
    let mut p = Published { reason: if o.count > 0 { "count" } else { "duration" }, sent: 0,
                            failures: 0, span_s: 0.0 };
    let (t_start, mut t_first, mut t_last) = (now_ns(), 0, 0);
    let mut seq = 0u64;
    while o.count == 0 || seq < o.count {
        if !pacer.wait_next() {
            break;
        }
        let t = now_ns();
        if o.duration_s > 0.0 && (t - t_start) as f64 >= o.duration_s * 1e9 {
            p.reason = "duration";
            break;
        }
        sample.stamp(seq, t);
        if put(publisher, sample) {
            records.add(seq, t, 0, o.size);
            p.sent += 1;
            t_first = if t_first == 0 { t } else { t_first };
            t_last = t;
        } else {
            p.failures += 1; // counted like a failed DDS write
        }
        seq += 1;
    }
    p.span_s = if p.sent > 1 { (t_last - t_first) as f64 / 1e9 } else { 0.0 };
    p
}

/// The end-of-stream sample (three times when best effort), then a moment to drain.
fn end_stream(o: &Options, sample: &mut Sample, publisher: &Publisher, reliable: bool) {
    for _ in 0..if reliable { 1 } else { 3 } {
        sample.stamp(END_OF_STREAM, now_ns());
        put(publisher, sample);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // zenoh has no per-sample acknowledgement; give the transport a moment to drain
    // (bounded by --linger) before the session closes
    std::thread::sleep(std::time::Duration::from_secs_f64(o.linger_s.min(0.5)));
}

pub fn run_pub(session: &Session, o: &Options, summary: &mut Map<String, Value>,
               errors: &mut Vec<String>) -> Result<&'static str, String> {
    let mut sample = Sample::new(o.kind(), o.size); // built before matching: not timed
    let (publisher, token, reliable) =
        declare(session, o, applied(summary)).map_err(|e| e.to_string())?;
    let mut records = RecordWriter::create(&o.records, true)
        .map_err(|e| format!("--records {}: {e}", o.records))?;
    let unmatched = wait_for_subscriber(&publisher, o, summary, errors);
    let reason = if !unmatched.is_empty() {
        unmatched
    } else {
        read_session(session, applied(summary)); // while the subscriber is surely connected
        if stream::stop_wait(1.0) { // settle, as the C++ probes do
            "signal"
        } else {
            stream_samples(o, &mut sample, &publisher, &mut records, reliable, summary)
        }
    };
    drop(records);
    let _ = token.undeclare().wait();
    let _ = publisher.undeclare().wait();
    Ok(reason)
}

fn stream_samples(o: &Options, sample: &mut Sample, publisher: &Publisher,
                  records: &mut RecordWriter, reliable: bool,
                  summary: &mut Map<String, Value>) -> &'static str {
    let mut pacer = Pacer::new(o.rate_hz);
    let warm = warm_up(o, sample, publisher, &mut pacer);
    let p = publish(o, sample, publisher, &mut pacer, records);
    let reason = if stream::stopped() {
        "signal"
    } else {
        end_stream(o, sample, publisher, reliable);
        p.reason
    };
    for (key, value) in [("warmup_samples", json!(warm)), ("write_failures", json!(p.failures)),
                         ("skipped_deadlines", json!(pacer.skipped)),
                         ("publish_span_s", json!(p.span_s)), ("acknowledged", Value::Null),
                         ("samples", json!(p.sent))] {
        summary.insert(key.into(), value);
    }
    reason
}
