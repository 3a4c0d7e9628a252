// ScriptedProvider: a Provider that replays a recorded session file, for
// tests and for the demo (DESIGN.md §8).
//
// File format: JSON Lines; blank lines are ignored. Each other line is one
// model turn in the JSON form of ModelTurn (model_turn_from_json: "text",
// "tool_calls" [{"id", "name", "arguments"}], "stop_reason", "model",
// "usage" — all optional), plus three optional keys:
//   "loop": "ID"     this line belongs to loop ID's conversation
//                    (ModelRequest::conversation): a loop with lines of its
//                    own is answered from them, in order; any other loop
//                    from the lines without "loop" (so one file can script
//                    a whole plan tree);
//   "delay_ms": N    wait N ms before answering (cancellable);
//   "error": {"code", "message", "hint"?}
//                    answer with this Error instead of a turn (to simulate
//                    provider failures; other keys are then ignored).
// Any other key is refused, so a misspelt key is found at load.
//
// Request number `sequence` (ModelRequest::sequence, 0-based) gets turn
// number `sequence` (the sequence-th non-blank line), so a loop resumed
// after a crash gets the same answer it got before; an error line answers
// its own sequence number each time it is asked. Asking past the end is
// errc::provider_request.
//
// Usage: a turn without "usage" gets an ESTIMATE, not a count:
// input_tokens = ceil(bytes of the request's JSON form / 4) and
// output_tokens = ceil(bytes of text + tool call arguments / 4).
//
// Streaming on: the text reaches on_text in a few pieces, split at UTF-8
// character boundaries; off: once, whole.
//
// Errors at load: open() returns a Result (it does not throw), whose Error
// (invalid_arguments, or io when the file cannot be read) names FILE:LINE
// and the field; make_provider passes it on, and looprd's start-up turns it
// into its ConfigError.
// Threads: io thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llm/provider.hpp"

namespace loopr::llm {

struct ScriptedOptions {
  bool stream = true;
  std::int64_t context_window = 0;  // 0: 200000
  // The model name it reports (for prices and display); empty: "scripted".
  std::string model;
};

class ScriptedProvider : public Provider {
 public:
  static Result<std::unique_ptr<ScriptedProvider>> open(const std::string& path,
                                                        ScriptedOptions options = {});

  asio::awaitable<Result<ModelTurn>> complete(const ModelRequest& request,
                                              const TurnCallbacks& callbacks) override;
  const std::string& model() const override { return model_; }
  std::int64_t context_window() const override { return context_window_; }

  std::size_t turns() const { return entries_.size(); }

  struct Entry {
    ModelTurn turn;
    bool has_usage = false;
    std::int64_t delay_ms = 0;
    std::optional<Error> error;
    std::uint32_t line = 0;
    std::string loop;  // "" : shared
  };

 private:
  ScriptedProvider(std::string path, ScriptedOptions options, std::vector<Entry> entries);

  std::string path_;
  bool stream_;
  std::int64_t context_window_;
  std::string model_ = "scripted";
  std::vector<Entry> entries_;
  std::vector<std::size_t> shared_;                          // lines without "loop"
  std::map<std::string, std::vector<std::size_t>> by_loop_;  // by loop id, in file order
};

// The estimate a scripted turn without "usage" reports (see above).
Usage estimate_usage(const ModelRequest& request, const ModelTurn& turn);

}  // namespace loopr::llm
