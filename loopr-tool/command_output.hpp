// CommandOutput: what a command printed, shaped for the command tools'
// result (run_command.cpp) within the job's output cap.
//
// Three views of the same bytes, each kept as a head and a tail with one
// marker line between them, "[... N bytes cut (T in all) ...]", cut on
// UTF-8 character boundaries and, when a line ends near the cut, at that
// line's end:
//   output  stdout and stderr interleaved in the order they were read, as
//           `cmd 2>&1` shows them in a terminal (at the granularity of the
//           reads: two chunks written at once by the two streams may come
//           in either order), bytes that are not UTF-8 as U+FFFD;
//   stdout, stderr  each stream on its own, with a base64 copy of the kept
//           bytes when they are not UTF-8.
//
// The budget: the whole result's JSON line must fit `max_result_bytes`.
// What the rest of the result takes (command, exit code, notes, the
// markers) is set aside; of what is left, `output` gets half and stdout and
// stderr a quarter each, a stream that needs less than its quarter leaving
// the rest to the other. Text that grows when written as JSON (escaped
// control characters, U+FFFD, base64) is measured as written, and the
// budget is lowered until the result fits.
//
// Memory: three OutputCaptures of about half the cap each, whatever the
// command prints. Not thread-safe: owned by the command's poll loop.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/output_capture.hpp"

namespace loopr::tool {

class CommandOutput {
 public:
  explicit CommandOutput(std::size_t max_result_bytes);

  void append_stdout(std::string_view bytes);
  void append_stderr(std::string_view bytes);

  // All that is kept of a stream, uncut by any budget (for the notes that
  // look for words in it).
  std::string stdout_kept() const { return out_.head() + out_.tail(); }
  std::string stderr_kept() const { return err_.head() + err_.tail(); }

  // Sets stdout, stderr, output, output_bytes (all bytes printed, before
  // any cut), truncated (whether any of the three was cut) and, for a stream
  // that is not UTF-8, stdout_base64 / stderr_base64 in `result`, which
  // holds every other field of the result already. If even empty outputs
  // would not fit, the budget is the whole cap and the runner refuses the
  // result as too large.
  void add_to(nlohmann::json& result) const;

 private:
  nlohmann::json with_budget(const nlohmann::json& result, std::size_t budget) const;

  std::size_t max_result_bytes_;
  OutputCapture out_;
  OutputCapture err_;
  OutputCapture merged_;
};

}  // namespace loopr::tool
