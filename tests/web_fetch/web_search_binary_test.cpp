// loopr-fetch web_search as a process, against local servers speaking each
// provider's documented answer (ScriptedHttpServer records what was asked):
// the request each provider gets, the normalised results, retries (429 with
// retry-after, 5xx until exhausted, a reset connection), malformed answers,
// and a key that never shows in what the model reads (SECURITY.md class 26).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/support/scripted_http_server.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr const char* kKey = "k3y+SECRET/42";  // '+' and '/' are escaped in a query

class WebSearchBinary : public ::testing::Test {
 protected:
  // A call as the daemon hands it to the job: the model's arguments plus
  // the reserved provider settings and the allowance for the local server.
  json args(const std::string& kind, json extra = json::object()) const {
    json provider = {{"kind", kind},
                     {"base_url", server_.base_url()},
                     {"max_retries", 3},
                     {"retry_base_delay_ms", 10},
                     {"retry_max_delay_ms", 2000},
                     {"timeout_ms", 30000}};
    if (kind != "searxng") provider["api_key"] = kKey;
    if (kind == "google") provider["cx"] = "engine-7";
    json call = {{"query", "loopr daemon"},
                 {"allowed_networks", {"127.0.0.1/32"}},
                 {"search_provider", provider}};
    for (auto& [key, value] : extra.items()) {
      if (key == "search_provider") {
        call["search_provider"].update(value);
      } else {
        call[key] = value;
      }
    }
    return call;
  }

  ToolRun search(const json& call) {
    return run_tool_binary("loopr-fetch", "web_search", tree_.root(), call.dump());
  }

  // The one request the provider got.
  RecordedRequest only_request() const {
    const auto requests = server_.requests();
    EXPECT_EQ(requests.size(), 1u);
    return requests.empty() ? RecordedRequest{} : requests[0];
  }

  static void expect_no_key(const ToolRun& run) {
    EXPECT_EQ(run.stdout_text.find("SECRET"), std::string::npos) << run.stdout_text;
    EXPECT_EQ(run.stderr_text.find("SECRET"), std::string::npos) << run.stderr_text;
  }

  ScriptedHttpServer server_;
  TempTree tree_;
};

TEST_F(WebSearchBinary, BraveIsAskedWithItsTokenHeaderAndItsResultsAreNormalised) {
  server_.push(ScriptedReply::json(200, R"({"type": "search", "query": {"original": "loopr"},
    "web": {"type": "search", "results": [
      {"title": "loopr &amp; friends", "url": "https://loopr.dev/",
       "description": "The <strong>loopr</strong> daemon runs   agents.", "age": "1 day"},
      {"title": "Second", "url": "https://example.org/2"}]}})"));
  const ToolRun run = search(args("brave", {{"max_results", 4}}));
  ASSERT_EQ(run.exit_code, 0) << run.stdout_text << run.stderr_text;
  EXPECT_EQ(run.output["provider"], "brave");
  EXPECT_EQ(run.output["query"], "loopr daemon");
  EXPECT_EQ(run.output["results"],
            json::parse(R"([{"title": "loopr & friends", "url": "https://loopr.dev/",
                             "snippet": "The loopr daemon runs agents."},
                            {"title": "Second", "url": "https://example.org/2", "snippet": ""}])"));
  const RecordedRequest request = only_request();
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.path, "/res/v1/web/search?q=loopr%20daemon&count=4");
  EXPECT_EQ(request.headers.at("x-subscription-token"), kKey);
  EXPECT_EQ(request.headers.at("accept"), "application/json");
  expect_no_key(run);
}

TEST_F(WebSearchBinary, GoogleGetsTheKeyAndCxInItsQueryString) {
  server_.push(ScriptedReply::json(200, R"({"kind": "customsearch#search",
    "items": [{"kind": "customsearch#result", "title": "Loopr", "link": "https://loopr.dev/",
               "snippet": "Agents in loops.", "displayLink": "loopr.dev"}]})"));
  const ToolRun run = search(args("google"));
  ASSERT_EQ(run.exit_code, 0) << run.stdout_text;
  EXPECT_EQ(run.output["provider"], "google");
  ASSERT_EQ(run.output["results"].size(), 1u);
  EXPECT_EQ(run.output["results"][0]["url"], "https://loopr.dev/");
  EXPECT_EQ(run.output["results"][0]["snippet"], "Agents in loops.");
  const RecordedRequest request = only_request();
  EXPECT_EQ(request.path,
            "/customsearch/v1?key=k3y%2BSECRET%2F42&cx=engine-7&q=loopr%20daemon&num=5");
  expect_no_key(run);
}

TEST_F(WebSearchBinary, SerperIsPostedJsonWithItsKeyHeader) {
  server_.push(ScriptedReply::json(200, R"({"searchParameters": {"q": "loopr daemon"},
    "organic": [{"title": "A", "link": "https://a.example/", "snippet": "first", "position": 1},
                {"title": "B", "link": "https://b.example/", "snippet": "second", "position": 2}]})"));
  const ToolRun run = search(args("serper", {{"max_results", 2}}));
  ASSERT_EQ(run.exit_code, 0) << run.stdout_text;
  EXPECT_EQ(run.output["results"][1]["title"], "B");
  const RecordedRequest request = only_request();
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.path, "/search");
  EXPECT_EQ(request.headers.at("x-api-key"), kKey);
  EXPECT_EQ(request.headers.at("content-type"), "application/json");
  EXPECT_EQ(json::parse(request.body), json::parse(R"({"q": "loopr daemon", "num": 2})"));
  expect_no_key(run);
}

TEST_F(WebSearchBinary, SearxngNeedsNoKeyAndIsCutToMaxResults) {
  json results = json::array();
  for (int i = 0; i < 12; ++i) {
    results.push_back({{"title", "r" + std::to_string(i)},
                       {"url", "https://r" + std::to_string(i) + ".example/"},
                       {"content", "c" + std::to_string(i)},
                       {"engine", "duckduckgo"}});
  }
  server_.push(ScriptedReply::json(
      200, json{{"query", "loopr daemon"}, {"number_of_results", 0}, {"results", results}}.dump()));
  const ToolRun run = search(args("searxng", {{"max_results", 3}}));
  ASSERT_EQ(run.exit_code, 0) << run.stdout_text;
  ASSERT_EQ(run.output["results"].size(), 3u);
  EXPECT_EQ(run.output["results"][2],
            json({{"title", "r2"}, {"url", "https://r2.example/"}, {"snippet", "c2"}}));
  const RecordedRequest request = only_request();
  EXPECT_EQ(request.path, "/search?q=loopr%20daemon&format=json");
}

TEST_F(WebSearchBinary, NoResultsIsAnEmptyList) {
  server_.push(ScriptedReply::json(200, R"({"kind": "customsearch#search",
    "searchInformation": {"totalResults": "0"}})"));
  const ToolRun run = search(args("google"));
  ASSERT_EQ(run.exit_code, 0) << run.stdout_text;
  EXPECT_EQ(run.output["results"], json::array());
}

TEST_F(WebSearchBinary, A429IsRetriedAfterItsRetryAfterSecondsThenSucceeds) {
  server_.push(ScriptedReply::json(429, R"({"error": "rate limited"})", {{"Retry-After", "1"}}));
  server_.push(ScriptedReply::json(200, R"({"results": [{"title": "t", "url": "https://u/"}]})"));
  const auto started = Clock::now();
  const ToolRun run = search(args("searxng"));
  const auto elapsed = Clock::now() - started;
  ASSERT_EQ(run.exit_code, 0) << run.stdout_text;
  EXPECT_EQ(run.output["results"].size(), 1u);
  EXPECT_EQ(server_.requests().size(), 2u);
  // retry-after: 1 wins over the 10 ms back-off.
  EXPECT_GE(elapsed, milliseconds(950));
}

TEST_F(WebSearchBinary, ARetryAfterDateIsHonouredAndCappedAndARetryThatCannotFitIsNotWaitedFor) {
  // An HTTP date in the past: retry at once.
  server_.push(
      ScriptedReply::json(503, "busy", {{"Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"}}));
  server_.push(ScriptedReply::json(200, R"({"results": []})"));
  const ToolRun past = search(args("searxng"));
  ASSERT_EQ(past.exit_code, 0) << past.stdout_text;
  EXPECT_EQ(server_.requests().size(), 2u);

  // 60 s asked, capped at 2 s: waited 2 s, not 60.
  server_.push(ScriptedReply::json(429, "slow down", {{"Retry-After", "60"}}));
  server_.push(ScriptedReply::json(200, R"({"results": []})"));
  auto started = Clock::now();
  const ToolRun capped = search(args("searxng"));
  ASSERT_EQ(capped.exit_code, 0) << capped.stdout_text;
  EXPECT_GE(Clock::now() - started, milliseconds(1900));
  EXPECT_LT(Clock::now() - started, milliseconds(10000));

  // A wait that would pass the job's timeout is not begun: the 429 is the answer.
  server_.push(ScriptedReply::json(429, "slow down", {{"Retry-After", "30"}}));
  started = Clock::now();
  const ToolRun late = search(args(
      "searxng", {{"search_provider", {{"timeout_ms", 5000}, {"retry_max_delay_ms", 60000}}}}));
  EXPECT_LT(Clock::now() - started, milliseconds(3000));
  EXPECT_EQ(late.exit_code, 1);
  EXPECT_EQ(late.output["error"]["code"], "provider_unavailable") << late.stdout_text;
  EXPECT_NE(late.output["error"]["message"].get<std::string>().find("would not have fitted"),
            std::string::npos);
  EXPECT_EQ(server_.requests().size(), 5u);
}

TEST_F(WebSearchBinary, ServerErrorsAreRetriedUntilTheRetriesRunOut) {
  for (int i = 0; i < 3; ++i) {
    server_.push(
        ScriptedReply::json(502, std::string("bad gateway for key ") + kKey, {{"X-N", "1"}}));
  }
  const ToolRun run = search(args("brave", {{"search_provider", {{"max_retries", 2}}}}));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.output["error"]["code"], "provider_unavailable") << run.stdout_text;
  const std::string message = run.output["error"]["message"];
  EXPECT_NE(message.find("brave"), std::string::npos) << message;
  EXPECT_NE(message.find("HTTP 502 (after 3 attempts)"), std::string::npos) << message;
  EXPECT_NE(message.find("[redacted]"), std::string::npos) << message;
  EXPECT_EQ(run.output["error"]["details"]["attempts"], 3);
  EXPECT_EQ(server_.requests().size(), 3u);
  expect_no_key(run);
}

TEST_F(WebSearchBinary, AResetConnectionIsRetried) {
  server_.push(ScriptedReply{{HttpStep::reset()}});
  server_.push(ScriptedReply::json(200, R"({"results": [{"title": "t", "url": "https://u/"}]})"));
  const ToolRun run = search(args("searxng"));
  ASSERT_EQ(run.exit_code, 0) << run.stdout_text;
  EXPECT_EQ(server_.requests().size(), 2u);
}

TEST_F(WebSearchBinary, ARefusedKeyIsNotRetriedAndItsEchoIsRedacted) {
  server_.push(ScriptedReply::json(
      401, std::string(R"({"error": {"detail": "invalid token )") + kKey + R"("}})"));
  const ToolRun run = search(args("serper"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.output["error"]["code"], "provider_auth") << run.stdout_text;
  EXPECT_NE(run.output["error"]["hint"].get<std::string>().find("[web_search.serper]"),
            std::string::npos);
  EXPECT_EQ(server_.requests().size(), 1u);
  expect_no_key(run);
}

TEST_F(WebSearchBinary, MalformedAnswersAreToolErrorsNamingTheProvider) {
  const std::pair<std::string, std::string> cases[] = {
      {"brave", "<html>not json</html>"},
      {"brave", R"({"unexpected": true})"},
      {"google", R"({"kind": "customsearch#search", "items": {"title": "x"}})"},
      {"serper", R"({"organic": [{"title": "no link"}]})"},
      {"searxng", R"({"results": [{"title": 7, "url": "https://u/"}]})"},
      {"searxng", R"([1, 2])"},
      {"searxng", std::string(R"({"results": [)") + std::string(100000, '[')},
  };
  for (const auto& [kind, body] : cases) {
    server_.push(ScriptedReply::json(200, body));
    const ToolRun run = search(args(kind));
    EXPECT_EQ(run.exit_code, 1) << kind << ": " << run.stdout_text << run.stderr_text;
    EXPECT_EQ(run.output["error"]["code"], "provider_protocol") << kind << ": " << run.stdout_text;
    const std::string message = run.output["error"].value("message", "");
    EXPECT_NE(message.find("the " + kind + " search provider"), std::string::npos) << message;
    expect_no_key(run);
  }
}

TEST_F(WebSearchBinary, WithoutAProviderItSaysWhichSettingsToSet) {
  const ToolRun run = search({{"query", "x"}});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.output["error"]["code"], "not_configured") << run.stdout_text;
  EXPECT_NE(run.output["error"]["hint"].get<std::string>().find("[web_search] provider"),
            std::string::npos);
  EXPECT_EQ(server_.connections(), 0u);
}

TEST_F(WebSearchBinary, BadArgumentsAndALoopbackProviderNotAllowedAreRefusedBeforeConnecting) {
  EXPECT_EQ(search(args("brave", {{"query", "  "}})).output["error"]["code"], "invalid_arguments");
  EXPECT_EQ(search(args("brave", {{"max_results", 11}})).output["error"]["code"],
            "invalid_arguments");
  json call = args("brave");
  call.erase("allowed_networks");
  const ToolRun run = search(call);
  EXPECT_EQ(run.output["error"]["code"], "sandbox_denied") << run.stdout_text;
  EXPECT_NE(run.output["error"]["message"].get<std::string>().find("web_search"),
            std::string::npos);
  EXPECT_EQ(server_.connections(), 0u);
  expect_no_key(run);
}

}  // namespace
}  // namespace loopr::test
