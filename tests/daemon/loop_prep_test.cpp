// Worktrees ready to work in (issue 25), end to end through the real looprd,
// lane runners, sandbox and git: [worktrees] include brings an ignored
// node_modules tool into the loop's worktree (the validation needs it), a
// setup command generates a file the tests read, a failing setup ends the
// loop with its output, what a loop writes into an included path (also
// through an absolute symlink) never reaches the user's checkout, and each
// loop of a plan starts from its parent's worktree (an ignored build output
// only the plan's worktree has reaches every code loop).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "tests/daemon/loop_fixture.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// The model's work: answer.txt 41 -> 42, then complete_task.
std::vector<json> fixing_turns() {
  return {
      turn({tool_call("r1", "read_file", {{"path", "answer.txt"}})}, {{"usage", usage(100, 10)}}),
      turn({tool_call("e1", "edit_file",
                      {{"path", "answer.txt"}, {"old_string", "41"}, {"new_string", "42"}})},
           {{"usage", usage(100, 10)}}),
      turn({tool_call("c1", "complete_task", {{"summary", "done"}})}, {{"usage", usage(100, 10)}})};
}

void commit_all(const std::string& repo, const std::string& message) {
  ASSERT_EQ(git(repo, {"add", "-A"}).exit_code, 0);
  const GitOutput committed = git(
      repo, {"-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "-m", message});
  ASSERT_EQ(committed.exit_code, 0) << committed.out;
}

// A Node-style checkout: node_modules/ ignored, its tool an executable script
// reached through node_modules/.bin (a relative symlink).
void add_node_modules(const std::string& repo) {
  write_file(repo + "/.gitignore", "node_modules/\nbuild/\n");
  ASSERT_NO_FATAL_FAILURE(commit_all(repo, "ignore node_modules"));
  ASSERT_EQ(::mkdir((repo + "/node_modules").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((repo + "/node_modules/nyc").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((repo + "/node_modules/.bin").c_str(), 0755), 0);
  write_file(repo + "/node_modules/nyc/cli.sh", "#!/bin/sh\necho nyc-ran\nexec \"$@\"\n");
  ASSERT_EQ(::chmod((repo + "/node_modules/nyc/cli.sh").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("../nyc/cli.sh", (repo + "/node_modules/.bin/nyc").c_str()), 0);
}

constexpr const char* kNodeValidate = "PATH=\"$PWD/node_modules/.bin:$PATH\" nyc sh test.sh";

class LoopPrepTest : public ::testing::Test {
 protected:
  void start(const std::string& worktrees_toml) {
    daemon_ = start_scripted_looprd(scripts_, {{"scripted", fixing_turns()}},
                                    "\n[worktrees]\n" + worktrees_toml, repo_);
  }
  json create(json params) { return create_loop(*daemon_, repo_.path, std::move(params)); }

  TempTree scripts_;
  std::unique_ptr<DaemonHarness> daemon_;
  SampleRepo repo_;
};

TEST_F(LoopPrepTest, ANodeToolIsMissingWithoutInclude) {
  start("");
  ASSERT_NO_FATAL_FAILURE(add_node_modules(repo_.path));
  const std::string id = create({{"validate", kNodeValidate}, {"max_iterations", 1}})["id"];
  const json loop = wait_final(*daemon_, id, 60s);
  EXPECT_EQ(loop["status"], "failed") << loop.dump(2);
  const auto validations = steps_of_kind(read_transcript(*daemon_, id), "validation");
  ASSERT_EQ(validations.size(), 1u);
  EXPECT_EQ(validations[0]["data"]["exit_code"], 127) << validations[0].dump(2);
}

TEST_F(LoopPrepTest, ANodeToolPassesWithInclude) {
  start("include = [\"node_modules\"]\n");
  ASSERT_NO_FATAL_FAILURE(add_node_modules(repo_.path));
  const std::string id = create({{"validate", kNodeValidate}, {"max_iterations", 1}})["id"];
  const json loop = wait_final(*daemon_, id, 60s);
  ASSERT_EQ(loop["status"], "completed") << loop.dump(2);
  const auto steps = read_transcript(*daemon_, id);
  const auto prepared = steps_of_kind(steps, "worktree_prepared");
  ASSERT_EQ(prepared.size(), 1u);
  const json include = prepared[0]["data"]["include"];
  EXPECT_EQ(include["entries"], json::array({"node_modules"})) << include.dump(2);
  EXPECT_EQ(include["files"], 1);
  EXPECT_EQ(include["symlinks"], 1);
  const auto validations = steps_of_kind(steps, "validation");
  ASSERT_EQ(validations.size(), 1u);
  EXPECT_NE(validations[0]["data"]["output"].get<std::string>().find("nyc-ran"), std::string::npos);
  // node_modules is never committed.
  const GitOutput tree = git(repo_.path, {"ls-tree", "-r", "--name-only", "loop/" + id});
  EXPECT_EQ(tree.out.find("node_modules"), std::string::npos) << tree.out;
}

TEST_F(LoopPrepTest, SetupGeneratesAFileTheTestsRead) {
  start("setup = \"echo 42 > generated.txt && echo setup-done\"\n");
  const std::string id = create({{"validate", "test \"$(cat generated.txt)\" = 42 && sh test.sh"},
                                 {"max_iterations", 1}})["id"];
  const json loop = wait_final(*daemon_, id, 60s);
  ASSERT_EQ(loop["status"], "completed") << loop.dump(2);
  const auto steps = read_transcript(*daemon_, id);
  const auto setups = steps_of_kind(steps, "setup");
  ASSERT_EQ(setups.size(), 1u);
  EXPECT_EQ(setups[0]["data"]["passed"], true);
  EXPECT_NE(setups[0]["data"]["output"].get<std::string>().find("setup-done"), std::string::npos);
  // Before the first iteration, once.
  std::size_t setup_at = 0, first_iteration = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i]["kind"] == "setup") setup_at = i;
    if (steps[i]["kind"] == "iteration_started" && first_iteration == 0) first_iteration = i;
  }
  EXPECT_LT(setup_at, first_iteration);
  // The generated file is the daemon's, not the model's: never committed.
  const GitOutput tree = git(repo_.path, {"ls-tree", "-r", "--name-only", "loop/" + id});
  EXPECT_EQ(tree.out.find("generated.txt"), std::string::npos) << tree.out;
}

TEST_F(LoopPrepTest, AFailingSetupEndsTheLoopWithItsOutput) {
  start("setup = \"echo cannot-install-deps >&2; exit 3\"\n");
  const std::string id = create({{"validate", "sh test.sh"}, {"max_iterations", 2}})["id"];
  const json loop = wait_final(*daemon_, id, 60s);
  ASSERT_EQ(loop["status"], "failed") << loop.dump(2);
  EXPECT_NE(loop.dump().find("cannot-install-deps"), std::string::npos) << loop.dump(2);
  EXPECT_NE(loop.dump().find("exit 3"), std::string::npos) << loop.dump(2);
  const auto steps = read_transcript(*daemon_, id);
  EXPECT_TRUE(steps_of_kind(steps, "iteration_started").empty());
  EXPECT_EQ(steps_of_kind(steps, "setup").size(), 1u);
}

TEST_F(LoopPrepTest, WritesIntoAnIncludedPathNeverReachTheCheckout) {
  start("include = [\"build\"]\n");
  write_file(repo_.path + "/.gitignore", "build/\n");
  ASSERT_NO_FATAL_FAILURE(commit_all(repo_.path, "ignore build"));
  ASSERT_EQ(::mkdir((repo_.path + "/build").c_str(), 0755), 0);
  write_file(repo_.path + "/build/out.txt", "orig\n");
  ASSERT_EQ(::symlink((repo_.path + "/build/out.txt").c_str(), (repo_.path + "/build/abs").c_str()),
            0);
  const std::string id = create(
      {{"validate", "echo changed > build/out.txt && echo through-link >> build/abs && sh test.sh"},
       {"max_iterations", 1}})["id"];
  const json loop = wait_final(*daemon_, id, 60s);
  ASSERT_EQ(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(read_bytes(repo_.path + "/build/out.txt"), "orig\n");
  const std::string worktree = loop["worktree"];
  EXPECT_EQ(read_bytes(worktree + "/build/out.txt"), "changed\nthrough-link\n");
  char target[4096];
  const ssize_t n = ::readlink((worktree + "/build/abs").c_str(), target, sizeof target);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(target, static_cast<std::size_t>(n)), worktree + "/build/out.txt");
}

// Preparation happens once per worktree: looprd SIGKILLed right after it
// (the loop's iteration under way) does not run the setup again.
TEST_F(LoopPrepTest, ARestartDoesNotPrepareTheWorktreeAgain) {
  start("setup = \"echo ran >> setup-runs.txt\"\n");
  EventLog events(*daemon_, {"loop.step"});
  const std::string id =
      create({{"validate", "test \"$(wc -l < setup-runs.txt)\" -eq 1 && sh test.sh"},
              {"max_iterations", 1}})["id"];
  ASSERT_TRUE(events.wait_for(step_event(id, "worktree_prepared"), 60s));
  const int status = daemon_->stop(9);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == 9) << "status " << status;
  daemon_->start();
  const json loop = wait_final(*daemon_, id, 60s);
  ASSERT_EQ(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(read_bytes(loop["worktree"].get<std::string>() + "/setup-runs.txt"), "ran\n");
  EXPECT_EQ(steps_of_kind(read_transcript(*daemon_, id), "setup").size(), 1u);
}

// ---- a plan: each loop starts from its parent's worktree --------------------------

json keyed(const std::string& loop, json line) {
  line["loop"] = loop;
  return line;
}

// A plan of one spec with three phases, each phase's code loop writing
// notes/<phase>.txt; every validation needs build/from-plan.txt, an ignored
// file that exists only in the plan's own worktree.
std::vector<json> one_spec_plan() {
  std::vector<json> lines;
  lines.push_back(keyed(
      "p1", turn({tool_call("cp", "create_plan",
                            {{"title", "Notes"},
                             {"overview", "Write notes."},
                             {"specs", json::array({{{"name", "notes"},
                                                     {"title", "Spec notes"},
                                                     {"description", "All notes."},
                                                     {"dependencies", json::array()}}})}})})));
  const std::vector<std::string> phases = {"one", "two", "three"};
  json list = json::array();
  for (const auto& phase : phases)
    list.push_back({{"name", phase}, {"title", "Phase " + phase}, {"description", "Do " + phase}});
  lines.push_back(keyed("p1-s1", turn({tool_call("cs", "create_spec",
                                                 {{"name", "notes"},
                                                  {"title", "Spec notes"},
                                                  {"overview", "Phases of notes"},
                                                  {"phases", list}})})));
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const std::string phase_id = "p1-s1-ph" + std::to_string(i + 1);
    const std::string file = "notes/" + phases[i] + ".txt";
    const std::string check =
        "test -f build/from-plan.txt && test -f build/out.txt && test -f " + file;
    lines.push_back(
        keyed(phase_id, turn({tool_call("cph", "create_phase",
                                        {{"name", phases[i]},
                                         {"title", "Phase " + phases[i]},
                                         {"objective", "Write " + file},
                                         {"tasks", json::array({{{"description", "write " + file},
                                                                 {"file", file},
                                                                 {"action", "create"}}})},
                                         {"validation_command", check}})})));
    lines.push_back(
        keyed(phase_id + "-c1",
              turn({tool_call("w", "write_file", {{"path", file}, {"content", phases[i] + "\n"}}),
                    tool_call("d", "complete_task", {{"summary", "wrote " + file}})})));
  }
  return lines;
}

TEST_F(LoopPrepTest, EachLoopOfAPlanStartsFromItsParentsWorktreeBuildOutputsIncluded) {
  const std::string path = scripts_.path("plan.jsonl");
  write_session(path, one_spec_plan());
  DaemonOptions options;
  options.extra_toml =
      scripted_toml({{"scripted", path, 0}}) + "\n[worktrees]\ninclude = [\"build\"]\n";
  daemon_ = std::make_unique<DaemonHarness>(options);
  repo_ = make_sample_repo(daemon_->worktree());
  write_file(repo_.path + "/.gitignore", "build/\n");
  ASSERT_NO_FATAL_FAILURE(commit_all(repo_.path, "ignore build"));
  ASSERT_EQ(::mkdir((repo_.path + "/build").c_str(), 0755), 0);
  write_file(repo_.path + "/build/out.txt", "built in the checkout\n");
  daemon_->start();

  const json created =
      daemon_->call("loop.create_plan", {{"description", "Write notes"}, {"repo", repo_.path}});
  const std::string id = created["loop"]["id"];
  const json waiting = wait_status(*daemon_, id, [](const std::string& status) {
    return status == "awaiting_approval" || is_final_status(status);
  });
  ASSERT_EQ(waiting["status"], "awaiting_approval") << waiting.dump(2);
  // Only the plan's worktree has this one: its children can get it from
  // their parents' worktrees only.
  const std::string plan_worktree = waiting["worktree"];
  write_file(plan_worktree + "/build/from-plan.txt", "the plan's build output\n");
  daemon_->call("plan.approve", {{"id", id}});
  const json done = wait_final(*daemon_, id, 180s);
  ASSERT_EQ(done["status"], "completed") << done.dump(2);
  for (const std::string loop : {"p1-s1", "p1-s1-ph1", "p1-s1-ph1-c1", "p1-s1-ph3-c1"}) {
    const auto prepared = steps_of_kind(read_transcript(*daemon_, loop), "worktree_prepared");
    ASSERT_EQ(prepared.size(), 1u) << loop;
    const json include = prepared[0]["data"]["include"];
    EXPECT_NE(include["source"].get<std::string>().find(".loopr-worktrees"), std::string::npos)
        << loop << ": " << include.dump(2);
    EXPECT_EQ(
        file_text(get_loop(*daemon_, loop)["worktree"].get<std::string>() + "/build/from-plan.txt"),
        "the plan's build output\n")
        << loop;
  }
  // The checkout's build folder is as it was.
  EXPECT_EQ(file_text(repo_.path + "/build/out.txt"), "built in the checkout\n");
  struct stat st {};
  EXPECT_NE(::stat((repo_.path + "/build/from-plan.txt").c_str(), &st), 0);
}

}  // namespace
}  // namespace loopr::test
