// The control protocol additions looprctl mcp relies on (issue 14), through
// the real looprd and its lane runners: events.subscribe own_calls, tool.call
// session (a read-before-edit scope shared by connections) and tool.list
// callable.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "tests/daemon/daemon_harness.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class DaemonForMcp : public ::testing::Test {
 protected:
  void SetUp() override { daemon_.start(); }
  json call_params(const std::string& tool, json args) const {
    return {{"tool", tool}, {"args", std::move(args)}, {"worktree", daemon_.worktree()}};
  }
  DaemonHarness daemon_;
};

// Everything a connection subscribed with own_calls saw while its call ran,
// and after (queued until the connection's next reply).
struct SeenEvents {
  std::vector<proto::Event> during;
  std::vector<proto::Event> after;
};

std::string outputs_of(const std::vector<proto::Event>& events) {
  std::string text;
  for (const proto::Event& event : events) {
    if (event.event == "tool.output") text += event.data.value("data", "");
  }
  return text;
}

// A streams its output (the heavy lane's build streams; other lanes do not)
// and runs until B's call has run, so the two calls overlap.
TEST(DaemonOwnCalls, SubscribersWithOwnCallsSeeOnlyTheirOwnCallsEvents) {
  DaemonHarness daemon(DaemonOptions{
      "[commands]\nbuild = \"echo output-of-a; i=0; while [ ! -e b.done ] && [ $i -lt 600 ]; "
      "do sleep 0.05; i=$((i+1)); done; [ -e b.done ] && echo a-saw-b\"\n",
      {},
      {}});
  daemon.start();
  const json topics = json::array({"tool.started", "tool.output", "tool.finished"});
  auto a = daemon.client();
  auto b = daemon.client();
  ASSERT_TRUE(a.call("events.subscribe", {{"topics", topics}, {"own_calls", true}}));
  ASSERT_TRUE(b.call("events.subscribe", {{"topics", topics}, {"own_calls", true}}));
  // A watcher without own_calls sees both calls: the filter is per connection.
  auto watcher = daemon.client();
  ASSERT_TRUE(watcher.call("events.subscribe", {{"topics", {"tool.started", "tool.output"}}}));

  std::mutex mutex;
  std::condition_variable changed;
  bool a_started = false;
  SeenEvents seen_a, seen_b;
  Result<json> result_a = json();
  std::thread caller_a([&] {
    result_a = a.call(
        "tool.call", {{"tool", "build"}, {"args", json::object()}, {"worktree", daemon.worktree()}},
        std::chrono::milliseconds(60000), [&](const proto::Event& event) {
          seen_a.during.push_back(event);
          if (event.event == "tool.output") {
            std::lock_guard lock(mutex);
            a_started = true;
            changed.notify_all();
          }
        });
  });
  {
    std::unique_lock lock(mutex);
    changed.wait_for(lock, 30s, [&] { return a_started; });
  }
  auto result_b = b.call("tool.call",
                         {{"tool", "run_command_isolated"},
                          {"args", {{"command", "echo output-of-b; touch b.done"}}},
                          {"worktree", daemon.worktree()}},
                         std::chrono::milliseconds(60000),
                         [&](const proto::Event& event) { seen_b.during.push_back(event); });
  caller_a.join();
  ASSERT_TRUE(result_a) << result_a.error().message;
  ASSERT_TRUE(result_b) << result_b.error().message;
  ASSERT_EQ((*result_a)["ok"], true) << result_a->dump();
  ASSERT_EQ((*result_b)["ok"], true) << result_b->dump();
  EXPECT_EQ((*result_a)["output"]["stdout"], "output-of-a\na-saw-b\n");  // they overlapped

  // Whatever else reached each connection arrives before its next reply.
  ASSERT_TRUE(a.call("ping"));
  ASSERT_TRUE(b.call("ping"));
  for (auto* seen : {&seen_a, &seen_b}) {
    auto* client = seen == &seen_a ? &a : &b;
    while (true) {
      auto event = client->next_event(0ms);
      ASSERT_TRUE(event);
      if (!*event) break;
      seen->after.push_back(**event);
    }
  }

  const std::string id_a = (*result_a)["call_id"];
  const std::string id_b = (*result_b)["call_id"];
  for (const auto& [seen, own] : {std::pair{&seen_a, id_a}, std::pair{&seen_b, id_b}}) {
    bool started = false;
    for (const auto* events : {&seen->during, &seen->after}) {
      for (const proto::Event& event : *events) {
        EXPECT_EQ(event.data.value("call_id", ""), own) << event.event << " " << event.data.dump();
        if (event.event == "tool.started") started = true;
      }
    }
    EXPECT_TRUE(started) << own;
  }
  EXPECT_NE(outputs_of(seen_a.during).find("output-of-a"), std::string::npos);
  EXPECT_EQ(outputs_of(seen_b.during).find("output-of-a"), std::string::npos);
  EXPECT_EQ(outputs_of(seen_b.after).find("output-of-a"), std::string::npos);

  // The watcher saw both calls start and A's output.
  std::set<std::string> started;
  std::string watched_output;
  while (started.size() < 2 || watched_output.find("a-saw-b") == std::string::npos) {
    auto event = watcher.next_event(30s);
    ASSERT_TRUE(event && *event) << watched_output;
    if ((**event).event == "tool.started") started.insert((**event).data.value("call_id", ""));
    if ((**event).event == "tool.output") watched_output += (**event).data.value("data", "");
  }
  EXPECT_EQ(started, (std::set<std::string>{id_a, id_b}));
}

TEST_F(DaemonForMcp, ConnectionsNamingOneSessionShareReadBeforeEdit) {
  daemon_.tree().write("work/repo/shared.c", "int x = 1;\n");
  auto reader = daemon_.client();
  auto editor = daemon_.client();
  json read = call_params("read_file", {{"path", "shared.c"}});
  read["session"] = "mcp-shared";
  auto was_read = reader.call("tool.call", read);
  ASSERT_TRUE(was_read);
  ASSERT_EQ((*was_read)["ok"], true) << was_read->dump();

  json edit =
      call_params("edit_file", {{"path", "shared.c"}, {"old_string", "1"}, {"new_string", "2"}});
  edit["session"] = "mcp-shared";
  auto edited = editor.call("tool.call", edit);
  ASSERT_TRUE(edited);
  EXPECT_EQ((*edited)["ok"], true) << edited->dump();
  EXPECT_EQ(daemon_.tree().read("work/repo/shared.c"), "int x = 2;\n");
}

TEST_F(DaemonForMcp, WithoutASessionEachConnectionHasItsOwnReads) {
  daemon_.tree().write("work/repo/own.c", "int y = 1;\n");
  auto reader = daemon_.client();
  auto editor = daemon_.client();
  auto was_read = reader.call("tool.call", call_params("read_file", {{"path", "own.c"}}));
  ASSERT_TRUE(was_read);
  ASSERT_EQ((*was_read)["ok"], true) << was_read->dump();
  auto edited = editor.call(
      "tool.call",
      call_params("edit_file", {{"path", "own.c"}, {"old_string", "1"}, {"new_string", "2"}}));
  ASSERT_TRUE(edited);
  EXPECT_EQ((*edited)["ok"], false);
  EXPECT_EQ((*edited)["error"]["code"], "not_read_first") << edited->dump();

  // Another session name is another scope too.
  json read = call_params("read_file", {{"path", "own.c"}});
  read["session"] = "mcp-one";
  ASSERT_EQ(reader.call("tool.call", read).value()["ok"], true);
  json edit =
      call_params("edit_file", {{"path", "own.c"}, {"old_string", "1"}, {"new_string", "2"}});
  edit["session"] = "mcp-two";
  auto other = editor.call("tool.call", edit);
  ASSERT_TRUE(other);
  EXPECT_EQ((*other)["error"]["code"], "not_read_first") << other->dump();
  EXPECT_EQ(daemon_.tree().read("work/repo/own.c"), "int y = 1;\n");
}

TEST_F(DaemonForMcp, ToolListSaysWhichToolsAClientMayCall) {
  auto tools = daemon_.call("tool.list")["tools"];
  std::map<std::string, json> by_name;
  for (const auto& tool : tools)
    by_name[tool["name"].get<std::string>()] = tool;
  for (const char* engine_only : {"complete_task", "create_plan", "create_spec", "create_phase"}) {
    ASSERT_TRUE(by_name.contains(engine_only)) << engine_only;
    EXPECT_EQ(by_name[engine_only]["callable"], false) << engine_only;
  }
  for (const char* callable : {"read_file", "edit_file", "run_command", "memory_search"}) {
    ASSERT_TRUE(by_name.contains(callable)) << callable;
    EXPECT_EQ(by_name[callable]["callable"], true) << callable;
  }
  // What callable:false means: a client's tool.call is refused.
  auto refused = daemon_.tool("complete_task", {{"summary", "done"}});
  EXPECT_EQ(refused["ok"], false) << refused.dump();
}

TEST_F(DaemonForMcp, ToolListShowsEachToolsTraits) {
  const json tools = daemon_.call("tool.list")["tools"];
  std::map<std::string, json> by_name;
  for (const auto& tool : tools)
    by_name[tool["name"].get<std::string>()] = tool["traits"];
  EXPECT_EQ(by_name["edit_file"],
            json::parse(R"({"command": "none", "file_access": "write", "web": "none",
                            "result_view": "json", "warm_worker": true,
                            "consults_model": false, "memory": "none"})"));
  EXPECT_EQ(by_name["run_command"]["command"], "from-arguments");
  EXPECT_EQ(by_name["run_command"]["result_view"], "command");
  EXPECT_EQ(by_name["file_delete"]["file_access"], "delete");
  EXPECT_EQ(by_name["web_search"]["web"], "search");
  EXPECT_EQ(by_name["oracle"]["consults_model"], true);
  EXPECT_EQ(by_name["memory_search"]["memory"], "search");
  EXPECT_EQ(by_name["memory_delete"]["memory"], "delete");
}

}  // namespace
}  // namespace loopr::test
