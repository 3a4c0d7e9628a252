#include "loopr-fetch/web_search.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "common/utf8.hpp"
#include "loopr-fetch/http_fetch.hpp"
#include "loopr-fetch/job_address_policy.hpp"
#include "loopr-fetch/search_providers.hpp"
#include "loopr-tool/arguments.hpp"
#include "loopr-tool/job_facts.hpp"
#include "retry/http_retry.hpp"

namespace loopr::fetch {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Kept free of the job's timeout for starting and ending the process.
constexpr milliseconds kJobMargin{2000};
// No try starts with less time than this left.
constexpr milliseconds kShortestTry{500};
constexpr std::size_t kMaxAnswerBytes = 4u << 20;
constexpr std::size_t kMaxQueryBytes = 1000;
// A refusal's body, quoted in the error message, is cut to this.
constexpr std::size_t kSearchErrorExcerptBytes = 300;

struct SearchJob {
  SearchProvider provider;
  int max_retries = 3;
  BackoffSettings backoff;
  milliseconds timeout{30000};
};

Error not_configured() {
  return make_error("not_configured", "web_search: no search provider is configured",
                    "ask the user to set [web_search] provider in loopr.toml (brave, google, "
                    "serper or searxng) and that provider's key");
}

// The reserved `search_provider` argument the daemon adds.
Result<SearchJob> read_search_job(const tool::Arguments& arguments) {
  if (!arguments.has("search_provider")) return not_configured();
  auto fields =
      tool::Arguments::parse(arguments.raw("search_provider"), "web_search.search_provider",
                             {"kind", "base_url", "api_key", "cx", "max_retries",
                              "retry_base_delay_ms", "retry_max_delay_ms", "timeout_ms"});
  if (!fields) return std::move(fields).error();
  SearchJob job;
  auto kind = fields->choice_or("kind", "", {"brave", "google", "serper", "searxng"});
  if (!kind) return std::move(kind).error();
  if (kind->empty()) return not_configured();
  auto base_url = fields->required_string("base_url");
  if (!base_url) return std::move(base_url).error();
  auto api_key = fields->string_or("api_key", "");
  if (!api_key) return std::move(api_key).error();
  auto cx = fields->string_or("cx", "");
  if (!cx) return std::move(cx).error();
  auto retries = fields->integer_or("max_retries", 3, 0, 10);
  if (!retries) return std::move(retries).error();
  auto base = fields->integer_or("retry_base_delay_ms", 500, 1, 60'000);
  if (!base) return std::move(base).error();
  auto cap = fields->integer_or("retry_max_delay_ms", 10'000, 1, 60'000);
  if (!cap) return std::move(cap).error();
  auto timeout = fields->integer_or("timeout_ms", 30'000, 1, 3'600'000);
  if (!timeout) return std::move(timeout).error();
  job.provider = {std::move(*kind), std::move(*base_url), std::move(*api_key), std::move(*cx)};
  job.max_retries = static_cast<int>(*retries);
  job.backoff = {milliseconds(*base), milliseconds(*cap)};
  job.timeout = milliseconds(*timeout);
  return job;
}

struct Attempts {
  Result<FetchedPage> last;
  int count = 0;
  bool out_of_time = false;  // a retry was due but would not have fitted
};

// Sends `request` until it gets an answer that is not worth retrying, the
// retries run out, or the next try would not fit before the job's deadline.
Attempts send_with_retries(const HttpRequest& request, const AddressPolicy& policy,
                           const SearchJob& job) {
  const Clock::time_point deadline =
      Clock::now() + std::max(job.timeout - kJobMargin, kShortestTry);
  const RandomSource random = default_random_source();
  for (int attempt = 1;; ++attempt) {
    FetchLimits limits;
    limits.max_body_bytes = kMaxAnswerBytes;
    // A redirect would carry the key's header to wherever it points.
    limits.max_redirects = 0;
    limits.total_timeout = std::max(
        std::chrono::duration_cast<milliseconds>(deadline - Clock::now()), milliseconds(1));
    limits.connect_timeout = std::min(limits.connect_timeout, limits.total_timeout);
    Result<FetchedPage> page = http_request(request, policy, limits);
    bool retryable = false;
    std::optional<milliseconds> server_wait;
    if (page) {
      retryable = is_retryable_status(page->status);
      if (!page->retry_after.empty()) {
        server_wait = parse_retry_after({{"retry-after", page->retry_after}},
                                        std::chrono::system_clock::now());
      }
    } else {
      retryable = page.error().code == errc::io || page.error().code == errc::timeout;
    }
    if (!retryable || attempt > job.max_retries) return {std::move(page), attempt, false};
    const milliseconds delay = retry_delay(attempt, server_wait, job.backoff, random);
    if (Clock::now() + delay + kShortestTry > deadline) return {std::move(page), attempt, true};
    std::this_thread::sleep_for(delay);
  }
}

std::string attempts_text(const Attempts& attempts) {
  if (attempts.count <= 1 && !attempts.out_of_time) return "";
  std::string text =
      " (after " + std::to_string(attempts.count) + " attempt" + (attempts.count == 1 ? "" : "s");
  if (attempts.out_of_time) text += "; the next retry would not have fitted in the tool's time";
  return text + ")";
}

// A provider's answer other than 2xx, as the error the model reads.
Error refusal(const SearchProvider& provider, const FetchedPage& page, const Attempts& attempts) {
  std::string excerpt = to_lossy_utf8(page.body);
  excerpt.resize(utf8_safe_prefix(excerpt, kSearchErrorExcerptBytes));
  const std::string what = "web_search: the " + provider.kind + " search provider answered HTTP " +
                           std::to_string(page.status) + attempts_text(attempts) +
                           (excerpt.empty() ? "" : ": " + excerpt);
  Error error;
  if (page.status == 401 || page.status == 403) {
    error = make_error(errc::provider_auth, what,
                       provider.kind == "searxng"
                           ? "the SearXNG instance refused: its settings.yml must list json in "
                             "search.formats; tell the user"
                           : "the key configured in loopr.toml [web_search." + provider.kind +
                                 "] (api_key_env or key_file) was refused; tell the user");
  } else if (is_retryable_status(page.status)) {
    error = make_error(errc::provider_unavailable, what,
                       "the provider is busy or failing; try again later, or go on without "
                       "searching");
  } else {
    error = make_error(errc::provider_request, what,
                       "the provider refused this search; try a shorter or simpler query");
  }
  error.details =
      Json{{"provider", provider.kind}, {"status", page.status}, {"attempts", attempts.count}};
  return error;
}

Error without_key(Error error, const SearchProvider& provider) {
  error.message = redact_key(std::move(error.message), provider);
  error.hint = redact_key(std::move(error.hint), provider);
  return error;
}

Result<Json> search(const tool::Arguments& arguments) {
  auto query = arguments.required_string("query");
  if (!query) return std::move(query).error();
  if (query->find_first_not_of(" \t\r\n") == std::string::npos) {
    return make_error(errc::invalid_arguments, "web_search: 'query' is empty",
                      "say what to search for");
  }
  if (query->size() > kMaxQueryBytes) {
    return make_error(errc::invalid_arguments,
                      "web_search: 'query' is " + std::to_string(query->size()) +
                          " bytes; at most " + std::to_string(kMaxQueryBytes) + " are accepted",
                      "search for a few key words");
  }
  auto max_results = arguments.integer_or("max_results", 5, 1, 10);
  if (!max_results) return std::move(max_results).error();
  auto policy = job_address_policy(arguments, "web_search");
  if (!policy) return std::move(policy).error();
  auto job = read_search_job(arguments);
  if (!job) return std::move(job).error();
  const SearchProvider& provider = job->provider;
  if (tool::job_network_off()) {
    return make_error(
        errc::sandbox_denied,
        "network is off in lane " + tool::job_lane() + "; web_search cannot reach " + provider.kind,
        "web_search belongs in lane net (catalog.toml [tools.web_search] lane)");
  }
  auto request = search_request(provider, *query, static_cast<int>(*max_results));
  if (!request) return std::move(request).error();

  Attempts attempts = send_with_retries(*request, *policy, *job);
  if (!attempts.last) {
    Error error = std::move(attempts.last).error();
    error.message = "web_search: the " + provider.kind + " search provider could not be reached" +
                    attempts_text(attempts) + ": " + error.message;
    return error;
  }
  const FetchedPage& page = *attempts.last;
  if (page.status < 200 || page.status > 299) return refusal(provider, page, attempts);
  if (page.body_truncated) {
    return make_error(errc::provider_protocol,
                      "web_search: the " + provider.kind + " search provider's answer is over " +
                          std::to_string(kMaxAnswerBytes) + " bytes",
                      "try again with fewer max_results");
  }
  auto results =
      parse_search_results(provider.kind, page.body, static_cast<std::size_t>(*max_results));
  if (!results) return std::move(results).error();
  Json list = Json::array();
  for (SearchResult& result : *results) {
    list.push_back({{"title", std::move(result.title)},
                    {"url", std::move(result.url)},
                    {"snippet", std::move(result.snippet)}});
  }
  return Json{{"provider", provider.kind}, {"query", *query}, {"results", std::move(list)}};
}

}  // namespace

Result<Json> web_search(const tool::Worktree& /*worktree*/, const Json& args) {
  auto arguments = tool::Arguments::parse(
      args, "web_search", {"query", "max_results", "allowed_networks", "search_provider"});
  if (!arguments) return std::move(arguments).error();
  Result<Json> result = search(*arguments);
  if (result) return result;
  // Whatever failed, the key is not in what the model reads.
  SearchProvider provider;
  if (arguments->has("search_provider") && arguments->raw("search_provider").is_object()) {
    const Json& raw = arguments->raw("search_provider");
    if (auto key = raw.find("api_key"); key != raw.end() && key->is_string()) {
      provider.api_key = key->get<std::string>();
    }
  }
  return without_key(std::move(result).error(), provider);
}

}  // namespace loopr::fetch
