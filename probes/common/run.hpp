// What a probe's run reports back to probe_main (probe.cpp), and the publisher's run
// (publish.cpp). Internal to probes/common: middlewares see probe.hpp only.
#pragma once

#include "probe.hpp"

#include <string>

namespace linklab {

struct Outcome {
  Json summary = Json::object();
  Json errors = Json::array();
  std::string end_reason;
};

// Create an empty file (the discovery gate's ready files); false if it cannot be made.
bool touch_file(const std::string& path);

// pub: wait for the readers and the runner's go, publish, send the end-of-stream marker
// and wait for acknowledgements; the counts go into out.summary.
void run_pub(const Options& o, Publisher& pub, Outcome& out);

}  // namespace linklab
