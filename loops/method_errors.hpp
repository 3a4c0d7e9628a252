// The errors and parameter readers the loop.* and plan.* methods share
// (docs/control-protocol.md "Errors"): invalid_arguments for a request that
// is wrong whatever the state, invalid_state (rpc code 1002) for one the
// loop's state forbids now.
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

// params[key] when it is a string, else "".
inline std::string text_param(const nlohmann::json& params, const char* key) {
  if (!params.is_object()) return {};
  auto it = params.find(key);
  return it != params.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// params[key] as a bool: absent or null → `fallback`; another type → an Error.
inline Result<bool> bool_param(const nlohmann::json& params, const char* key, bool fallback) {
  if (!params.is_object()) return fallback;
  auto it = params.find(key);
  if (it == params.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return invalid(std::string(key) + " must be true or false");
  return it->get<bool>();
}

inline bool is_blank(const std::string& text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

}  // namespace loopr::loops
