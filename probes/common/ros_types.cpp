// ROS 2's standard message types in the probes (see ros_types.hpp for the contract).
#include "ros_types.hpp"

#include <cstring>

namespace linklab::ros {

bool is_ros_kind(TypeKind kind) {
  return kind == TypeKind::Image || kind == TypeKind::PointCloud2 || kind == TypeKind::String ||
         kind == TypeKind::UInt8MultiArray;
}

ImageGeometry image_geometry(uint32_t n) {
  uint32_t h = 1;
  for (uint64_t d = 1; kImageChannels * d * d <= n; ++d)
    if (n % d == 0) h = uint32_t(d);
  uint32_t step = n / h;
  return {h, step / kImageChannels, step};
}

std::string size_refusal(TypeKind kind, uint32_t n) {
  switch (kind) {
    case TypeKind::PointCloud2:
      if (n % kPointStep)
        return "PointCloud2 carries whole 16-byte points (x, y, z, intensity as float32): expected a multiple of 16 "
               "bytes, got " + std::to_string(n);
      return "";
    case TypeKind::String:
      if (n < kStringHead)
        return "String carries its seq and send time in its first 32 characters: expected at least 32 bytes, got " +
               std::to_string(n);
      return "";
    case TypeKind::UInt8MultiArray:
      if (n < kArrayHead)
        return "UInt8MultiArray carries its seq and send time in its first 16 octets: expected at least 16 bytes, "
               "got " + std::to_string(n);
      return "";
    default:
      return "";
  }
}

void split_stamp(int64_t t_ns, int32_t& sec, uint32_t& nanosec) {
  sec = int32_t(t_ns / 1000000000LL);
  nanosec = uint32_t(t_ns % 1000000000LL);
}

int64_t join_stamp(int32_t sec, uint32_t nanosec) { return int64_t(sec) * 1000000000LL + int64_t(nanosec); }

void write_hex16(char* out, uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 15; i >= 0; --i) {
    out[i] = digits[v & 15];
    v >>= 4;
  }
}

bool read_hex16(const char* in, uint64_t& v) {
  v = 0;
  for (int i = 0; i < 16; ++i) {
    char c = in[i];
    uint64_t d;
    if (c >= '0' && c <= '9') d = uint64_t(c - '0');
    else if (c >= 'a' && c <= 'f') d = uint64_t(c - 'a' + 10);
    else return false;
    v = (v << 4) | d;
  }
  return true;
}

void write_string_head(char* s, uint64_t seq, int64_t t_ns) {
  write_hex16(s, seq);
  write_hex16(s + 16, uint64_t(t_ns));
}

bool read_string_head(const char* s, size_t n, Received& r) {
  uint64_t t;
  if (n < kStringHead || !read_hex16(s, r.seq) || !read_hex16(s + 16, t)) return false;
  r.t_send_ns = int64_t(t);
  r.bytes = uint32_t(n);
  return true;
}

void write_array_head(uint8_t* data, uint64_t seq, int64_t t_ns) {
  std::memcpy(data, &seq, 8);  // little-endian host (x86-64, aarch64)
  std::memcpy(data + 8, &t_ns, 8);
}

bool read_array_head(const uint8_t* data, size_t n, Received& r) {
  if (n < kArrayHead) return false;
  std::memcpy(&r.seq, data, 8);
  std::memcpy(&r.t_send_ns, data + 8, 8);
  r.bytes = uint32_t(n);
  return true;
}

bool read_header(int32_t sec, uint32_t nanosec, const char* frame_id, size_t frame_len, Received& r) {
  if (frame_len != kSeqDigits || !read_hex16(frame_id, r.seq)) return false;
  r.t_send_ns = join_stamp(sec, nanosec);
  return true;
}

void fill_text(char* data, size_t n) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> bytes(n);
  fill_pattern(bytes.data(), n);
  for (size_t i = 0; i < n; ++i) data[i] = alphabet[bytes[i] & 63];
}

// ---- XCDR1, little-endian; alignment counts from the end of the encapsulation -------------
namespace {

constexpr size_t kEncap = 4;

class Writer {
 public:
  std::vector<uint8_t> b{0x00, 0x01, 0x00, 0x00};  // CDR_LE, options 0
  void align(size_t n) {
    while ((b.size() - kEncap) % n) b.push_back(0);
  }
  void u8(uint8_t v) { b.push_back(v); }
  void u32(uint32_t v) {
    align(4);
    raw(&v, 4);
  }
  void i32(int32_t v) {
    align(4);
    raw(&v, 4);
  }
  void str(const char* s) {
    uint32_t len = uint32_t(std::strlen(s)) + 1;
    u32(len);
    raw(s, len);
  }
  void raw(const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    b.insert(b.end(), c, c + n);
  }
  // the stamp and a 16-digit frame_id; returns the stamp's offset
  size_t header() {
    align(4);
    size_t at = b.size();
    i32(0);
    u32(0);
    std::string zeros(kSeqDigits, '0');
    str(zeros.c_str());
    return at;
  }
  // a sequence<octet> of n pattern bytes; returns the offset of its first octet
  size_t octets(uint32_t n) {
    u32(n);
    size_t at = b.size();
    b.resize(b.size() + n);
    fill_pattern(b.data() + at, n);
    return at;
  }
};

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool ok() const { return ok_; }
  void align(size_t a) {
    size_t rel = pos_ - kEncap;
    if (rel % a) need(a - rel % a);
  }
  uint8_t u8() {
    const uint8_t* q = need(1);
    return q ? *q : 0;
  }
  uint32_t u32() {
    align(4);
    uint32_t v = 0;
    if (const uint8_t* q = need(4)) std::memcpy(&v, q, 4);
    return v;
  }
  int32_t i32() { return int32_t(u32()); }
  // a string's characters (without the terminator) and their count
  const char* str(size_t& len) {
    uint32_t n = u32();
    const uint8_t* q = n ? need(n) : nullptr;
    if (!q || q[n - 1] != 0) { ok_ = false; len = 0; return ""; }
    len = n - 1;
    return reinterpret_cast<const char*>(q);
  }
  const uint8_t* octets(size_t& len) {
    len = u32();
    const uint8_t* q = need(len);
    if (!q) len = 0;
    return q;
  }
  bool encapsulation() {
    if (n_ < kEncap || p_[0] != 0x00 || p_[1] != 0x01) return ok_ = false;
    pos_ = kEncap;
    return true;
  }

 private:
  const uint8_t* need(size_t k) {
    if (!ok_ || k > n_ - pos_) { ok_ = false; return nullptr; }
    const uint8_t* q = p_ + pos_;
    pos_ += k;
    return q;
  }
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  bool ok_ = true;
};

bool read_cdr_header(Reader& in, Received& r) {
  int32_t sec = in.i32();
  uint32_t nanosec = in.u32();
  size_t len;
  const char* frame = in.str(len);
  return in.ok() && read_header(sec, nanosec, frame, len, r);
}

}  // namespace

CdrSample::CdrSample(TypeKind kind, uint32_t n) : kind_(kind) {
  Writer w;
  switch (kind) {
    case TypeKind::Image: {
      ImageGeometry g = image_geometry(n);
      at_ = w.header();
      w.u32(g.height);
      w.u32(g.width);
      w.str(kImageEncoding);
      w.u8(0);  // is_bigendian
      w.u32(g.step);
      w.octets(n);
      break;
    }
    case TypeKind::PointCloud2: {
      at_ = w.header();
      w.u32(1);               // height
      w.u32(n / kPointStep);  // width
      w.u32(4);
      for (const auto& f : kPointFields) {
        w.str(f.name);
        w.u32(f.offset);
        w.u8(f.datatype);
        w.u32(f.count);
      }
      w.u8(0);  // is_bigendian
      w.u32(kPointStep);
      w.u32(n);  // row_step
      w.octets(n);
      w.u8(1);  // is_dense
      break;
    }
    case TypeKind::String: {
      w.u32(n + 1);
      at_ = w.b.size();
      w.b.resize(at_ + n + 1, 0);
      fill_text(reinterpret_cast<char*>(w.b.data() + at_), n);
      break;
    }
    case TypeKind::UInt8MultiArray: {
      w.u32(1);  // dim: one dimension
      w.str(kDimLabel);
      w.u32(n - kArrayHead);  // size
      w.u32(n - kArrayHead);  // stride
      w.u32(kArrayHead);      // data_offset
      at_ = w.octets(n);
      break;
    }
    default:
      break;
  }
  buf_ = std::move(w.b);
}

void CdrSample::stamp(uint64_t seq, int64_t t_ns) {
  switch (kind_) {
    case TypeKind::Image:
    case TypeKind::PointCloud2: {
      int32_t sec;
      uint32_t nanosec;
      split_stamp(t_ns, sec, nanosec);
      std::memcpy(&buf_[at_], &sec, 4);
      std::memcpy(&buf_[at_ + 4], &nanosec, 4);
      write_hex16(reinterpret_cast<char*>(&buf_[at_ + 12]), seq);
      break;
    }
    case TypeKind::String:
      write_string_head(reinterpret_cast<char*>(&buf_[at_]), seq, t_ns);
      break;
    case TypeKind::UInt8MultiArray:
      write_array_head(&buf_[at_], seq, t_ns);
      break;
    default:
      break;
  }
}

bool cdr_read(TypeKind kind, const uint8_t* p, size_t n, Received& r) {
  Reader in(p, n);
  if (!in.encapsulation()) return false;
  size_t len = 0;
  switch (kind) {
    case TypeKind::Image: {
      if (!read_cdr_header(in, r)) return false;
      in.u32();  // height
      in.u32();  // width
      in.str(len);
      in.u8();   // is_bigendian
      in.u32();  // step
      in.octets(len);
      r.bytes = uint32_t(len);
      return in.ok();
    }
    case TypeKind::PointCloud2: {
      if (!read_cdr_header(in, r)) return false;
      in.u32();  // height
      in.u32();  // width
      uint32_t fields = in.u32();
      for (uint32_t i = 0; i < fields && in.ok(); ++i) {
        in.str(len);
        in.u32();
        in.u8();
        in.u32();
      }
      in.u8();   // is_bigendian
      in.u32();  // point_step
      in.u32();  // row_step
      in.octets(len);
      r.bytes = uint32_t(len);
      in.u8();   // is_dense
      return in.ok();
    }
    case TypeKind::String: {
      const char* s = in.str(len);
      return in.ok() && read_string_head(s, len, r);
    }
    case TypeKind::UInt8MultiArray: {
      uint32_t dims = in.u32();
      for (uint32_t i = 0; i < dims && in.ok(); ++i) {
        in.str(len);
        in.u32();
        in.u32();
      }
      in.u32();  // data_offset
      const uint8_t* data = in.octets(len);
      return in.ok() && read_array_head(data, len, r);
    }
    default:
      return false;
  }
}

}  // namespace linklab::ros
