// web_search through the real looprd, its net-lane runner and loopr-fetch,
// against a local server speaking Brave's answer: the key from a key file
// reaches the provider's header and nothing else — not the approval request,
// events, the store, looprd's log or the result (SECURITY.md class 26) — and
// a model cannot set the reserved provider argument.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/daemon/daemon_harness.hpp"
#include "tests/support/scripted_http_server.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kKey = "BSA-Key-0f5e2c-SECRET";

// Every byte of every regular file beneath `folder` (the store, its WAL).
std::string all_file_bytes(const std::string& folder) {
  std::string bytes;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream content;
    content << in.rdbuf();
    bytes += content.str();
  }
  return bytes;
}

std::string brave_toml(const std::string& key_file, const std::string& base_url) {
  return "[approval.tools]\nweb_search = \"ask\"\n"
         "[web_search]\nprovider = \"brave\"\nretry_base_delay_ms = 10\n"
         "allowed_networks = [\"127.0.0.1/32\"]\n"
         "[web_search.brave]\napi_key_env = \"\"\nkey_file = \"" +
         key_file + "\"\nbase_url = \"" + base_url + "\"\n";
}

TEST(DaemonWebSearch, TheKeyReachesTheProviderAndNothingElse) {
  ScriptedHttpServer provider;
  provider.push(ScriptedReply::json(429, "busy", {{"Retry-After", "0"}}));
  provider.push(ScriptedReply::json(200, R"({"type": "search", "web": {"results": [
      {"title": "Loopr", "url": "https://loopr.dev/", "description": "agents in loops"}]}})"));
  TempTree keys;
  keys.write("brave.key", std::string(kKey) + "\n");
  ASSERT_EQ(::chmod(keys.path("brave.key").c_str(), 0600), 0);
  DaemonHarness daemon(
      DaemonOptions{brave_toml(keys.path("brave.key"), provider.base_url()), {}, {}});
  daemon.start();

  auto watcher = daemon.client();
  ASSERT_TRUE(watcher.call("events.subscribe", json{{"topics", json::array()}}));
  // A model's own provider is refused by the schema before anything runs.
  json forged =
      daemon.tool("web_search",
                  {{"query", "x"},
                   {"search_provider", {{"kind", "searxng"}, {"base_url", "http://127.0.0.1:1"}}}});
  EXPECT_EQ(forged["status"], "invalid") << forged.dump();

  json result;
  std::jthread caller([&] {
    result = daemon.tool("web_search", {{"query", "loopr"}, {"max_results", 1}});
  });
  std::string seen;  // every event and reply a client could see
  std::string approval_id;
  for (int i = 0; i < 50 && approval_id.empty(); ++i) {
    auto event = watcher.next_event(30s);
    ASSERT_TRUE(event && *event);
    seen += (**event).event + " " + (**event).data.dump() + "\n";
    if ((**event).event == "approval.requested") approval_id = (**event).data["id"];
  }
  ASSERT_FALSE(approval_id.empty());
  auto pending = watcher.call("approval.list");
  ASSERT_TRUE(pending);
  seen += pending->dump() + "\n";
  ASSERT_TRUE(watcher.call("approval.approve", {{"id", approval_id}}));
  caller.join();
  ASSERT_EQ(result["ok"], true) << result.dump() << daemon.log();
  EXPECT_EQ(result["output"]["provider"], "brave");
  EXPECT_EQ(
      result["output"]["results"],
      json::parse(
          R"([{"title": "Loopr", "url": "https://loopr.dev/", "snippet": "agents in loops"}])"));
  seen += result.dump() + "\n";
  for (int i = 0; i < 50; ++i) {
    auto event = watcher.next_event(200ms);
    if (!event || !*event) break;
    seen += (**event).event + " " + (**event).data.dump() + "\n";
  }
  seen += daemon.call("metrics.get").dump() + "\n";

  // The provider got the key, on the retry too.
  const auto requests = provider.requests();
  ASSERT_EQ(requests.size(), 2u);
  for (const auto& request : requests)
    EXPECT_EQ(request.headers.at("x-subscription-token"), kKey);

  EXPECT_NE(seen.find("approval.requested"), std::string::npos);  // the stream was read
  EXPECT_NE(seen.find("tool.finished"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("SECRET"), std::string::npos) << seen;
  daemon.stop();
  EXPECT_EQ(daemon.log().find("SECRET"), std::string::npos) << daemon.log();
  EXPECT_EQ(all_file_bytes(daemon.state_dir()).find("SECRET"), std::string::npos);
  EXPECT_EQ(all_file_bytes(daemon.config_dir()).find("SECRET"), std::string::npos);
}

TEST(DaemonWebSearch, WithoutAProviderTheCallSaysWhichKeysToSet) {
  DaemonHarness daemon;
  daemon.start();
  json result = daemon.tool("web_search", {{"query", "loopr"}});
  EXPECT_EQ(result["ok"], false);
  EXPECT_EQ(result["status"], "failed") << result.dump();
  EXPECT_EQ(result["error"]["code"], "not_configured");
  EXPECT_NE(result["error"]["hint"].get<std::string>().find("[web_search] provider"),
            std::string::npos);
}

TEST(DaemonWebSearch, AMissingKeyIsAToolErrorNamingTheVariable) {
  ScriptedHttpServer provider;
  DaemonHarness daemon(DaemonOptions{
      "[web_search]\nprovider = \"serper\"\nallowed_networks = [\"127.0.0.1/32\"]\n"
      "[web_search.serper]\napi_key_env = \"LOOPR_TEST_UNSET_SERPER_KEY\"\nbase_url = \"" +
          provider.base_url() + "\"\n",
      {},
      {}});
  daemon.start();
  json result = daemon.tool("web_search", {{"query", "loopr"}});
  EXPECT_EQ(result["error"]["code"], "provider_auth") << result.dump();
  EXPECT_NE(result["error"]["message"].get<std::string>().find("LOOPR_TEST_UNSET_SERPER_KEY"),
            std::string::npos);
  EXPECT_EQ(provider.connections(), 0u);
}

}  // namespace
}  // namespace loopr::test
