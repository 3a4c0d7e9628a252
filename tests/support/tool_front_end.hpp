// Test support: one way to call a loopr-tool tool, through whichever front end
// the test run selects, so the same tool suites prove all three:
//   inline   the library call (tool::read_file(worktree, args));
//   process  `loopr-tool <tool> --worktree ROOT`, arguments on stdin;
//   worker   one `loopr-tool --serve --worktree ROOT` per ToolFrontEnd, calls
//            sent as proto/worker_messages.hpp frames. A read-only tool's
//            call is also run through `process`, and the two must answer
//            with the same exit status and the same stdout bytes.
// LOOPR_TOOL_FRONT_END (inline, process or worker; default inline) selects
// it; CTest registers the tool suites once per front end
// (tests/CMakeLists.txt, loopr_discover_front_end_tests).
//
// Results come back as the library returns them: a JSON object or an Error
// (built from the {"error": {...}} object the binary prints). A reply that is
// neither fails the running test.
#pragma once

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "loopr-tool/tool_main.hpp"
#include "proto/frame_codec.hpp"
#include "proto/worker_messages.hpp"

namespace loopr::test {

enum class FrontEnd { inline_call, process, worker };

// $LOOPR_TOOL_FRONT_END; an unknown value throws (a misconfigured test run
// must not silently test the inline path).
FrontEnd front_end_from_env();
std::string_view front_end_name(FrontEnd front_end);

// One running `loopr-tool --serve --worktree ROOT`, its fds 0 and 1 one end
// of a socketpair (as the runner's are). Owns the child: the destructor
// ends its input and reaps it. One call at a time, from one thread.
class WorkerProcess {
 public:
  // Starts the worker. `filter_fd` (-1: none) is handed to it as fd 3 with
  // --filter-fd 3; the caller keeps its own descriptor.
  explicit WorkerProcess(const std::string& worktree, int filter_fd = -1);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return pid_; }

  // The first message; the worker sends it before reading any call.
  Result<proto::WorkerReady> ready();
  // One call; waits for its reply (reads ready() first if nobody has).
  Result<tool::ToolOutput> call(std::string_view tool, std::string_view args_json);
  // Ends the worker's input (EOF on its fd 0) and returns its wait status.
  int finish();

 private:
  Result<std::string> next_payload();
  Error link_error(std::string message);

  pid_t pid_ = -1;
  int fd_ = -1;  // our end of the socketpair
  std::optional<proto::WorkerReady> ready_;
  proto::FrameReader reader_{proto::kMaxWorkerPayload};
  int wait_status_ = -1;
};

// Turns one call's exit status and stdout into what the library returns.
// Anything other than one JSON object (exit 0) or an error object (exit 1 or
// 2) fails the running test and becomes an errc::protocol Error.
Result<nlohmann::json> tool_result_from_output(const tool::ToolOutput& output);

// Calls tools on one worktree through the selected front end. The worker,
// if any, starts at the first call and stops with this object.
class ToolFrontEnd {
 public:
  explicit ToolFrontEnd(std::string worktree, FrontEnd front_end = front_end_from_env());
  ~ToolFrontEnd();
  ToolFrontEnd(const ToolFrontEnd&) = delete;
  ToolFrontEnd& operator=(const ToolFrontEnd&) = delete;

  FrontEnd front_end() const { return front_end_; }

  // `tool` is one of the functions in loopr-tool/tool_registry.hpp; its
  // name there is what the process and worker front ends are asked for.
  Result<nlohmann::json> call(tool::ToolFunction tool, const nlohmann::json& args);
  Result<nlohmann::json> call(std::string_view tool_name, const nlohmann::json& args);

 private:
  tool::ToolOutput through_worker(std::string_view tool_name, const std::string& args_json);

  std::string root_;
  FrontEnd front_end_;
  std::unique_ptr<tool::Worktree> worktree_;  // inline only, opened at the first call
  std::unique_ptr<WorkerProcess> worker_;     // worker only, started at the first call
};

}  // namespace loopr::test
