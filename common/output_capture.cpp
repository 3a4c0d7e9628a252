#include "common/output_capture.hpp"

#include <algorithm>

namespace loopr {

OutputCapture::OutputCapture(std::uint64_t cap)
    : cap_(cap), head_cap_(cap / 2), tail_cap_(cap - cap / 2) {}

void OutputCapture::append(std::string_view bytes) {
  total_ += bytes.size();
  if (head_.size() < head_cap_) {
    const std::size_t take =
        std::min<std::size_t>(bytes.size(), static_cast<std::size_t>(head_cap_ - head_.size()));
    head_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
  }
  if (bytes.empty() || tail_cap_ == 0) return;
  const std::size_t ring = static_cast<std::size_t>(tail_cap_);
  if (bytes.size() >= ring) {
    tail_.assign(bytes.substr(bytes.size() - ring));
    tail_start_ = 0;
    return;
  }
  if (tail_.size() < ring) {
    const std::size_t room = ring - tail_.size();
    const std::size_t take = std::min(room, bytes.size());
    tail_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
  }
  // Full ring: overwrite the oldest bytes.
  while (!bytes.empty()) {
    const std::size_t n = std::min(ring - tail_start_, bytes.size());
    tail_.replace(tail_start_, n, bytes.substr(0, n));
    tail_start_ = (tail_start_ + n) % ring;
    bytes.remove_prefix(n);
  }
}

std::string OutputCapture::tail() const {
  return tail_.substr(tail_start_) + tail_.substr(0, tail_start_);
}

std::string OutputCapture::contents() const {
  const std::string tail = this->tail();
  if (!truncated()) return head_ + tail;
  const std::uint64_t shown = head_.size() + tail.size();
  return head_ + "\n[output truncated: " + std::to_string(total_) + " bytes total, " +
         std::to_string(shown) + " shown]\n" + tail;
}

}  // namespace loopr
