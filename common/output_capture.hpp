// OutputCapture: one job stream (stdout or stderr) held within a byte cap.
// Keeps the first cap/2 bytes and the last cap - cap/2 bytes; everything in
// between is counted, not stored. Memory never exceeds the cap, however much
// the job prints (a job printing 10 GB costs the cap, not 10 GB).
// Not thread-safe: owned by the runner's event loop.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace loopr {

class OutputCapture {
 public:
  explicit OutputCapture(std::uint64_t cap);

  void append(std::string_view bytes);

  std::uint64_t total_bytes() const { return total_; }
  bool truncated() const { return total_ > cap_; }
  // The bytes kept; when truncated, head + "\n[output truncated: N bytes
  // total, M shown]\n" + tail. Bytes are returned as they came (not
  // necessarily UTF-8: the frame encoding keeps them lossless).
  std::string contents() const;
  // The first bytes kept and the last ones: head() + tail() is everything
  // appended unless truncated(), when total_bytes() - both sizes were
  // between them.
  const std::string& head() const { return head_; }
  std::string tail() const;

 private:
  std::uint64_t cap_;
  std::uint64_t head_cap_;
  std::uint64_t tail_cap_;
  std::uint64_t total_ = 0;
  std::string head_;
  std::string tail_;            // ring buffer of at most tail_cap_ bytes once full
  std::size_t tail_start_ = 0;  // oldest byte of the ring, when full
};

}  // namespace loopr
