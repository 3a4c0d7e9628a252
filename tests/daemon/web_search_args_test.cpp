// add_web_search_provider: what looprd adds to a web_search call before the
// job runs — the configured provider and its key under the reserved key,
// whatever the call carried — and the errors that say what to configure.
#include "daemon/web_search_args.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/support/temp_tree.hpp"

namespace loopr::daemon {
namespace {

using nlohmann::json;

config::WebSearchSettings brave() {
  config::WebSearchSettings settings = config::Settings::defaults().web_search;
  settings.provider = "brave";
  settings.allowed_networks = {"10.0.0.0/8"};
  return settings;
}

const config::EnvLookup kEnvWithKey =
    config::fixed_env({{"BRAVE_SEARCH_API_KEY", "BSA-from-env"}, {"HOME", "/home/ada"}});
const config::EnvLookup kNoEnv = config::fixed_env({});

TEST(WebSearchArgs, TheProviderAndItsKeyReplaceWhatTheCallCarried) {
  json args = {{"query", "q"},
               {"search_provider", {{"kind", "searxng"}, {"base_url", "http://evil.example"}}},
               {"allowed_networks", {"0.0.0.0/0"}}};
  ASSERT_TRUE(add_web_search_provider(args, brave(), kEnvWithKey, 30000));
  EXPECT_EQ(args["query"], "q");
  EXPECT_EQ(args["allowed_networks"], json({"10.0.0.0/8"}));
  EXPECT_EQ(args["search_provider"], json({{"kind", "brave"},
                                           {"base_url", "https://api.search.brave.com"},
                                           {"api_key", "BSA-from-env"},
                                           {"max_retries", 3},
                                           {"retry_base_delay_ms", 500},
                                           {"retry_max_delay_ms", 10000},
                                           {"timeout_ms", 30000}}));
}

TEST(WebSearchArgs, TheKeyComesFromTheKeyFileWhenTheVariableIsUnset) {
  test::TempTree tree;
  tree.write("serper.key", "serper-file-key\n");
  ::chmod(tree.path("serper.key").c_str(), 0600);
  config::WebSearchSettings settings = brave();
  settings.provider = "serper";
  settings.providers["serper"].key_file = tree.path("serper.key");
  json args = {{"query", "q"}};
  ASSERT_TRUE(add_web_search_provider(args, settings, kNoEnv, 5000));
  EXPECT_EQ(args["search_provider"]["api_key"], "serper-file-key");
  EXPECT_EQ(args["search_provider"]["timeout_ms"], 5000);
}

TEST(WebSearchArgs, GoogleCarriesCxAndSearxngNeedsNoKey) {
  config::WebSearchSettings settings = brave();
  settings.provider = "google";
  settings.providers["google"].cx = "engine:1";
  json args = {{"query", "q"}};
  ASSERT_TRUE(add_web_search_provider(args, settings,
                                      config::fixed_env({{"GOOGLE_CSE_API_KEY", "g-key"}}), 30000));
  EXPECT_EQ(args["search_provider"]["cx"], "engine:1");
  EXPECT_EQ(args["search_provider"]["api_key"], "g-key");

  settings.provider = "searxng";
  settings.providers["searxng"].base_url = "http://10.0.0.5:8888";
  json searx = {{"query", "q"}};
  ASSERT_TRUE(add_web_search_provider(searx, settings, kNoEnv, 30000));
  EXPECT_FALSE(searx["search_provider"].contains("api_key"));
  EXPECT_EQ(searx["search_provider"]["base_url"], "http://10.0.0.5:8888");
}

// Each refusal names what to set; none carries key text, and the call's own
// reserved value is dropped even then.
TEST(WebSearchArgs, WhatIsMissingIsNamed) {
  struct Case {
    config::WebSearchSettings settings;
    config::EnvLookup env;
    std::string code;
    std::string names;
  };
  config::WebSearchSettings none = brave();
  none.provider = "";
  config::WebSearchSettings google = brave();
  google.provider = "google";
  config::WebSearchSettings searxng = brave();
  searxng.provider = "searxng";
  config::WebSearchSettings keyless = brave();
  keyless.providers["brave"].api_key_env = "";
  config::WebSearchSettings unreadable = brave();
  unreadable.providers["brave"].api_key_env = "";
  unreadable.providers["brave"].key_file = "/nonexistent/brave.key";
  const Case cases[] = {
      {none, kEnvWithKey, "not_configured", "[web_search] provider"},
      {brave(), kNoEnv, "provider_auth", "BRAVE_SEARCH_API_KEY"},
      {keyless, kEnvWithKey, "provider_auth", "[web_search.brave] api_key_env or key_file"},
      {unreadable, kNoEnv, "provider_auth", "/nonexistent/brave.key"},
      {google, config::fixed_env({{"GOOGLE_CSE_API_KEY", "g"}}), "invalid_arguments",
       "[web_search.google] cx"},
      {searxng, kNoEnv, "invalid_arguments", "[web_search.searxng] base_url"},
  };
  for (const Case& c : cases) {
    json args = {{"query", "q"}, {"search_provider", {{"api_key", "model-made"}}}};
    auto added = add_web_search_provider(args, c.settings, c.env, 30000);
    ASSERT_FALSE(added) << c.names;
    EXPECT_EQ(added.error().code, c.code) << c.names;
    const std::string text = added.error().message + " " + added.error().hint;
    EXPECT_NE(text.find(c.names), std::string::npos) << text;
    EXPECT_EQ(text.find("BSA-from-env"), std::string::npos) << text;
    EXPECT_FALSE(args.contains("search_provider"));
  }
}

}  // namespace
}  // namespace loopr::daemon
