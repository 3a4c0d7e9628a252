// Loops against the providers' real wire formats, through the real looprd:
// a local HTTP server speaks the Anthropic Messages API (streamed, with a
// 529 first) and the OpenAI Chat Completions API (plain JSON), and each loop
// reads, edits, completes and passes the daemon's validation. Then the
// security classes of loops and providers (SECURITY.md 26, 27):
//   - an API key never appears in a job's environment, looprd's log, an
//     event, the store, a transcript or an error message;
//   - hooks and an fsmonitor planted in the repository never run when the
//     daemon commits a loop's worktree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "tests/daemon/daemon_harness.hpp"
#include "tests/support/scripted_http_server.hpp"
#include "tests/support/spawn_and_drain.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A repository whose validation (`grep -q "hello world" greeting.txt`) fails
// until a typo is fixed.
void make_typo_repo(const std::string& repo) {
  std::ofstream(repo + "/greeting.txt") << "hello wrld\n";
  shell_output("cd '" + repo + "' && git init -q -b main && git add -A && " +
               "git -c user.name=t -c user.email=t@t commit -q -m init");
}

constexpr const char* kTypoValidate = "grep -q 'hello world' greeting.txt";

// The three calls of a loop that fixes the typo.
struct Call {
  std::string id;
  std::string name;
  json input;
};
const std::vector<Call>& fixing_calls() {
  static const std::vector<Call> calls = {
      {"toolu_1", "read_file", {{"path", "greeting.txt"}}},
      {"toolu_2",
       "edit_file",
       {{"path", "greeting.txt"}, {"old_string", "wrld"}, {"new_string", "world"}}},
      {"toolu_3", "complete_task", {{"summary", "fixed the typo"}}},
  };
  return calls;
}

// ---- Anthropic Messages, streamed (docs: messages streaming) ----
std::string sse_event(const std::string& type, const json& data) {
  return "event: " + type + "\ndata: " + data.dump() + "\n\n";
}

std::vector<std::string> anthropic_stream(const Call& call, const std::string& text) {
  const std::string args = call.input.dump();
  const std::size_t half = args.size() / 2;
  return {
      sse_event("message_start", {{"type", "message_start"},
                                  {"message",
                                   {{"id", "msg_" + call.id},
                                    {"type", "message"},
                                    {"role", "assistant"},
                                    {"model", "claude-test"},
                                    {"content", json::array()},
                                    {"stop_reason", nullptr},
                                    {"stop_sequence", nullptr},
                                    {"usage",
                                     {{"input_tokens", 100},
                                      {"output_tokens", 1},
                                      {"cache_creation_input_tokens", 50},
                                      {"cache_read_input_tokens", 25}}}}}}),
      sse_event("content_block_start", {{"type", "content_block_start"},
                                        {"index", 0},
                                        {"content_block", {{"type", "text"}, {"text", ""}}}}),
      sse_event("ping", {{"type", "ping"}}),
      sse_event("content_block_delta", {{"type", "content_block_delta"},
                                        {"index", 0},
                                        {"delta", {{"type", "text_delta"}, {"text", text}}}}),
      sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}}),
      sse_event("content_block_start", {{"type", "content_block_start"},
                                        {"index", 1},
                                        {"content_block",
                                         {{"type", "tool_use"},
                                          {"id", call.id},
                                          {"name", call.name},
                                          {"input", json::object()}}}}),
      sse_event(
          "content_block_delta",
          {{"type", "content_block_delta"},
           {"index", 1},
           {"delta", {{"type", "input_json_delta"}, {"partial_json", args.substr(0, half)}}}}),
      sse_event("content_block_delta",
                {{"type", "content_block_delta"},
                 {"index", 1},
                 {"delta", {{"type", "input_json_delta"}, {"partial_json", args.substr(half)}}}}),
      sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", 1}}),
      sse_event("message_delta",
                {{"type", "message_delta"},
                 {"delta", {{"stop_reason", "tool_use"}, {"stop_sequence", nullptr}}},
                 {"usage", {{"output_tokens", 20}}}}),
      sse_event("message_stop", {{"type", "message_stop"}}),
  };
}

json anthropic_message(const Call& call) {
  return {{"id", "msg_" + call.id},
          {"type", "message"},
          {"role", "assistant"},
          {"model", "claude-test"},
          {"content",
           {{{"type", "text"}, {"text", "Working on it."}},
            {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", call.input}}}},
          {"stop_reason", "tool_use"},
          {"stop_sequence", nullptr},
          {"usage", {{"input_tokens", 100}, {"output_tokens", 20}}}};
}

// ---- OpenAI Chat Completions, plain JSON ----
json openai_completion(const Call& call) {
  return {{"id", "chatcmpl-" + call.id},
          {"object", "chat.completion"},
          {"created", 1},
          {"model", "local-model"},
          {"choices",
           {{{"index", 0},
             {"message",
              {{"role", "assistant"},
               {"content", nullptr},
               {"tool_calls",
                {{{"id", "call_" + call.id},
                  {"type", "function"},
                  {"function", {{"name", call.name}, {"arguments", call.input.dump()}}}}}}}},
             {"finish_reason", "tool_calls"}}}},
          {"usage", {{"prompt_tokens", 90}, {"completion_tokens", 12}, {"total_tokens", 102}}}};
}

std::string provider_toml(const std::string& name, const std::string& kind,
                          const std::string& base_url, const std::string& extra) {
  return "[providers." + name + "]\nkind = \"" + kind + "\"\nbase_url = \"" + base_url +
         "\"\nmodel = \"" + (kind == "anthropic" ? "claude-test" : "local-model") +
         "\"\nmax_retries = 2\nretry_base_delay_ms = 1\nretry_max_delay_ms = 50\n"
         "first_byte_timeout_ms = 10000\nidle_timeout_ms = 10000\n" +
         extra +
         "[prices.\"claude-test\"]\ninput_usd_per_mtok = 3\noutput_usd_per_mtok = 15\n"
         "cache_read_usd_per_mtok = 0.3\ncache_write_usd_per_mtok = 3.75\n";
}

// Subscribes on its own connection and collects every event until the loop
// reaches a final status (or the deadline).
struct LoopWatch {
  client::ControlClient client;
  std::vector<proto::Event> events;

  explicit LoopWatch(const DaemonHarness& daemon) : client(daemon.client()) {
    auto subscribed = client.call("events.subscribe", json::object());
    EXPECT_TRUE(subscribed.ok());
  }
  // The final loop object; fails the test when none came in time.
  json wait_final(const std::string& id, std::chrono::milliseconds wait = 60s) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < deadline) {
      auto event = client.next_event(std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now()));
      if (!event || !*event) break;
      events.push_back(**event);
      const auto& e = **event;
      if (e.event == "loop.updated" && e.data["loop"]["id"] == id) {
        const std::string status = e.data["loop"]["status"];
        if (status != "running" && status != "queued" && status != "paused") {
          return e.data["loop"];
        }
      }
    }
    ADD_FAILURE() << "loop " << id << " did not end in time";
    return json();
  }
  std::string text() const {
    std::string all;
    for (const auto& e : events)
      all += e.event + " " + e.data.dump() + "\n";
    return all;
  }
};

json create_provider_loop(const DaemonHarness& daemon, const std::string& provider) {
  json reply = daemon.call("loop.create", {{"type", "code"},
                                           {"task", "fix the typo in greeting.txt"},
                                           {"repo", daemon.worktree()},
                                           {"provider", provider},
                                           {"validate", kTypoValidate}});
  EXPECT_TRUE(reply.contains("loop")) << reply.dump();
  return reply.value("loop", json::object());
}

json transcript(const DaemonHarness& daemon, const std::string& id) {
  return daemon.call("loop.transcript", {{"id", id}, {"limit", 5000}});
}

TEST(LoopProviders, AnAnthropicStreamedLoopRetriesA529ReadsEditsAndPasses) {
  ScriptedHttpServer server;
  server.push(ScriptedReply::json(
      529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
      {{"retry-after", "0"}}));
  const std::vector<std::string> texts = {"Reading the file.", "Fixing it.", "Done."};
  for (std::size_t i = 0; i < fixing_calls().size(); ++i) {
    server.push(ScriptedReply::sse(anthropic_stream(fixing_calls()[i], texts[i])));
  }
  ::setenv("LOOPR_TEST_ANTHROPIC_KEY", "sk-ant-stream-test", 1);
  DaemonOptions options;
  options.extra_toml = provider_toml("anth", "anthropic", server.base_url(),
                                     "api_key_env = \"LOOPR_TEST_ANTHROPIC_KEY\"\n");
  DaemonHarness daemon(options);
  make_typo_repo(daemon.worktree());
  daemon.start();
  LoopWatch watch(daemon);
  const json loop = create_provider_loop(daemon, "anth");
  const json done = watch.wait_final(loop["id"]);
  ASSERT_EQ(done["status"], "completed") << done.dump(2) << daemon.log();
  EXPECT_EQ(done["usage"]["model_turns"], 3);
  EXPECT_EQ(done["usage"]["output_tokens"], 60);
  EXPECT_EQ(done["usage"]["cache_write_tokens"], 150);
  EXPECT_EQ(done["usage"]["cache_read_tokens"], 75);
  EXPECT_GT(done["usage"]["cost_usd"].get<double>(), 0.0);

  // The retry was visible, the text streamed, and the server got the
  // documented request each time.
  EXPECT_THAT(watch.text(), HasSubstr("provider.retry"));
  EXPECT_THAT(watch.text(), HasSubstr("\"text\":\"Fixing it.\""));
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);
  for (const auto& request : requests) {
    EXPECT_EQ(request.path, "/v1/messages");
    EXPECT_EQ(request.headers.at("x-api-key"), "sk-ant-stream-test");
    EXPECT_EQ(request.headers.at("anthropic-version"), "2023-06-01");
    const json body = json::parse(request.body);
    EXPECT_EQ(body["stream"], true);
    EXPECT_EQ(body["model"], "claude-test");
    EXPECT_EQ(body["tools"].back()["cache_control"]["type"], "ephemeral");
  }
  // The third request carries the first two calls and their results.
  const json third = json::parse(requests[3].body);
  const std::string messages = third["messages"].dump();
  EXPECT_THAT(messages, HasSubstr("\"tool_use_id\":\"toolu_1\""));
  EXPECT_THAT(messages, HasSubstr("\"tool_use_id\":\"toolu_2\""));
  EXPECT_THAT(messages, HasSubstr("hello wrld"));  // read_file's result reached the model

  const std::string diff = shell_output("git -C '" + daemon.worktree() + "' diff main..loop/" +
                                        done["id"].get<std::string>());
  EXPECT_THAT(diff, HasSubstr("+hello world"));
  EXPECT_EQ(read_all(daemon.worktree() + "/greeting.txt"),
            "hello wrld\n");  // user's tree untouched
}

TEST(LoopProviders, AnOpenAICompatibleServerWithoutKeyOrStreamingRunsALoop) {
  ScriptedHttpServer server;
  for (const Call& call : fixing_calls()) {
    server.push(ScriptedReply::json(200, openai_completion(call).dump()));
  }
  DaemonOptions options;
  options.extra_toml = provider_toml("local", "openai", server.base_url() + "/v1",
                                     "api_key_env = \"\"\nstream = false\n");
  DaemonHarness daemon(options);
  make_typo_repo(daemon.worktree());
  daemon.start();
  LoopWatch watch(daemon);
  const json loop = create_provider_loop(daemon, "local");
  const json done = watch.wait_final(loop["id"]);
  ASSERT_EQ(done["status"], "completed") << done.dump(2) << daemon.log();
  EXPECT_EQ(done["usage"]["input_tokens"], 270);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const auto& request : requests) {
    EXPECT_EQ(request.path, "/v1/chat/completions");
    EXPECT_EQ(request.headers.count("authorization"), 0u);
    const json body = json::parse(request.body);
    EXPECT_FALSE(body.value("stream", false));
    EXPECT_EQ(body["messages"][0]["role"], "system");
  }
  const json last = json::parse(requests[2].body);
  EXPECT_EQ(last["messages"].back()["role"], "tool");
  EXPECT_EQ(last["messages"].back()["tool_call_id"], "call_toolu_2");
}

// SECURITY.md class 26, with the key from a key file and from the
// environment (which looprd inherits, and must not pass on to a job).
class LoopKeyLeak : public ::testing::TestWithParam<const char*> {};

TEST_P(LoopKeyLeak, AnApiKeyNeverReachesAJobALogAnEventTheStoreATranscriptOrAnError) {
  const bool from_env = std::string(GetParam()) == "api_key_env";
  std::random_device random;
  std::ostringstream key_text;
  key_text << "sk-ant-leakcheck-" << std::hex << random() << random() << random();
  const std::string key = key_text.str();

  ScriptedHttpServer server;
  // Loop 1: a job prints its whole environment; then the fix.
  const Call env_call{
      "toolu_env", "run_command", {{"command", "env; cat /proc/self/environ | tr '\\0' '\\n'"}}};
  server.push(ScriptedReply::json(200, anthropic_message(env_call).dump()));
  for (const Call& call : fixing_calls()) {
    server.push(ScriptedReply::json(200, anthropic_message(call).dump()));
  }
  // Loop 2: the provider refuses the request and echoes the key back.
  server.push(ScriptedReply::json(
      400, json{{"type", "error"},
                {"error",
                 {{"type", "invalid_request_error"}, {"message", "bad request for key " + key}}}}
               .dump()));

  TempTree keys;
  std::string key_source;
  if (from_env) {
    ::setenv("LOOPR_TEST_LEAK_KEY", key.c_str(), 1);
    key_source = "api_key_env = \"LOOPR_TEST_LEAK_KEY\"\n";
  } else {
    keys.write("anthropic.key", key + "\n");
    ::chmod(keys.path("anthropic.key").c_str(), 0600);
    key_source = "api_key_env = \"\"\nkey_file = \"" + keys.path("anthropic.key") + "\"\n";
  }
  DaemonOptions options;
  options.extra_toml =
      provider_toml("anth", "anthropic", server.base_url(), key_source + "stream = false\n");
  DaemonHarness daemon(options);
  make_typo_repo(daemon.worktree());
  daemon.start();
  if (from_env) ::unsetenv("LOOPR_TEST_LEAK_KEY");  // looprd has it; nothing else needs it
  LoopWatch watch(daemon);
  const json first = create_provider_loop(daemon, "anth");
  const json first_done = watch.wait_final(first["id"]);
  ASSERT_EQ(first_done["status"], "completed") << first_done.dump(2);
  const json second = create_provider_loop(daemon, "anth");
  const json second_done = watch.wait_final(second["id"]);
  ASSERT_EQ(second_done["status"], "failed");
  EXPECT_THAT(second_done["status_reason"].get<std::string>(), HasSubstr("[redacted]"));

  // The key was used: the server saw it on every request.
  for (const auto& request : server.requests())
    EXPECT_EQ(request.headers.at("x-api-key"), key);

  // The job ran and printed its environment, without the key.
  const std::string first_transcript = transcript(daemon, first["id"]).dump();
  EXPECT_THAT(first_transcript, HasSubstr("PATH="));
  const std::string everything = first_transcript + transcript(daemon, second["id"]).dump() +
                                 daemon.call("loop.get", {{"id", first["id"]}}).dump() +
                                 daemon.call("loop.get", {{"id", second["id"]}}).dump() +
                                 daemon.call("loop.list", json::object()).dump() +
                                 daemon.call("loop.export", {{"id", first["id"]}}).dump() +
                                 watch.text() + daemon.call("metrics.get", json::object()).dump();
  EXPECT_THAT(everything, Not(HasSubstr(key)));
  EXPECT_THAT(everything, Not(HasSubstr("LOOPR_TEST_LEAK_KEY")));
  ASSERT_EQ(daemon.stop(), 0);
  EXPECT_THAT(daemon.log(), Not(HasSubstr(key)));
  for (const auto& entry : std::filesystem::recursive_directory_iterator(daemon.state_dir())) {
    if (!entry.is_regular_file()) continue;
    EXPECT_THAT(read_all(entry.path().string()), Not(HasSubstr(key))) << entry.path();
  }
}

INSTANTIATE_TEST_SUITE_P(KeySources, LoopKeyLeak, ::testing::Values("key_file", "api_key_env"));

// SECURITY.md class 27: the daemon's own git calls (worktree add, the commit
// after each iteration, remove) run nothing planted in the repository.
// [llm] fallback (issue 27): "anth" (Anthropic's format at `anthropic`, the
// loops' provider) falls back to "local" (OpenAI-compatible at `local`,
// which is given the fixing calls' completions).
std::string anthropic_then_local(
    const ScriptedHttpServer& anthropic, ScriptedHttpServer& local,
    const std::string& llm_table = "[llm]\nprovider = \"anth\"\nfallback = [\"local\"]\n") {
  for (const Call& call : fixing_calls()) {
    local.push(ScriptedReply::json(200, openai_completion(call).dump()));
  }
  ::setenv("LOOPR_TEST_ANTHROPIC_KEY", "sk-ant-fallback-test", 1);
  return provider_toml("anth", "anthropic", anthropic.base_url(),
                       "api_key_env = \"LOOPR_TEST_ANTHROPIC_KEY\"\n") +
         "[providers.local]\nkind = \"openai\"\nbase_url = \"" + local.base_url() +
         "/v1\"\nmodel = \"local-model\"\napi_key_env = \"\"\nstream = false\n" + llm_table;
}

ScriptedHttpServer::Responder storm_of_529s() {
  return [](const RecordedRequest&) {
    return ScriptedReply::json(
        529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
        {{"retry-after", "0"}});
  };
}

// One loop on the typo repository through looprd whose loops' provider
// "anth" is served by `storm` and falls back to "local" (priced at $1 and $2
// per million tokens), to its end: the daemon (its log), the loop as
// created and as it ended, and every event seen meanwhile.
struct FallbackLoop {
  std::unique_ptr<DaemonHarness> daemon;
  json loop;
  json done;
  std::string events;
};

FallbackLoop run_fallback_loop(const ScriptedHttpServer& storm, ScriptedHttpServer& local) {
  DaemonOptions options;
  options.extra_toml =
      anthropic_then_local(storm, local) +
      "[prices.\"local-model\"]\ninput_usd_per_mtok = 1\noutput_usd_per_mtok = 2\n";
  FallbackLoop run;
  run.daemon = std::make_unique<DaemonHarness>(options);
  make_typo_repo(run.daemon->worktree());
  run.daemon->start();
  LoopWatch watch(*run.daemon);
  run.loop = create_provider_loop(*run.daemon, "anth");
  run.done = watch.wait_final(run.loop["id"]);
  run.events = watch.text();
  return run;
}

// [llm] fallback (issue 27): an Anthropic server that answers every request
// with 529 (a storm that outlasts the retries) hands each turn to the next
// provider, a local OpenAI-compatible server; the loop completes, each turn
// is priced by the model that answered it, and the journal and the events
// say who answered and who failed first.
TEST(LoopProviders, A529StormFallsBackToTheNextProviderWhoseTurnsArePricedByItsModel) {
  ScriptedHttpServer storm(storm_of_529s());
  ScriptedHttpServer local;
  const FallbackLoop run = run_fallback_loop(storm, local);
  const DaemonHarness& daemon = *run.daemon;
  const json& loop = run.loop;
  const json& done = run.done;
  ASSERT_EQ(done["status"], "completed") << done.dump(2) << daemon.log();
  EXPECT_EQ(done["usage"]["model_turns"], 3);
  // 3 turns of 90 input and 12 output tokens at $1 and $2 per million.
  EXPECT_NEAR(done["usage"]["cost_usd"].get<double>(), 3 * (90 * 1.0 + 12 * 2.0) * 1e-6, 1e-12);
  // Each turn asked the storm 3 times (max_retries 2), then the local server.
  EXPECT_EQ(storm.requests().size(), 9u);
  EXPECT_EQ(local.requests().size(), 3u);
  for (const auto& request : local.requests()) {
    EXPECT_EQ(json::parse(request.body)["model"], "local-model");
  }
  EXPECT_THAT(run.events, HasSubstr("provider.fallback"));
  EXPECT_THAT(run.events, HasSubstr("\"from\":\"anth\""));

  const json steps = transcript(daemon, loop["id"])["steps"];
  int answered = 0;
  for (const json& step : steps) {
    if (step.value("kind", "") != "model_turn") continue;
    const json& by = step["data"]["answered_by"];
    ASSERT_TRUE(by.is_object()) << step.dump();
    EXPECT_EQ(by["provider"], "local");
    EXPECT_EQ(by["model"], "local-model");
    EXPECT_EQ(by["fallback_from"][0]["provider"], "anth");
    EXPECT_THAT(by["fallback_from"][0]["error"].get<std::string>(), HasSubstr("529"));
    EXPECT_NEAR(by["cost_usd"].get<double>(), (90 * 1.0 + 12 * 2.0) * 1e-6, 1e-12);
    ++answered;
  }
  EXPECT_EQ(answered, 3) << steps.dump(1);
}

// A fallback whose model has no price cannot be counted against a usd
// budget, so it is not asked; and a loop pinned to a provider other than
// [llm] provider keeps to it. Either way the storm fails the loop and the
// fallback server hears nothing.
TEST(LoopProviders, AFallbackIsNotAskedWhenAUsdBudgetCannotPriceItOrTheLoopIsPinned) {
  for (const bool pinned : {false, true}) {
    ScriptedHttpServer storm(storm_of_529s());
    ScriptedHttpServer local;
    DaemonOptions options;
    options.extra_toml =
        pinned ? anthropic_then_local(storm, local,
                                      "[llm]\nprovider = \"local\"\nfallback = [\"local\"]\n")
               : anthropic_then_local(storm, local);
    DaemonHarness daemon(options);
    make_typo_repo(daemon.worktree());
    daemon.start();
    LoopWatch watch(daemon);
    json params = {{"type", "code"},
                   {"task", "fix the typo in greeting.txt"},
                   {"repo", daemon.worktree()},
                   {"provider", "anth"},
                   {"validate", kTypoValidate}};
    if (!pinned) params["budget"] = {{"usd", 1.0}};
    const json created = daemon.call("loop.create", params);
    ASSERT_TRUE(created.contains("loop")) << created.dump();
    const json done = watch.wait_final(created["loop"]["id"]);
    EXPECT_EQ(done["status"], "failed") << done.dump(2);
    EXPECT_TRUE(local.requests().empty()) << (pinned ? "pinned" : "unpriced under a usd budget");
    if (!pinned) {
      EXPECT_THAT(daemon.log(), HasSubstr("has no [prices] entry"));
    }
  }
}

// A fallback whose window is smaller than the conversation refuses it as
// too long (issue 27 review): the refusal is the fallback's, not the loop's
// own provider's — the warning and the hand-off name the fallback, and the
// loop goes on (a fresh iteration, answered by the fallback again).
TEST(LoopProviders, AFallbacksTooLongRefusalIsNamedAsTheFallbacks) {
  ScriptedHttpServer storm(storm_of_529s());
  ScriptedHttpServer local;
  local.push(ScriptedReply::json(
      400,
      R"({"error":{"message":"This model's maximum context length is 64 tokens, however you requested 9000 tokens","type":"invalid_request_error","code":"context_length_exceeded"}})"));
  local.push(ScriptedReply::json(
      200, json{{"id", "chatcmpl-note"},
                {"object", "chat.completion"},
                {"created", 1},
                {"model", "local-model"},
                {"choices",
                 {{{"index", 0},
                   {"message", {{"role", "assistant"}, {"content", "NOTE: fix greeting.txt"}}},
                   {"finish_reason", "stop"}}}},
                {"usage", {{"prompt_tokens", 50}, {"completion_tokens", 8}, {"total_tokens", 58}}}}
               .dump()));
  const FallbackLoop run = run_fallback_loop(storm, local);
  const DaemonHarness& daemon = *run.daemon;
  const json& loop = run.loop;
  const json& done = run.done;
  EXPECT_THAT(daemon.log(), HasSubstr("provider local refused a request as too long"));
  EXPECT_THAT(daemon.log(), Not(HasSubstr("provider anth refused a request as too long")));
  EXPECT_THAT(daemon.log(), Not(HasSubstr("set [providers.anth] context_window")));
  const json steps = transcript(daemon, loop["id"])["steps"];
  bool handed_off = false;
  for (const json& step : steps) {
    if (step.value("kind", "") != "handoff") continue;
    handed_off = true;
    EXPECT_THAT(step["data"].dump(),
                HasSubstr("the provider local refused the request as too long"))
        << step.dump(2);
  }
  EXPECT_TRUE(handed_off) << steps.dump(1);
  EXPECT_EQ(done["status"], "completed") << done.dump(2) << daemon.log();
}

// A refused request (400) is the loop's own problem: no fallback is asked,
// and the loop fails with the provider's words.
TEST(LoopProviders, ARefusedRequestIsNeverAskedOfTheFallback) {
  ScriptedHttpServer refusing([](const RecordedRequest&) {
    return ScriptedReply::json(
        400, R"({"type":"error","error":{"type":"invalid_request_error","message":"bad tools"}})");
  });
  ScriptedHttpServer local;
  DaemonOptions options;
  options.extra_toml = anthropic_then_local(refusing, local);
  DaemonHarness daemon(options);
  make_typo_repo(daemon.worktree());
  daemon.start();
  LoopWatch watch(daemon);
  const json loop = create_provider_loop(daemon, "anth");
  const json done = watch.wait_final(loop["id"]);
  EXPECT_EQ(done["status"], "failed") << done.dump(2);
  EXPECT_THAT(done["status_reason"].get<std::string>(), HasSubstr("bad tools"));
  EXPECT_EQ(refusing.requests().size(), 1u) << "a 400 is not retried either";
  EXPECT_TRUE(local.requests().empty()) << "a refused request went to the fallback";
  EXPECT_THAT(watch.text(), Not(HasSubstr("provider.fallback")));
}

TEST(LoopProviders, HooksAndAnFsmonitorPlantedInTheRepositoryNeverRun) {
  TempTree scripts;
  const std::string session = scripts.path("session.jsonl");
  {
    std::ofstream out(session);
    for (const Call& call : fixing_calls()) {
      out << json{{"text", "step"},
                  {"tool_calls",
                   {{{"id", call.id}, {"name", call.name}, {"arguments", call.input}}}}}
                 .dump()
          << "\n";
    }
  }
  DaemonOptions options;
  options.extra_toml = "[providers.replay]\nkind = \"scripted\"\nscript = \"" + session + "\"\n";
  DaemonHarness daemon(options);
  make_typo_repo(daemon.worktree());
  const std::string marker = scripts.path("ran");
  const std::string trap = "#!/bin/sh\necho \"$0\" >> '" + marker + "'\n";
  const std::string git_dir = daemon.worktree() + "/.git";
  for (const char* hook : {"pre-commit", "post-commit", "commit-msg", "post-checkout",
                           "reference-transaction", "pre-auto-gc"}) {
    std::ofstream(git_dir + "/hooks/" + hook) << trap;
    ::chmod((git_dir + "/hooks/" + hook).c_str(), 0755);
  }
  std::ofstream(scripts.path("fsmonitor.sh")) << trap;
  ::chmod(scripts.path("fsmonitor.sh").c_str(), 0755);
  shell_output("git -C '" + daemon.worktree() + "' config core.fsmonitor '" +
               scripts.path("fsmonitor.sh") + "'");
  // Plain git in the repository runs the traps: they are armed.
  shell_output("cd '" + daemon.worktree() + "' && git status >/dev/null 2>&1");
  ASSERT_TRUE(std::filesystem::exists(marker)) << "the traps are not armed";
  std::filesystem::remove(marker);

  daemon.start();
  LoopWatch watch(daemon);
  const json loop = create_provider_loop(daemon, "replay");
  const json done = watch.wait_final(loop["id"]);
  ASSERT_EQ(done["status"], "completed") << done.dump(2) << daemon.log();
  const std::string id = done["id"];
  EXPECT_THAT(shell_output("git -C '" + daemon.worktree() + "' log --oneline loop/" + id),
              HasSubstr("iteration 1"));
  json deleted =
      daemon.call("loop.delete", {{"id", id}, {"remove_worktree", true}, {"remove_branch", false}});
  EXPECT_EQ(deleted["worktree_removed"], true) << deleted.dump();
  EXPECT_FALSE(std::filesystem::exists(marker)) << read_all(marker);
}

}  // namespace
}  // namespace loopr::test
