// The person's view of memory notes against the real looprd (issue 13):
// notes saved through tool.call memory_save, then the memory.* methods over
// the control socket and the real looprctl list, search, show and delete
// them. The repositories are git repositories beneath the harness's
// worktree root: one with a subfolder and a linked worktree (both name it),
// and another, whose notes a listing of the first never shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tests/client/loop_samples.hpp"
#include "tests/client/looprctl_run.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/daemon/loop_fixture.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

const char* const kLinkerNote =
    "The build needs make -j1: the linker runs out of memory with more jobs.\n"
    "Seen on the CI runners too.";
const char* const kUserNote = "The user prefers short answers, without a summary at the end.";
const char* const kOtherNote = "The zebra crossing module is generated; edit zebra.in instead.";

std::set<std::string> ids_of(const json& objects) {
  std::set<std::string> ids;
  if (!objects.is_array()) return ids;
  for (const json& object : objects)
    if (object.contains("note_id") && object["note_id"].is_string()) ids.insert(object["note_id"]);
  return ids;
}

class MemoryLooprdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_.start();
    repo_ = daemon_.worktree();
    make_sample_repo(repo_);
    linked_ = daemon_.tree().path("work/repo-linked");
    const GitOutput added = git(repo_, {"worktree", "add", "-q", "-b", "side", linked_});
    ASSERT_EQ(added.exit_code, 0) << added.out;
    other_ = daemon_.tree().path("work/other");
    make_sample_repo(other_);

    linker_id_ = save(repo_ + "/src", {{"content", kLinkerNote}, {"tags", {"build"}}});
    user_id_ = save(repo_, {{"content", kUserNote}, {"scope", "user"}});
    other_id_ = save(other_, {{"content", kOtherNote}});
    ASSERT_FALSE(linker_id_.empty() || user_id_.empty() || other_id_.empty());
  }

  // memory_save through tool.call from `worktree`; the new note's id.
  std::string save(const std::string& worktree, json args) {
    const json reply = daemon_.call(
        "tool.call", {{"tool", "memory_save"}, {"args", std::move(args)}, {"worktree", worktree}});
    EXPECT_EQ(reply.value("status", ""), "success") << reply.dump();
    if (!reply.contains("output") || !reply["output"].contains("note_id")) return {};
    return reply["output"]["note_id"].get<std::string>();
  }

  // memory_search through tool.call from the repository: the ids it finds.
  std::set<std::string> tool_search(const std::string& query) {
    const json reply = daemon_.call(
        "tool.call",
        {{"tool", "memory_search"}, {"args", {{"query", query}}}, {"worktree", repo_}});
    EXPECT_EQ(reply.value("status", ""), "success") << reply.dump();
    return ids_of(reply.contains("output") ? reply["output"].value("results", json()) : json());
  }

  // The real looprctl against this looprd, its terminal 200 columns wide.
  CtlRun ctl(std::vector<std::string> args, const std::string& cwd = {}) {
    args.insert(args.begin(), {"--socket", daemon_.socket_path()});
    CtlOptions options;
    options.config_dir = daemon_.tree().path("ctl-config");
    options.state_dir = daemon_.tree().path("ctl-state");
    options.cwd = cwd;
    options.env["COLUMNS"] = "200";
    return run_looprctl(args, options);
  }

  // The rpc error of `method`; null when it succeeded.
  json error_of(const std::string& method, json params) {
    auto client = daemon_.client();
    auto result = client.call(method, std::move(params));
    if (result) return nullptr;
    return result.error().details;
  }

  DaemonHarness daemon_;
  std::string repo_, linked_, other_;
  std::string linker_id_, user_id_, other_id_;
};

// ---- the control methods ----

TEST_F(MemoryLooprdTest, ListShowsEveryNoteOfTheUserWithItsFields) {
  const json listed = daemon_.call("memory.list");
  EXPECT_TRUE(listed["repo"].is_null()) << listed.dump();
  EXPECT_EQ(ids_of(listed["notes"]), (std::set<std::string>{linker_id_, user_id_, other_id_}));
  for (const json& note : listed["notes"]) {
    if (note["note_id"] == linker_id_) {
      EXPECT_EQ(note["text"], kLinkerNote);
      EXPECT_EQ(note["tags"], json({"build"}));
      EXPECT_EQ(note["scope"], "repo");
      EXPECT_EQ(note["repo"], repo_);  // the repository, not the subfolder it was saved from
      EXPECT_EQ(note["source"], "client");
    } else if (note["note_id"] == user_id_) {
      EXPECT_EQ(note["scope"], "user");
      EXPECT_TRUE(note["repo"].is_null());
    } else {
      EXPECT_EQ(note["repo"], other_);
    }
  }
  // Most recently updated first, at most `limit`.
  const json one = daemon_.call("memory.list", {{"limit", 1}});
  EXPECT_EQ(ids_of(one["notes"]), (std::set<std::string>{other_id_})) << one.dump();
}

TEST_F(MemoryLooprdTest, ARepoFolderASubfolderOrALinkedWorktreeListsThatRepositorysNotes) {
  for (const std::string& folder : {repo_, repo_ + "/src", repo_ + "/docs/../src", linked_}) {
    const json listed = daemon_.call("memory.list", {{"repo", folder}});
    EXPECT_EQ(listed["repo"], repo_) << folder;
    EXPECT_EQ(ids_of(listed["notes"]), (std::set<std::string>{linker_id_, user_id_})) << folder;
  }
  const json other = daemon_.call("memory.list", {{"repo", other_}});
  EXPECT_EQ(ids_of(other["notes"]), (std::set<std::string>{other_id_, user_id_}));
}

TEST_F(MemoryLooprdTest, SearchRanksMarksAndKeepsToTheRepo) {
  const json found = daemon_.call("memory.search", {{"query", "linker memory"}});
  ASSERT_EQ(found["results"].size(), 1u) << found.dump();
  const json& hit = found["results"][0];
  EXPECT_EQ(hit["note_id"], linker_id_);
  EXPECT_EQ(hit["text"], kLinkerNote);
  EXPECT_GT(hit["score"].get<double>(), 0);
  EXPECT_TRUE(contains(hit.value("snippet", ""), "**linker**")) << hit.dump();
  EXPECT_TRUE(contains(hit.value("snippet", ""), "**memory**")) << hit.dump();

  // Without repo every note; with one, only its notes and the user's own.
  EXPECT_EQ(ids_of(daemon_.call("memory.search", {{"query", "zebra"}})["results"]),
            (std::set<std::string>{other_id_}));
  const json elsewhere = daemon_.call("memory.search", {{"query", "zebra"}, {"repo", linked_}});
  EXPECT_TRUE(elsewhere["results"].empty()) << elsewhere.dump();
  EXPECT_EQ(elsewhere["repo"], repo_);
  EXPECT_EQ(ids_of(daemon_.call("memory.search",
                                {{"query", "short answers"}, {"repo", other_}})["results"]),
            (std::set<std::string>{user_id_}));
  // FTS5 syntax is only words; top_k bounds the hits.
  const json hostile =
      daemon_.call("memory.search", {{"query", "NEAR(\"linker\" OR zebra*) AND ("}, {"top_k", 1}});
  EXPECT_EQ(hostile["results"].size(), 1u) << hostile.dump();
  const json with_turns = daemon_.call(
      "memory.search", {{"query", "linker"}, {"repo", repo_}, {"include_conversation", true}});
  EXPECT_EQ(ids_of(with_turns["results"]), (std::set<std::string>{linker_id_}));
}

TEST_F(MemoryLooprdTest, GetShowsANoteAndDeleteRemovesItEverywhereAtOnce) {
  const json note = daemon_.call("memory.get", {{"note_id", linker_id_}});
  EXPECT_EQ(note["note_id"], linker_id_);
  EXPECT_EQ(note["text"], kLinkerNote);
  EXPECT_EQ(note["repo"], repo_);
  EXPECT_TRUE(note["created_at"].is_string());

  EXPECT_EQ(tool_search("linker"), (std::set<std::string>{linker_id_}));
  EXPECT_EQ(daemon_.call("memory.delete", {{"note_id", linker_id_}}),
            (json{{"note_id", linker_id_}, {"deleted", true}}));
  EXPECT_EQ(ids_of(daemon_.call("memory.list")["notes"]),
            (std::set<std::string>{user_id_, other_id_}));
  EXPECT_TRUE(daemon_.call("memory.search", {{"query", "linker"}})["results"].empty());
  EXPECT_TRUE(tool_search("linker").empty());

  for (const char* method : {"memory.get", "memory.delete"}) {
    const json error = error_of(method, {{"note_id", linker_id_}});
    EXPECT_EQ(error.value("rpc_code", 0), 1005) << method << error.dump();
    EXPECT_EQ(error["data"]["code"], "not_found") << error.dump();
    EXPECT_TRUE(contains(error["data"].value("hint", ""), "looprctl memory list")) << error.dump();
  }
}

TEST_F(MemoryLooprdTest, MalformedParamsAreRefusedWithInvalidParams) {
  const std::vector<std::pair<std::string, json>> requests = {
      {"memory.list", {{"repo", "work/repo"}}},
      {"memory.list", {{"repo", repo_ + "/nowhere"}}},
      {"memory.list", {{"repo", repo_ + "/test.sh"}}},
      {"memory.list", {{"repo", 5}}},
      {"memory.list", {{"limit", 0}}},
      {"memory.list", {{"limit", 1001}}},
      {"memory.list", {{"limit", -3}}},
      {"memory.list", {{"limit", "5"}}},
      {"memory.list", {{"limit", 1.5}}},
      {"memory.search", json::object()},
      {"memory.search", {{"query", ""}}},
      {"memory.search", {{"query", 7}}},
      {"memory.search", {{"query", "x"}, {"top_k", 101}}},
      {"memory.search", {{"query", "x"}, {"top_k", 0}}},
      {"memory.search", {{"query", "x"}, {"include_conversation", true}}},
      {"memory.search", {{"query", "x"}, {"repo", repo_}, {"include_conversation", "yes"}}},
      {"memory.get", json::object()},
      {"memory.get", {{"note_id", 5}}},
      {"memory.delete", {{"note_id", ""}}},
      {"memory.delete", {{"note_id", std::string(300, 'n')}}}};
  for (const auto& [method, params] : requests) {
    const json error = error_of(method, params);
    EXPECT_EQ(error.value("rpc_code", 0), -32602) << method << " " << params.dump();
  }
  // Nothing was deleted by the refused requests.
  EXPECT_EQ(daemon_.call("memory.list")["notes"].size(), 3u);
}

// ---- looprctl memory ----

TEST_F(MemoryLooprdTest, LooprctlListsSearchesShowsAndDeletesTheNotes) {
  CtlRun run = ctl({"memory", "list"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const std::string& id : {linker_id_, user_id_, other_id_})
    EXPECT_TRUE(contains(run.out, id)) << run.out;
  EXPECT_TRUE(contains(run.out, "(user)")) << run.out;
  EXPECT_TRUE(contains(run.out, "The build needs make -j1")) << run.out;
  EXPECT_FALSE(contains(run.out, "Seen on the CI runners")) << run.out;  // first line only

  // --repo relative to the current folder, a subfolder naming its repository.
  run = ctl({"memory", "list", "--repo", "src"}, repo_);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, linker_id_)) << run.out;
  EXPECT_TRUE(contains(run.out, user_id_)) << run.out;
  EXPECT_FALSE(contains(run.out, other_id_)) << run.out;

  run = ctl({"--json", "memory", "list", "--limit", "2"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out)["notes"].size(), 2u) << run.out;

  run = ctl({"memory", "search", "linker memory"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out.rfind(linker_id_ + "  score ", 0), 0u) << run.out;
  EXPECT_TRUE(contains(run.out, "**linker**")) << run.out;
  EXPECT_FALSE(contains(run.out, other_id_)) << run.out;

  run = ctl({"memory", "search", "zebra", "--repo", ".", "--conversation"}, linked_);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "no notes match among the notes of " + repo_ + " and your own\n");

  run = ctl({"memory", "show", linker_id_});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "repo:     " + repo_ + "\n")) << run.out;
  EXPECT_TRUE(contains(run.out, "tags:     build\n")) << run.out;
  EXPECT_TRUE(contains(run.out, "\n" + std::string(kLinkerNote) + "\n")) << run.out;

  run = ctl({"memory", "delete", linker_id_});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "deleted " + linker_id_ + "\n");
  EXPECT_EQ(ids_of(daemon_.call("memory.list")["notes"]),
            (std::set<std::string>{user_id_, other_id_}));

  run = ctl({"memory", "show", linker_id_});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.err, "looprctl: there is no note '" + linker_id_ + "'\n")) << run.err;
  EXPECT_TRUE(contains(run.err, "hint: `looprctl memory list` shows the notes")) << run.err;
  run = ctl({"memory", "delete", linker_id_});
  EXPECT_EQ(run.exit_code, 1) << run.err;

  run = ctl({"memory", "list", "--repo", daemon_.tree().path("work/nowhere")});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.err, "is not a folder")) << run.err;
}

}  // namespace
}  // namespace loopr::test
