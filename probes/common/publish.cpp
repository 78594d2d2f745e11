// The publisher's run (see probe.hpp for the contract): wait for the readers and the
// runner's go, publish at the rate, end the stream and wait for acknowledgements.
#include "probe.hpp"
#include "run.hpp"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>

namespace linklab {

namespace {

// Wait for the subscribers (discovery), then for the readers to have matched this writer
// too (best-effort samples to an unmatched reader are lost): the runner's go, or a 1 s
// settle without one. With the runner's gate (--start-file) the go also ends this wait:
// the runner gives it when every endpoint matched, or when it stopped waiting for the
// ones that did not (its row names them), and the writer then serves the readers it has
// (none: no_match). So a reader that never matches does not stop the others' stream.
// Without a gate, --match-timeout ends the wait.
// The readers matched; nothing when the run ends here (out says why).
std::optional<int> wait_for_readers(const Options& o, Publisher& pub, int64_t t0, Outcome& out) {
  const bool gated = !o.start_file.empty();
  const double give_up_s = gated ? o.match_timeout_s + 5 : o.match_timeout_s;
  int matched = 0;
  bool go_before_all = false;
  while ((matched = pub.matched()) < o.subscribers) {
    if (stop_requested()) { out.end_reason = "signal"; return std::nullopt; }
    if (gated && access(o.start_file.c_str(), F_OK) == 0) {
      go_before_all = true;
      matched = pub.matched();
      break;
    }
    if (now_ns() - t0 > int64_t(give_up_s * 1e9)) {
      out.errors.push("no subscriber matched within " + Json(give_up_s).dump() +
                      " s (matched " + std::to_string(matched) + " of " +
                      std::to_string(o.subscribers) + ")");
      out.end_reason = "no_match";
      return std::nullopt;
    }
    sleep_ns(10000000);
  }
  out.summary.set("match_wait_s", double(now_ns() - t0) / 1e9);
  out.summary.set("matched_readers", matched);
  if (go_before_all && matched == 0) {
    out.errors.push("no subscriber matched before the runner's go (matched 0 of " +
                    std::to_string(o.subscribers) + ")");
    out.end_reason = "no_match";
    return std::nullopt;
  }
  if (!go_before_all && !o.ready_file.empty() && !touch_file(o.ready_file))
    out.errors.push("cannot create --ready-file " + o.ready_file);
  return matched;
}

// With the runner's gate every reader and writer has matched when the go comes (or the
// runner stopped waiting for some): start on it, so the runner knows when the first sample leaves (an outage is timed from it).
// Without the gate, settle 1 s instead. False when the run ends here (out says why).
bool wait_for_go(const Options& o, int64_t t0, Outcome& out) {
  if (o.start_file.empty()) sleep_ns(1000000000);
  if (!o.start_file.empty()) {
    // the runner's go: every subscriber's reader has matched a writer (or the runner gave up
    // waiting and says why in the cell's row)
    int64_t t1 = now_ns();
    while (access(o.start_file.c_str(), F_OK) != 0) {
      if (stop_requested()) { out.end_reason = "signal"; return false; }
      if (now_ns() - t0 > int64_t((o.match_timeout_s + 5) * 1e9)) {
        out.errors.push("no go from the runner (--start-file " + o.start_file + ") within " +
                        Json(o.match_timeout_s + 5).dump() + " s of starting");
        out.end_reason = "no_match";
        return false;
      }
      sleep_ns(5000000);
    }
    out.summary.set("start_wait_s", double(now_ns() - t1) / 1e9);
  }
  return true;
}

// What the stream sent: warm-up and measured samples, failed writes, first and last send.
struct Stream {
  uint64_t warm = 0, sent = 0, failures = 0;
  int64_t t_first = 0, t_last = 0;
};

void publish_warmup(const Options& o, Publisher& pub, Pacer& pacer, Stream& s) {
  int64_t warm_end = now_ns() + int64_t(o.warmup_s * 1e9);
  while (o.warmup_s > 0 && now_ns() < warm_end && pacer.wait_next()) {
    if (!pub.write(WARMUP_FLAG | s.warm, now_ns())) ++s.failures;
    ++s.warm;
  }
}

// The measured samples, until --count, --duration or a signal; each one sent is recorded.
void publish_samples(const Options& o, Publisher& pub, Pacer& pacer, RecordWriter* rec,
                     int matched, Stream& s, Outcome& out) {
  int64_t t_start = now_ns();
  log("linklab probe: publishing (matched %d)", matched);
  out.end_reason = o.count ? "count" : "duration";
  for (uint64_t seq = 0; o.count == 0 || seq < o.count; ++seq) {
    if (!pacer.wait_next()) break;
    int64_t t = now_ns();
    if (o.duration_s > 0 && t - t_start >= int64_t(o.duration_s * 1e9)) { out.end_reason = "duration"; break; }
    if (pub.write(seq, t)) {
      if (rec) rec->add(seq, t, 0, o.size);
      ++s.sent;
      if (!s.t_first) s.t_first = t;
      s.t_last = t;
    } else {
      ++s.failures;
    }
  }
}

// Tell the subscribers we are done, then give reliable delivery time to finish; whether
// every sample was acknowledged within --linger.
bool end_stream(const Options& o, Publisher& pub, Pacer& pacer) {
  // The marker goes out one publish interval after the last sample, as a next sample
  // would: a KEEP_LAST 1 reader (ROS 2 system_default on Fast DDS) would otherwise
  // have the last sample replaced by the marker before its listener took it (seen:
  // 19 of 20 on a clean veth).
  pacer.wait_next();
  // The marker may meet a full history (a write blocked past max_blocking_time
  // fails): retry within the linger time. Best effort: send it three times.
  int64_t linger_end = now_ns() + int64_t(o.linger_s * 1e9);
  int sent_marks = 0;
  while (sent_marks < (o.reliable.value_or(true) ? 1 : 3) && now_ns() < linger_end && !stop_requested()) {
    if (pub.write(END_OF_STREAM, now_ns())) ++sent_marks;
    else sleep_ns(10000000);
    if (sent_marks && !o.reliable.value_or(true)) sleep_ns(20000000);
  }
  // Wait in slices: a runner that stops the probe (SIGINT) while a reader is gone but
  // not yet unmatched (its goodbye lost on a lossy link, a long lease) must still get
  // the summary. One blocking wait of the whole linger ran past the runner's SIGINT
  // grace and was killed, losing warmup_samples (and with it the wire bytes' divisor).
  bool acked = false;
  do {
    const double left = double(linger_end - now_ns()) / 1e9;
    acked = pub.wait_acknowledged(left > 0 ? std::min(left, 0.1) : 0.0);
  } while (!acked && now_ns() < linger_end && !stop_requested());
  return acked;
}

}  // namespace

void run_pub(const Options& o, Publisher& pub, Outcome& out) {
  std::unique_ptr<RecordWriter> rec;
  if (!o.records.empty()) {
    rec = std::make_unique<RecordWriter>(o.records, Role::Pub, o.count);
    if (!rec->ok()) { out.errors.push("cannot write records file " + o.records); out.end_reason = "error"; return; }
  }
  int64_t t0 = now_ns();
  std::optional<int> matched = wait_for_readers(o, pub, t0, out);
  if (!matched || !wait_for_go(o, t0, out)) return;

  // Readers that unmatch while the writer publishes (a discovery lease expired in an
  // outage, a reader that left): the writer drops each with what it had not acknowledged.
  const int ever_at_go = pub.matched_ever(), now_at_go = pub.matched();
  Pacer pacer(o.rate_hz);
  Stream s;
  publish_warmup(o, pub, pacer, s);
  publish_samples(o, pub, pacer, rec.get(), *matched, s, out);
  if (stop_requested()) out.end_reason = "signal";
  if (rec) rec->flush();
  if (ever_at_go >= 0) {  // at the last sample, before the end-of-stream marker and linger
    const int ever = pub.matched_ever(), now = pub.matched();
    out.summary.set("readers_unmatched_while_publishing", (ever - now) - (ever_at_go - now_at_go));
    out.summary.set("readers_matched_while_publishing", ever - ever_at_go);
  }
  const bool acked = stop_requested() ? true : end_stream(o, pub, pacer);
  out.summary.set("warmup_samples", s.warm);
  out.summary.set("write_failures", s.failures);
  out.summary.set("skipped_deadlines", pacer.skipped());
  out.summary.set("publish_span_s", s.sent > 1 ? double(s.t_last - s.t_first) / 1e9 : 0.0);
  out.summary.set("acknowledged", acked);
  out.summary.set("samples", s.sent);
}

}  // namespace linklab
