#include "llm/retry_policy.hpp"

#include "llm/provider.hpp"

namespace loopr::llm {

bool is_retryable_error(const Error& error) {
  return error.code == loopr::errc::io || error.code == loopr::errc::timeout ||
         error.code == errc::provider_unavailable;
}

}  // namespace loopr::llm
