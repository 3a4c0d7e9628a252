// Memory notes through the real looprd (issue 13): the four tools go through
// the ToolRouter like any other (tool.call and tool.list, lane "daemon",
// schema checks, the store's record), notes survive SIGKILL of looprd, a
// note one loop saves is found by a later loop of the same repository, and
// (SECURITY.md class 28) a query in FTS5 syntax is only words, and another
// user's notes — planted in the same database — are never shown, changed or
// deleted. Runs as root and, in CI, as an ordinary user.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/daemon/loop_fixture.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// The tool's own output of a successful call (the test fails otherwise).
json output_of(const json& reply) {
  EXPECT_EQ(reply.value("status", ""), "success") << reply.dump();
  return reply.contains("output") ? reply["output"] : json();
}

std::vector<std::string> ids_in(const json& output) {
  std::vector<std::string> ids;
  if (!output.contains("results")) return ids;
  for (const json& hit : output["results"])
    if (hit["note_id"].is_string()) ids.push_back(hit["note_id"]);
  return ids;
}

class MemoryDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_.start();
    make_sample_repo(daemon_.worktree());
  }
  DaemonHarness daemon_;
};

TEST_F(MemoryDaemonTest, ToolsAreListedAndRunInLooprdThroughTheRouter) {
  const json listed = daemon_.call("tool.list");
  std::map<std::string, std::string> lanes;
  for (const json& tool : listed["tools"])
    lanes[tool["name"]] = tool["lane"];
  for (const char* name : {"memory_save", "memory_search", "memory_update", "memory_delete"})
    EXPECT_EQ(lanes[name], "daemon") << name;

  const json saved = daemon_.tool(
      "memory_save", {{"content", "the staging host is app-stg-2"}, {"tags", {"deploy"}}});
  EXPECT_EQ(saved["lane"], "daemon");
  const std::string id = output_of(saved)["note_id"];
  EXPECT_THAT(id, ::testing::StartsWith("note-"));
  EXPECT_EQ(ids_in(output_of(daemon_.tool("memory_search", {{"query", "staging host"}}))),
            std::vector<std::string>{id});

  // The schema applies as to every tool: a wrong type is refused before it runs.
  const json bad = daemon_.tool("memory_search", {{"query", "x"}, {"top_k", 99}});
  EXPECT_EQ(bad["status"], "invalid");
  EXPECT_THAT(bad["error"]["message"].get<std::string>(), HasSubstr("top_k"));

  EXPECT_EQ(output_of(daemon_.tool(
                "memory_update",
                {{"note_id", id}, {"content", "the staging host is app-stg-3"}}))["note_id"],
            id);
  const json hits = output_of(daemon_.tool("memory_search", {{"query", "stg 3"}}));
  ASSERT_EQ(hits["results"].size(), 1u);
  EXPECT_EQ(hits["results"][0]["text"], "the staging host is app-stg-3");
  EXPECT_TRUE(output_of(daemon_.tool("memory_delete", {{"note_id", id}}))["deleted"].get<bool>());
  EXPECT_TRUE(ids_in(output_of(daemon_.tool("memory_search", {{"query", "staging"}}))).empty());
  const json gone = daemon_.tool("memory_delete", {{"note_id", id}});
  EXPECT_EQ(gone["status"], "failed");
  EXPECT_EQ(gone["error"]["code"], "not_found");

  // Every call was counted under its tool, like a runner's.
  const json metrics = daemon_.call("metrics.get");
  EXPECT_THAT(metrics.dump(), HasSubstr("memory_save"));
  // The loop engine's own tools stay refused to clients.
  const json complete = daemon_.tool("complete_task", {{"summary", "done"}});
  EXPECT_EQ(complete["status"], "invalid");
  EXPECT_THAT(complete["error"]["message"].get<std::string>(), HasSubstr("inside a loop"));
}

TEST_F(MemoryDaemonTest, NotesSurviveSigkillOfLooprd) {
  const std::string id = output_of(
      daemon_.tool("memory_save", {{"content", "survives a kill: zebra crossing"}}))["note_id"];
  const int status = daemon_.stop(9);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == 9) << status;
  daemon_.start();
  EXPECT_EQ(ids_in(output_of(daemon_.tool("memory_search", {{"query", "zebra"}}))),
            std::vector<std::string>{id});
}

TEST_F(MemoryDaemonTest, QueriesInFts5SyntaxAreOnlyWords) {
  const std::string id = output_of(
      daemon_.tool("memory_save", {{"content", "use NEAR-line buffering for logs"}}))["note_id"];
  for (const std::string& query :
       {std::string("NEAR(\"logs\" buffering, 0"), std::string("content:logs OR"),
        std::string("\"\"\"*^"), std::string(200000, '(') + " buffering"}) {
    const json reply = daemon_.tool("memory_search", {{"query", query}});
    EXPECT_EQ(reply["status"], "success") << query.substr(0, 40) << ": " << reply.dump();
  }
  EXPECT_EQ(ids_in(output_of(daemon_.tool("memory_search", {{"query", "NEAR(logs"}}))),
            std::vector<std::string>{id});
}

TEST_F(MemoryDaemonTest, AnotherUsersNotesInTheSameDatabaseAreNeverReached) {
  // Planted as if the database had been shared or copied: same repository,
  // same words, another uid.
  daemon_.stop(15);
  std::string foreign_id = "note-00000000-0000-4000-8000-000000000001";
  {
    store::Store store = store::Store::open(daemon_.state_dir());
    store::MemoryNote note;
    note.note_id = foreign_id;
    note.owner_uid = static_cast<std::int64_t>(::geteuid()) + 1;
    note.repo = daemon_.worktree();
    note.content = "password for the release signing key: hunter2";
    note.source = "client";
    note.created_at_ms = note.updated_at_ms = 1;
    ASSERT_TRUE(store.insert_note(note).ok());
    note.note_id = "note-00000000-0000-4000-8000-000000000002";
    note.repo = "";
    ASSERT_TRUE(store.insert_note(note).ok());
  }
  daemon_.start();
  for (const char* scope : {"repo", "user"}) {
    const json found = output_of(daemon_.tool(
        "memory_search",
        {{"query", "password release signing key hunter2"}, {"scope", scope}, {"top_k", 20}}));
    EXPECT_TRUE(found["results"].empty()) << scope << ": " << found.dump();
  }
  const json update =
      daemon_.tool("memory_update", {{"note_id", foreign_id}, {"content", "taken over"}});
  EXPECT_EQ(update["error"]["code"], "not_found");
  EXPECT_EQ(daemon_.tool("memory_delete", {{"note_id", foreign_id}})["error"]["code"], "not_found");
  daemon_.stop(15);
  store::Store store = store::Store::open(daemon_.state_dir());
  auto kept = store.find_note(static_cast<std::int64_t>(::geteuid()) + 1, foreign_id);
  ASSERT_TRUE(kept.ok());
  ASSERT_TRUE(kept->has_value());
  EXPECT_EQ((*kept)->content, "password for the release signing key: hunter2");
}

// ---- in loops ----------------------------------------------------------------

TEST(MemoryLoopTest, ANoteOneLoopSavesIsFoundByTheNextLoopOfTheRepository) {
  TempTree scripts;
  const std::string first = write_session(
      scripts.path("first.jsonl"),
      {turn({tool_call(
           "m1", "memory_save",
           {{"content", "answer.txt must hold 42; sh test.sh checks it"}, {"tags", {"answer"}}})}),
       turn({read_call("r1")}), turn({edit_call("e1")}), turn({complete_call("c1")})});
  const std::string second = write_session(
      scripts.path("second.jsonl"),
      {turn({tool_call("s1", "memory_search",
                       {{"query", "What must answer.txt hold? (NEAR \"test.sh\")"}})}),
       turn({read_call("r1")}), turn({edit_call("e1")}), turn({complete_call("c1")})});
  DaemonOptions options;
  options.extra_toml = scripted_toml({{"first", first, 0}, {"second", second, 0}});
  DaemonHarness daemon(options);
  const SampleRepo repo = make_sample_repo(daemon.worktree());
  daemon.start();

  const std::string saver = create_loop(daemon, repo.path, {{"provider", "first"}})["id"];
  ASSERT_EQ(wait_final(daemon, saver)["status"], "completed");
  const std::string finder = create_loop(daemon, repo.path, {{"provider", "second"}})["id"];
  ASSERT_EQ(wait_final(daemon, finder)["status"], "completed");

  // The saver's note carries the loop as its source; the finder got it back.
  const auto saved = steps_of_kind(read_transcript(daemon, saver), "tool_results");
  ASSERT_FALSE(saved.empty());
  EXPECT_THAT(saved[0].dump(), HasSubstr("note-"));
  const auto found = steps_of_kind(read_transcript(daemon, finder), "tool_results");
  ASSERT_FALSE(found.empty());
  const std::string result = found[0]["data"]["results"][0]["content"];
  EXPECT_THAT(result, HasSubstr("answer.txt must hold 42"));
  EXPECT_THAT(result, HasSubstr("**answer**"));
  EXPECT_THAT(result, HasSubstr("loop:" + saver)) << "the note's source is not shown";
}

}  // namespace
}  // namespace loopr::test
