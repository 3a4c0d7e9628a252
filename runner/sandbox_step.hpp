// How a sandbox step reports failure: an Error with code sandbox_setup whose
// message names the step, so "fail closed" always says which step failed.
// A step that failed on a path the user put there (a worktree root, a read
// path, a hidden path) also names where the path came from, and its hint says
// to change that, not the machine (blame_setting).
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

// `error`, from a step that failed on `path`, which `origin` put in the lane:
// a setting ("sandbox.worktree_roots in loopr.toml") or one of looprd's own
// folders ("looprd's state folder"). The hint then points there.
inline Error blame_setting(Error error, std::string_view path, std::string_view origin) {
  error.message += " (" + std::string(path) + ": " + std::string(origin) + ")";
  const std::string_view in_toml = " in loopr.toml";
  if (origin.starts_with("sandbox.") && origin.ends_with(in_toml)) {
    const std::string setting(origin.substr(0, origin.size() - in_toml.size()));
    error.hint = "the job did not run: the sandbox cannot use " + std::string(path) + " from " +
                 setting + ". Change " + setting +
                 " in loopr.toml (or that path), then restart looprd; the machine is not at fault";
  } else {
    error.hint = "the job did not run: " + std::string(path) + " is " + std::string(origin) +
                 "; jobs must not see it, and the sandbox cannot hide it there. Move it, or "
                 "change sandbox.worktree_roots and sandbox.read_paths in loopr.toml, then "
                 "restart looprd";
  }
  return error;
}

}  // namespace loopr::runner
