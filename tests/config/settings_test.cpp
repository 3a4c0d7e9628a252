#include "config/settings.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "tests/config/config_error.hpp"
#include "tests/config/settings_merge.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::config {
namespace {

using test::config_error;
using test::kAdaEnv;
using test::merged_settings;
using test::Mistake;
using test::settings_error;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(SettingsDefaults, AreAWorkingSingleUserSetup) {
  const Settings s = Settings::defaults();
  EXPECT_EQ(s.sandbox.mode, SandboxMode::on);
  EXPECT_EQ(s.daemon.log_level, LogLevel::info);
  ASSERT_EQ(s.lanes.size(), 3u);
  EXPECT_FALSE(s.lanes.at("no-net").network);
  EXPECT_TRUE(s.lanes.at("net").network);
  for (const auto& [name, lane] : s.lanes)
    EXPECT_GE(lane.slots, 1) << name;
  EXPECT_EQ(s.approval.default_policy, ApprovalPolicy::automatic);
  ASSERT_EQ(s.loops.size(), 4u);
  // Memory tools for every loop type, the oracle for plan and spec (issue
  // 13); a planner only reads and records its plan, a code loop may run its
  // own validation (issue 24).
  EXPECT_THAT(s.loops.at("plan").tools, ElementsAre("read_file", "list_directory", "glob", "grep",
                                                    "memory_search", "memory_save", "memory_update",
                                                    "memory_delete", "oracle", "create_plan"));
  EXPECT_THAT(s.loops.at("code").tools,
              ElementsAre("read_file", "write_file", "edit_file", "list_directory", "glob", "grep",
                          "run_command", "build", "test", "validate", "memory_search",
                          "memory_save", "memory_update", "memory_delete", "complete_task"));
  EXPECT_EQ(s.context.handoff_percent, 70);
  EXPECT_EQ(s.context.tool_result_max_bytes, 16384);
  EXPECT_EQ(s.context.tool_result_cap("read_file"), 16384);
  EXPECT_THAT(s.context.instructions_files, ElementsAre("AGENTS.md", "CLAUDE.md"));
  EXPECT_TRUE(s.commands.lint.empty());
  EXPECT_EQ(s.memory.max_note_bytes, 16384);
  EXPECT_EQ(s.memory.max_notes, 1000);
  EXPECT_FALSE(s.oracle.configured());
  for (const auto& [type, loop] : s.loops)
    EXPECT_GE(loop.max_iterations, 1) << type;
  EXPECT_EQ(s.active_provider().kind, ProviderKind::anthropic);
  EXPECT_EQ(s.active_provider().api_key_env, "ANTHROPIC_API_KEY");
  EXPECT_NO_THROW(s.validate_against(Catalog::builtin()));
}

TEST(SettingsLoad, MissingFileGivesDefaults) {
  loopr::test::TempTree tree;
  const Settings s = Settings::load(tree.path("loopr.toml"), kAdaEnv);
  EXPECT_EQ(s.lanes.at("no-net").slots, Settings::defaults().lanes.at("no-net").slots);
  EXPECT_TRUE(s.origins.empty());
}

TEST(SettingsLoad, FileMergesOverDefaultsAndExpandsHome) {
  loopr::test::TempTree tree;
  tree.write("loopr.toml", R"(
[daemon]
log_level = "debug"
state_dir = "~/loopr-state"

[sandbox]
read_paths = ["~/.cargo", "/opt/sdk/"]

[lanes.heavy]
slots = 2
cpu_weight = 200

[approval.tools]
run_command = "ask"

[commands]
build = "make -j2"

[loops.code]
max_iterations = 7

[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:8080/v1"
model = "qwen"
api_key_env = ""

[llm]
provider = "local"

[lanes.no-net]
warm_workers = 0
warm_worker_idle_s = 5
)");
  const Settings s = Settings::load(tree.path("loopr.toml"), kAdaEnv);
  EXPECT_EQ(s.daemon.log_level, LogLevel::debug);
  EXPECT_EQ(s.daemon.state_dir, "/home/ada/loopr-state");
  EXPECT_THAT(s.sandbox.read_paths, ElementsAre("/home/ada/.cargo", "/opt/sdk"));
  EXPECT_EQ(s.lanes.at("heavy").slots, 2);
  EXPECT_EQ(s.lanes.at("heavy").cpu_weight, 200);
  EXPECT_EQ(s.lanes.at("no-net").warm_workers, 0);
  EXPECT_EQ(s.lanes.at("no-net").warm_worker_idle_s, 5);
  EXPECT_EQ(s.lanes.at("net").warm_workers, 8);
  EXPECT_EQ(s.lanes.at("heavy").memory_mb, Settings::defaults().lanes.at("heavy").memory_mb);
  EXPECT_EQ(s.commands.build, "make -j2");
  EXPECT_EQ(s.loops.at("code").max_iterations, 7);
  EXPECT_EQ(s.loops.at("code").tools, Settings::defaults().loops.at("code").tools);
  EXPECT_EQ(s.active_provider().kind, ProviderKind::openai);
  EXPECT_EQ(s.active_provider().model, "qwen");
  EXPECT_EQ(s.origins.at("commands.build").line, 17u);
  EXPECT_EQ(s.origins.at("commands.build").file, tree.path("loopr.toml"));
  EXPECT_NO_THROW(s.validate_against(Catalog::builtin()));
}

TEST(SettingsApproval, ToolBeatsLaneBeatsDefault) {
  const Settings s = merged_settings(
      "[approval]\ndefault = \"deny\"\n[approval.tools]\ngrep = \"auto\"\n"
      "[approval.lanes]\nno-net = \"ask\"\n");
  const Catalog c = Catalog::builtin();
  EXPECT_EQ(s.approval_for(*c.find("grep")), ApprovalPolicy::automatic);
  EXPECT_EQ(s.approval_for(*c.find("read_file")), ApprovalPolicy::ask);
  EXPECT_EQ(s.approval_for(*c.find("web_fetch")), ApprovalPolicy::deny);
}

TEST(SettingsApproval, SandboxOffMakesPrivilegedToolsAskByDefault) {
  const Catalog c = Catalog::builtin();
  const Settings on = Settings::defaults();
  EXPECT_EQ(on.approval_for(*c.find("run_command")), ApprovalPolicy::automatic);
  const Settings off = merged_settings("[sandbox]\nmode = \"off\"\n");
  EXPECT_EQ(off.sandbox.mode, SandboxMode::off);
  EXPECT_EQ(off.approval_for(*c.find("run_command")), ApprovalPolicy::ask);
  EXPECT_EQ(off.approval_for(*c.find("read_file")), ApprovalPolicy::automatic);
  const Settings explicit_auto =
      merged_settings("[sandbox]\nmode = \"off\"\n[approval.tools]\nrun_command = \"auto\"\n");
  EXPECT_EQ(explicit_auto.approval_for(*c.find("run_command")), ApprovalPolicy::automatic);
}

TEST(SettingsWebFetch, AllowedNetworksAreReadAndNoneByDefault) {
  EXPECT_TRUE(Settings::defaults().web_fetch.allowed_networks.empty());
  const Settings s =
      merged_settings("[web_fetch]\nallowed_networks = [\"10.20.0.0/16\", \"fd00::/8\"]\n");
  EXPECT_EQ(s.web_fetch.allowed_networks, (std::vector<std::string>{"10.20.0.0/16", "fd00::/8"}));
}

TEST(SettingsEgress, NetworksPortAndPerLaneDomainListsAreRead) {
  const EgressSettings d = Settings::defaults().egress;
  EXPECT_TRUE(d.allowed_networks.empty());
  EXPECT_EQ(d.port, 3128);
  EXPECT_TRUE(d.lanes.empty());
  const Settings s = merged_settings(
      "[egress]\nallowed_networks = [\"10.20.0.0/16\"]\nport = 8118\n"
      "[egress.lanes.net]\nallow_domains = [\"github.com\", \"*.github.com\"]\n"
      "deny_domains = [\"gist.github.com\"]\n[egress.lanes.heavy]\ndeny_domains = []\n");
  EXPECT_EQ(s.egress.allowed_networks, (std::vector<std::string>{"10.20.0.0/16"}));
  EXPECT_EQ(s.egress.port, 8118);
  EXPECT_EQ(s.egress.lanes.at("net").allow_domains,
            (std::vector<std::string>{"github.com", "*.github.com"}));
  EXPECT_EQ(s.egress.lanes.at("net").deny_domains, (std::vector<std::string>{"gist.github.com"}));
  EXPECT_TRUE(s.egress.lanes.at("heavy").deny_domains.empty());
}

// Issue 25: memory_mb is the job's memory (a cgroup limit), 0 for none; the
// address-space limit is its own key, off by default.
TEST(SettingsLanes, MemoryMayBeUnlimitedAndTheAddressSpaceLimitIsOffByDefault) {
  for (const auto& [name, lane] : Settings::defaults().lanes) {
    EXPECT_GT(lane.memory_mb.value_or(0), 0) << name;
    EXPECT_FALSE(lane.address_space_mb.has_value()) << name;
  }
  const Settings s = merged_settings(
      "[lanes.heavy]\nmemory_mb = 0\naddress_space_mb = 16384\n"
      "[lanes.net]\naddress_space_mb = 0\n");
  EXPECT_EQ(s.lanes.at("heavy").memory_mb, 0);
  EXPECT_EQ(s.lanes.at("heavy").address_space_mb, 16384);
  EXPECT_FALSE(s.lanes.at("net").address_space_mb.has_value());
}

TEST(SettingsWebSearch, NoProviderByDefaultAndEveryKindHasItsDefaults) {
  const WebSearchSettings d = Settings::defaults().web_search;
  EXPECT_EQ(d.provider, "");
  EXPECT_EQ(d.providers.at("brave").base_url, "https://api.search.brave.com");
  EXPECT_EQ(d.providers.at("brave").api_key_env, "BRAVE_SEARCH_API_KEY");
  EXPECT_EQ(d.providers.at("google").api_key_env, "GOOGLE_CSE_API_KEY");
  EXPECT_EQ(d.providers.at("serper").base_url, "https://google.serper.dev");
  EXPECT_EQ(d.providers.at("searxng").base_url, "");
  EXPECT_EQ(d.providers.at("searxng").api_key_env, "");
  EXPECT_EQ(d.max_retries, 3);
}

TEST(SettingsWebSearch, TheProviderItsTableAndTheRetriesAreRead) {
  const Settings s = merged_settings(
      "[web_search]\nprovider = \"google\"\nmax_retries = 1\nretry_base_delay_ms = 50\n"
      "retry_max_delay_ms = 900\nallowed_networks = [\"10.1.0.0/16\"]\n"
      "[web_search.google]\ncx = \"abc:123\"\napi_key_env = \"\"\n"
      "key_file = \"~/.config/loopr/cse.key\"\nbase_url = \"http://127.0.0.1:9\"\n");
  const WebSearchSettings& w = s.web_search;
  EXPECT_EQ(w.provider, "google");
  EXPECT_EQ(w.max_retries, 1);
  EXPECT_EQ(w.retry_base_delay_ms, 50);
  EXPECT_EQ(w.retry_max_delay_ms, 900);
  EXPECT_EQ(w.allowed_networks, std::vector<std::string>{"10.1.0.0/16"});
  const SearchProviderSettings& google = w.providers.at("google");
  EXPECT_EQ(google.cx, "abc:123");
  EXPECT_EQ(google.api_key_env, "");
  EXPECT_EQ(google.key_file, "/home/ada/.config/loopr/cse.key");
  EXPECT_EQ(google.base_url, "http://127.0.0.1:9");
  EXPECT_EQ(w.providers.at("brave").api_key_env, "BRAVE_SEARCH_API_KEY");  // untouched
}

TEST(SettingsErrors, EachMistakeNamesFileLineAndKey) {
  const Mistake mistakes[] = {
      {"[deamon]\nlog_level = \"info\"\n", "loopr.toml:1: deamon:", "unknown table"},
      {"[daemon]\nloglevel = \"info\"\n", "loopr.toml:2: daemon.loglevel:", "unknown key"},
      {"[daemon]\nlog_level = \"verbose\"\n",
       "loopr.toml:2: daemon.log_level:", "trace, debug, info, warn, error"},
      {"[daemon]\nheartbeat_interval_ms = \"5s\"\n",
       "loopr.toml:2: daemon.heartbeat_interval_ms:", "a string"},
      {"[daemon]\nmax_client_queue_bytes = 1024\n",
       "loopr.toml:2: daemon.max_client_queue_bytes:", "16 MiB"},
      {"[daemon]\nstate_dir = \"state\"\n", "loopr.toml:2: daemon.state_dir:", "absolute path"},
      {"[sandbox]\nmode = false\n", "loopr.toml:2: sandbox.mode:", "on, off"},
      {"[sandbox]\nmode = \"disabled\"\n", "loopr.toml:2: sandbox.mode:", "on, off"},
      {"[sandbox]\nread_paths = [\"/opt\", 3]\n",
       "loopr.toml:2: sandbox.read_paths[1]:", "must be a string"},
      {"[sandbox]\ntmp_size_mb = 0\n", "loopr.toml:2: sandbox.tmp_size_mb:", "positive"},
      {"[lanes.no-net]\nnetwork = true\n",
       "loopr.toml:2: lanes.no-net.network:", "never has network"},
      {"[lanes.net]\nslots = 0\n", "loopr.toml:2: lanes.net.slots:", "positive"},
      {"[lanes.gpu]\nslots = 1\n", "loopr.toml:1: lanes.gpu:", "no-net, net and heavy"},
      {"[lanes.no-net]\nwarm_workers = 300\n",
       "loopr.toml:2: lanes.no-net.warm_workers:", "at most 256"},
      {"[lanes.heavy]\ncpu_weight = 20000\n",
       "loopr.toml:2: lanes.heavy.cpu_weight:", "at most 10000"},
      {"[lanes.heavy]\nmemory_mb = 8\n", "loopr.toml:2: lanes.heavy.memory_mb:", "at least 16"},
      {"[lanes.net]\naddress_space_mb = 32\n",
       "loopr.toml:2: lanes.net.address_space_mb:", "at least 64"},
      {"[approval]\ndefault = \"yes\"\n", "loopr.toml:2: approval.default:", "auto, ask, deny"},
      {"[approval.lanes]\ngpu = \"ask\"\n", "loopr.toml:2: approval.lanes.gpu:", "unknown lane"},
      {"[approval.tools]\ngrep = \"never\"\n",
       "loopr.toml:2: approval.tools.grep:", "auto, ask, deny"},
      {"[commands]\nbuild = [\"make\"]\n", "loopr.toml:2: commands.build:", "must be a string"},
      {"[web_fetch]\nallowed_networks = [\"10.0.0.1/8\"]\n",
       "loopr.toml:2: web_fetch.allowed_networks:", "did you mean 10.0.0.0/8"},
      {"[web_fetch]\nallowed_networks = [\"intranet\"]\n",
       "loopr.toml:2: web_fetch.allowed_networks:", "not an IP address or CIDR range"},
      {"[web_fetch]\nallowed_hosts = [\"x\"]\n",
       "loopr.toml:2: web_fetch.allowed_hosts:", "unknown key"},
      {"[egress]\nallowed_networks = [\"169.254.0.0/8\"]\n",
       "loopr.toml:2: egress.allowed_networks:", "did you mean"},
      {"[egress]\nport = 0\n", "loopr.toml:2: egress.port:", "TCP port"},
      {"[egress]\nproxy = \"x\"\n", "loopr.toml:2: egress.proxy:", "unknown key"},
      {"[egress.lanes.no-net]\nallow_domains = []\n",
       "loopr.toml:1: egress.lanes.no-net:", "only the lanes with network"},
      {"[egress.lanes.net]\nallow_domains = [\"https://github.com\"]\n",
       "loopr.toml:2: egress.lanes.net.allow_domains:", "not a host name"},
      {"[egress.lanes.net]\nallow = [\"x\"]\n",
       "loopr.toml:2: egress.lanes.net.allow:", "unknown key"},
      {"[web_search]\nprovider = \"bing\"\n",
       "loopr.toml:2: web_search.provider:", "brave, google, serper, searxng"},
      {"[web_search]\nkey = \"x\"\n", "loopr.toml:2: web_search.key:", "unknown key"},
      {"[web_search.serper]\napi_key = \"sk-1\"\n",
       "loopr.toml:2: web_search.serper.api_key:", "do not belong"},
      {"[web_search.brave]\ncx = \"1\"\n", "loopr.toml:2: web_search.brave.cx:", "unknown key"},
      {"[web_search.brave]\napi_key_env = \"BSA-123-abc\"\n",
       "loopr.toml:2: web_search.brave.api_key_env:", "NAME of an environment variable"},
      {"[web_search.searxng]\nbase_url = \"searx.lan\"\n",
       "loopr.toml:2: web_search.searxng.base_url:", "http"},
      {"[web_search]\nmax_retries = 11\n", "loopr.toml:2: web_search.max_retries:", "10"},
      {"[web_search]\nallowed_networks = [\"lan\"]\n",
       "loopr.toml:2: web_search.allowed_networks:", "not an IP address or CIDR range"},
      {"[loops.review]\nmax_iterations = 3\n",
       "loopr.toml:1: loops.review:", "plan, spec, phase, code"},
      {"[loops.code]\nmax_iterations = 0\n",
       "loopr.toml:2: loops.code.max_iterations:", "positive"},
      {"[loops.code]\ntools = [\"grep\", \"grep\"]\n",
       "loopr.toml:2: loops.code.tools[1]:", "twice"},
      {"[loops.code]\ntools = \"grep\"\n", "loopr.toml:2: loops.code.tools:", "array of strings"},
      {"[providers.anthropic]\napi_key = \"sk-123\"\n",
       "loopr.toml:2: providers.anthropic.api_key:", "do not belong"},
      {"[providers.anthropic]\napi_key_env = \"sk-ant-123\"\n",
       "loopr.toml:2: providers.anthropic.api_key_env:", "NAME of an environment variable"},
      {"[providers.x]\nmodel = \"m\"\n", "loopr.toml:1: providers.x:", "must set kind"},
      {"[providers.x]\nkind = \"gemini\"\n",
       "loopr.toml:2: providers.x.kind:", "anthropic, openai, scripted"},
      {"[providers.x]\nkind = \"openai\"\nbase_url = \"ftp://h\"\n",
       "loopr.toml:3: providers.x.base_url:", "http"},
      {"[providers.demo]\nkind = \"scripted\"\n",
       "loopr.toml:1: providers.demo:", "must set script"},
      {"[providers.anthropic]\nmax_retries = -1\n",
       "loopr.toml:2: providers.anthropic.max_retries:", "non-negative"},
      {"\n[llm]\nprovider = \"gemini\"\n", "loopr.toml:3: llm.provider:", "no provider named"},
      {"[llm]\nfallback = [\"anthropic\", \"gemini\"]\n",
       "loopr.toml:2: llm.fallback:", "no provider named \"gemini\""},
      {"[llm]\nfallback = \"openai\"\n", "loopr.toml:2: llm.fallback:", ""},
      {"[notify]\nwebhook_url = \"hooks.slack.com/x\"\n",
       "loopr.toml:2: notify.webhook_url:", "http:// or https://"},
      {"[notify]\nmax_per_minute = 0\n", "loopr.toml:2: notify.max_per_minute:", ""},
      {"[llm]\nmodel = \"x\"\n", "loopr.toml:2: llm.model:", "unknown key"},
      {"[daemon]\nsocket = \"/a\"\nsocket = \"/b\"\n", "loopr.toml:3: syntax error:", ""},
  };
  for (const auto& mistake : mistakes) {
    SCOPED_TRACE(mistake.text);
    const std::string message = settings_error(mistake.text);
    EXPECT_THAT(message, StartsWith(mistake.prefix));
    EXPECT_THAT(message, HasSubstr(mistake.fragment));
  }
}

// Every table's keys come from one list (config/settings.cpp's read_table):
// a misspelt key names the table's known keys, all of them, in this order.
TEST(SettingsErrors, AMisspeltKeyListsEveryKnownKeyOfItsTable) {
  const std::vector<std::pair<std::string, std::string>> tables = {
      {"daemon",
       "socket, state_dir, log_level, max_client_queue_bytes, heartbeat_interval_ms, "
       "runner_restart_backoff_ms"},
      {"sandbox", "mode, worktree_roots, read_paths, hidden_paths, tmp_size_mb"},
      {"lanes.heavy",
       "slots, network, memory_mb, pids_max, cpu_weight, warm_workers, warm_worker_idle_s, "
       "address_space_mb"},
      {"approval", "default, timeout_s, tools, lanes, rules"},
      {"web_fetch", "allowed_networks"},
      {"web_search.google", "base_url, api_key_env, key_file, cx"},
      {"web_search.serper", "base_url, api_key_env, key_file"},
      {"egress", "allowed_networks, port, lanes"},
      {"egress.lanes.heavy", "allow_domains, deny_domains"},
      {"commands", "build, test, validate, lint, lint_files"},
      {"context",
       "handoff_percent, tool_result_max_bytes, tool_result_max_bytes_by_tool, "
       "instructions_files, instructions_max_bytes, tree_max_bytes"},
      {"loops.spec", "tools, prompt_template, validation_command, max_iterations"},
      {"providers.openai",
       "kind, base_url, model, api_key_env, key_file, max_retries, script, stream, "
       "context_window, max_tokens, prompt_caching, connect_timeout_ms, first_byte_timeout_ms, "
       "idle_timeout_ms, retry_base_delay_ms, retry_max_delay_ms, max_in_flight, "
       "max_tokens_field, reasoning_effort"},
      {"llm", "provider, fallback"},
      {"notify", "webhook_url, webhook_body, desktop, max_per_minute"},
      {"prices.\"m\"",
       "input_usd_per_mtok, output_usd_per_mtok, cache_read_usd_per_mtok, "
       "cache_write_usd_per_mtok"},
      {"budgets", "loop, global, plan"},
      {"budgets.global",
       "turns_per_iteration, tool_calls, wall_clock_s, input_tokens, output_tokens, "
       "cache_read_tokens, cache_write_tokens, usd"},
      {"loop_health", "repeated_call_limit, unchanged_iteration_limit, malformed_call_limit"},
      {"worktrees", "folder, keep_finished_s, include, setup, copy_limit_mb"},
      {"scheduler",
       "max_running, max_running_plan, max_running_spec, max_running_phase, max_running_code"},
      {"merges", "resolve_max_iterations"},
      {"memory", "max_note_bytes, max_notes"},
      {"oracle", "provider, model, max_tokens, max_files, max_file_bytes, max_total_bytes"},
  };
  for (const auto& [table, known] : tables) {
    EXPECT_EQ(settings_error("[" + table + "]\nnot_a_key = 1\n"),
              "loopr.toml:2: " + table + ".not_a_key: unknown key; known keys are: " + known)
        << table;
  }
}

TEST(SettingsErrors, HomeNeededButUnset) {
  Settings s = Settings::defaults();
  std::istringstream in("[sandbox]\nread_paths = [\"~/x\"]\n");
  const std::string message = config_error([&] { s.merge_toml(in, "loopr.toml", fixed_env({})); });
  EXPECT_THAT(message, StartsWith("loopr.toml:2: sandbox.read_paths[0]:"));
  EXPECT_THAT(message, HasSubstr("HOME"));
}

TEST(SettingsErrors, LoadNamesThePath) {
  loopr::test::TempTree tree;
  tree.write("loopr.toml", "[lanes.no-net]\nslots = 2\nnetwork = true\n");
  const std::string message =
      config_error([&] { Settings::load(tree.path("loopr.toml"), kAdaEnv); });
  EXPECT_THAT(message, StartsWith(tree.path("loopr.toml") + ":3: lanes.no-net.network:"));
}

TEST(SettingsValidate, UnknownLoopToolNamesItsLine) {
  loopr::test::TempTree tree;
  tree.write("loopr.toml",
             "[loops.code]\nmax_iterations = 3\ntools = [\"read_file\", \"bulid\"]\n");
  const Settings s = Settings::load(tree.path("loopr.toml"), kAdaEnv);
  const std::string message = config_error([&] { s.validate_against(Catalog::builtin()); });
  EXPECT_THAT(message, StartsWith(tree.path("loopr.toml") + ":3: loops.code.tools:"));
  EXPECT_THAT(message, HasSubstr("'bulid'"));
}

TEST(SettingsValidate, UnknownApprovalToolIsRefused) {
  const Settings s = merged_settings("[approval.tools]\n\nrun_comand = \"ask\"\n");
  const std::string message = config_error([&] { s.validate_against(Catalog::builtin()); });
  EXPECT_THAT(message, StartsWith("loopr.toml:3: approval.tools.run_comand:"));
}

TEST(SettingsValidate, AToolAddedToTheCatalogMayBeUsedByALoop) {
  Catalog c = Catalog::builtin();
  std::istringstream catalog_text(
      "[tools.lint]\nlane = \"heavy\"\ndescription = \"Lint\"\n"
      "input_schema = '{\"type\": \"object\", \"properties\": {}, \"additionalProperties\": "
      "false}'\n");
  c.merge_toml(catalog_text, "catalog.toml");
  const Settings s =
      merged_settings("[loops.code]\ntools = [\"read_file\", \"lint\", \"complete_task\"]\n");
  EXPECT_NO_THROW(s.validate_against(c));
  EXPECT_THROW(s.validate_against(Catalog::builtin()), ConfigError);
}

TEST(SettingsExample, LoadsAndEqualsTheDefaults) {
  const Settings s =
      Settings::load(std::string(LOOPR_CONFIG_SOURCE_DIR) + "/loopr.example.toml", kAdaEnv);
  const Settings d = Settings::defaults();
  EXPECT_NO_THROW(s.validate_against(Catalog::builtin()));
  EXPECT_EQ(s.daemon.max_client_queue_bytes, d.daemon.max_client_queue_bytes);
  EXPECT_EQ(s.daemon.heartbeat_interval_ms, d.daemon.heartbeat_interval_ms);
  EXPECT_EQ(s.sandbox.tmp_size_mb, d.sandbox.tmp_size_mb);
  for (const auto& [name, lane] : d.lanes) {
    EXPECT_EQ(s.lanes.at(name).slots, lane.slots) << name;
    EXPECT_EQ(s.lanes.at(name).network, lane.network) << name;
    EXPECT_EQ(s.lanes.at(name).memory_mb, lane.memory_mb) << name;
    EXPECT_EQ(s.lanes.at(name).pids_max, lane.pids_max) << name;
    EXPECT_EQ(s.lanes.at(name).address_space_mb, lane.address_space_mb) << name;
  }
  for (const auto& [type, loop] : d.loops) {
    EXPECT_EQ(s.loops.at(type).tools, loop.tools) << type;
    EXPECT_EQ(s.loops.at(type).max_iterations, loop.max_iterations) << type;
    EXPECT_EQ(s.loops.at(type).prompt_template, loop.prompt_template) << type;
  }
  for (const auto& [name, p] : d.providers) {
    EXPECT_EQ(s.providers.at(name).model, p.model) << name;
    EXPECT_EQ(s.providers.at(name).base_url, p.base_url) << name;
    EXPECT_EQ(s.providers.at(name).api_key_env, p.api_key_env) << name;
    EXPECT_EQ(s.providers.at(name).max_tokens, p.max_tokens) << name;
    EXPECT_EQ(s.providers.at(name).max_tokens_field, p.max_tokens_field) << name;
    EXPECT_EQ(s.providers.at(name).reasoning_effort, p.reasoning_effort) << name;
  }
  EXPECT_EQ(s.llm.provider, d.llm.provider);
  for (const auto& [model, price] : d.prices) {
    EXPECT_EQ(s.prices.at(model).input, price.input) << model;
    EXPECT_EQ(s.prices.at(model).output, price.output) << model;
  }
  EXPECT_EQ(s.budgets.loop.turns_per_iteration, d.budgets.loop.turns_per_iteration);
  EXPECT_FALSE(s.budgets.global.usd);
  EXPECT_EQ(s.loop_health.repeated_call_limit, d.loop_health.repeated_call_limit);
  EXPECT_EQ(s.providers.at("anthropic").stream, true);
  EXPECT_EQ(s.providers.at("anthropic").idle_timeout_ms,
            d.providers.at("anthropic").idle_timeout_ms);
  EXPECT_EQ(s.providers.at("anthropic").max_in_flight, d.providers.at("anthropic").max_in_flight);
  EXPECT_FALSE(s.budgets.plan.usd);
  EXPECT_FALSE(s.budgets.plan.turns_per_iteration);
  EXPECT_EQ(s.worktrees.keep_finished_s, d.worktrees.keep_finished_s);
  EXPECT_EQ(s.worktrees.copy_limit_mb, d.worktrees.copy_limit_mb);
  EXPECT_EQ(s.scheduler.max_running, d.scheduler.max_running);
  for (const std::string type : {"plan", "spec", "phase", "code"})
    EXPECT_EQ(s.scheduler.limit_for(type), d.scheduler.limit_for(type)) << type;
  EXPECT_EQ(s.merges.resolve_max_iterations, d.merges.resolve_max_iterations);
  EXPECT_EQ(s.web_search.provider, d.web_search.provider);
  EXPECT_EQ(s.web_search.max_retries, d.web_search.max_retries);
  EXPECT_EQ(s.web_search.retry_base_delay_ms, d.web_search.retry_base_delay_ms);
  EXPECT_EQ(s.web_search.retry_max_delay_ms, d.web_search.retry_max_delay_ms);
  for (const auto& [kind, p] : d.web_search.providers) {
    EXPECT_EQ(s.web_search.providers.at(kind).base_url, p.base_url) << kind;
    EXPECT_EQ(s.web_search.providers.at(kind).api_key_env, p.api_key_env) << kind;
    EXPECT_EQ(s.web_search.providers.at(kind).key_file, p.key_file) << kind;
    EXPECT_EQ(s.web_search.providers.at(kind).cx, p.cx) << kind;
  }
}

TEST(SettingsLoops, PricesBudgetsHealthAndWorktreesAreRead) {
  const Settings s = merged_settings(
      "[sandbox]\nworktree_roots = [\"/src\"]\n"
      "[worktrees]\nfolder = \"/src/.wt\"\n"
      "[prices.\"local-model\"]\ninput_usd_per_mtok = 0\noutput_usd_per_mtok = 1.5\n"
      "[budgets.loop]\nusd = 2\ntool_calls = 100\n"
      "[budgets.global]\noutput_tokens = 1000000\n"
      "[loop_health]\nrepeated_call_limit = 5\n"
      "[providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n"
      "model = \"m\"\napi_key_env = \"\"\nstream = false\ncontext_window = 32768\n");
  EXPECT_EQ(s.worktree_folder(), "/src/.wt");
  EXPECT_EQ(s.prices.at("local-model").output, 1.5);
  EXPECT_EQ(s.budgets.loop.usd, 2.0);
  EXPECT_EQ(s.budgets.loop.tool_calls, 100);
  EXPECT_EQ(s.budgets.loop.turns_per_iteration, 50);  // the default stays
  EXPECT_EQ(s.budgets.global.output_tokens, 1000000);
  EXPECT_EQ(s.loop_health.repeated_call_limit, 5);
  EXPECT_FALSE(s.providers.at("local").stream);
  EXPECT_EQ(s.providers.at("local").context_window, 32768);
  EXPECT_EQ(merged_settings("[sandbox]\nworktree_roots = [\"/src\"]\n").worktree_folder(),
            "/src/.loopr-worktrees");
}

TEST(SettingsLoops, MistakesNameTheKey) {
  EXPECT_THAT(settings_error("[budgets.loop]\nusd = -1\n"), HasSubstr("budgets.loop.usd"));
  EXPECT_THAT(settings_error("[budgets.loop]\nusd = \"lots\"\n"), HasSubstr("US dollars"));
  EXPECT_THAT(settings_error("[budgets.loop]\ntokens = 5\n"), HasSubstr("tokens"));
  EXPECT_THAT(settings_error("[budgets.weekly]\nusd = 5\n"), HasSubstr("budgets"));
  EXPECT_THAT(settings_error("[prices.m]\ninput = 1\n"), HasSubstr("prices"));
  EXPECT_THAT(settings_error("[loop_health]\nrepeated_call_limit = 0\n"),
              HasSubstr("loop_health.repeated_call_limit"));
  EXPECT_THAT(
      settings_error("[sandbox]\nworktree_roots = [\"/src\"]\n[worktrees]\nfolder = \"/tmp/x\"\n"),
      HasSubstr("not beneath any [sandbox] worktree_roots"));
  EXPECT_THAT(settings_error("[providers.anthropic]\nidle_timeout_ms = 5\n"),
              HasSubstr("providers.anthropic.idle_timeout_ms"));
}

TEST(SettingsContext, ContextAndLintAreReadAndMistakesNameTheKey) {
  const Settings s = merged_settings(
      "[commands]\nlint = \"ruff check {files}\"\nlint_files = [\"*.py\"]\n"
      "[context]\nhandoff_percent = 60\ntool_result_max_bytes = 8192\n"
      "instructions_files = [\"docs/AGENTS.md\"]\ninstructions_max_bytes = 0\n"
      "tree_max_bytes = 2048\n"
      "[context.tool_result_max_bytes_by_tool]\nread_file = 32768\n");
  EXPECT_EQ(s.commands.lint, "ruff check {files}");
  EXPECT_THAT(s.commands.lint_files, ElementsAre("*.py"));
  EXPECT_EQ(s.context.handoff_percent, 60);
  EXPECT_EQ(s.context.tool_result_cap("grep"), 8192);
  EXPECT_EQ(s.context.tool_result_cap("read_file"), 32768);
  EXPECT_THAT(s.context.instructions_files, ElementsAre("docs/AGENTS.md"));
  EXPECT_EQ(s.context.instructions_max_bytes, 0);
  EXPECT_EQ(s.context.tree_max_bytes, 2048);
  EXPECT_THAT(settings_error("[context]\nhandoff_percent = 99\n"),
              HasSubstr("context.handoff_percent"));
  EXPECT_THAT(settings_error("[context]\ntool_result_max_bytes = 10\n"),
              HasSubstr("context.tool_result_max_bytes"));
  EXPECT_THAT(settings_error("[context.tool_result_max_bytes_by_tool]\ngrep = \"big\"\n"),
              HasSubstr("context.tool_result_max_bytes_by_tool.grep"));
  EXPECT_THAT(settings_error("[context]\ninstructions_files = [\"../secret\"]\n"),
              HasSubstr("without '..'"));
  EXPECT_THAT(settings_error("[context]\nwindow = 5\n"), HasSubstr("window"));
  EXPECT_THAT(settings_error("[commands]\nlint_files = \"*.py\"\n"),
              HasSubstr("commands.lint_files"));
}

TEST(SettingsPlans, DefaultsAreFourLoopsAtOnceAndNoPlanBudget) {
  const Settings d = Settings::defaults();
  EXPECT_EQ(d.scheduler.max_running, 4);
  for (const std::string type : {"plan", "spec", "phase", "code", "review"})
    EXPECT_EQ(d.scheduler.limit_for(type), 0) << type;
  EXPECT_EQ(d.merges.resolve_max_iterations, 3);
  EXPECT_EQ(d.worktrees.keep_finished_s, 3600);
  EXPECT_EQ(d.providers.at("anthropic").max_in_flight, 4);
  EXPECT_FALSE(d.budgets.plan.usd);
  EXPECT_FALSE(d.budgets.plan.tool_calls);
}

TEST(SettingsPlans, SchedulerMergesPlanBudgetsSlotsAndWorktreeKeepAreRead) {
  const Settings s = merged_settings(
      "[scheduler]\nmax_running = 0\nmax_running_plan = 1\nmax_running_spec = 2\n"
      "max_running_phase = 3\nmax_running_code = 5\n"
      "[merges]\nresolve_max_iterations = 7\n"
      "[budgets.plan]\nusd = 20\ntool_calls = 500\noutput_tokens = 9000\n"
      "[providers.anthropic]\nmax_in_flight = 0\n"
      "[providers.openai]\nmax_in_flight = 9\n"
      "[worktrees]\nkeep_finished_s = -1\ncopy_limit_mb = 2048\n");
  EXPECT_EQ(s.worktrees.copy_limit_mb, 2048);
  EXPECT_EQ(Settings::defaults().worktrees.copy_limit_mb, 16384);
  EXPECT_EQ(s.scheduler.max_running, 0);
  EXPECT_EQ(s.scheduler.max_running_plan, 1);
  EXPECT_EQ(s.scheduler.limit_for("plan"), 1);
  EXPECT_EQ(s.scheduler.limit_for("spec"), 2);
  EXPECT_EQ(s.scheduler.limit_for("phase"), 3);
  EXPECT_EQ(s.scheduler.limit_for("code"), 5);
  EXPECT_EQ(s.scheduler.limit_for("review"), 0);
  EXPECT_EQ(s.merges.resolve_max_iterations, 7);
  EXPECT_EQ(s.budgets.plan.usd, 20.0);
  EXPECT_EQ(s.budgets.plan.tool_calls, 500);
  EXPECT_EQ(s.budgets.plan.output_tokens, 9000);
  EXPECT_FALSE(s.budgets.plan.turns_per_iteration);
  EXPECT_FALSE(s.budgets.loop.tool_calls);  // [budgets.plan] is its own table
  EXPECT_FALSE(s.budgets.global.usd);
  EXPECT_EQ(s.providers.at("anthropic").max_in_flight, 0);
  EXPECT_EQ(s.providers.at("openai").max_in_flight, 9);
  EXPECT_EQ(s.worktrees.keep_finished_s, -1);
  EXPECT_EQ(s.origins.at("scheduler.max_running_code").line, 6u);
  EXPECT_EQ(s.origins.at("worktrees.keep_finished_s").line, 18u);
  // The upper ends of the ranges.
  const Settings top =
      merged_settings("[merges]\nresolve_max_iterations = 100\n[worktrees]\nkeep_finished_s = 0\n");
  EXPECT_EQ(top.merges.resolve_max_iterations, 100);
  EXPECT_EQ(top.worktrees.keep_finished_s, 0);
}

TEST(SettingsWorktrees, IncludeAndSetupAreReadAndEmptyByDefault) {
  EXPECT_TRUE(Settings::defaults().worktrees.prep.include.empty());
  EXPECT_TRUE(Settings::defaults().worktrees.prep.setup.empty());
  const Settings s = merged_settings(
      "[worktrees]\ninclude = [\"node_modules\", \"build/\", \"src/*.o\"]\n"
      "setup = \"npm ci --offline\"\n");
  EXPECT_EQ(s.worktrees.prep.include,
            (std::vector<std::string>{"node_modules", "build/", "src/*.o"}));
  EXPECT_EQ(s.worktrees.prep.setup, "npm ci --offline");
  const Mistake mistakes[] = {
      {"[worktrees]\ninclude = [\"../other\"]\n", "loopr.toml:2: worktrees.include[0]:", ".."},
      {"[worktrees]\ninclude = [\"/etc\"]\n",
       "loopr.toml:2: worktrees.include[0]:", "not relative"},
      {"[worktrees]\ninclude = [\"a\", \"\"]\n", "loopr.toml:2: worktrees.include[1]:", "empty"},
      {"[worktrees]\ninclude = \"node_modules\"\n", "loopr.toml:2: worktrees.include:", ""},
      {"[worktrees]\nsetup = 5\n", "loopr.toml:2: worktrees.setup:", ""},
      {"[worktrees]\ncopy_limit_mb = 0\n", "loopr.toml:2: worktrees.copy_limit_mb:", "MiB"},
  };
  for (const auto& mistake : mistakes) {
    SCOPED_TRACE(mistake.text);
    const std::string message = settings_error(mistake.text);
    EXPECT_THAT(message, StartsWith(mistake.prefix));
    EXPECT_THAT(message, HasSubstr(mistake.fragment));
  }
}

TEST(SettingsPlans, EachMistakeNamesFileLineAndKey) {
  const Mistake mistakes[] = {
      {"[scheduler]\nmax_running = -1\n", "loopr.toml:2: scheduler.max_running:", "non-negative"},
      {"[scheduler]\nmax_running = \"4\"\n", "loopr.toml:2: scheduler.max_running:", "a string"},
      {"[scheduler]\nmax_running_plan = -1\n",
       "loopr.toml:2: scheduler.max_running_plan:", "non-negative"},
      {"[scheduler]\nmax_running_spec = -2\n",
       "loopr.toml:2: scheduler.max_running_spec:", "non-negative"},
      {"[scheduler]\nmax_running_phase = 1.5\n",
       "loopr.toml:2: scheduler.max_running_phase:", "integer"},
      {"[scheduler]\nmax_running_code = -1\n",
       "loopr.toml:2: scheduler.max_running_code:", "non-negative"},
      {"[scheduler]\nmax_running_review = 1\n",
       "loopr.toml:2: scheduler.max_running_review:", "unknown key"},
      {"[scheduler]\nmax_running = 1000000\n", "loopr.toml:2: scheduler.max_running:", "at most"},
      {"[merges]\nresolve_max_iterations = 0\n",
       "loopr.toml:2: merges.resolve_max_iterations:", "positive"},
      {"[merges]\nresolve_max_iterations = 101\n",
       "loopr.toml:2: merges.resolve_max_iterations:", "at most 100"},
      {"[merges]\nstrategy = \"ours\"\n", "loopr.toml:2: merges.strategy:", "unknown key"},
      {"[budgets.plan]\nusd = -1\n", "loopr.toml:2: budgets.plan.usd:", "between 0 and"},
      {"[budgets.plan]\ntool_calls = 0\n", "loopr.toml:2: budgets.plan.tool_calls:", "positive"},
      {"[budgets.plan]\ntokens = 5\n", "loopr.toml:2: budgets.plan.tokens:", "unknown key"},
      {"[budgets]\nplan = 5\n", "loopr.toml:2: budgets.plan:", "table"},
      {"[providers.anthropic]\nmax_in_flight = -1\n",
       "loopr.toml:2: providers.anthropic.max_in_flight:", "non-negative"},
      {"[providers.anthropic]\nmax_in_flight = true\n",
       "loopr.toml:2: providers.anthropic.max_in_flight:", "integer"},
      {"[worktrees]\nkeep_finished_s = -2\n",
       "loopr.toml:2: worktrees.keep_finished_s:", "at least -1"},
      {"[worktrees]\nkeep_finished_s = \"1h\"\n",
       "loopr.toml:2: worktrees.keep_finished_s:", "a string"},
      {"[worktrees]\nkeep = 5\n", "loopr.toml:2: worktrees.keep:", "unknown key"},
      {"[schedular]\nmax_running = 1\n", "loopr.toml:1: schedular:", "[scheduler]"},
  };
  for (const auto& mistake : mistakes) {
    SCOPED_TRACE(mistake.text);
    const std::string message = settings_error(mistake.text);
    EXPECT_THAT(message, StartsWith(mistake.prefix));
    EXPECT_THAT(message, HasSubstr(mistake.fragment));
  }
}

// [providers.local]: an OpenAI-compatible server on loopback, with `extra`.
std::string local_provider(const std::string& extra) {
  return "[providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n"
         "model = \"m\"\napi_key_env = \"\"\n" +
         extra;
}

TEST(SettingsProviders, UnsetMaxTokensFitsTheWindow) {
  EXPECT_EQ(default_max_tokens(200000), 16384);
  EXPECT_EQ(default_max_tokens(128000), 16000);
  EXPECT_EQ(default_max_tokens(32768), 4096);
  EXPECT_EQ(default_max_tokens(8192), 1024);
  EXPECT_EQ(default_max_tokens(4096), 1024);
  EXPECT_EQ(default_max_tokens(1500), 750);  // half of a window under 2048

  const Settings d = Settings::defaults();
  EXPECT_EQ(d.providers.at("anthropic").window(), 200000);
  EXPECT_EQ(d.providers.at("anthropic").max_tokens, 16384);
  EXPECT_EQ(d.providers.at("openai").window(), 128000);
  EXPECT_EQ(d.providers.at("openai").max_tokens, 16000);

  Settings s = merged_settings(local_provider("context_window = 32768\n") +
                               "[providers.demo]\nkind = \"scripted\"\nscript = \"/s.jsonl\"\n");
  EXPECT_EQ(s.providers.at("local").window(), 32768);
  EXPECT_EQ(s.providers.at("local").max_tokens, 4096);
  EXPECT_EQ(s.providers.at("demo").window(), 200000);
  EXPECT_EQ(s.providers.at("demo").max_tokens, 16384);
  EXPECT_EQ(s.providers.at("anthropic").max_tokens, 16384);

  // A window a later file sets counts: the unset max_tokens is fitted again.
  std::istringstream later("[providers.local]\ncontext_window = 8192\n");
  s.merge_toml(later, "later.toml", kAdaEnv);
  EXPECT_EQ(s.providers.at("local").max_tokens, 1024);
}

TEST(SettingsProviders, ASetMaxTokensIsKeptBelowTheWindow) {
  Settings s = merged_settings(local_provider("context_window = 32768\nmax_tokens = 20000\n") +
                               "[providers.anthropic]\nmax_tokens = 64000\n");
  EXPECT_EQ(s.providers.at("local").max_tokens, 20000);
  EXPECT_EQ(s.providers.at("anthropic").max_tokens, 64000);

  EXPECT_THAT(settings_error(local_provider("context_window = 32768\nmax_tokens = 32768\n")),
              AllOf(StartsWith("loopr.toml:7: providers.local.max_tokens: 32768 is not below the "
                               "context window (32768 tokens, context_window)"),
                    HasSubstr("leave it unset")));
  EXPECT_THAT(settings_error("[providers.openai]\nmax_tokens = 200000\n"),
              StartsWith("loopr.toml:2: providers.openai.max_tokens: 200000 is not below the "
                         "context window (128000 tokens, the default for kind \"openai\")"));
  // A window set by a later file is checked against the max_tokens set before.
  std::istringstream later("[providers.local]\ncontext_window = 16000\n");
  EXPECT_THAT(config_error([&] { s.merge_toml(later, "later.toml", kAdaEnv); }),
              StartsWith("loopr.toml:7: providers.local.max_tokens: 20000 is not below"));
}

TEST(SettingsProviders, MaxTokensFieldDefaultsByHost) {
  const Settings d = Settings::defaults();
  EXPECT_EQ(d.providers.at("openai").max_tokens_field, "");
  EXPECT_EQ(d.providers.at("openai").max_tokens_field_to_send(), "max_completion_tokens");
  EXPECT_EQ(d.providers.at("openai").reasoning_effort, "");

  const Settings s =
      merged_settings(local_provider("") +
                      "[providers.azure]\nkind = \"openai\"\n"
                      "base_url = \"https://API.OpenAI.com:443/v1\"\nmodel = \"o4-mini\"\n"
                      "api_key_env = \"K\"\nreasoning_effort = \"medium\"\n"
                      "[providers.proxy]\nkind = \"openai\"\n"
                      "base_url = \"https://api.openai.com.example.org/v1\"\n"
                      "model = \"m\"\napi_key_env = \"K\"\n");
  EXPECT_EQ(s.providers.at("local").max_tokens_field_to_send(), "max_tokens");
  EXPECT_EQ(s.providers.at("azure").max_tokens_field_to_send(), "max_completion_tokens");
  EXPECT_EQ(s.providers.at("azure").reasoning_effort, "medium");
  EXPECT_EQ(s.providers.at("proxy").max_tokens_field_to_send(), "max_tokens");
}

TEST(SettingsProviders, MaxTokensFieldAndReasoningEffortAreRead) {
  const Settings s = merged_settings(
      local_provider("max_tokens_field = \"max_completion_tokens\"\nreasoning_effort = \"low\"\n") +
      "[providers.openai]\nmax_tokens_field = \"max_tokens\"\nreasoning_effort = \"\"\n");
  EXPECT_EQ(s.providers.at("local").max_tokens_field, "max_completion_tokens");
  EXPECT_EQ(s.providers.at("local").max_tokens_field_to_send(), "max_completion_tokens");
  EXPECT_EQ(s.providers.at("local").reasoning_effort, "low");
  EXPECT_EQ(s.providers.at("openai").max_tokens_field_to_send(), "max_tokens");
  EXPECT_EQ(s.providers.at("openai").reasoning_effort, "");
  for (const char* effort : {"minimal", "low", "medium", "high"}) {
    EXPECT_EQ(
        merged_settings(local_provider(std::string("reasoning_effort = \"") + effort + "\"\n"))
            .providers.at("local")
            .reasoning_effort,
        effort);
  }
}

TEST(SettingsProviders, MaxTokensFieldAndReasoningEffortMistakes) {
  const Mistake mistakes[] = {
      {"[providers.openai]\nmax_tokens_field = \"max_output_tokens\"\n",
       "loopr.toml:2: providers.openai.max_tokens_field:",
       "must be one of max_tokens, max_completion_tokens, got \"max_output_tokens\""},
      {"[providers.openai]\nmax_tokens_field = \"\"\n",
       "loopr.toml:2: providers.openai.max_tokens_field:", "must be one of"},
      {"[providers.openai]\nmax_tokens_field = 1\n",
       "loopr.toml:2: providers.openai.max_tokens_field:", "must be one of"},
      {"[providers.anthropic]\nmax_tokens_field = \"max_tokens\"\n",
       "loopr.toml:2: providers.anthropic.max_tokens_field:",
       "applies to kind \"openai\" only, this provider's kind is \"anthropic\""},
      {"[providers.openai]\nreasoning_effort = \"extreme\"\n",
       "loopr.toml:2: providers.openai.reasoning_effort:",
       "must be one of minimal, low, medium, high, got \"extreme\""},
      {"[providers.openai]\nreasoning_effort = true\n",
       "loopr.toml:2: providers.openai.reasoning_effort:", "must be a string"},
      {"[providers.anthropic]\nreasoning_effort = \"high\"\n",
       "loopr.toml:2: providers.anthropic.reasoning_effort:", "applies to kind \"openai\" only"},
      {"[providers.demo]\nkind = \"scripted\"\nscript = \"/s.jsonl\"\nreasoning_effort = \"low\"\n",
       "loopr.toml:4: providers.demo.reasoning_effort:", "kind is \"scripted\""},
  };
  for (const auto& mistake : mistakes) {
    SCOPED_TRACE(mistake.text);
    const std::string message = settings_error(mistake.text);
    EXPECT_THAT(message, StartsWith(mistake.prefix));
    EXPECT_THAT(message, HasSubstr(mistake.fragment));
  }
}

}  // namespace
}  // namespace loopr::config

namespace loopr::config {
namespace {

TEST(HookSettings, HooksAreReadInOrderWithTheirDefaults) {
  const Settings s = test::merged_settings(
      "[[hooks]]\nevent = \"tool.before\"\ntools = [\"run_command\"]\ncommand = \"./guard.sh\"\n"
      "[[hooks]]\nevent = \"loop.end\"\ncommand = \"notify-send done\"\ntrusted = true\n"
      "timeout_s = 5\n");
  ASSERT_EQ(s.hooks.size(), 2u);
  EXPECT_EQ(s.hooks[0].event, "tool.before");
  EXPECT_EQ(s.hooks[0].tools, std::vector<std::string>{"run_command"});
  EXPECT_EQ(s.hooks[0].command, "./guard.sh");
  EXPECT_EQ(s.hooks[0].timeout_s, 30);
  EXPECT_FALSE(s.hooks[0].trusted);
  EXPECT_EQ(s.hooks[0].origin.line, 1u);
  EXPECT_EQ(s.hooks[1].event, "loop.end");
  EXPECT_TRUE(s.hooks[1].trusted);
  EXPECT_EQ(s.hooks[1].timeout_s, 5);
}

TEST(HookSettings, MistakesNameTheHookAndTheFix) {
  using ::testing::HasSubstr;
  EXPECT_THAT(test::settings_error("[[hooks]]\nevent = \"tool.start\"\ncommand = \"x\"\n"),
              AllOf(HasSubstr("hooks[0].event"), HasSubstr("tool.before")));
  EXPECT_THAT(test::settings_error("[[hooks]]\nevent = \"tool.before\"\n"),
              HasSubstr("needs command"));
  EXPECT_THAT(test::settings_error("[[hooks]]\ncommand = \"x\"\n"), HasSubstr("needs event"));
  EXPECT_THAT(test::settings_error("[[hooks]]\nevent = \"loop.end\"\ncommand = \"x\"\n"
                                   "tools = [\"run_command\"]\n"),
              HasSubstr("filters tool events only"));
  EXPECT_THAT(test::settings_error("[[hooks]]\nevent = \"loop.end\"\ncommand = \"x\"\n"
                                   "timeout_s = 0\n"),
              HasSubstr("hooks[0].timeout_s"));
  EXPECT_THAT(test::settings_error("[[hooks]]\nevent = \"loop.end\"\ncommand = \"x\"\n"
                                   "blocking = true\n"),
              HasSubstr("unknown key"));
  EXPECT_THAT(test::settings_error("[hooks]\nevent = \"loop.end\"\n"),
              HasSubstr("array of tables"));
}

}  // namespace
}  // namespace loopr::config

namespace loopr::config {
namespace {

TEST(NotifySettings, DesktopIsReadAndOffByDefault) {
  EXPECT_FALSE(test::merged_settings("").notify.desktop);
  EXPECT_TRUE(test::merged_settings("[notify]\ndesktop = true\n").notify.desktop);
}

}  // namespace
}  // namespace loopr::config
