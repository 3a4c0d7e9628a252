// Loops on real repositories (issue 25), end to end through the real looprd,
// lane runners, sandbox and git:
// - clean commits: what the daemon's validation writes (coverage reports,
//   byte caches, object files, a tracked file it rewrites) is never
//   committed, over two iterations (a wrong fix, then the right one), and a
//   file the model itself writes where a by-product was is committed;
// - the user's uncommitted work: left out and said so, or taken in a
//   snapshot without touching the checkout's branch, index or files;
// - a hanging validation stops at the loop's own time limit and keeps what
//   it printed; a validation that waits for the heavy slot says so, with its
//   place; the cut marker of a long validation counts the whole output;
// - loop.diff's from_branch; a linked worktree as --repo is refused with the
//   command that works.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>

#include "tests/daemon/loop_fixture.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json completing_turn(const std::string& id) {
  return turn({complete_call(id)}, {{"usage", usage(100, 10)}});
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool exists(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

class LoopCheckoutTest : public ::testing::Test {
 protected:
  using Session = ScriptedSession;

  void start(const std::vector<Session>& sessions, const std::string& extra_toml = {},
             const std::string& catalog_toml = {}) {
    daemon_ = start_scripted_looprd(scripts_, sessions, extra_toml, repo_, catalog_toml);
  }

  json create(json params = json::object()) { return create_loop(*daemon_, repo_.path, params); }

  // The error `method` answers (the test fails if it succeeds).
  Error refusal(const std::string& method, json params) {
    auto c = daemon_->client();
    auto result = c.call(method, std::move(params));
    if (result) {
      ADD_FAILURE() << method << " succeeded: " << result->dump();
      return {};
    }
    return result.error();
  }

  TempTree scripts_;
  std::unique_ptr<DaemonHarness> daemon_;
  SampleRepo repo_;
};

// ---- protected files ([validation] protected_paths, issue 27) --------------------

// The model tries to make the validation pass by changing the protected
// test instead of the answer: edit_file and file_delete are refused before
// they run, and the run_command that rewrites test.sh to `exit 0` is put back
// before the model's own validate call and before the commit, so both run
// the real test and fail; iteration 2 fixes answer.txt and passes. The branch never holds a
// change to test.sh.
TEST_F(LoopCheckoutTest, ALoopCannotPassByChangingAProtectedTest) {
  start(
      {{"scripted",
        {turn({tool_call("e1", "edit_file",
                         {{"path", "test.sh"}, {"old_string", "exit 1"}, {"new_string", "exit 0"}}),
               tool_call("d1", "file_delete", {{"path", "./test.sh"}})},
              {{"usage", usage(100, 10)}}),
         turn({tool_call("x1", "run_command",
                         {{"command", "printf 'exit 0\\n' > test.sh && cat test.sh"}})},
              {{"usage", usage(100, 10)}}),
         turn({tool_call("v1", "validate", json::object())}, {{"usage", usage(100, 10)}}),
         completing_turn("c1"), turn({read_call("r2")}, {{"usage", usage(100, 10)}}),
         turn({edit_call("e2")}, {{"usage", usage(100, 10)}}), completing_turn("c2")}}},
      "[validation]\nprotected_paths = [\"test.sh\", \"tests/**\"]\n\n"
      "[loops.code]\ntools = [\"read_file\", \"write_file\", \"edit_file\", "
      "\"file_delete\", \"run_command\", \"validate\", \"complete_task\"]\n");
  const json created = create({{"max_iterations", 3}});
  const std::string id = created["id"];
  const json loop = wait_final(*daemon_, id, 60s);
  ASSERT_EQ(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(loop["iteration"], 2) << "iteration 1 passed only with test.sh changed: it must not";

  const std::vector<json> steps = read_transcript(*daemon_, id);
  // The file tools' refusals name the setting and the pattern.
  const std::vector<json> results = steps_of_kind(steps, "tool_results");
  ASSERT_GE(results.size(), 2u);
  const std::string first_turn = results[0]["data"].dump();
  EXPECT_NE(
      first_turn.find("test.sh is protected by [validation] protected_paths (\\\"test.sh\\\")"),
      std::string::npos)
      << first_turn;
  EXPECT_NE(first_turn.find("protected_path"), std::string::npos) << first_turn;
  // The model's own validate call ran the real test, and said why.
  ASSERT_GE(results.size(), 3u);
  const std::string own_validation = results[2]["data"].dump();
  EXPECT_NE(own_validation.find("FAIL: answer.txt says 41"), std::string::npos) << own_validation;
  EXPECT_NE(own_validation.find("[loopr: loopr put back 1 protected file(s) this iteration "
                                "changed, as the loop's base commit has them: test.sh (modified)"),
            std::string::npos)
      << own_validation;
  // The command ran (the sandbox let it write), and its change was put back.
  const std::vector<json> restored = steps_of_kind(steps, "protected_restored");
  ASSERT_EQ(restored.size(), 1u) << "iteration 2 changed no protected file";
  EXPECT_EQ(restored[0]["data"]["paths"],
            json::array({{{"path", "test.sh"}, {"change", "modified"}}}));
  // Iteration 1's validation ran the real test, and the model was told why.
  const std::vector<json> validations = steps_of_kind(steps, "validation");
  ASSERT_EQ(validations.size(), 2u);
  EXPECT_EQ(validations[0]["data"]["passed"], false) << validations[0].dump(2);
  EXPECT_NE(validations[0]["data"]["output"].get<std::string>().find("FAIL: answer.txt says 41"),
            std::string::npos);
  EXPECT_NE(
      validations[0]["data"]
          .value("protected_note", "")
          .find("loopr put back 1 protected file(s) this iteration changed, as the loop's base "
                "commit has them: test.sh (modified)"),
      std::string::npos)
      << validations[0].dump(2);
  EXPECT_EQ(validations[1]["data"]["passed"], true);

  // Every attempt, in loop.get.
  const json& shown = loop["protected"];
  EXPECT_EQ(shown["paths"], json::array({"test.sh", "tests/**"}));
  EXPECT_EQ(shown["event_count"], 3);
  ASSERT_EQ(shown["events"].size(), 3u) << shown.dump(2);
  EXPECT_EQ(shown["events"][0]["action"], "refused");
  EXPECT_EQ(shown["events"][0]["tool"], "edit_file");
  EXPECT_EQ(shown["events"][1]["tool"], "file_delete");
  EXPECT_EQ(shown["events"][1]["path"], "test.sh");
  EXPECT_EQ(shown["events"][2]["action"], "put back");
  EXPECT_EQ(shown["events"][2]["iteration"], 1);

  // The branch holds the fix and nothing of test.sh, in any commit.
  const std::string branch = "loop/" + id;
  const GitOutput names =
      git(repo_.path, {"log", "--name-only", "--format=", repo_.base_commit + ".." + branch});
  ASSERT_EQ(names.exit_code, 0) << names.out;
  EXPECT_EQ(lines(names.out), (std::vector<std::string>{"answer.txt"})) << names.out;
}

// With only the tampering (test.sh made a link to a script that passes) and
// one iteration, the loop fails: nothing of the protected file's change
// reaches the validation or the branch.
TEST_F(LoopCheckoutTest, TamperingAloneNeverPasses) {
  start({{"scripted",
          {turn({tool_call("x1", "run_command",
                           {{"command",
                             "mkdir -p tests && echo 'exit 0' > tests/pass.sh && rm test.sh && "
                             "ln -s tests/pass.sh test.sh && sh test.sh"}})},
                {{"usage", usage(100, 10)}}),
           completing_turn("c1")}}},
        "[validation]\nprotected_paths = [\"test.sh\", \"tests\"]\n");
  const json created = create({{"max_iterations", 1}});
  const json loop = wait_final(*daemon_, created["id"], 60s);
  EXPECT_NE(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(loop["last_validation"]["passed"], false) << loop.dump(2);
  const std::vector<json> restored =
      steps_of_kind(read_transcript(*daemon_, created["id"]), "protected_restored");
  ASSERT_EQ(restored.size(), 1u);
  EXPECT_EQ(restored[0]["data"]["paths"],
            json::array({{{"path", "tests"}, {"change", "added"}},
                         {{"path", "test.sh"}, {"change", "modified"}}}))
      << "a new folder in a protected place goes whole (new paths first)";
  struct stat info {};
  ASSERT_EQ(::lstat((loop["worktree"].get<std::string>() + "/test.sh").c_str(), &info), 0);
  EXPECT_TRUE(S_ISREG(info.st_mode)) << "the link that passed is a file again";
  EXPECT_FALSE(exists(loop["worktree"].get<std::string>() + "/tests/pass.sh"));
}

// ---- clean commits ---------------------------------------------------------------

// The validation makes a coverage folder, a byte cache, an object file and
// rewrites a tracked file, then runs the tests. Iteration 1's fix is wrong,
// iteration 2's right; iteration 2 also writes coverage/keep.txt itself.
TEST_F(LoopCheckoutTest, WhatTheValidationWritesIsNeverCommitted) {
  start({{"scripted",
          {turn({tool_call("r1", "read_file", {{"path", "answer.txt"}})},
                {{"usage", usage(100, 10)}}),
           turn({edit_call("e1", "41", "40")}, {{"usage", usage(100, 10)}}), completing_turn("c1"),
           turn({tool_call("r2", "read_file", {{"path", "answer.txt"}})},
                {{"usage", usage(100, 10)}}),
           turn({edit_call("e2", "40", "42"),
                 tool_call("w2", "write_file",
                           {{"path", "coverage/keep.txt"}, {"content", "the model's\n"}})},
                {{"usage", usage(100, 10)}}),
           completing_turn("c2")}}});
  const std::string validate =
      "mkdir -p coverage __pycache__ && echo report > coverage/index.html && "
      "echo bytecode > __pycache__/answer.cpython-311.pyc && echo obj > answer.o && "
      "echo regenerated >> docs/notes.md && sh test.sh";
  const json created = create({{"validate", validate}, {"max_iterations", 3}});
  const std::string id = created["id"];
  const json loop = wait_final(*daemon_, id);
  ASSERT_EQ(loop["status"], "completed") << loop.dump(2);
  ASSERT_EQ(loop["iteration"], 2);

  // The branch holds the model's work and nothing else.
  const std::string branch = "loop/" + id;
  const GitOutput names = git(repo_.path, {"diff", "--name-only", repo_.base_commit, branch, "--"});
  ASSERT_EQ(names.exit_code, 0) << names.out;
  EXPECT_EQ(lines(names.out), (std::vector<std::string>{"answer.txt", "coverage/keep.txt"}))
      << names.out;
  for (const std::string& commit : {branch + "~1", branch}) {
    const GitOutput tree = git(repo_.path, {"ls-tree", "-r", "--name-only", commit});
    EXPECT_EQ(tree.out.find("__pycache__"), std::string::npos) << commit << "\n" << tree.out;
    EXPECT_EQ(tree.out.find("answer.o"), std::string::npos) << commit << "\n" << tree.out;
    EXPECT_EQ(tree.out.find("coverage/index.html"), std::string::npos) << commit << "\n"
                                                                       << tree.out;
  }
  EXPECT_EQ(git(repo_.path, {"show", branch + ":docs/notes.md"}).out,
            "# Notes\n\nanswer: see test.sh\n");

  // The worktree keeps the untracked by-products (builds stay warm) and has
  // the tracked file back as committed.
  const std::string worktree = loop["worktree"];
  EXPECT_TRUE(exists(worktree + "/answer.o"));
  EXPECT_TRUE(exists(worktree + "/coverage/index.html"));
  EXPECT_EQ(read_bytes(worktree + "/docs/notes.md"), "# Notes\n\nanswer: see test.sh\n");

  // The journal says what was kept out and put back.
  const auto steps = read_transcript(*daemon_, id);
  const auto validations = steps_of_kind(steps, "validation");
  ASSERT_EQ(validations.size(), 2u);
  const json& first = validations[0]["data"]["by_products"];
  ASSERT_TRUE(first.is_object()) << validations[0].dump(2);
  std::vector<std::string> kept = first["kept_out"];
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<std::string>{"__pycache__/", "answer.o", "coverage/"}));
  EXPECT_EQ(first["restored"], json::array({"docs/notes.md"}));
  const json& second = validations[1]["data"]["by_products"];
  ASSERT_TRUE(second.is_object()) << validations[1].dump(2);
  EXPECT_EQ(second["kept_out"], json::array());  // known already
  EXPECT_EQ(second["restored"], json::array({"docs/notes.md"}));
  const auto commits = steps_of_kind(steps, "committed");
  ASSERT_EQ(commits.size(), 2u);
  EXPECT_FALSE(commits[0]["data"].contains("left_out")) << commits[0].dump();
  EXPECT_EQ(commits[1]["data"]["left_out_count"], 3) << commits[1].dump();
}

// ---- the user's uncommitted work ----------------------------------------------

class UncommittedTest : public LoopCheckoutTest {
 protected:
  // answer.txt fixed but not committed, a staged change and an untracked file.
  void dirty_the_checkout() {
    write_file(repo_.path + "/answer.txt", "42\n");
    write_file(repo_.path + "/docs/guide.md", "# Guide\n\nstaged\n");
    ASSERT_EQ(git(repo_.path, {"add", "docs/guide.md"}).exit_code, 0);
    write_file(repo_.path + "/extra.txt", "untracked\n");
    status_before_ = git(repo_.path, {"status", "--porcelain"}).out;
    index_before_ = read_bytes(repo_.path + "/.git/index");
    head_before_ = read_bytes(repo_.path + "/.git/HEAD");
  }
  void expect_checkout_untouched() {
    EXPECT_EQ(git(repo_.path, {"status", "--porcelain"}).out, status_before_);
    EXPECT_EQ(read_bytes(repo_.path + "/.git/index"), index_before_);
    EXPECT_EQ(read_bytes(repo_.path + "/.git/HEAD"), head_before_);
    EXPECT_EQ(git(repo_.path, {"rev-parse", "HEAD"}).out, repo_.base_commit + "\n");
    EXPECT_EQ(read_bytes(repo_.path + "/answer.txt"), "42\n");
    EXPECT_EQ(read_bytes(repo_.path + "/extra.txt"), "untracked\n");
  }
  std::string status_before_, index_before_, head_before_;
};

TEST_F(UncommittedTest, WithoutTheFlagTheLoopStartsFromHeadAndSaysWhatItLeavesOut) {
  start({{"scripted", {completing_turn("c1")}}});
  dirty_the_checkout();
  const json created = create({{"max_iterations", 1}});
  EXPECT_EQ(created["base_commit"], repo_.base_commit);
  EXPECT_EQ(created["uncommitted"]["included"], false);
  EXPECT_EQ(created["uncommitted"]["paths"],
            json::array({"answer.txt", "docs/guide.md", "extra.txt"}));
  const json loop = wait_final(*daemon_, created["id"]);
  // The fix was not in the worktree: the validation failed on HEAD's 41.
  EXPECT_EQ(loop["status"], "failed") << loop.dump(2);
  EXPECT_FALSE(exists(loop["worktree"].get<std::string>() + "/extra.txt"));
  expect_checkout_untouched();
}

TEST_F(UncommittedTest, IncludeUncommittedStartsFromASnapshotAndLeavesTheCheckoutAlone) {
  start({{"scripted", {completing_turn("c1")}}});
  dirty_the_checkout();
  const json created = create({{"max_iterations", 1}, {"include_uncommitted", true}});
  const std::string base = created["base_commit"];
  EXPECT_NE(base, repo_.base_commit);
  EXPECT_EQ(git(repo_.path, {"rev-parse", base + "^"}).out, repo_.base_commit + "\n");
  EXPECT_EQ(created["uncommitted"]["included"], true);
  const json loop = wait_final(*daemon_, created["id"]);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
  const std::string worktree = loop["worktree"];
  EXPECT_EQ(read_bytes(worktree + "/extra.txt"), "untracked\n");
  EXPECT_EQ(read_bytes(worktree + "/docs/guide.md"), "# Guide\n\nstaged\n");
  expect_checkout_untouched();
  // loop.diff: from the user's branch, with the snapshot as its base.
  const json diff = daemon_->call("loop.diff", {{"id", created["id"]}, {"stat_only", true}});
  EXPECT_EQ(diff["from_branch"], "main") << diff.dump();
  EXPECT_EQ(diff["include_uncommitted"], true);

  // It starts from the checkout as it is: a base cannot go with it.
  const Error refused = refusal("loop.create", {{"type", "code"},
                                                {"task", kSampleTask},
                                                {"repo", repo_.path},
                                                {"validate", "true"},
                                                {"base", "main"},
                                                {"include_uncommitted", true}});
  EXPECT_NE(refused.message.find("include_uncommitted"), std::string::npos) << refused.message;
}

TEST_F(LoopCheckoutTest, LoopDiffNamesTheBranchTheLoopStartedFrom) {
  start({{"scripted", {completing_turn("c1")}}});
  const json created = create({{"max_iterations", 1}});
  wait_final(*daemon_, created["id"]);
  const json diff = daemon_->call("loop.diff", {{"id", created["id"]}, {"stat_only", true}});
  EXPECT_EQ(diff["from_branch"], "main") << diff.dump();
}

TEST_F(LoopCheckoutTest, ALinkedWorktreeAsTheRepositoryIsRefusedWithTheCommandThatWorks) {
  start({{"scripted", {completing_turn("c1")}}});
  const std::string linked = daemon_->worktree() + "/linked";
  ASSERT_EQ(git(repo_.path, {"worktree", "add", "-q", "-b", "feature", linked}).exit_code, 0);
  const Error refused =
      refusal("loop.create",
              {{"type", "code"}, {"task", kSampleTask}, {"repo", linked}, {"validate", "true"}});
  EXPECT_NE(refused.message.find("linked worktree of " + repo_.path), std::string::npos)
      << refused.message;
  EXPECT_NE(refused.message.find("branch feature"), std::string::npos) << refused.message;
  EXPECT_NE(refused.hint.find("--repo " + repo_.path + " --base feature"), std::string::npos)
      << refused.hint;
}

// ---- validations that cannot hold everything up ----------------------------------

TEST_F(LoopCheckoutTest, AHangingValidationStopsAtTheLoopsLimitAndKeepsWhatItPrinted) {
  start({{"scripted", {completing_turn("c1")}}});
  const json created = create({{"validate", "echo before-the-hang; sleep 600"},
                               {"validate_timeout_s", 2},
                               {"max_iterations", 1}});
  const json loop = wait_final(*daemon_, created["id"], 60s);
  EXPECT_EQ(loop["status"], "failed") << loop.dump(2);
  const std::string output = loop["last_validation"]["output"];
  EXPECT_NE(output.find("before-the-hang"), std::string::npos) << output;
  EXPECT_NE(output.find("--validate-timeout 2"), std::string::npos) << output;
  EXPECT_EQ(loop["last_validation"]["passed"], false);

  const Error bad = refusal("loop.create", {{"type", "code"},
                                            {"task", kSampleTask},
                                            {"repo", repo_.path},
                                            {"validate", "true"},
                                            {"validate_timeout_s", 0}});
  EXPECT_NE(bad.message.find("validate_timeout_s"), std::string::npos) << bad.message;

  // Above the validate tool's own limit (catalog.toml's timeout_ms): refused
  // with that limit, not silently cut to it.
  const Error above = refusal("loop.create", {{"type", "code"},
                                              {"task", kSampleTask},
                                              {"repo", repo_.path},
                                              {"validate", "true"},
                                              {"validate_timeout_s", 86400}});
  EXPECT_NE(above.message.find("above the validate tool's own limit"), std::string::npos)
      << above.message;
  EXPECT_NE(above.hint.find("[tools.validate]"), std::string::npos) << above.hint;
}

// The loops' own validation runs on the tool whose command trait is
// validate, whatever its name: with the built-in validate turned off and
// run_command_isolated given that trait (and the arguments validate takes:
// none), the validation runs there, and a validate_timeout_s above its limit
// names it.
TEST_F(LoopCheckoutTest, TheValidationRunsOnTheToolWithTheValidateTraitWhateverItsName) {
  start({{"scripted", {completing_turn("c1")}}}, {},
        "[tools.validate]\nenabled = false\n\n"
        "[tools.run_command_isolated]\ncommand = \"validate\"\ntimeout_ms = 120000\n"
        "input_schema = '{\"type\": \"object\", \"properties\": {}, "
        "\"additionalProperties\": false}'\n");
  const json created = create({{"validate", "echo validated-by-trait"}, {"max_iterations", 1}});
  const json loop = wait_final(*daemon_, created["id"], 60s);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(loop["last_validation"]["passed"], true) << loop.dump(2);
  const std::string output = loop["last_validation"].value("output", "");
  EXPECT_NE(output.find("validated-by-trait"), std::string::npos) << output;

  const Error above = refusal("loop.create", {{"type", "code"},
                                              {"task", kSampleTask},
                                              {"repo", repo_.path},
                                              {"validate", "true"},
                                              {"validate_timeout_s", 600}});
  EXPECT_NE(above.message.find("above the run_command_isolated tool's own limit of 120 s"),
            std::string::npos)
      << above.message;
  EXPECT_NE(above.hint.find("[tools.run_command_isolated]"), std::string::npos) << above.hint;
}

// With no enabled tool that validates, the loop's validation cannot run,
// and the loop says why instead of passing it.
TEST_F(LoopCheckoutTest, WithNoToolThatValidatesTheValidationCannotRunAndSaysWhy) {
  start({{"scripted", {completing_turn("c1")}}}, {}, "[tools.validate]\nenabled = false\n");
  const json created = create({{"validate", "true"}, {"max_iterations", 1}});
  const json loop = wait_final(*daemon_, created["id"], 60s);
  EXPECT_NE(loop["status"], "completed") << loop.dump(2);
  EXPECT_NE(loop.dump().find("no enabled tool runs the loop's validation command"),
            std::string::npos)
      << loop.dump(2);
}

// A validation whose connection the egress proxy refuses: the proxy's
// reason, with the key that would allow the host, follows the command's
// output in what the loop keeps and what the next iteration is told.
TEST_F(LoopCheckoutTest, AValidationsRefusedConnectionSaysWhichRuleAndKey) {
  start({{"scripted", {completing_turn("c1")}}},
        "[egress.lanes.heavy]\ndeny_domains = [\"blocked.example\"]\n");
  const json created =
      create({{"validate", "curl -sS https://blocked.example/ || exit 3"}, {"max_iterations", 1}});
  const json loop = wait_final(*daemon_, created["id"], 60s);
  EXPECT_EQ(loop["last_validation"]["passed"], false) << loop.dump(2);
  const std::string output = loop["last_validation"]["output"];
  EXPECT_NE(output.find("403"), std::string::npos) << output;  // all curl knows
  EXPECT_NE(output.find("[loopr: loopr's egress proxy refused blocked.example:443"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("[egress.lanes.heavy] deny_domains"), std::string::npos) << output;
}

// Loop A's validation holds the heavy lane's one slot until the test lets
// it go; loop B's validation waits, and says so with its place.
TEST_F(LoopCheckoutTest, AValidationWaitingForTheHeavySlotShowsItsPlace) {
  start({{"a", {completing_turn("a1")}}, {"b", {completing_turn("b1")}}});
  const json a = create(
      {{"provider", "a"},
       {"validate", "echo x > held; while [ ! -e release ]; do sleep 0.05; done; sh test.sh"},
       {"max_iterations", 1}});
  const std::string a_worktree = a["worktree"];
  ASSERT_TRUE(wait_for_file(a_worktree + "/held", 30s));

  EventLog events(*daemon_, {"tool"});
  const json b = create({{"provider", "b"}, {"max_iterations", 1}});
  const std::string b_id = b["id"];
  const auto queued = events.wait_for([&](const proto::Event& event) {
    return event.event == "tool.queued" && event.data.value("loop_id", "") == b_id;
  });
  ASSERT_TRUE(queued) << "no tool.queued for " << b_id;
  const json& data = events.events()[*queued].data;
  EXPECT_EQ(data["tool"], "validate");
  EXPECT_EQ(data["lane"], "heavy");
  EXPECT_EQ(data["ahead"], 0);
  EXPECT_EQ(data["slots"], 1);
  EXPECT_EQ(data["running"], 1);
  const json waiting = get_loop(*daemon_, b_id);
  ASSERT_TRUE(waiting["validating"].is_object()) << waiting.dump(2);
  EXPECT_EQ(waiting["validating"]["waiting"]["lane"], "heavy") << waiting.dump(2);
  EXPECT_EQ(waiting["validating"]["waiting"]["ahead"], 0);

  write_file(a_worktree + "/release", "");
  EXPECT_EQ(wait_final(*daemon_, a["id"])["status"], "failed");  // 41: the test fails
  const json b_loop = wait_final(*daemon_, b_id);
  EXPECT_EQ(b_loop["status"], "failed");
  EXPECT_FALSE(b_loop.contains("validating"));
}

TEST_F(LoopCheckoutTest, TheCutMarkerOfALongValidationCountsTheWholeOutput) {
  start({{"scripted", {completing_turn("c1")}}});
  // 200,000 lines of 10 bytes: 2,000,000 bytes, far past the tool's cap.
  const json created = create(
      {{"validate", "i=0; while [ $i -lt 200000 ]; do echo 123456789; i=$((i+1)); done; exit 1"},
       {"max_iterations", 1}});
  const json loop = wait_final(*daemon_, created["id"], 120s);
  const std::string output = loop["last_validation"]["output"];
  EXPECT_NE(output.find(" bytes cut (2000000 in all) ...]"), std::string::npos)
      << output.substr(3900, 300);
}

}  // namespace
}  // namespace loopr::test
