// The wire formats of web_search's providers: the request that asks each one
// for results, and its documented answer read into {title, url, snippet}.
//   brave    GET  {base}/res/v1/web/search?q=&count=   X-Subscription-Token
//            -> web.results[].{title, url, description}
//   google   GET  {base}/customsearch/v1?key=&cx=&q=&num=
//            -> items[].{title, link, snippet}
//   serper   POST {base}/search {"q", "num"}           X-API-KEY
//            -> organic[].{title, link, snippet}
//   searxng  GET  {base}/search?q=&format=json         (no key)
//            -> results[].{title, url, content}
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "loopr-fetch/http_fetch.hpp"

namespace loopr::fetch {

struct SearchProvider {
  std::string kind;      // "brave", "google", "serper", "searxng"
  std::string base_url;  // http(s), no trailing path needed
  std::string api_key;   // empty for searxng; never put in a message
  std::string cx;        // google's search engine id
};

struct SearchResult {
  std::string title;
  std::string url;
  std::string snippet;  // plain text (markup and entities removed); may be empty
};

// The request for `count` results of `query`. Its shown_url is the endpoint
// without the query string, so that a message naming it never holds a key.
// Errors: invalid_arguments (an unknown kind, a base_url that is no
// http(s) URL), naming the provider.
Result<HttpRequest> search_request(const SearchProvider& provider, std::string_view query,
                                   int count);

// The results of a 2xx answer, at most `max`, in the provider's order.
// Anything but the documented shape (not JSON, a missing list, a result
// without a string title or url) is an error with code provider_protocol
// naming the provider and what was wrong. No results is an empty list.
Result<std::vector<SearchResult>> parse_search_results(std::string_view kind, std::string_view body,
                                                       std::size_t max);

// `text` with the provider's key, as sent (raw and percent-encoded), replaced
// by "[redacted]": for every message that quotes a URL or an answer.
std::string redact_key(std::string text, const SearchProvider& provider);

}  // namespace loopr::fetch
