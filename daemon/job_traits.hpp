// The traits a runner job carries (proto::JobTraits), as looprd derives them
// from its catalog's ToolSpec: loopr-fetch runs the web facilities, a tool
// with a command trait runs shell commands, warm workers serve the tools the
// catalog marks for them, and a call that changes nothing
// (config::changes_nothing) is safe to retry.
// Header-only so the runner tests build jobs exactly as looprd does.
#pragma once

#include "config/catalog.hpp"
#include "proto/runner_messages.hpp"

namespace loopr::daemon {

inline proto::JobTraits job_traits(const config::ToolSpec& tool) {
  return {.program = tool.web != config::WebFacility::none ? proto::JobProgram::fetch
                                                           : proto::JobProgram::tool,
          .runs_commands = tool.command != config::ToolCommand::none,
          .warm_worker = tool.warm_worker,
          .read_only = config::changes_nothing(tool)};
}

}  // namespace loopr::daemon
