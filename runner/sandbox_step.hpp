// How a sandbox step reports failure: an Error with code sandbox_setup whose
// message names the step, so "fail closed" always says which step failed.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace loopr::runner {

inline Error step_failed(std::string_view step, std::string_view detail, int err = 0) {
  std::string message = "sandbox step '" + std::string(step) + "' failed: " + std::string(detail);
  if (err != 0) {
    message += ": ";
    message += std::strerror(err);
  }
  return make_error(errc::sandbox_setup, std::move(message),
                    "the job did not run. Fix the machine (see the step), or set sandbox = \"off\" "
                    "in loopr.toml to run jobs without a sandbox (not recommended)");
}

}  // namespace loopr::runner
