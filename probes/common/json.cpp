// linklab probe common parts: the JSON the summary is written in (see probe.hpp).
#include "probe.hpp"

#include <cmath>
#include <cstdio>

namespace linklab {

// ---- JSON ----------------------------------------------------------------------------
Json& Json::set(const std::string& key, Json value) {
  if (t_ != T::Obj) { t_ = T::Obj; obj_.clear(); }
  for (auto& kv : obj_)
    if (kv.first == key) { kv.second = std::move(value); return *this; }
  obj_.emplace_back(key, std::move(value));
  return *this;
}

Json& Json::push(Json value) {
  if (t_ != T::Arr) { t_ = T::Arr; arr_.clear(); }
  arr_.push_back(std::move(value));
  return *this;
}

static void dump_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += char(c);
        }
    }
  }
  out += '"';
}

std::string Json::dump() const {
  std::string out;
  switch (t_) {
    case T::Null: return "null";
    case T::Bool: return b_ ? "true" : "false";
    case T::Int: return std::to_string(i_);
    case T::UInt: return std::to_string(u_);
    case T::Num: {
      if (!std::isfinite(d_)) return "null";
      char b[32];
      std::snprintf(b, sizeof b, "%.12g", d_);
      return b;
    }
    case T::Str: dump_string(out, s_); return out;
    case T::Arr:
      out += '[';
      for (size_t i = 0; i < arr_.size(); ++i) out += (i ? ", " : "") + arr_[i].dump();
      out += ']';
      return out;
    case T::Obj:
      out += '{';
      for (size_t i = 0; i < obj_.size(); ++i) {
        if (i) out += ", ";
        dump_string(out, obj_[i].first);
        out += ": " + obj_[i].second.dump();
      }
      out += '}';
      return out;
  }
  return "null";
}

}  // namespace linklab
