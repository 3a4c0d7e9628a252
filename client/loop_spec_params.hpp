// What `loop run` and `plan` both send of a new loop (loop.create,
// loop.create_plan): its repository and the options that override the
// configured defaults, as proto::LoopSpecParams.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "proto/loop_messages.hpp"

namespace loopr::client {

// `repo` is already absolute; unset options stay unset (the daemon's defaults).
inline proto::LoopSpecParams spec_params(const std::string& repo,
                                         const std::optional<std::string>& base,
                                         const std::optional<std::string>& provider,
                                         const std::optional<std::string>& model,
                                         const std::optional<std::uint64_t>& validate_timeout_s,
                                         bool include_uncommitted) {
  proto::LoopSpecParams spec;
  spec.repo = repo;
  spec.base = base.value_or("");
  spec.provider = provider;
  spec.model = model;
  if (validate_timeout_s) spec.validate_timeout_s = static_cast<std::int64_t>(*validate_timeout_s);
  spec.include_uncommitted = include_uncommitted;
  return spec;
}

}  // namespace loopr::client
