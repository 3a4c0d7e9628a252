#include "common/error.hpp"

#include <cerrno>
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
  std::string hint;
  if (err == ENOSPC || err == EDQUOT) {
    hint =
        "the disk is full (no space or no inodes left): delete files that are not needed, then "
        "try again";
  } else if (err == EFBIG) {
    hint = "the file is larger than the largest file allowed here; write a smaller file";
  }
  return make_error(errc::io, std::move(message), std::move(hint));
}

}  // namespace loopr
