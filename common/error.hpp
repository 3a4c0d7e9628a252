// loopr's error-handling policy, written once. Every module keeps to it.
//
// 1. Configuration and start-up fail with exceptions: loopr::ConfigError (a
//    config file is wrong: it names the file, line and key) and
//    loopr::StartupError (the process cannot begin its work). A binary's main()
//    catches them, prints the message and exits non-zero. They never cross into
//    an event loop, a runner job or a tool.
//
// 2. Everything that handles untrusted input or the OS at run time — the
//    codecs, the tools, the runner, the daemon's handlers — returns
//    loopr::Result<T>: a value, or an Error {code, message, hint, details}.
//    Exceptions thrown by libraries (nlohmann::json, toml11, std) are caught at
//    the call that invoked the library and turned into an Error there.
//
// 3. Each process has exactly one dispatch boundary that turns an Error into a
//    reply: loopr-tool's main (a {"error": ...} object and exit 1), the
//    runner's job loop (a result with status "error"), looprd's request
//    dispatch (a {"id", "error"} line). That boundary also catches any
//    exception that escaped by mistake, so a bug becomes an error reply, not a
//    crash.
//
// 4. Untrusted input never reaches an assert. Asserts state invariants the
//    program itself establishes.
//
// Error messages are written for the reader who must act: an LLM or a user.
// `message` says what went wrong, `hint` says what to do instead.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace loopr {

// Stable error codes shared by tools, the runner and the daemon (DESIGN.md §5).
namespace errc {
inline constexpr const char* invalid_arguments = "invalid_arguments";
inline constexpr const char* not_found = "not_found";
inline constexpr const char* path_outside_worktree = "path_outside_worktree";
inline constexpr const char* protected_path = "protected_path";
inline constexpr const char* not_read_first = "not_read_first";
inline constexpr const char* stale_read = "stale_read";
inline constexpr const char* no_match = "no_match";
inline constexpr const char* ambiguous_match = "ambiguous_match";
inline constexpr const char* already_applied = "already_applied";
inline constexpr const char* too_large = "too_large";
inline constexpr const char* binary_file = "binary_file";
inline constexpr const char* is_directory = "is_directory";
inline constexpr const char* not_directory = "not_directory";
inline constexpr const char* timeout = "timeout";
inline constexpr const char* sandbox_denied = "sandbox_denied";
inline constexpr const char* http_error = "http_error";  // web_fetch: a 4xx or 5xx answer
inline constexpr const char* sandbox_setup = "sandbox_setup";
inline constexpr const char* io = "io";
inline constexpr const char* protocol = "protocol";
inline constexpr const char* internal = "internal";
// A remote API (a model provider, a web search provider) refused the key
// (401, 403), refused the request (400, 404, 422 ...), was still failing
// after the last retry (429, 5xx, resets), or answered in no documented
// format. Retrying cannot help the first two.
inline constexpr const char* provider_auth = "provider_auth";
inline constexpr const char* provider_request = "provider_request";
inline constexpr const char* provider_unavailable = "provider_unavailable";
inline constexpr const char* provider_protocol = "provider_protocol";
}  // namespace errc

struct Error {
  std::string code;                  // one of errc::*
  std::string message;               // what went wrong
  std::string hint;                  // what to do instead; may be empty
  nlohmann::json details = nullptr;  // structured extras (candidates, line numbers)

  // {"code", "message", "hint"?, "details"?}: the object inside {"error": ...}.
  nlohmann::json to_json() const;
};

Error make_error(std::string code, std::string message, std::string hint = {});
// An io error from errno, naming the operation and the path; a full disk
// (ENOSPC, EDQUOT) or a file over the size limit (EFBIG) gets a hint.
Error errno_error(int err, std::string_view operation, std::string_view path);

// A value or an Error. Deliberately small: what std::expected will be in C++23.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

  const Error& error() const& { return std::get<1>(state_); }
  Error&& error() && { return std::get<1>(std::move(state_)); }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const& { return *error_; }
  Error&& error() && { return std::move(*error_); }

 private:
  std::optional<Error> error_;
};

// Thrown for a configuration mistake; the message names file, line and key.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown when a process cannot start its work (a socket that cannot be bound).
class StartupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace loopr
