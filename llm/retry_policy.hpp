// Which failed model calls are worth another attempt (DESIGN.md §8): the
// HTTP statuses and the delay before a retry are retry/http_retry.hpp's,
// shared with the web search providers; a model call is also retried after
// a transport failure (errc::io: reset, DNS, TLS; errc::timeout: connect,
// first byte, idle stream) and after an error event inside a stream that
// says the provider is overloaded or failed (the wire codecs report those
// with code errc::provider_unavailable).
#pragma once

#include "common/error.hpp"
#include "retry/http_retry.hpp"

namespace loopr::llm {

// errc::io, errc::timeout (transport) and errc::provider_unavailable (a
// stream's overloaded/api error event).
bool is_retryable_error(const Error& error);

// Whether a model call that failed for good (its retries spent) is worth
// asking of another provider ([llm] fallback): provider_unavailable, unless
// the last attempt's HTTP status (details.status) was a 4xx — a 429 is the
// provider's word about this account, and a refused request would be refused
// anywhere. A broken connection or an overloaded stream (no status) is.
bool worth_another_provider(const Error& error);

}  // namespace loopr::llm
