//! The subscriber: take samples until end-of-stream, --count distinct samples,
//! --duration from the first match or --idle-timeout (the Python probe's run_sub). The
//! receive time is taken in zenoh's callback, on its receive thread, as the C++ probes
//! take it in the data-available listener.

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use zenoh::sample::{Sample, SampleKind};
use zenoh::{Session, Wait};

use crate::options::Options;
use crate::publish::fmt_g;
use crate::session::{applied, read_session};
use crate::stream::{self, decode, now_ns, RecordWriter, END_OF_STREAM, WARMUP_FLAG};
use crate::types::Kind;

/// A received sample: (seq, t_send_ns, payload bytes) or None when it was not a linklab
/// sample of the type, and its receive time.
type Received = (Option<(u64, i64, u32)>, i64);

/// The callbacks hand samples and publishers' presence tokens over here; the receive
/// loop drains them.
#[derive(Default)]
struct Inbox {
    state: Mutex<(Vec<Received>, HashSet<String>)>,
    ready: Condvar,
}

impl Inbox {
    fn on_sample(&self, kind: Kind, sample: &Sample) {
        let t_recv = now_ns();
        let got = decode(kind, &sample.payload().to_bytes());
        self.state.lock().unwrap().0.push((got, t_recv));
        self.ready.notify_one();
    }

    fn on_token(&self, sample: &Sample) {
        let mut state = self.state.lock().unwrap();
        let key = sample.key_expr().to_string();
        if sample.kind() == SampleKind::Put {
            state.1.insert(key);
        } else {
            state.1.remove(&key);
        }
    }

    /// The samples handed over since the last call (waiting up to 50 ms for one), and
    /// the publishers present now.
    fn drain(&self) -> (Vec<Received>, usize) {
        let mut state = self.state.lock().unwrap();
        if state.0.is_empty() {
            state = self.ready.wait_timeout(state, Duration::from_millis(50)).unwrap().0;
        }
        (std::mem::take(&mut state.0), state.1.len())
    }
}

/// What the subscriber has received: counters, first and last receive time.
#[derive(Default)]
struct Reception {
    seen: HashSet<u64>,
    samples: u64,
    unique: u64,
    warm: u64,
    dups: u64,
    malformed: u64,
    t_first: i64,
    t_last: i64,
}

impl Reception {
    /// Counts (and records) one batch; true when it held the end of the stream.
    fn take(&mut self, got: Vec<Received>, records: &mut RecordWriter) -> bool {
        let mut end = false;
        for (item, t_recv) in got {
            let Some((seq, t_send, bytes)) = item else {
                self.malformed += 1;
                continue;
            };
            if seq == END_OF_STREAM {
                end = true;
                continue;
            }
            self.t_last = t_recv;
            if seq & WARMUP_FLAG != 0 {
                self.warm += 1;
                continue;
            }
            records.add(seq, t_send, t_recv, bytes);
            self.samples += 1;
            self.t_first = if self.t_first == 0 { t_recv } else { self.t_first };
            if self.seen.insert(seq) { self.unique += 1 } else { self.dups += 1 }
        }
        end
    }
}

/// Why the subscriber stops now (count, no_match, idle, duration), or "" to go on.
fn end_reason(o: &Options, r: &Reception, t0: i64, t_match: i64, now: i64,
              errors: &mut Vec<String>) -> &'static str {
    if o.count > 0 && r.unique >= o.count {
        return "count";
    }
    if t_match == 0 && r.samples == 0 {
        if (now - t0) as f64 > o.match_timeout_s * 1e9 {
            errors.push(format!("no publisher matched within {} s", fmt_g(o.match_timeout_s)));
            return "no_match";
        }
        return "";
    }
    let since = r.t_last.max(if t_match != 0 { t_match } else { t0 });
    if o.idle_timeout_s > 0.0 && (now - since) as f64 > o.idle_timeout_s * 1e9 {
        return "idle";
    }
    let from = if t_match != 0 { t_match } else { t0 };
    if o.duration_s > 0.0 && (now - from) as f64 > o.duration_s * 1e9 {
        return "duration";
    }
    ""
}

pub fn run_sub(session: &Session, o: &Options, summary: &mut Map<String, Value>,
               errors: &mut Vec<String>) -> Result<&'static str, String> {
    let mut records = RecordWriter::create(&o.records, false)
        .map_err(|e| format!("--records {}: {e}", o.records))?;
    let inbox = Arc::new(Inbox::default());
    let (on_sample, on_token, kind) = (inbox.clone(), inbox.clone(), o.kind());
    let subscriber = session.declare_subscriber(o.key())
        .callback(move |s| on_sample.on_sample(kind, &s)).wait().map_err(|e| e.to_string())?;
    let tokens = session.liveliness()
        .declare_subscriber(format!("linklab/presence/{}/pub/*", o.key()))
        .history(true).callback(move |s| on_token.on_token(&s)).wait()
        .map_err(|e| e.to_string())?;
    eprintln!("linklab-probe-zenoh: subscribed to '{}' ({})", o.key(), o.mode);
    let mut r = Reception::default();
    let (t0, mut t_match, mut max_matched, mut linked) = (now_ns(), 0, 0, false);
    let mut reason = "";
    while reason.is_empty() {
        if stream::stopped() {
            reason = "signal";
            break;
        }
        let (got, matched) = inbox.drain();
        if matched > 0 && t_match == 0 {
            t_match = now_ns();
        }
        max_matched = max_matched.max(matched);
        let any = !got.is_empty();
        let end = r.take(got, &mut records);
        if any && !linked {
            linked = read_session(session, applied(summary));
        }
        reason = if end { "end_of_stream" } else { end_reason(o, &r, t0, t_match, now_ns(), errors) };
    }
    drop(records);
    let _ = tokens.undeclare().wait();
    let _ = subscriber.undeclare().wait();
    report(&r, max_matched, o, summary, errors);
    if !linked {
        read_session(session, applied(summary));
    }
    Ok(reason)
}

fn report(r: &Reception, max_matched: usize, o: &Options, summary: &mut Map<String, Value>,
          errors: &mut Vec<String>) {
    let span = if r.samples > 1 { (r.t_last - r.t_first) as f64 / 1e9 } else { 0.0 };
    for (key, value) in [("samples", json!(r.samples)), ("unique_samples", json!(r.unique)),
                         ("duplicates", json!(r.dups)), ("warmup_samples", json!(r.warm)),
                         ("max_matched", json!(max_matched)),
                         ("malformed_samples", json!(r.malformed)),
                         ("receive_span_s", json!(span))] {
        summary.insert(key.into(), value);
    }
    if r.malformed > 0 {
        errors.push(format!("{} sample(s) on {} carried no linklab seq/send time (another \
                             publisher on the key?); they are not in the records",
                            r.malformed, o.key()));
    }
}
