// The refusals the loop.* and plan.* methods of the LoopEngine share
// (docs/control-protocol.md "Errors"): invalid_arguments for a request that
// is wrong whatever the state, invalid_state (rpc code 1002) for one the
// loop's state forbids now. Reading the params is proto/loop_messages.hpp's.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/error.hpp"
#include "proto/control_messages.hpp"

namespace loopr::loops {

inline Error with_rpc_code(Error error, proto::ControlErrorCode code) {
  if (!error.details.is_object()) error.details = nlohmann::json::object();
  error.details["rpc_code"] = static_cast<int>(code);
  return error;
}

inline Error invalid(std::string message, std::string hint = {}) {
  return make_error(errc::invalid_arguments, std::move(message), std::move(hint));
}

inline Error invalid_state(std::string message, std::string hint = {}) {
  return with_rpc_code(make_error("invalid_state", std::move(message), std::move(hint)),
                       proto::ControlErrorCode::invalid_state);
}

// Whitespace only (or empty).
inline bool is_blank(const std::string& text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

}  // namespace loopr::loops
