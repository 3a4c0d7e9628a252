#include "loopr-tool/command_output.hpp"

#include <algorithm>
#include <cstdint>

#include "common/utf8.hpp"
#include "loopr-tool/output_fit.hpp"
#include "proto/base64.hpp"

namespace loopr::tool {
namespace {

using Json = nlohmann::json;

// A capture holds a little more than its largest budget, so that a cut at
// the budget can see the bytes after it (a character's continuation bytes).
constexpr std::size_t kCaptureSlack = 16;
// Attempts at lowering the budget until the result fits.
constexpr int kFitAttempts = 8;

bool is_continuation(char byte) {
  return (static_cast<std::uint8_t>(byte) & 0xC0) == 0x80;
}

struct Shown {
  std::string text;
  bool cut = false;
};

// `capture` within `budget` bytes (the marker line aside).
Shown head_and_tail(const OutputCapture& capture, std::size_t budget) {
  const std::uint64_t total = capture.total_bytes();
  const std::string& head = capture.head();
  const std::string tail = capture.tail();
  if (total <= budget) return {head + tail, false};
  std::string front;
  std::string back;
  const std::size_t front_budget = budget / 2;
  const std::size_t back_budget = budget - front_budget;
  if (capture.truncated()) {
    front = head.substr(0, utf8_safe_prefix(head, front_budget));
    back = tail.substr(tail.size() - std::min(back_budget, tail.size()));
  } else {
    const std::string all = head + tail;
    front = all.substr(0, utf8_safe_prefix(all, front_budget));
    back = all.substr(all.size() - std::min(back_budget, all.size()));
  }
  for (int i = 0; i < 3 && !back.empty() && is_continuation(back.front()); ++i)
    back.erase(0, 1);
  // Whole lines when a line ends in the later half of the head or the
  // earlier half of the tail.
  if (const std::size_t end = front.rfind('\n');
      end != std::string::npos && end + 1 >= front.size() / 2) {
    front.resize(end + 1);
  }
  if (const std::size_t end = back.find('\n'); end != std::string::npos && end < back.size() / 2) {
    back.erase(0, end + 1);
  }
  const std::uint64_t cut = total - front.size() - back.size();
  std::string text = std::move(front);
  if (!text.empty() && text.back() != '\n') text += '\n';
  text +=
      "[... " + std::to_string(cut) + " bytes cut (" + std::to_string(total) + " in all) ...]\n";
  text += back;
  return {std::move(text), true};
}

}  // namespace

CommandOutput::CommandOutput(std::size_t max_result_bytes)
    : max_result_bytes_(max_result_bytes),
      out_(max_result_bytes / 2 + kCaptureSlack),
      err_(max_result_bytes / 2 + kCaptureSlack),
      merged_(max_result_bytes / 2 + kCaptureSlack) {}

void CommandOutput::append_stdout(std::string_view bytes) {
  out_.append(bytes);
  merged_.append(bytes);
}

void CommandOutput::append_stderr(std::string_view bytes) {
  err_.append(bytes);
  merged_.append(bytes);
}

Json CommandOutput::with_budget(const Json& result, std::size_t budget) const {
  // Half for the merged output; a quarter for each stream, and what one
  // stream does not need for the other.
  const std::size_t merged_budget = budget / 2;
  const std::size_t streams = budget - merged_budget;
  const std::size_t out_share = streams / 2;
  const std::size_t err_share = streams - out_share;
  const std::size_t out_need = static_cast<std::size_t>(
      std::min<std::uint64_t>(out_.total_bytes(), static_cast<std::uint64_t>(out_share)));
  const std::size_t err_need = static_cast<std::size_t>(
      std::min<std::uint64_t>(err_.total_bytes(), static_cast<std::uint64_t>(err_share)));
  const Shown out = head_and_tail(out_, out_share + (err_share - err_need));
  const Shown err = head_and_tail(err_, err_share + (out_share - out_need));
  const Shown merged = head_and_tail(merged_, merged_budget);

  Json shaped = result;
  shaped["stdout"] = to_lossy_utf8(out.text);
  shaped["stderr"] = to_lossy_utf8(err.text);
  shaped["output"] = to_lossy_utf8(merged.text);
  shaped["output_bytes"] = merged_.total_bytes();
  shaped["truncated"] = out.cut || err.cut || merged.cut;
  // Bytes that are not UTF-8 survive: the text fields show them lossily, and
  // a base64 copy carries them exactly.
  shaped.erase("stdout_base64");
  shaped.erase("stderr_base64");
  if (!is_valid_utf8(out.text)) shaped["stdout_base64"] = proto::base64_encode(out.text);
  if (!is_valid_utf8(err.text)) shaped["stderr_base64"] = proto::base64_encode(err.text);
  return shaped;
}

void CommandOutput::add_to(Json& result) const {
  const std::size_t cap = max_result_bytes_;
  const std::size_t bare = result_line_size(with_budget(result, 0));
  if (bare >= cap) {
    result = with_budget(result, cap);
    return;
  }
  const std::size_t room = cap - bare;
  std::size_t budget = room;
  Json shaped = with_budget(result, budget);
  for (int attempt = 0; attempt < kFitAttempts && budget > 0; ++attempt) {
    const std::size_t size = result_line_size(shaped);
    if (size <= cap) break;
    // What the text took beyond the bare result, scaled down to the room.
    const double grown = static_cast<double>(size - bare);
    const auto scaled =
        static_cast<std::size_t>(static_cast<double>(budget) * static_cast<double>(room) / grown);
    budget = std::min(budget - 1, scaled);
    shaped = with_budget(result, budget);
  }
  while (budget > 0 && result_line_size(shaped) > cap) {
    budget /= 2;
    shaped = with_budget(result, budget);
  }
  result = std::move(shaped);
}

}  // namespace loopr::tool
