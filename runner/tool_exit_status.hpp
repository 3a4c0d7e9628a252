// What a tool's exit status means for its result (tool_main.hpp's contract:
// 0 success, 1 a tool error on stdout, anything else a failure of the tool
// process itself). Shared by process jobs and warm-worker calls.
#pragma once

#include <string>

#include "proto/runner_messages.hpp"

namespace loopr::runner {

inline void set_status_from_exit(proto::JobResult& result, int exit_code) {
  result.exit_code = exit_code;
  if (exit_code == 0) {
    result.status = proto::JobStatus::success;
  } else if (exit_code == 1) {
    result.status = proto::JobStatus::failed;
  } else {
    result.status = proto::JobStatus::error;
    result.error = "loopr-tool exited with status " + std::to_string(exit_code);
  }
}

}  // namespace loopr::runner
