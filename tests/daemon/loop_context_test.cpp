// Loops against a model API that behaves like the real ones (issue 24):
// tests/support/model_api_server counts every request's tokens, refuses
// what does not fit its context window in the API's own words, and bills
// prompt caching from the breakpoints it receives. Through the real looprd,
// real runners and real git:
//   - a conversation that outgrows the window hands off and the loop
//     completes, and no request sent is over the window; every call after
//     the first carries a breakpoint on its last message and the system
//     prompt never changes; the first message carries AGENTS.md, the tree
//     and what the earlier iteration committed;
//   - a provider's "prompt is too long" in the middle of an iteration hands
//     off instead of failing the loop;
//   - a 5 MB command output reaches the model within the cap, head and tail
//     kept, and read_output pages the rest from the journal;
//   - read_file of a large file pages with the offset to go on from;
//   - lint errors after an edit reach the model; a max_tokens stop gets its
//     message; validate is offered and runs the loop's own command.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/daemon/daemon_harness.hpp"
#include "tests/support/model_api_server.hpp"
#include "tests/support/spawn_and_drain.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

void write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// A repository with instructions, 20 source files of ~6 KiB and an answer
// the validation checks.
void make_context_repo(const std::string& repo) {
  write(repo + "/AGENTS.md", "Always run the checks before you finish.\n");
  write(repo + "/answer.txt", "41\n");
  for (int i = 0; i < 20; ++i) {
    std::string text;
    int line = 0;
    while (text.size() < 6 * 1024)
      text += "// module " + std::to_string(i) + " line " + std::to_string(++line) +
              ": some realistic source text to read\n";
    char name[32];
    std::snprintf(name, sizeof name, "/src/f%02d.c", i);
    write(repo + name, text);
  }
  shell_output("cd '" + repo + "' && git init -q -b main && git add -A && " +
               "git -c user.name=t -c user.email=t@t commit -q -m init");
}

constexpr const char* kContextValidate = "grep -q 42 answer.txt";

std::string provider_toml(const std::string& base_url, std::int64_t window,
                          const std::string& extra = "", const std::string& kind = "anthropic") {
  return "[providers.api]\nkind = \"" + kind + "\"\nbase_url = \"" + base_url +
         (kind == "openai" ? "/v1" : "") +
         "\"\nmodel = \"claude-test\"\napi_key_env = \"LOOPR_TEST_CONTEXT_KEY\"\n"
         "max_retries = 1\nretry_base_delay_ms = 1\nretry_max_delay_ms = 10\n"
         "context_window = " +
         std::to_string(window) + "\nmax_tokens = 2048\n" + extra;
}

json create_context_loop(const DaemonHarness& daemon, const std::string& task,
                         const std::string& validate = kContextValidate,
                         json extra = json::object()) {
  json params = {{"type", "code"},
                 {"task", task},
                 {"repo", daemon.worktree()},
                 {"provider", "api"},
                 {"validate", validate}};
  params.update(extra);
  json reply = daemon.call("loop.create", params);
  EXPECT_TRUE(reply.contains("loop")) << reply.dump();
  return reply.value("loop", json::object());
}

json wait_final(const DaemonHarness& daemon, const std::string& id) {
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline) {
    json loop = daemon.call("loop.get", {{"id", id}}).value("loop", json::object());
    const std::string status = loop.value("status", "");
    if (!status.empty() && status != "running" && status != "queued" && status != "paused") {
      return loop;
    }
    std::this_thread::sleep_for(50ms);
  }
  ADD_FAILURE() << "loop " << id << " did not end in time";
  return json::object();
}

std::vector<json> steps_of(const DaemonHarness& daemon, const std::string& id,
                           const std::string& kind) {
  std::vector<json> out;
  const json result = daemon.call("loop.transcript", {{"id", id}, {"limit", 5000}});
  for (const json& step : result.value("steps", json::array()))
    if (step.value("kind", "") == kind) out.push_back(step);
  return out;
}

// The first user message's text, and the number of assistant turns so far
// in this conversation (this iteration's).
std::string first_text(const ModelCall& call) {
  if (call.messages.empty() || call.messages[0].blocks.empty()) return {};
  return call.messages[0].blocks[0].text;
}
std::size_t turns_so_far(const ModelCall& call) {
  std::size_t turns = 0;
  for (const auto& message : call.messages)
    if (message.role == "assistant") ++turns;
  return turns;
}
std::string last_text(const ModelCall& call) {
  std::string text;
  if (call.messages.empty()) return text;
  for (const auto& block : call.messages.back().blocks)
    text += block.text + "\n";
  return text;
}
bool asked_for_handoff(const ModelCall& call) {
  return last_text(call).find("Write a handoff note") != std::string::npos;
}

// The iteration that finishes the task: read, edit, complete.
ModelReply finish_task(const ModelCall& call, std::size_t turn) {
  if (turn == 0) return ModelReply::call("read_file", {{"path", "answer.txt"}});
  if (turn == 1) {
    return ModelReply::call("edit_file",
                            {{"path", "answer.txt"}, {"old_string", "41"}, {"new_string", "42"}});
  }
  (void)call;
  return ModelReply::call("complete_task", {{"summary", "answer.txt holds 42"}});
}

class LoopContext : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("LOOPR_TEST_CONTEXT_KEY", "sk-ant-context-test", 1); }
};

TEST_F(LoopContext, AConversationThatOutgrowsTheWindowHandsOffAndTheLoopCompletes) {
  constexpr std::int64_t kWindow = 30000;
  ModelApiOptions api;
  api.context_window = kWindow;
  ModelApiServer server(
      [](const ModelCall& call) {
        if (asked_for_handoff(call)) {
          return ModelReply::say("NOTE: the answer lives in answer.txt and must become 42.");
        }
        const std::size_t turn = turns_so_far(call);
        if (first_text(call).find("# Handoff from the last iteration") != std::string::npos) {
          return finish_task(call, turn);
        }
        if (turn == 0)
          return ModelReply::call("write_file",
                                  {{"path", "progress.md"}, {"content", "read so far\n"}});
        // Read every source file, one a turn, until loopr hands off.
        char name[32];
        std::snprintf(name, sizeof name, "src/f%02zu.c", (turn - 1) % 20);
        return ModelReply::call("read_file", {{"path", name}});
      },
      api);
  DaemonOptions options;
  options.extra_toml = provider_toml(server.base_url(), kWindow);
  DaemonHarness daemon(options);
  make_context_repo(daemon.worktree());
  daemon.start();
  const json loop = create_context_loop(daemon, "Make answer.txt hold 42.");
  const json done = wait_final(daemon, loop["id"]);
  ASSERT_EQ(done["status"], "completed") << done.dump(2) << daemon.log();
  EXPECT_EQ(done["iteration"], 2);
  EXPECT_EQ(done["handoffs"], 1);

  const std::string id = loop["id"];
  const auto handoffs = steps_of(daemon, id, "handoff");
  ASSERT_EQ(handoffs.size(), 1u);
  EXPECT_EQ(handoffs[0]["data"]["reason"], "context");
  EXPECT_EQ(handoffs[0]["data"]["by"], "model");
  EXPECT_EQ(handoffs[0]["data"]["note"],
            "NOTE: the answer lives in answer.txt and must become 42.");

  // No request sent was over the window, none was refused, and none was
  // past the handoff threshold by more than one turn's growth.
  const auto requests = server.requests();
  ASSERT_GE(requests.size(), 8u);
  std::string system;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& request = requests[i];
    EXPECT_FALSE(request.refused) << request.error_message;
    EXPECT_LE(request.input_tokens + request.max_tokens, kWindow) << "request " << i;
    const json body = json::parse(request.body);
    // Nothing per iteration in the system prompt: the same in both.
    const std::string this_system = body["system"].dump();
    if (i == 0) system = this_system;
    EXPECT_EQ(this_system, system) << "request " << i;
    // A rolling cache breakpoint on the last block of the last message.
    const json& last_block = body["messages"].back()["content"].back();
    EXPECT_EQ(last_block.value("cache_control", json::object()).value("type", ""), "ephemeral")
        << "request " << i << ": " << last_block.dump().substr(0, 200);
  }
  // The cache paid: later requests read the earlier prefix.
  EXPECT_GT(server.totals().cache_read_tokens, server.totals().input_tokens);
  // A code loop is offered the memory tools, and the prompt names the ones
  // the memory trait marks as searching and saving notes.
  EXPECT_NE(system.find("search them (memory_search) before you explore"), std::string::npos)
      << system.substr(0, 3000);
  EXPECT_NE(system.find("with memory_save; update a note"), std::string::npos);

  // Each iteration's first message orients the model.
  const auto started = steps_of(daemon, id, "iteration_started");
  ASSERT_EQ(started.size(), 2u);
  const std::string first = started[0]["data"]["prompt"];
  EXPECT_THAT(first,
              HasSubstr("# The repository's instructions (AGENTS.md)\n\nAlways run the checks"));
  EXPECT_THAT(first, HasSubstr("src/\n  f00.c\n"));
  EXPECT_THAT(first, HasSubstr("`grep -q 42 answer.txt`"));
  EXPECT_THAT(first, Not(HasSubstr("# Already done on this branch")));
  const std::string second = started[1]["data"]["prompt"];
  EXPECT_THAT(second, HasSubstr("# Already done on this branch"));
  EXPECT_THAT(second, HasSubstr("progress.md | 1 +"));
  EXPECT_THAT(second, HasSubstr("# Handoff from the last iteration\n\nNOTE: the answer lives"));
  EXPECT_THAT(second, HasSubstr("Iteration 2 of at most"));
}

// Both wire formats: Anthropic's "input length and `max_tokens` exceed
// context limit" and OpenAI's context_length_exceeded.
class LoopOverflow : public LoopContext, public ::testing::WithParamInterface<const char*> {};

TEST_P(LoopOverflow, AProvidersPromptIsTooLongInTheMiddleOfAnIterationHandsOff) {
  const std::string kind = GetParam();
  ModelApiOptions api;
  api.context_window = 30000;  // the provider's real window
  ModelApiServer server(
      [](const ModelCall& call) {
        if (asked_for_handoff(call)) return ModelReply::say("NOTE: fix answer.txt.");
        const std::size_t turn = turns_so_far(call);
        if (first_text(call).find("# Handoff from the last iteration") != std::string::npos) {
          return finish_task(call, turn);
        }
        char name[32];
        std::snprintf(name, sizeof name, "src/f%02zu.c", turn % 20);
        return ModelReply::call("read_file", {{"path", name}});
      },
      api);
  DaemonOptions options;
  // looprd believes the window is 200,000: the provider's refusal is the
  // first it hears of the limit.
  options.extra_toml = provider_toml(server.base_url(), 200000, "", kind);
  DaemonHarness daemon(options);
  make_context_repo(daemon.worktree());
  daemon.start();
  const json loop = create_context_loop(daemon, "Make answer.txt hold 42.");
  const json done = wait_final(daemon, loop["id"]);
  ASSERT_EQ(done["status"], "completed") << done.dump(2) << daemon.log();
  const auto requests = server.requests();
  for (const auto& request : requests)
    EXPECT_EQ(request.path, kind == "openai" ? "/v1/chat/completions" : "/v1/messages");
  std::size_t refused = 0;
  for (const auto& request : requests) {
    if (!request.refused) continue;
    ++refused;
    EXPECT_THAT(request.error_message,
                ::testing::AnyOf(HasSubstr("prompt is too long"), HasSubstr("exceed context limit"),
                                 HasSubstr("maximum context length")));
  }
  EXPECT_EQ(refused, 1u);
  const auto handoffs = steps_of(daemon, loop["id"], "handoff");
  ASSERT_EQ(handoffs.size(), 1u);
  EXPECT_EQ(handoffs[0]["data"]["reason"], "provider_overflow");
  EXPECT_EQ(handoffs[0]["data"]["by"], "model");
  EXPECT_EQ(handoffs[0]["data"]["results_dropped"], true);
}

INSTANTIATE_TEST_SUITE_P(WireFormats, LoopOverflow, ::testing::Values("anthropic", "openai"));

TEST_F(LoopContext, AFiveMegabyteOutputReachesTheModelWithinTheCapAndReadOutputPagesIt) {
  std::string marker_offset;
  ModelApiServer server([&marker_offset](const ModelCall& call) {
    const std::size_t turn = turns_so_far(call);
    if (turn == 0) return ModelReply::call("run_command", {{"command", "seq 1 800000"}});
    if (turn == 1) {
      const std::string seen = call.last_tool_results().at(0)->text;
      const std::size_t at = seen.find("\"offset\": ");
      marker_offset =
          at == std::string::npos ? "0" : seen.substr(at + 10, seen.find('}', at) - at - 10);
      const std::size_t id_at = seen.find("\"call_id\": \"");
      const std::string id = seen.substr(id_at + 12, seen.find('"', id_at + 12) - id_at - 12);
      return ModelReply::call("read_output",
                              {{"call_id", id}, {"offset", std::stoll(marker_offset)}});
    }
    if (turn == 2) return ModelReply::call("validate", json::object());
    if (turn == 3) return ModelReply::call("read_file", {{"path", "answer.txt"}});
    if (turn == 4)
      return ModelReply::call("edit_file",
                              {{"path", "answer.txt"}, {"old_string", "41"}, {"new_string", "42"}});
    return ModelReply::call("complete_task", {{"summary", "done"}});
  });
  DaemonOptions options;
  options.extra_toml = provider_toml(server.base_url(), 200000);
  DaemonHarness daemon(options);
  make_context_repo(daemon.worktree());
  daemon.start();
  const json loop = create_context_loop(daemon, "Read the numbers, then make answer.txt hold 42.");
  const json done = wait_final(daemon, loop["id"]);
  const std::string id = loop["id"];
  EXPECT_EQ(done["status"], "completed") << done.dump(2);
  const auto results = steps_of(daemon, id, "tool_results");
  ASSERT_GE(results.size(), 3u) << done.dump(2);

  // What the model read of the command: within the cap, head and tail kept.
  const json& command = results[0]["data"]["results"][0];
  const std::string seen = command["content"];
  EXPECT_LE(seen.size(), 16384u);
  EXPECT_THAT(seen, HasSubstr("exit code 0"));
  EXPECT_THAT(seen, HasSubstr("\n1\n2\n3\n"));
  EXPECT_THAT(seen, HasSubstr("799999\n800000\n"));
  EXPECT_THAT(seen, HasSubstr("cut here to fit"));
  // The journal keeps the tool's whole result: all it printed is counted.
  const json outcome = command["outcome"]["output"];
  EXPECT_EQ(outcome["output_bytes"].get<std::int64_t>(), 5488895);  // seq 1 800000 | wc -c
  EXPECT_GT(outcome["output"].get<std::string>().size(), seen.size());
  // read_output went on exactly where the head stopped.
  const std::string page = results[1]["data"]["results"][0]["content"];
  EXPECT_THAT(page, HasSubstr("read on with offset"));
  const std::string whole_head = seen.substr(0, seen.find("[... "));
  const std::size_t last_number_at = whole_head.rfind('\n', whole_head.size() - 2);
  const long last_number = std::stol(whole_head.substr(last_number_at + 1));
  EXPECT_EQ(page.rfind(std::to_string(last_number + 1) + "\n", 0), 0u) << page.substr(0, 80);
  // validate ran the loop's own command (it fails until the edit).
  const std::string validated = results[2]["data"]["results"][0]["content"];
  EXPECT_THAT(validated, HasSubstr("exit code 1"));

  // The model was offered validate and read_output, not build or test
  // (no [commands] for them here).
  const json body = json::parse(server.requests().at(0).body);
  std::vector<std::string> names;
  for (const json& tool : body["tools"])
    names.push_back(tool["name"]);
  EXPECT_THAT(names, ::testing::Contains("validate"));
  EXPECT_THAT(names, ::testing::Contains("read_output"));
  EXPECT_THAT(names, Not(::testing::Contains("test")));
  EXPECT_THAT(names, Not(::testing::Contains("build")));
}

TEST_F(LoopContext, ReadFileOfALargeFilePagesWithTheOffsetToGoOnFrom) {
  ModelApiServer server([](const ModelCall& call) {
    const std::size_t turn = turns_so_far(call);
    if (turn == 0) return ModelReply::call("read_file", {{"path", "big.txt"}});
    if (turn == 1) {
      const std::string seen = call.last_tool_results().at(0)->text;
      const std::size_t at = seen.find("read on with read_file offset ");
      const std::int64_t next = at == std::string::npos ? 1 : std::stoll(seen.substr(at + 30));
      return ModelReply::call("read_file", {{"path", "big.txt"}, {"offset", next}});
    }
    if (turn == 2) return ModelReply::call("read_file", {{"path", "answer.txt"}});
    if (turn == 3)
      return ModelReply::call("edit_file",
                              {{"path", "answer.txt"}, {"old_string", "41"}, {"new_string", "42"}});
    return ModelReply::call("complete_task", {{"summary", "done"}});
  });
  DaemonOptions options;
  options.extra_toml = provider_toml(server.base_url(), 200000);
  DaemonHarness daemon(options);
  make_context_repo(daemon.worktree());
  std::string big;
  for (int i = 1; i <= 3000; ++i)
    big += "line " + std::to_string(i) + " " + std::string(90, 'x') + "\n";
  write(daemon.worktree() + "/big.txt", big);
  shell_output("cd '" + daemon.worktree() +
               "' && git add -A && git -c user.name=t -c user.email=t@t commit -q -m big");
  daemon.start();
  const json loop = create_context_loop(daemon, "Read big.txt, then make answer.txt hold 42.");
  const json done = wait_final(daemon, loop["id"]);
  EXPECT_EQ(done["status"], "completed") << done.dump(2);
  const auto results = steps_of(daemon, loop["id"], "tool_results");
  ASSERT_GE(results.size(), 2u);
  const std::string first = results[0]["data"]["results"][0]["content"];
  EXPECT_LE(first.size(), 16384u);
  EXPECT_THAT(first, HasSubstr("big.txt · lines 1-"));
  const std::size_t at = first.find("read on with read_file offset ");
  ASSERT_NE(at, std::string::npos) << first.substr(first.size() - 300);
  const long next = std::stol(first.substr(at + 30));
  EXPECT_GT(next, 100);
  EXPECT_THAT(first, HasSubstr("|line " + std::to_string(next - 1) + " "));
  EXPECT_THAT(first, Not(HasSubstr("|line " + std::to_string(next) + " ")));
  const std::string second = results[1]["data"]["results"][0]["content"];
  EXPECT_THAT(second, HasSubstr("big.txt · lines " + std::to_string(next) + "-"));
  EXPECT_THAT(second, HasSubstr("|line " + std::to_string(next) + " "));
}

TEST_F(LoopContext, LintProblemsAfterAnEditAndAMaxTokensStopReachTheModel) {
  ModelApiServer server([](const ModelCall& call) {
    const std::size_t turn = turns_so_far(call);
    if (turn == 0) {
      ModelReply cut = ModelReply::say("I will now write a very long");
      cut.stop_reason = "max_tokens";
      return cut;
    }
    if (turn == 1) {
      return ModelReply::call("write_file", {{"path", "tool.py"}, {"content", "x = 1  # TODO\n"}});
    }
    if (turn == 2) return ModelReply::call("read_file", {{"path", "answer.txt"}});
    if (turn == 3)
      return ModelReply::call("edit_file",
                              {{"path", "answer.txt"}, {"old_string", "41"}, {"new_string", "42"}});
    return ModelReply::call("complete_task", {{"summary", "done"}});
  });
  DaemonOptions options;
  options.extra_toml = "[commands]\nlint = \"sh lint.sh {files}\"\nlint_files = [\"*.py\"]\n" +
                       provider_toml(server.base_url(), 200000);
  DaemonHarness daemon(options);
  make_context_repo(daemon.worktree());
  // It leaves a cache behind, as eslint --cache does: never committed.
  write(daemon.worktree() + "/lint.sh",
        "echo cached > .lintcache\n"
        "for f in \"$@\"; do grep -n TODO \"$f\" | sed \"s|^|$f:|; s|$| todo left|\"; done | "
        "grep . && exit 1; exit 0\n");
  shell_output("cd '" + daemon.worktree() +
               "' && git add -A && git -c user.name=t -c user.email=t@t commit -q -m lint");
  daemon.start();
  const json loop = create_context_loop(daemon, "Add tool.py, then make answer.txt hold 42.");
  const json done = wait_final(daemon, loop["id"]);
  EXPECT_EQ(done["status"], "completed") << done.dump(2) << daemon.log();
  const auto requests = server.requests();
  ASSERT_GE(requests.size(), 3u);
  // The cut answer got loopr's word, as the next user message.
  const json second = json::parse(requests[1].body);
  EXPECT_THAT(second["messages"].back().dump(), HasSubstr("cut at max_tokens (2048"));
  EXPECT_THAT(second["messages"].back().dump(), HasSubstr("Write smaller pieces"));
  // The write's result carries the lint problem of the file written.
  const auto results = steps_of(daemon, loop["id"], "tool_results");
  std::string write_result;
  for (const json& step : results)
    for (const json& result : step["data"]["results"])
      if (result["name"] == "write_file") write_result = result["content"];
  EXPECT_THAT(write_result,
              HasSubstr("lint (`sh lint.sh {files}`) reports 1 new problem in tool.py"));
  EXPECT_THAT(write_result, HasSubstr("tool.py:1:x = 1  # TODO todo left"));
  const std::string branch = done["branch"];
  const std::string names =
      shell_output("git -C '" + daemon.worktree() + "' ls-tree -r --name-only " + branch);
  EXPECT_THAT(names, HasSubstr("tool.py\n"));
  EXPECT_THAT(names, Not(HasSubstr(".lintcache"))) << names;
}

}  // namespace
}  // namespace loopr::test
