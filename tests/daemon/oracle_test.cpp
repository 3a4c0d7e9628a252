// The oracle through the real looprd (issue 13), against a local server that
// speaks the Anthropic Messages API: the answer of `tool.call oracle` with
// the question and the attached files in the request the server got; files
// cut to [oracle] max_file_bytes and max_total_bytes, and the oracle told;
// more than max_files refused; a path outside the worktree refused by the
// read path; not configured: the keys to set, and loops not offered the
// tool; in scripted loops, the oracle's usage and cost added to the loop's
// spend and its answer in the transcript, its max_tokens capped to what the
// loop's budget leaves, and not run at all when that budget is spent;
// tool.cancel during a slow answer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/daemon/daemon_harness.hpp"
#include "tests/daemon/loop_fixture.hpp"
#include "tests/support/scripted_http_server.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

constexpr const char* kOracleModel = "oracle-model";
constexpr double kOracleInputUsdPerMtok = 10.0;
constexpr double kOracleOutputUsdPerMtok = 50.0;
constexpr int kMaxTokens = 777;
constexpr int kMaxFiles = 3;
constexpr int kMaxFileBytes = 1024;
constexpr int kMaxTotalBytes = 2048;

// An Anthropic Messages answer (not streamed) with `text`.
json anthropic_answer(const std::string& text, int input_tokens, int output_tokens) {
  return {{"id", "msg_oracle"},
          {"type", "message"},
          {"role", "assistant"},
          {"model", kOracleModel},
          {"content", {{{"type", "text"}, {"text", text}}}},
          {"stop_reason", "end_turn"},
          {"stop_sequence", nullptr},
          {"usage", {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}}}};
}

// A turn of the loop's own model calling `name` (Anthropic, not streamed).
json anthropic_tool_use(const std::string& id, const std::string& name, const json& input) {
  return {{"id", "msg_" + id},
          {"type", "message"},
          {"role", "assistant"},
          {"model", "loop-model"},
          {"content", {{{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", input}}}},
          {"stop_reason", "tool_use"},
          {"stop_sequence", nullptr},
          {"usage", {{"input_tokens", 10}, {"output_tokens", 5}}}};
}

std::string anthropic_provider_toml(const std::string& name, const std::string& model,
                                    const ScriptedHttpServer& server) {
  ::setenv("LOOPR_TEST_ORACLE_KEY", "sk-ant-oracle-test", 1);
  return "[providers." + name + "]\nkind = \"anthropic\"\nbase_url = \"" + server.base_url() +
         "\"\nmodel = \"" + model +
         "\"\napi_key_env = \"LOOPR_TEST_ORACLE_KEY\"\nstream = false\nmax_retries = 0\n"
         "first_byte_timeout_ms = 120000\nidle_timeout_ms = 120000\n";
}

// [providers.sage] on `server`, its price, and [oracle] naming it.
std::string oracle_toml(const ScriptedHttpServer& server) {
  return anthropic_provider_toml("sage", kOracleModel, server) + "[prices.\"" + kOracleModel +
         "\"]\ninput_usd_per_mtok = " + std::to_string(kOracleInputUsdPerMtok) +
         "\noutput_usd_per_mtok = " + std::to_string(kOracleOutputUsdPerMtok) +
         "\n[oracle]\nprovider = \"sage\"\nmax_tokens = " + std::to_string(kMaxTokens) +
         "\nmax_files = " + std::to_string(kMaxFiles) +
         "\nmax_file_bytes = " + std::to_string(kMaxFileBytes) +
         "\nmax_total_bytes = " + std::to_string(kMaxTotalBytes) + "\n";
}

// Code loops are offered the oracle (the defaults offer it to plan and spec).
constexpr const char* kCodeToolsWithOracle =
    "[loops.code]\ntools = [\"read_file\", \"write_file\", \"edit_file\", \"oracle\", "
    "\"complete_task\"]\n";

double oracle_cost(int input_tokens, int output_tokens) {
  return (input_tokens * kOracleInputUsdPerMtok + output_tokens * kOracleOutputUsdPerMtok) * 1e-6;
}

// The one user message the oracle model was sent, as text.
std::string sent_prompt(const RecordedRequest& request) {
  const json body = json::parse(request.body);
  const json& content = body["messages"][0]["content"];
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  for (const json& block : content)
    text += block.value("text", "");
  return text;
}

std::string numbered_lines(int count, const std::string& stem) {
  std::string text;
  for (int i = 1; i <= count; ++i)
    text += stem + " " + std::to_string(i) + " abcdefghijklmnopqrstuvwxyz\n";
  return text;
}

class OracleTest : public ::testing::Test {
 protected:
  void start(const std::string& extra_toml = {}) {
    DaemonOptions options;
    options.extra_toml = oracle_toml(server_) + extra_toml;
    daemon_ = std::make_unique<DaemonHarness>(options);
    daemon_->start();
  }
  void write(const std::string& path, const std::string& text) {
    daemon_->tree().write("work/repo/" + path, text);
  }

  ScriptedHttpServer server_;
  std::unique_ptr<DaemonHarness> daemon_;
};

TEST_F(OracleTest, AnswersThroughToolCallWithTheQuestionAndTheFilesInItsRequest) {
  server_.push(ScriptedReply::json(
      200, anthropic_answer("Use 1.21 gigawatts, as notes.txt line 2 says.", 120, 30).dump()));
  start();
  write("notes.txt", "flux capacitor notes\nit needs 1.21 gigawatts\n");
  EventLog started(*daemon_, {"tool.started"});

  const json reply =
      daemon_->tool("oracle", {{"question", "How much power does the flux capacitor need?"},
                               {"files", {"notes.txt"}},
                               {"context", "context-marker: we tried 1.0 GW"}});
  ASSERT_EQ(reply["status"], "success") << reply.dump(2) << daemon_->log();
  EXPECT_EQ(reply["lane"], "daemon");
  const json& out = reply["output"];
  EXPECT_EQ(out["answer"], "Use 1.21 gigawatts, as notes.txt line 2 says.");
  EXPECT_EQ(out["model"], kOracleModel);
  EXPECT_EQ(out["usage"]["input_tokens"], 120);
  EXPECT_EQ(out["usage"]["output_tokens"], 30);
  EXPECT_EQ(out["usage"]["cache_read_tokens"], 0);
  EXPECT_EQ(out["usage"]["cache_write_tokens"], 0);
  EXPECT_NEAR(out["cost_usd"].get<double>(), oracle_cost(120, 30), 1e-12);
  EXPECT_EQ(out["max_tokens"], kMaxTokens);
  ASSERT_EQ(out["files"].size(), 1u) << out.dump();
  EXPECT_EQ(out["files"][0]["path"], "notes.txt");
  EXPECT_EQ(out["files"][0]["truncated"], false);
  EXPECT_EQ(out["files"][0]["lines"], "1-2");

  // The server got one request: the oracle's model, its system prompt, no
  // tools, [oracle] max_tokens, and the question, context and file (as
  // read_file's numbered lines) in the message.
  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/v1/messages");
  const json body = json::parse(requests[0].body);
  EXPECT_EQ(body["model"], kOracleModel);
  EXPECT_EQ(body["max_tokens"], kMaxTokens);
  EXPECT_FALSE(body.contains("tools"));
  EXPECT_THAT(body["system"].dump(), HasSubstr("consults for advice"));
  const std::string prompt = sent_prompt(requests[0]);
  EXPECT_THAT(prompt, HasSubstr("How much power does the flux capacitor need?"));
  EXPECT_THAT(prompt, HasSubstr("context-marker: we tried 1.0 GW"));
  EXPECT_THAT(prompt, HasSubstr("     2|it needs 1.21 gigawatts\n"));
  EXPECT_THAT(prompt, HasSubstr("--- file: notes.txt (lines 1-2 of 2) ---"));

  // The file was read by read_file through the router, like any read.
  EXPECT_TRUE(started.wait_for(
      [](const proto::Event& e) { return e.data.value("tool", "") == "read_file"; }));
}

TEST_F(OracleTest, FilesOverTheirCapsAreCutAndTheOracleIsTold) {
  server_.push(ScriptedReply::json(200, anthropic_answer("ok", 1, 1).dump()));
  start();
  write("big.txt", numbered_lines(200, "big"));
  write("second.txt", numbered_lines(200, "second"));
  const std::string context(100, 'c');

  const json reply = daemon_->tool("oracle", {{"question", "What is in these files?"},
                                              {"files", {"big.txt", "second.txt"}},
                                              {"context", context}});
  ASSERT_EQ(reply["status"], "success") << reply.dump(2);
  const json& files = reply["output"]["files"];
  ASSERT_EQ(files.size(), 2u);
  // The first is cut at max_file_bytes, after a whole line.
  EXPECT_EQ(files[0]["truncated"], true);
  EXPECT_LE(files[0]["bytes"].get<int>(), kMaxFileBytes);
  EXPECT_GT(files[0]["bytes"].get<int>(), kMaxFileBytes - 60);
  EXPECT_THAT(files[0]["cut"].get<std::string>(), HasSubstr("max_file_bytes"));
  // The second gets what max_total_bytes leaves after the context and the first.
  EXPECT_EQ(files[1]["truncated"], true);
  EXPECT_THAT(files[1]["cut"].get<std::string>(), HasSubstr("max_total_bytes"));
  EXPECT_LE(files[0]["bytes"].get<int>() + files[1]["bytes"].get<int>() + 100, kMaxTotalBytes);
  EXPECT_GT(files[1]["bytes"].get<int>(), kMaxTotalBytes - 100 - kMaxFileBytes - 60);

  const std::string prompt = sent_prompt(server_.requests().at(0));
  EXPECT_THAT(prompt, HasSubstr("--- file: big.txt (lines 1-"));
  EXPECT_THAT(prompt, HasSubstr("NOT WHOLE: only the first"));
  EXPECT_THAT(prompt, HasSubstr("|big 1 abc"));
  EXPECT_THAT(prompt, Not(HasSubstr("big 200 abc")));
  EXPECT_THAT(prompt, Not(HasSubstr("second 200 abc")));
  EXPECT_THAT(prompt, HasSubstr(context));
}

TEST_F(OracleTest, MoreThanMaxFilesIsRefusedBeforeAnythingIsAsked) {
  start();
  for (const char* name : {"a.txt", "b.txt", "c.txt", "d.txt"})
    write(name, "x\n");
  const json reply = daemon_->tool(
      "oracle", {{"question", "Why?"}, {"files", {"a.txt", "b.txt", "c.txt", "d.txt"}}});
  EXPECT_EQ(reply["status"], "failed") << reply.dump(2);
  EXPECT_EQ(reply["error"]["code"], "invalid_arguments");
  EXPECT_THAT(reply["error"]["message"].get<std::string>(),
              HasSubstr("4 files attached; [oracle] max_files allows 3"));
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(OracleTest, APathOutsideTheWorktreeIsRefusedByTheReadPath) {
  start();
  // Beneath the worktree root, but outside this worktree.
  daemon_->tree().write("work/secret.txt", "secret-marker-7781\n");
  write("inside.txt", "fine\n");
  for (const std::string& path :
       {std::string("../secret.txt"), daemon_->tree().path("work/secret.txt")}) {
    const json reply = daemon_->tool(
        "oracle", {{"question", "What is the secret?"}, {"files", {"inside.txt", path}}});
    EXPECT_EQ(reply["status"], "failed") << reply.dump(2);
    EXPECT_EQ(reply["error"]["code"], "path_outside_worktree") << reply.dump(2);
    EXPECT_THAT(reply["error"]["message"].get<std::string>(), HasSubstr("cannot attach " + path));
    EXPECT_EQ(reply["error"]["details"]["files"].size(), 1u) << reply.dump(2);
    EXPECT_THAT(reply.dump(), Not(HasSubstr("secret-marker-7781")));
  }
  EXPECT_TRUE(server_.requests().empty()) << "the oracle was asked without its files";
}

TEST_F(OracleTest, ToolCancelDuringASlowAnswerEndsTheCallAsCancelled) {
  ScriptedReply slow;
  slow.steps.push_back(HttpStep::pause(120s));
  slow.steps.push_back(HttpStep::write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
  server_.push(slow);
  start();
  EventLog started(*daemon_, {"tool.started"});
  json result;
  std::thread caller([&] { result = daemon_->tool("oracle", {{"question", "Slow?"}}); });
  auto index = started.wait_for(
      [](const proto::Event& e) { return e.data.value("tool", "") == "oracle"; }, 30s);
  ASSERT_TRUE(index.has_value());
  const std::string call_id = started.events()[*index].data["call_id"];
  // The question reached the server, which does not answer: the call now
  // waits for the model (bounded wait, polling the fake server).
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (server_.requests().empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(server_.requests().size(), 1u);
  const json cancelled = daemon_->call("tool.cancel", {{"call_id", call_id}});
  EXPECT_EQ(cancelled["cancelled"], true) << cancelled.dump();
  caller.join();
  EXPECT_EQ(result["status"], "cancelled") << result.dump(2);
  EXPECT_EQ(result["error"]["code"], "cancelled");
  // The model call itself was abandoned: the server never got to answer.
  EXPECT_EQ(server_.bytes_written(), 0u);
  // The request was sent, so the provider may bill it: the call reports its
  // worst case (all of max_tokens), which a loop adds to its spend.
  const json& charged = result["error"]["details"];
  ASSERT_TRUE(charged.contains("usage")) << result.dump(2);
  EXPECT_GT(charged["usage"]["input_tokens"].get<std::int64_t>(), 0);
  EXPECT_EQ(charged["usage"]["output_tokens"], kMaxTokens);
}

TEST(OracleNotConfigured, ACallNamesTheKeysToSetAndLoopsAreNotOfferedIt) {
  ScriptedHttpServer server;  // the loop's own model
  server.push(ScriptedReply::json(
      200, anthropic_tool_use("t1", "complete_task", {{"summary", "done"}}).dump()));
  DaemonOptions options;
  options.extra_toml =
      anthropic_provider_toml("loopfake", "loop-model", server) + kCodeToolsWithOracle;
  DaemonHarness daemon(options);
  const SampleRepo repo = make_sample_repo(daemon.worktree());
  daemon.start();

  const json reply = daemon.tool("oracle", {{"question", "Anyone there?"}});
  EXPECT_EQ(reply["status"], "failed") << reply.dump(2);
  EXPECT_EQ(reply["error"]["code"], "not_configured");
  const std::string message = reply["error"]["message"];
  const std::string hint = reply["error"]["hint"];
  EXPECT_THAT(message, HasSubstr("[oracle] provider"));
  EXPECT_THAT(message, HasSubstr("loopr.toml"));
  EXPECT_THAT(hint, HasSubstr("[providers.NAME]"));
  EXPECT_THAT(hint, HasSubstr("[oracle] model"));

  // A code loop whose type names the oracle is not offered it.
  const std::string id =
      create_loop(daemon, repo.path, {{"provider", "loopfake"}, {"validate", "true"}})["id"];
  EXPECT_EQ(wait_final(daemon, id)["status"], "completed");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const json body = json::parse(requests[0].body);
  std::vector<std::string> offered;
  for (const json& tool : body["tools"])
    offered.push_back(tool["name"]);
  EXPECT_THAT(offered, ::testing::Contains("read_file"));
  EXPECT_THAT(offered, Not(::testing::Contains("oracle")));
  EXPECT_THAT(body["system"].dump(),
              HasSubstr("Tools: read_file, write_file, edit_file, complete_task, read_output."));
  // Nor told about it: the oracle's paragraph is there only when it is offered.
  EXPECT_THAT(body["system"].dump(), Not(HasSubstr("oracle")));
  EXPECT_THAT(daemon.log(), HasSubstr("loops are not offered the oracle"));
}

// ---- in scripted loops ----

// The sample project's fix after an oracle call with `oracle_args`.
std::vector<json> turns_with_oracle(const json& oracle_args) {
  const json turn_usage = {{"usage", usage(10, 5)}};
  return {
      turn({tool_call("o1", "oracle", oracle_args)}, turn_usage),
      turn({tool_call("r1", "read_file", {{"path", "answer.txt"}})}, turn_usage),
      turn({tool_call("e1", "edit_file",
                      {{"path", "answer.txt"}, {"old_string", "41"}, {"new_string", "42"}})},
           turn_usage),
      turn({tool_call("c1", "complete_task", {{"summary", "answer.txt holds 42"}})}, turn_usage)};
}

class OracleLoopTest : public ::testing::Test {
 protected:
  // A daemon whose scripted loops play `turns`, with the oracle on server_.
  void start(const std::vector<json>& turns, std::int64_t loop_max_tokens = 0) {
    DaemonOptions options;
    options.extra_toml = scripted_toml({{"scripted", write_session(scripts_.path("s.jsonl"), turns),
                                         loop_max_tokens}}) +
                         oracle_toml(server_) + kCodeToolsWithOracle;
    daemon_ = std::make_unique<DaemonHarness>(options);
    repo_ = make_sample_repo(daemon_->worktree());
    daemon_->start();
  }

  TempTree scripts_;
  ScriptedHttpServer server_;
  std::unique_ptr<DaemonHarness> daemon_;
  SampleRepo repo_;
};

TEST_F(OracleLoopTest, ItsUsageAndCostAreAddedToTheLoopsSpendAndItsAnswerIsInTheTranscript) {
  server_.push(ScriptedReply::json(
      200, anthropic_answer("answer.txt must hold 42, not 41.", 120, 30).dump()));
  start(turns_with_oracle(
      {{"question", "What must answer.txt hold?"}, {"files", {"answer.txt", "test.sh"}}}));
  const std::string id = create_loop(*daemon_, repo_.path)["id"];
  const json done = wait_final(*daemon_, id);
  ASSERT_EQ(done["status"], "completed") << done.dump(2) << daemon_->log();

  // Four scripted turns of 10 in / 5 out, and the oracle's 120 / 30 at its own price.
  EXPECT_EQ(done["usage"]["input_tokens"], 4 * 10 + 120);
  EXPECT_EQ(done["usage"]["output_tokens"], 4 * 5 + 30);
  EXPECT_EQ(done["usage"]["model_turns"], 4);
  const double loop_cost = (40 * kInputUsdPerMtok + 20 * kOutputUsdPerMtok) * 1e-6;
  EXPECT_NEAR(done["usage"]["cost_usd"].get<double>(), loop_cost + oracle_cost(120, 30), 1e-12);

  const auto results = steps_of_kind(read_transcript(*daemon_, id), "tool_results");
  ASSERT_FALSE(results.empty());
  const json& first = results[0]["data"]["results"][0];
  EXPECT_EQ(first["name"], "oracle");
  EXPECT_EQ(first["ok"], true) << first.dump();
  EXPECT_THAT(first["content"].get<std::string>(), HasSubstr("answer.txt must hold 42, not 41."));

  // The oracle saw the loop's worktree files and no budget capped it.
  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(json::parse(requests[0].body)["max_tokens"], kMaxTokens);
  const std::string prompt = sent_prompt(requests[0]);
  EXPECT_THAT(prompt, HasSubstr("--- file: answer.txt (lines 1-1 of 1) ---\n     1|41\n"));
  EXPECT_THAT(prompt, HasSubstr("--- file: test.sh"));

  // The spend was stored: a restarted looprd shows it.
  ASSERT_EQ(daemon_->stop(), 0);
  daemon_->start();
  EXPECT_EQ(get_loop(*daemon_, id)["usage"]["input_tokens"], 4 * 10 + 120);
}

TEST_F(OracleLoopTest, ItsMaxTokensAreCappedToWhatTheLoopsOutputBudgetLeaves) {
  server_.push(ScriptedReply::json(200, anthropic_answer("42", 100, 20).dump()));
  start(turns_with_oracle({{"question", "What must answer.txt hold?"}}), 50);
  // 300 output tokens: the first turn spends 5, leaving 295 for the oracle
  // (under its max_tokens of 777) and then 275 for the loop's own turns.
  const std::string id =
      create_loop(*daemon_, repo_.path, {{"budget", {{"output_tokens", 300}}}})["id"];
  const json done = wait_final(*daemon_, id);
  ASSERT_EQ(done["status"], "completed") << done.dump(2) << daemon_->log();
  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(json::parse(requests[0].body)["max_tokens"], 295);
  EXPECT_EQ(done["usage"]["output_tokens"], 4 * 5 + 20);
}

TEST_F(OracleLoopTest, ALoopWhoseBudgetIsSpentDoesNotRunTheOracle) {
  // The first turn reports its whole output budget spent.
  std::vector<json> turns = turns_with_oracle({{"question", "What must answer.txt hold?"}});
  turns[0]["usage"] = usage(10, 100);
  start(turns, 50);
  const std::string id =
      create_loop(*daemon_, repo_.path, {{"budget", {{"output_tokens", 100}}}})["id"];
  const json done = wait_final(*daemon_, id);
  EXPECT_EQ(done["status"], "budget_exhausted") << done.dump(2);
  EXPECT_TRUE(server_.requests().empty()) << "the oracle was consulted";

  const auto results = steps_of_kind(read_transcript(*daemon_, id), "tool_results");
  ASSERT_FALSE(results.empty());
  const json& first = results[0]["data"]["results"][0];
  EXPECT_EQ(first["name"], "oracle");
  EXPECT_EQ(first["ok"], false);
  const std::string content = first["content"];
  EXPECT_THAT(content, HasSubstr("budget_exhausted"));
  EXPECT_THAT(content, HasSubstr("loop.output_tokens: 0 output tokens left"));
  EXPECT_EQ(done["usage"]["output_tokens"], 100);
}

}  // namespace
}  // namespace loopr::test
