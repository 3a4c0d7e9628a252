#include "llm/retry_policy.hpp"

#include "llm/provider.hpp"

namespace loopr::llm {

bool is_retryable_error(const Error& error) {
  return error.code == loopr::errc::io || error.code == loopr::errc::timeout ||
         error.code == errc::provider_unavailable;
}

bool worth_another_provider(const Error& error) {
  if (error.code != errc::provider_unavailable) return false;
  if (error.details.is_object()) {
    const auto status = error.details.find("status");
    if (status != error.details.end() && status->is_number_integer()) {
      const auto code = status->get<int>();
      if (code >= 400 && code < 500) return false;
    }
  }
  return true;
}

}  // namespace loopr::llm
