#include "client/failure.hpp"

#include <ostream>
#include <string_view>

#include "proto/control_messages.hpp"

namespace loopr::client {
namespace {

bool is(const Error& error, std::string_view code) {
  return error.code == code;
}

ExitStatus rpc_exit_status(const Error& error) {
  using proto::ControlErrorCode;
  if (!error.details.is_object()) return ExitStatus::call_failed;
  const auto it = error.details.find("rpc_code");
  if (it == error.details.end() || !it->is_number_integer()) return ExitStatus::call_failed;
  const auto code = it->get<std::int64_t>();
  for (const auto mismatch :
       {ControlErrorCode::parse_error, ControlErrorCode::invalid_request,
        ControlErrorCode::method_not_found, ControlErrorCode::version_mismatch}) {
    if (code == static_cast<std::int64_t>(mismatch)) return ExitStatus::protocol;
  }
  return ExitStatus::call_failed;
}

}  // namespace

ExitStatus exit_status_for(const Error& error) {
  if (is(error, failure::daemon_unreachable) || is(error, errc::timeout) || is(error, errc::io)) {
    return ExitStatus::unreachable;
  }
  if (is(error, failure::version_mismatch) || is(error, errc::protocol) ||
      is(error, errc::too_large)) {
    return ExitStatus::protocol;
  }
  if (is(error, failure::rpc_error)) return rpc_exit_status(error);
  if (is(error, failure::usage) || is(error, errc::invalid_arguments)) return ExitStatus::usage;
  return ExitStatus::call_failed;
}

void print_failure(std::ostream& err, const Error& error) {
  err << "looprctl: ";
  if (is(error, errc::protocol) || is(error, errc::too_large)) err << "protocol error: ";
  err << error.message << '\n';
  if (!error.hint.empty()) err << "hint: " << error.hint << '\n';
}

int outcome_exit_status(std::string_view status) {
  auto as_int = [](OutcomeExit outcome) { return static_cast<int>(outcome); };
  if (status == "completed") return as_int(OutcomeExit::completed);
  if (status == "failed" || status == "rejected" || status == "invalidated" ||
      status == "blocked") {
    return as_int(OutcomeExit::failed);
  }
  if (status == "stuck") return as_int(OutcomeExit::stuck);
  if (status == "budget_exhausted") return as_int(OutcomeExit::budget_exhausted);
  if (status == "cancelled") return as_int(OutcomeExit::cancelled);
  if (status == "awaiting_approval" || status == kCallAwaitsApproval) {
    return as_int(OutcomeExit::needs_approval);
  }
  return to_int(ExitStatus::call_failed);
}

}  // namespace loopr::client
