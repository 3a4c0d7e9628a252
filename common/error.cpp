#include "common/error.hpp"

#include <cstring>

namespace loopr {

nlohmann::json Error::to_json() const {
  nlohmann::json out = {{"code", code}, {"message", message}};
  if (!hint.empty()) out["hint"] = hint;
  if (!details.is_null()) out["details"] = details;
  return out;
}

Error make_error(std::string code, std::string message, std::string hint) {
  return Error{std::move(code), std::move(message), std::move(hint), nullptr};
}

Error errno_error(int err, std::string_view operation, std::string_view path) {
  std::string message(operation);
  if (!path.empty()) {
    message += " '";
    message += path;
    message += "'";
  }
  message += ": ";
  message += std::strerror(err);
  return make_error(errc::io, std::move(message));
}

}  // namespace loopr
