// Plans end to end (docs/control-protocol.md "Plans"): the real looprd with
// its lane runners, real git, and one scripted session playing the model of
// every loop of the tree (each line keyed by its loop's id). Each test names
// the behaviour it proves and checks it through plan.get, loop.get, the
// journal, events and git.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "tests/cluster/cluster_fixture.hpp"
#include "tests/daemon/loop_fixture.hpp"
#include "tests/support/scripted_http_server.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json keyed(const std::string& loop, json line) {
  line["loop"] = loop;
  return line;
}

json plan_spec(const std::string& name, std::vector<std::string> dependencies = {}) {
  return {{"name", name},
          {"title", "Spec " + name},
          {"description", "Everything " + name + " needs."},
          {"dependencies", dependencies}};
}

json create_plan_turn(const std::vector<json>& specs,
                      const std::string& title = "Answer and notes") {
  return turn({tool_call(
      "cp", "create_plan",
      {{"title", title}, {"overview", "Fix the answer, then write notes."}, {"specs", specs}})});
}

json create_spec_turn(const std::string& name, const std::vector<std::string>& phases) {
  json list = json::array();
  for (const auto& phase : phases)
    list.push_back({{"name", phase}, {"title", "Phase " + phase}, {"description", "Do " + phase}});
  return turn({tool_call("cs", "create_spec",
                         {{"name", name},
                          {"title", "Spec " + name},
                          {"overview", "Phases of " + name},
                          {"phases", list}})});
}

json create_phase_turn(const std::string& name, const std::string& file,
                       const std::string& validation) {
  return turn({tool_call(
      "cph", "create_phase",
      {{"name", name},
       {"title", "Phase " + name},
       {"objective", "Write " + file},
       {"tasks",
        json::array({{{"description", "write " + file}, {"file", file}, {"action", "create"}}})},
       {"validation_command", validation}})});
}

json write_and_complete_turn(const std::string& file, const std::string& content) {
  return turn({tool_call("w", "write_file", {{"path", file}, {"content", content}}),
               tool_call("d", "complete_task", {{"summary", "wrote " + file}})});
}

// The lines of one spec's subtree: the spec, its three phases, and each
// phase's code loop writing `<dir>/<phase>.txt` (validation: the file exists,
// plus `extra_check`).
void add_spec_tree(std::vector<json>& lines, const std::string& spec_id, const std::string& name,
                   const std::string& dir, const std::string& extra_check = {}) {
  const std::vector<std::string> phases = {name + "-one", name + "-two", name + "-three"};
  lines.push_back(keyed(spec_id, create_spec_turn(name, phases)));
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const std::string phase_id = spec_id + "-ph" + std::to_string(i + 1);
    const std::string file = dir + "/" + phases[i] + ".txt";
    std::string check = "test -f " + file;
    if (!extra_check.empty()) check += " && " + extra_check;
    lines.push_back(keyed(phase_id, create_phase_turn(phases[i], file, check)));
    lines.push_back(keyed(phase_id + "-c1", write_and_complete_turn(file, phases[i] + "\n")));
  }
}

class PlanTest : public ::testing::Test {
 protected:
  void start(const std::vector<json>& lines, const std::string& extra_toml = {}) {
    const std::string path = scripts_.path("plan.jsonl");
    write_session(path, lines);
    DaemonOptions options;
    options.extra_toml = scripted_toml({{"scripted", path, 0}}) + extra_toml;
    daemon_ = std::make_unique<DaemonHarness>(options);
    repo_ = make_sample_repo(daemon_->worktree());
    daemon_->start();
  }

  json create_plan(json params = json::object()) {
    json request = {{"description", "Fix the answer and write notes"}, {"repo", repo_.path}};
    for (const auto& [key, value] : params.items())
      request[key] = value;
    json result = daemon_->call("loop.create_plan", request);
    EXPECT_TRUE(result.contains("loop")) << result.dump();
    return result.value("loop", json::object());
  }

  json wait_awaiting(const std::string& id) {
    return wait_status(*daemon_, id, [](const std::string& status) {
      return status == "awaiting_approval" || is_final_status(status);
    });
  }

  json plan_get(const std::string& id) { return daemon_->call("plan.get", {{"id", id}}); }

  // Approves plan `id` and returns once `loop` of its tree is running.
  void approve_until_running(const std::string& id, const std::string& loop) {
    EventLog events(*daemon_, {"loop.updated"});
    daemon_->call("plan.approve", {{"id", id}});
    ASSERT_TRUE(events.wait_for(status_event(loop, "running"), 60s)) << loop;
  }

  std::map<std::string, json> tree_by_id(const std::string& id) {
    std::map<std::string, json> out;
    const json plan = plan_get(id);  // kept: a range-for over a temporary's member dangles
    for (const json& loop : plan["tree"])
      out[loop["id"]] = loop;
    return out;
  }

  std::string show(const std::string& branch, const std::string& file) {
    return git(repo_.path, {"show", branch + ":" + file}).out;
  }

  void kill_and_restart() {
    const int status = daemon_->stop(9);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == 9) << "status " << status;
    daemon_->start();
  }

  TempTree scripts_;
  std::unique_ptr<DaemonHarness> daemon_;
  SampleRepo repo_;
};

// The plan of most tests: spec "answer" fixes answer.txt, spec "notes"
// depends on it (its validations check answer.txt holds 42, so it must start
// from a branch that has the answer merged).
std::vector<json> two_spec_plan() {
  std::vector<json> lines;
  lines.push_back(
      keyed("p1", create_plan_turn({plan_spec("answer"), plan_spec("notes", {"answer"})})));
  // Spec "answer": its first phase's code loop edits answer.txt.
  lines.push_back(keyed("p1-s1", create_spec_turn("answer", {"fix", "note-a", "note-b"})));
  lines.push_back(keyed("p1-s1-ph1", create_phase_turn("fix", "answer.txt", "sh test.sh")));
  lines.push_back(
      keyed("p1-s1-ph1-c1", turn({tool_call("r", "read_file", {{"path", "answer.txt"}})})));
  lines.push_back(
      keyed("p1-s1-ph1-c1",
            turn({tool_call("e", "edit_file",
                            {{"path", "answer.txt"}, {"old_string", "41"}, {"new_string", "42"}}),
                  tool_call("d", "complete_task", {{"summary", "42"}})})));
  lines.push_back(
      keyed("p1-s1-ph2", create_phase_turn("note-a", "notes/a.txt", "test -f notes/a.txt")));
  lines.push_back(keyed("p1-s1-ph2-c1", write_and_complete_turn("notes/a.txt", "a\n")));
  lines.push_back(keyed(
      "p1-s1-ph3",
      create_phase_turn("note-b", "notes/b.txt", "test -f notes/b.txt && test -f notes/a.txt")));
  lines.push_back(keyed("p1-s1-ph3-c1", write_and_complete_turn("notes/b.txt", "b\n")));
  add_spec_tree(lines, "p1-s2", "notes", "notes", "grep -qx 42 answer.txt");
  return lines;
}

// ---- the whole plan ------------------------------------------------------------------

TEST_F(PlanTest, AWholePlanRunsThroughSpecsPhasesAndCodeLoopsAndItsBranchHoldsEverything) {
  start(two_spec_plan(), "[scheduler]\nmax_running = 2\n");
  const json created = create_plan();
  const std::string id = created["id"];
  ASSERT_EQ(id, "p1");
  EXPECT_EQ(created["type"], "plan");

  const json waiting = wait_awaiting(id);
  ASSERT_EQ(waiting["status"], "awaiting_approval") << waiting.dump(2);
  json plan = plan_get(id);
  const std::string markdown = plan["markdown"];
  EXPECT_NE(markdown.find("answer"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("notes"), std::string::npos) << markdown;
  EXPECT_EQ(file_text(plan["markdown_path"]), markdown);
  EXPECT_TRUE(plan["tree"].empty()) << "nothing runs before approval";

  EventLog events(*daemon_, {"loop.updated", "loop.merged"});
  const json approved = daemon_->call("plan.approve", {{"id", id}});
  EXPECT_EQ(approved["plan"]["status"], "waiting") << approved.dump();
  const json done = wait_final(*daemon_, id, 180s);
  ASSERT_EQ(done["status"], "completed") << done.dump(2) << "\n" << plan_get(id).dump(2);

  // Every loop of the tree completed and was merged into its parent, with
  // ids that show its place.
  const auto tree = tree_by_id(id);
  const std::set<std::string> expected = {
      "p1-s1",     "p1-s1-ph1",    "p1-s1-ph1-c1", "p1-s1-ph2",   "p1-s1-ph2-c1",
      "p1-s1-ph3", "p1-s1-ph3-c1", "p1-s2",        "p1-s2-ph1",   "p1-s2-ph1-c1",
      "p1-s2-ph2", "p1-s2-ph2-c1", "p1-s2-ph3",    "p1-s2-ph3-c1"};
  std::set<std::string> ids;
  for (const auto& [loop_id, loop] : tree) {
    ids.insert(loop_id);
    EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
    EXPECT_FALSE(loop["merged"].is_null()) << loop_id;
    EXPECT_EQ(loop["plan_id"], "p1");
  }
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(tree.at("p1-s2")["depends_on"], json::array({"p1-s1"}));
  EXPECT_EQ(tree.at("p1-s1-ph2")["parent_id"], "p1-s1");
  EXPECT_EQ(get_loop(*daemon_, "p1")["children"], json::array({"p1-s1", "p1-s2"}));

  // The plan's branch holds the whole result, through merge commits naming
  // the loops; the user's branch is untouched.
  EXPECT_EQ(show("loop/p1", "answer.txt"), "42\n");
  for (const char* file : {"notes/a.txt", "notes/b.txt", "notes/notes-one.txt",
                           "notes/notes-two.txt", "notes/notes-three.txt"}) {
    EXPECT_FALSE(show("loop/p1", file).empty()) << file;
  }
  const std::string log = git(repo_.path, {"log", "--format=%s", "loop/p1"}).out;
  EXPECT_NE(log.find("loopr: merge loop p1-s1 (spec answer) into p1"), std::string::npos) << log;
  EXPECT_NE(log.find("loopr: merge loop p1-s2 (spec notes) into p1"), std::string::npos) << log;
  EXPECT_NE(log.find("loopr: merge loop p1-s1-ph1-c1"), std::string::npos) << log;
  EXPECT_EQ(git(repo_.path, {"rev-list", "--parents", "-n", "1", "loop/p1"}).out.size(), 41u * 3)
      << "the last commit is a merge (two parents)";
  EXPECT_EQ(file_text(repo_.path + "/answer.txt"), "41\n");

  // loop.diff: what a loop's branch changed since it was made from its
  // parent's; a parent's includes what its children merged into it.
  const json code_diff = daemon_->call("loop.diff", {{"id", "p1-s1-ph1-c1"}});
  EXPECT_EQ(code_diff["from_branch"], "loop/p1-s1-ph1") << code_diff.dump(2);
  EXPECT_EQ(code_diff["to"], "loop/p1-s1-ph1-c1");
  const std::string patch = code_diff["diff"];
  EXPECT_NE(patch.find("-41\n+42"), std::string::npos) << patch;
  EXPECT_NE(code_diff["stat"].get<std::string>().find("answer.txt"), std::string::npos);
  const json plan_diff = daemon_->call("loop.diff", {{"id", id}, {"stat_only", true}});
  EXPECT_FALSE(plan_diff.contains("diff")) << plan_diff.dump(2);
  for (const char* file : {"answer.txt", "notes/a.txt", "notes/notes-three.txt"}) {
    EXPECT_NE(plan_diff["stat"].get<std::string>().find(file), std::string::npos)
        << file << " in " << plan_diff.dump(2);
  }
  EXPECT_EQ(rpc_error_code(*daemon_, "loop.diff", {{"id", id}, {"stat_only", "yes"}}), -32602);
  EXPECT_EQ(rpc_error_code(*daemon_, "loop.gc", {{"dry_run", 1}}), -32602);
  EXPECT_EQ(rpc_error_code(*daemon_, "loop.delete", {{"id", id}, {"remove_worktree", "yes"}}),
            -32602);

  // The scheduler's limit held: never more than two loops running at once.
  ASSERT_TRUE(events.wait_for(status_event(id, "completed"), 10s)) << "every event read";
  std::set<std::string> running;
  std::size_t most = 0;
  for (const auto& event : events.events()) {
    if (event.event != "loop.updated") continue;
    const json& loop = event.data["loop"];
    if (loop["status"] == "running") {
      running.insert(loop["id"].get<std::string>());
    } else {
      running.erase(loop["id"].get<std::string>());
    }
    most = std::max(most, running.size());
  }
  EXPECT_LE(most, 2u);
  EXPECT_GE(most, 1u);

  // plan.merge brings it into the user's branch (a fast-forward: main has
  // not moved).
  const json merged = daemon_->call("plan.merge", {{"id", id}});
  EXPECT_EQ(merged["into"], "main") << merged.dump();
  EXPECT_EQ(merged["fast_forward"], true) << merged.dump();
  EXPECT_EQ(show("main", "answer.txt"), "42\n");
}

// ---- artifacts -------------------------------------------------------------------------

TEST_F(PlanTest, InvalidPlansAndSpecsGoBackToTheModelNamingTheRuleAndItCorrectsThem) {
  std::vector<json> eleven;
  for (int i = 1; i <= 11; ++i)
    eleven.push_back(plan_spec("s" + std::to_string(i)));
  std::vector<json> lines = {
      keyed("p1", create_plan_turn(eleven)),
      keyed("p1", create_plan_turn({plan_spec("api"), plan_spec("api")})),
      keyed("p1", create_plan_turn({plan_spec("api", {"db"})})),
      // A fourth malformed call would end the iteration ([loop_health]
      // malformed_call_limit 3): the cycle comes in the next one.
      keyed("p1", create_plan_turn({plan_spec("a", {"b"}), plan_spec("b", {"a"})})),
      keyed("p1", create_plan_turn({plan_spec("answer")})),
      keyed("p1-s1", create_spec_turn("answer", {"a", "b", "c", "d", "e", "f", "g", "h"})),
      keyed("p1-s1", create_spec_turn("answer", {"one", "two", "three"})),
  };
  start(lines);
  const std::string id = create_plan()["id"];
  const json waiting = wait_awaiting(id);
  ASSERT_EQ(waiting["status"], "awaiting_approval") << waiting.dump(2);

  std::vector<std::string> errors;
  for (const json& step : steps_of_kind(read_transcript(*daemon_, id), "tool_results")) {
    for (const json& result : step["data"]["results"])
      if (result["is_error"] == true) errors.push_back(result["content"]);
  }
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_NE(errors[0].find("10"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("unique"), std::string::npos) << errors[1];
  EXPECT_NE(errors[2].find("db"), std::string::npos) << errors[2];
  EXPECT_NE(errors[3].find("cycle"), std::string::npos) << errors[3];
  const json plan = plan_get(id);
  EXPECT_EQ(plan["artifact"]["specs"].size(), 1u);
  EXPECT_EQ(plan["artifact"]["specs"][0]["name"], "answer");

  // The spec loop: eight phases are refused (1 to 7), three accepted.
  EventLog created(*daemon_, {"loop.created"});
  daemon_->call("plan.approve", {{"id", id}});
  const json spec = wait_status(*daemon_, "p1-s1", [](const std::string& status) {
    return status == "waiting" || is_final_status(status);
  });
  EXPECT_EQ(spec["status"], "waiting") << spec.dump(2);
  const auto results = steps_of_kind(read_transcript(*daemon_, "p1-s1"), "tool_results");
  ASSERT_GE(results.size(), 2u);
  const std::string refused = results[0]["data"]["results"][0]["content"];
  EXPECT_NE(refused.find("7"), std::string::npos) << refused;
  EXPECT_EQ(get_loop(*daemon_, "p1-s1")["artifact"]["phases"].size(), 3u);
  // Its children are made once it waits (after its branch's commit is read).
  EXPECT_TRUE(created.wait_for(
      [](const proto::Event& e) { return e.data["loop"].value("id", "") == "p1-s1-ph3"; }, 30s));
  EXPECT_EQ(get_loop(*daemon_, "p1-s1")["children"].size(), 3u);
  daemon_->call("loop.cancel", {{"id", "p1"}});
}

// ---- the plan gate -------------------------------------------------------------------

TEST_F(PlanTest, ARejectedPlanEndsAsRejectedAndStartsNothing) {
  start({keyed("p1", create_plan_turn({plan_spec("answer")}))});
  const std::string id = create_plan()["id"];
  ASSERT_EQ(wait_awaiting(id)["status"], "awaiting_approval");
  EventLog events(*daemon_, {"plan"});
  const json rejected = daemon_->call("plan.reject", {{"id", id}, {"reason", "too broad"}});
  EXPECT_EQ(rejected["plan"]["status"], "rejected") << rejected.dump();
  EXPECT_EQ(rejected["plan"]["status_reason"], "too broad");
  EXPECT_TRUE(events.wait_for([](const proto::Event& e) { return e.event == "plan.rejected"; }));
  EXPECT_TRUE(plan_get(id)["tree"].empty());
  EXPECT_EQ(rpc_error_code(*daemon_, "plan.approve", {{"id", id}}), 1002);
}

// [notify] (issue 27): the webhook hears of the plan at its gate and of its end.
TEST_F(PlanTest, TheWebhookHearsOfThePlanAtItsGateAndOfItsEnd) {
  ScriptedHttpServer webhook([](const RecordedRequest&) { return ScriptedReply::json(200, "ok"); });
  start({keyed("p1", create_plan_turn({plan_spec("answer")}))},
        "[notify]\nwebhook_url = \"" + webhook.base_url() + "/hook\"\n");
  const std::string id = create_plan()["id"];
  ASSERT_EQ(wait_awaiting(id)["status"], "awaiting_approval");
  daemon_->call("plan.reject", {{"id", id}, {"reason", "too broad"}});
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (webhook.requests().size() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  const auto requests = webhook.requests();
  ASSERT_EQ(requests.size(), 2u);
  const json gate = json::parse(requests[0].body);
  EXPECT_EQ(gate["event"], "plan.awaiting_approval");
  EXPECT_EQ(gate["loop_id"], id);
  EXPECT_NE(gate["text"].get<std::string>().find("looprctl plan show " + id), std::string::npos);
  const json ended = json::parse(requests[1].body);
  EXPECT_EQ(ended["event"], "plan.end");
  EXPECT_NE(ended["text"].get<std::string>().find("rejected: too broad"), std::string::npos);
}

TEST_F(PlanTest, IteratingBeforeApprovalRunsThePlanAgainWithTheFeedback) {
  start({keyed("p1", create_plan_turn({plan_spec("answer")})),
         keyed("p1", create_plan_turn({plan_spec("answer"), plan_spec("docs", {"answer"})},
                                      "Answer, then docs"))});
  const std::string id = create_plan()["id"];
  ASSERT_EQ(wait_awaiting(id)["status"], "awaiting_approval");
  EXPECT_EQ(rpc_error_code(*daemon_, "plan.iterate", {{"id", id}}), -32602)
      << "feedback is required";
  const json iterating =
      daemon_->call("plan.iterate", {{"id", id}, {"feedback", "also write the docs"}});
  EXPECT_EQ(iterating["invalidated"], json::array());
  // The new plan waits again; the second iteration's prompt holds the feedback.
  const json again =
      wait_status(*daemon_, id, [](const std::string& status) { return status != "running"; });
  ASSERT_EQ(again["status"], "awaiting_approval") << again.dump(2);
  EXPECT_EQ(plan_get(id)["artifact"]["title"], "Answer, then docs");
  const auto started = steps_of_kind(read_transcript(*daemon_, id), "iteration_started");
  ASSERT_EQ(started.size(), 2u);
  const std::string second = started[1]["data"].dump();
  EXPECT_NE(second.find("also write the docs"), std::string::npos) << second;
}

TEST_F(PlanTest, IteratingAfterApprovalInvalidatesEveryDescendantAndKeepsThem) {
  auto lines = two_spec_plan();
  lines.insert(lines.begin() + 1, keyed("p1", create_plan_turn({plan_spec("other")}, "Second")));
  // Slow the first code loop so the tree is mid-way when the plan is iterated.
  for (json& line : lines)
    if (line["loop"] == "p1-s1-ph1-c1") line["delay_ms"] = 3000;
  start(lines);
  const std::string id = create_plan()["id"];
  ASSERT_EQ(wait_awaiting(id)["status"], "awaiting_approval");
  approve_until_running(id, "p1-s1-ph1-c1");
  const json iterating = daemon_->call("plan.iterate", {{"id", id}, {"feedback", "smaller"}});
  std::set<std::string> invalidated;
  for (const json& loop_id : iterating["invalidated"])
    invalidated.insert(loop_id);
  EXPECT_TRUE(invalidated.count("p1-s1")) << iterating.dump();
  EXPECT_TRUE(invalidated.count("p1-s1-ph1-c1")) << iterating.dump();
  EXPECT_TRUE(invalidated.count("p1-s2")) << iterating.dump();
  const json again =
      wait_status(*daemon_, id, [](const std::string& status) { return status != "running"; });
  ASSERT_EQ(again["status"], "awaiting_approval") << again.dump(2);
  EXPECT_EQ(plan_get(id)["artifact"]["title"], "Second");
  // The old tree is archived, never deleted.
  for (const auto& [loop_id, loop] : tree_by_id(id)) {
    EXPECT_EQ(loop["status"], "invalidated") << loop.dump(2);
  }
  EXPECT_TRUE(branch_exists(repo_.path, "loop/p1-s1"));
  // Approving again makes new children that continue the count.
  daemon_->call("plan.approve", {{"id", id}});
  const json next =
      wait_status(*daemon_, "p1-s3", [](const std::string& status) { return !status.empty(); });
  EXPECT_EQ(next["parent_id"], "p1") << next.dump(2);
  daemon_->call("loop.cancel", {{"id", id}});
}

// ---- re-running one loop of a tree ------------------------------------------------------

TEST_F(PlanTest, ReRunningASpecInvalidatesItsPhasesResetsItsBranchAndItsNewPhasesContinueTheCount) {
  std::vector<json> lines;
  lines.push_back(keyed("p1", create_plan_turn({plan_spec("answer")})));
  lines.push_back(keyed("p1-s1", create_spec_turn("answer", {"old-one", "old-two", "old-three"})));
  lines.push_back(
      keyed("p1-s1-ph1", create_phase_turn("old-one", "old/one.txt", "test -f old/one.txt")));
  lines.push_back(keyed("p1-s1-ph1-c1", write_and_complete_turn("old/one.txt", "one\n")));
  lines.push_back(
      keyed("p1-s1-ph2", create_phase_turn("old-two", "old/two.txt", "test -f old/two.txt")));
  json slow = keyed("p1-s1-ph2-c1", write_and_complete_turn("old/two.txt", "two\n"));
  slow["delay_ms"] = 5000;  // still asking its model when the spec is re-run
  lines.push_back(slow);
  // The re-run's spec: three new phases, named on from the old ones.
  lines.push_back(keyed("p1-s1", create_spec_turn("answer", {"new-one", "new-two", "new-three"})));
  for (int i = 4; i <= 6; ++i) {
    const std::string phase = "p1-s1-ph" + std::to_string(i);
    const std::string file = "new/" + std::to_string(i) + ".txt";
    lines.push_back(keyed(phase, create_phase_turn("new-" + std::to_string(i), file,
                                                   "test -f " + file + " && ! test -e old")));
    lines.push_back(keyed(phase + "-c1", write_and_complete_turn(file, "new\n")));
  }
  start(lines);
  const std::string id = create_plan()["id"];
  ASSERT_EQ(wait_awaiting(id)["status"], "awaiting_approval");
  // The first phase is merged into the spec's branch by now.
  approve_until_running(id, "p1-s1-ph2-c1");
  EXPECT_EQ(show("loop/p1-s1", "old/one.txt"), "one\n");

  EventLog events(*daemon_, {"loop.rerun"});
  const json rerun =
      daemon_->call("loop.rerun", {{"id", "p1-s1"}, {"feedback", "start the phases afresh"}});
  EXPECT_EQ(rerun["loop"]["status"], "running") << rerun.dump(2);
  std::set<std::string> invalidated;
  for (const json& loop_id : rerun["invalidated"])
    invalidated.insert(loop_id);
  const std::set<std::string> old_tree = {"p1-s1-ph1", "p1-s1-ph1-c1", "p1-s1-ph2", "p1-s1-ph2-c1",
                                          "p1-s1-ph3"};
  EXPECT_EQ(invalidated, old_tree) << rerun.dump(2);
  EXPECT_EQ(rerun["revived"], json::array()) << "the plan was still being carried out";
  auto announced = events.wait_for([](const proto::Event& e) { return e.event == "loop.rerun"; });
  ASSERT_TRUE(announced);
  EXPECT_EQ(events.events()[*announced].data["feedback"], "start the phases afresh");

  const json done = wait_final(*daemon_, id, 180s);
  ASSERT_EQ(done["status"], "completed") << done.dump(2) << plan_get(id).dump(2);
  // The old phases are archived, not deleted, and their branches kept; the
  // new ones continue the count.
  const auto tree = tree_by_id(id);
  for (const std::string& old : old_tree)
    EXPECT_EQ(tree.at(old)["status"], "invalidated") << tree.at(old).dump(2);
  EXPECT_TRUE(branch_exists(repo_.path, "loop/p1-s1-ph1"));
  for (const char* fresh : {"p1-s1-ph4", "p1-s1-ph4-c1", "p1-s1-ph5-c1", "p1-s1-ph6-c1"})
    EXPECT_EQ(tree.at(fresh)["status"], "completed") << fresh;
  EXPECT_EQ(get_loop(*daemon_, "p1-s1")["children"].size(), 6u) << "three old, three new";
  // The spec's branch went back to before its children: the old phase's
  // merged file is gone from the result, the new ones are in it.
  EXPECT_EQ(show("loop/p1", "new/6.txt"), "new\n");
  EXPECT_NE(git(repo_.path, {"cat-file", "-e", "loop/p1:old/one.txt"}).exit_code, 0);
  EXPECT_NE(git(repo_.path, {"cat-file", "-e", "loop/p1-s1:old/one.txt"}).exit_code, 0);
  // The spec's second iteration was told the feedback.
  const auto started = steps_of_kind(read_transcript(*daemon_, "p1-s1"), "iteration_started");
  ASSERT_EQ(started.size(), 2u);
  EXPECT_NE(started[1]["data"].dump().find("start the phases afresh"), std::string::npos);
  EXPECT_EQ(steps_of_kind(read_transcript(*daemon_, "p1-s1"), "rerun").size(), 1u);

  // What cannot be re-run says why.
  EXPECT_EQ(rpc_error_code(*daemon_, "loop.rerun", {{"id", "p1-s1-ph4-c1"}}), 1002)
      << "merged into its phase";
  EXPECT_EQ(rpc_error_code(*daemon_, "loop.rerun", {{"id", "p1-s1-ph1"}}), 1002) << "invalidated";
  EXPECT_EQ(rpc_error_code(*daemon_, "loop.rerun", {{"id", "p1"}}), -32602) << "plan.iterate";
  EXPECT_EQ(rpc_error_code(*daemon_, "loop.rerun", {{"id", "p9"}}), 1001);
  EXPECT_EQ(rpc_error_code(*daemon_, "loop.rerun", {{"id", "p1-s1"}, {"feedback", 7}}), -32602);
}

TEST_F(PlanTest, ReRunningTheCodeLoopThatFailedBringsItsEndedPlanBackAndItCompletes) {
  std::vector<json> lines;
  lines.push_back(keyed("p1", create_plan_turn({plan_spec("answer"), plan_spec("notes")})));
  lines.push_back(keyed("p1-s1", create_spec_turn("answer", {"fix", "note-a", "note-b"})));
  lines.push_back(keyed("p1-s1-ph1", create_phase_turn("fix", "answer.txt", "sh test.sh")));
  // A wrong fix: validation fails, and one iteration is all a code loop has.
  const json read_answer = turn({tool_call("r", "read_file", {{"path", "answer.txt"}})});
  auto fix = [](const std::string& from, const std::string& to) {
    return turn({tool_call("e", "edit_file",
                           {{"path", "answer.txt"}, {"old_string", from}, {"new_string", to}}),
                 tool_call("d", "complete_task", {{"summary", to}})});
  };
  lines.push_back(keyed("p1-s1-ph1-c1", read_answer));
  json wrong = keyed("p1-s1-ph1-c1", fix("41", "43"));
  wrong["delay_ms"] = 1500;
  lines.push_back(wrong);
  // Its re-run, told the answer.
  lines.push_back(keyed("p1-s1-ph1-c1", read_answer));
  lines.push_back(keyed("p1-s1-ph1-c1", fix("43", "42")));
  lines.push_back(
      keyed("p1-s1-ph2", create_phase_turn("note-a", "notes/a.txt", "test -f notes/a.txt")));
  lines.push_back(keyed("p1-s1-ph2-c1", write_and_complete_turn("notes/a.txt", "a\n")));
  lines.push_back(
      keyed("p1-s1-ph3", create_phase_turn("note-b", "notes/b.txt", "test -f notes/b.txt")));
  lines.push_back(keyed("p1-s1-ph3-c1", write_and_complete_turn("notes/b.txt", "b\n")));
  add_spec_tree(lines, "p1-s2", "notes", "other");
  // The other spec's first code loop is asking its model when the tree ends.
  for (json& line : lines)
    if (line["loop"] == "p1-s2-ph1-c1") line["delay_ms"] = 6000;
  start(lines, "[loops.code]\nmax_iterations = 1\n");
  const std::string id = create_plan()["id"];
  ASSERT_EQ(wait_awaiting(id)["status"], "awaiting_approval");
  daemon_->call("plan.approve", {{"id", id}});
  const json ended = wait_final(*daemon_, id, 120s);
  ASSERT_EQ(ended["status"], "failed") << ended.dump(2);
  EXPECT_EQ(get_loop(*daemon_, "p1-s1-ph1-c1")["status"], "failed");

  // Re-running a loop the failure did not come from would only end the
  // plan again: refused, naming where the failure is.
  {
    auto client = daemon_->client();
    auto refused = client.call("loop.rerun", {{"id", "p1-s2"}, {"feedback", "again"}});
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().details.value("rpc_code", 0), 1002);
    EXPECT_NE(refused.error().message.find("p1-s1-ph1"), std::string::npos)
        << refused.error().message;
  }

  const json rerun =
      daemon_->call("loop.rerun", {{"id", "p1-s1-ph1-c1"}, {"feedback", "the answer is 42"}});
  EXPECT_EQ(rerun["invalidated"], json::array()) << rerun.dump(2);
  std::set<std::string> revived;
  for (const json& loop_id : rerun["revived"])
    revived.insert(loop_id);
  for (const char* loop_id : {"p1", "p1-s1", "p1-s1-ph1", "p1-s2"})
    EXPECT_TRUE(revived.count(loop_id)) << loop_id << " in " << rerun.dump(2);
  EXPECT_EQ(get_loop(*daemon_, id)["status"], "waiting");

  const json done = wait_final(*daemon_, id, 180s);
  ASSERT_EQ(done["status"], "completed") << done.dump(2) << plan_get(id).dump(2);
  EXPECT_EQ(show("loop/p1", "answer.txt"), "42\n");
  EXPECT_FALSE(show("loop/p1", "other/notes-three.txt").empty());
  const json code = get_loop(*daemon_, "p1-s1-ph1-c1");
  EXPECT_EQ(code["iteration"], 2) << code.dump(2);
  const auto started =
      steps_of_kind(read_transcript(*daemon_, "p1-s1-ph1-c1"), "iteration_started");
  ASSERT_EQ(started.size(), 2u);
  EXPECT_NE(started[1]["data"].dump().find("the answer is 42"), std::string::npos);
  // Loops the tree's end had stopped went on from their journal: nothing
  // the model was asked was asked twice.
  std::map<std::string, int> scripted;
  for (const json& line : lines)
    scripted[line["loop"]] += 1;
  for (const auto& [loop_id, loop] : tree_by_id(id)) {
    EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
    EXPECT_EQ(loop["usage"]["model_turns"], scripted[loop_id]) << loop_id;
  }
}

TEST_F(PlanTest, ALoopCancelledWhileQueuedIsReRunIntoTheQueueAndItsPlanCompletes) {
  auto lines = two_spec_plan();
  for (json& line : lines)
    if (line["loop"] == "p1-s1") line["delay_ms"] = 2000;
  start(lines);
  const std::string id = create_plan()["id"];
  ASSERT_EQ(wait_awaiting(id)["status"], "awaiting_approval");
  daemon_->call("plan.approve", {{"id", id}});
  // p1-s2 waits for p1-s1 (its dependency); cancelling it ends the plan.
  const json queued = get_loop(*daemon_, "p1-s2");
  ASSERT_EQ(queued["status"], "queued") << queued.dump(2);
  EXPECT_EQ(rpc_error_code(*daemon_, "loop.rerun", {{"id", "p1-s2"}}), 1002) << "not started";
  daemon_->call("loop.cancel", {{"id", "p1-s2"}});
  const json ended = wait_final(*daemon_, id, 60s);
  ASSERT_EQ(ended["status"], "failed") << ended.dump(2);
  EXPECT_NE(ended["status_reason"].get<std::string>().find("p1-s2"), std::string::npos);

  const json rerun = daemon_->call("loop.rerun", {{"id", "p1-s2"}});
  EXPECT_EQ(rerun["loop"]["status"], "queued") << "it never started: " << rerun.dump(2);
  std::set<std::string> revived;
  for (const json& loop_id : rerun["revived"])
    revived.insert(loop_id);
  EXPECT_TRUE(revived.count("p1")) << rerun.dump(2);
  EXPECT_TRUE(revived.count("p1-s1")) << rerun.dump(2);
  const json done = wait_final(*daemon_, id, 180s);
  ASSERT_EQ(done["status"], "completed") << done.dump(2) << plan_get(id).dump(2);
  EXPECT_FALSE(show("loop/p1", "notes/notes-three.txt").empty());
  EXPECT_EQ(get_loop(*daemon_, "p1-s2")["usage"]["model_turns"], 1);
}

// ---- worktrees -------------------------------------------------------------------------

// One spec, three phases: eight loops under the plan.
std::vector<json> one_spec_plan() {
  std::vector<json> lines;
  lines.push_back(keyed("p1", create_plan_turn({plan_spec("notes")})));
  add_spec_tree(lines, "p1-s1", "notes", "notes");
  return lines;
}

// ---- on workers ------------------------------------------------------------------------

// [cluster] (issue 28): the plan's code loops validate on a worker through a
// real nats-server, and the plan completes as it does here.
TEST_F(PlanTest, APlansValidationsRunOnAWorkerThroughNatsAndThePlanCompletes) {
  TempTree cluster_tree;
  NatsServer nats(cluster_tree);
  nats.start();
  start(one_spec_plan(),
        "[cluster]\nnats_url = \"" + nats.url() + "\"\nack_wait_s = 2\nqueue_timeout_s = 60\n");
  const auto cluster = [&] { return daemon_->call("metrics.get").value("cluster", json()); };
  ASSERT_TRUE(eventually([&] { return cluster().value("state", "") == "connected"; }))
      << daemon_->log();
  Worker worker(cluster_tree, nats, {"w1"});
  ASSERT_TRUE(eventually([&] { return !cluster().value("workers", json::array()).empty(); }))
      << worker.log();

  const std::string id = create_plan()["id"];
  ASSERT_EQ(wait_awaiting(id)["status"], "awaiting_approval");
  daemon_->call("plan.approve", {{"id", id}});
  const json done = wait_final(*daemon_, id, 180s);
  ASSERT_EQ(done["status"], "completed") << done.dump(2) << worker.log();
  EXPECT_FALSE(show("loop/p1", "notes/notes-three.txt").empty());
  // Each code loop's validation ran on the worker, and only there.
  int on_worker = 0;
  for (const char* loop : {"p1-s1-ph1-c1", "p1-s1-ph2-c1", "p1-s1-ph3-c1"}) {
    for (const json& step : read_transcript(*daemon_, loop)) {
      if (step["kind"] != "validation") continue;
      EXPECT_EQ(step["data"].value("worker", ""), "w1") << loop << ": " << step.dump();
      ++on_worker;
    }
  }
  EXPECT_EQ(on_worker, 3) << worker.log();
  EXPECT_EQ(cluster()["fallbacks"], 0);
}

TEST_F(PlanTest, GcRemovesTheWorktreesOfAFinishedTreeAndKeepsItsBranches) {
  start(one_spec_plan());  // [worktrees] keep_finished_s: the default hour
  const std::string id = create_plan()["id"];
  ASSERT_EQ(wait_awaiting(id)["status"], "awaiting_approval");
  daemon_->call("plan.approve", {{"id", id}});
  ASSERT_EQ(wait_final(*daemon_, id, 180s)["status"], "completed");
  auto worktrees = [&] {
    std::map<std::string, std::string> out;
    for (const auto& [loop_id, loop] : tree_by_id(id))
      out[loop_id] = loop["worktree"];
    out[id] = get_loop(*daemon_, id)["worktree"];
    return out;
  };
  const auto paths = worktrees();
  ASSERT_EQ(paths.size(), 8u);
  for (const auto& [loop_id, path] : paths)
    EXPECT_TRUE(std::filesystem::is_directory(path)) << loop_id << " kept for an hour: " << path;

  const json dry = daemon_->call("loop.gc", {{"dry_run", true}});
  EXPECT_EQ(dry["removed_worktrees"].size(), 8u) << dry.dump(2);
  for (const auto& [loop_id, path] : paths)
    EXPECT_TRUE(std::filesystem::is_directory(path)) << "a dry run removes nothing: " << path;

  const json gc = daemon_->call("loop.gc");
  EXPECT_EQ(gc["removed_worktrees"].size(), 8u) << gc.dump(2);
  for (const auto& [loop_id, path] : paths) {
    EXPECT_FALSE(std::filesystem::exists(path)) << path;
    EXPECT_TRUE(branch_exists(repo_.path, "loop/" + loop_id)) << loop_id;
  }
  EXPECT_EQ(git(repo_.path, {"worktree", "prune", "--dry-run", "-v"}).out, "")
      << "git knows they are gone";
  EXPECT_EQ(show("loop/p1", "notes/notes-three.txt"), "notes-three\n");
  EXPECT_EQ(daemon_->call("loop.gc")["removed_worktrees"], json::array()) << "nothing twice";
}

TEST_F(PlanTest, AnIdleDaemonRemovesFinishedWorktreesAfterKeepFinishedSeconds) {
  start(one_spec_plan(), "[worktrees]\nkeep_finished_s = 1\n");
  const std::string id = create_plan()["id"];
  ASSERT_EQ(wait_awaiting(id)["status"], "awaiting_approval");
  daemon_->call("plan.approve", {{"id", id}});
  ASSERT_EQ(wait_final(*daemon_, id, 180s)["status"], "completed");
  std::vector<std::string> paths = {get_loop(*daemon_, id)["worktree"]};
  for (const auto& [loop_id, loop] : tree_by_id(id))
    paths.push_back(loop["worktree"]);
  ASSERT_EQ(paths.size(), 8u);
  // Nothing else happens in looprd now: only its own tick can remove them.
  auto any_left = [&] {
    for (const auto& path : paths)
      if (std::filesystem::exists(path)) return true;
    return false;
  };
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (any_left() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(100ms);
  for (const auto& path : paths)
    EXPECT_FALSE(std::filesystem::exists(path)) << path;
  for (const auto& [loop_id, loop] : tree_by_id(id))
    EXPECT_TRUE(branch_exists(repo_.path, "loop/" + loop_id)) << loop_id;
  EXPECT_TRUE(branch_exists(repo_.path, "loop/p1"));
}

// ---- the scheduler -----------------------------------------------------------------------

TEST_F(PlanTest, OneSlotRunsCodeBeforePhasesBeforeSpecsBeforePlansThenOlderFirst) {
  std::vector<json> lines;
  lines.push_back(keyed("p1", create_plan_turn({plan_spec("left"), plan_spec("right")})));
  lines.push_back(keyed("p2", create_plan_turn({plan_spec("more")})));
  lines.push_back(create_plan_turn({plan_spec("last")}));  // the third plan, whatever its id
  add_spec_tree(lines, "p1-s1", "left", "left");
  add_spec_tree(lines, "p1-s2", "right", "right");
  add_spec_tree(lines, "p2-s1", "more", "more");
  // p1-s1 holds the one slot while p2 is approved and p3 asked for.
  for (json& line : lines)
    if (line.value("loop", "") == "p1-s1") line["delay_ms"] = 2000;
  start(lines, "[scheduler]\nmax_running = 1\n");
  EventLog events(*daemon_, {"loop.updated"});
  const std::string p1 = create_plan()["id"];
  ASSERT_EQ(wait_awaiting(p1)["status"], "awaiting_approval");
  const std::string p2 = create_plan()["id"];
  ASSERT_EQ(wait_awaiting(p2)["status"], "awaiting_approval");
  daemon_->call("plan.approve", {{"id", p1}});
  daemon_->call("plan.approve", {{"id", p2}});
  const json p3 = create_plan();
  EXPECT_EQ(p3["status"], "queued") << p3.dump(2);
  EXPECT_EQ(p3["queue_reason"], "waiting for a slot") << p3.dump(2);
  const std::string p3_id = p3["id"];  // ids count every loop: not "p3"
  ASSERT_EQ(wait_awaiting(p3_id)["status"], "awaiting_approval");
  // The plan loop ran last: both trees were done by then.
  EXPECT_EQ(get_loop(*daemon_, p1)["status"], "completed");
  EXPECT_EQ(get_loop(*daemon_, p2)["status"], "completed");

  ASSERT_TRUE(events.wait_for(status_event(p3_id, "awaiting_approval"), 10s)) << "every event read";
  // The order loops started in.
  std::vector<std::string> order;
  std::set<std::string> seen;
  std::set<std::string> running;
  std::size_t most = 0;
  for (const auto& event : events.events()) {
    if (event.event != "loop.updated") continue;
    const json& loop = event.data["loop"];
    const std::string loop_id = loop["id"];
    if (loop["status"] == "running") {
      running.insert(loop_id);
      if (seen.insert(loop_id).second) order.push_back(loop_id);
    } else {
      running.erase(loop_id);
    }
    most = std::max(most, running.size());
  }
  EXPECT_EQ(most, 1u);
  auto subtree = [](const std::string& spec) {
    std::vector<std::string> ids = {spec};
    for (int i = 1; i <= 3; ++i) {
      ids.push_back(spec + "-ph" + std::to_string(i));
      ids.push_back(spec + "-ph" + std::to_string(i) + "-c1");
    }
    return ids;
  };
  // A spec's phases and code run before any other spec; p1's second spec
  // (older) before p2's; the plan p3, asked for while p1-s1 ran, last.
  std::vector<std::string> expected = {"p1", "p2"};
  for (const char* spec : {"p1-s1", "p1-s2", "p2-s1"}) {
    const auto ids = subtree(spec);
    expected.insert(expected.end(), ids.begin(), ids.end());
  }
  expected.push_back(p3_id);
  EXPECT_EQ(order, expected);
}

// ---- merges ----------------------------------------------------------------------------

// Two independent specs whose code loops write the same file differently:
// the second merge into the plan's branch conflicts.
std::vector<json> conflicting_plan() {
  std::vector<json> lines;
  lines.push_back(keyed("p1", create_plan_turn({plan_spec("left"), plan_spec("right")})));
  for (const std::string spec : {"p1-s1", "p1-s2"}) {
    const std::string side = spec == "p1-s1" ? "left" : "right";
    lines.push_back(keyed(spec, create_spec_turn(side, {side + "-a", side + "-b", side + "-c"})));
    for (int i = 1; i <= 3; ++i) {
      const std::string phase = spec + "-ph" + std::to_string(i);
      const std::string file =
          i == 1 ? std::string("shared.txt") : side + std::to_string(i) + ".txt";
      lines.push_back(
          keyed(phase, create_phase_turn(side + std::to_string(i), file, "test -f " + file)));
      lines.push_back(keyed(phase + "-c1", write_and_complete_turn(file, "from " + side + "\n")));
    }
  }
  return lines;
}

TEST_F(PlanTest, AMergeConflictIsResolvedByACodeLoopOnTheParentsBranch) {
  auto lines = conflicting_plan();
  lines.push_back(keyed("p1-m1", turn({tool_call("r", "read_file", {{"path", "shared.txt"}})})));
  lines.push_back(keyed("p1-m1", write_and_complete_turn("shared.txt", "from left\nfrom right\n")));
  start(lines);
  const std::string id = create_plan()["id"];
  ASSERT_EQ(wait_awaiting(id)["status"], "awaiting_approval");
  EventLog events(*daemon_, {"loop.merge_conflict"});
  daemon_->call("plan.approve", {{"id", id}});
  const json done = wait_final(*daemon_, id, 180s);
  ASSERT_EQ(done["status"], "completed") << done.dump(2) << plan_get(id).dump(2);
  auto conflict =
      events.wait_for([](const proto::Event& e) { return e.event == "loop.merge_conflict"; });
  ASSERT_TRUE(conflict);
  EXPECT_EQ(events.events()[*conflict].data["files"], json::array({"shared.txt"}));
  EXPECT_EQ(events.events()[*conflict].data["resolver_id"], "p1-m1");
  const auto tree = tree_by_id(id);
  EXPECT_EQ(tree.at("p1-m1")["status"], "completed");
  EXPECT_EQ(tree.at("p1-m1")["role"], "resolver");
  EXPECT_EQ(show("loop/p1", "shared.txt"), "from left\nfrom right\n");
  EXPECT_FALSE(show("loop/p1", "left2.txt").empty());
  EXPECT_FALSE(show("loop/p1", "right3.txt").empty());
}

TEST_F(PlanTest, AMergeConflictTheResolverCannotFixBlocksTheParentNamingTheFiles) {
  auto lines = conflicting_plan();
  // The resolver says it is done without touching the markers.
  lines.push_back(keyed("p1-m1", turn({tool_call("d", "complete_task", {{"summary", "done"}})})));
  start(lines, "[merges]\nresolve_max_iterations = 1\n");
  const std::string id = create_plan()["id"];
  ASSERT_EQ(wait_awaiting(id)["status"], "awaiting_approval");
  daemon_->call("plan.approve", {{"id", id}});
  const json done = wait_final(*daemon_, id, 180s);
  EXPECT_EQ(done["status"], "blocked") << done.dump(2);
  EXPECT_NE(done["status_reason"].get<std::string>().find("shared.txt"), std::string::npos)
      << done.dump(2);
  EXPECT_EQ(get_loop(*daemon_, "p1-m1")["status"], "failed");
}

// ---- budgets ---------------------------------------------------------------------------

TEST_F(PlanTest, ThePlanBudgetIsSharedByItsWholeTreeAndEndsItWhenSpent) {
  start(two_spec_plan());
  // The plan and spec "answer" with its first phase take 3 tool calls; the
  // first code loop's read makes 4; its edit and complete_task would be 6.
  const std::string id = create_plan({{"plan_budget", {{"tool_calls", 5}}}})["id"];
  ASSERT_EQ(wait_awaiting(id)["status"], "awaiting_approval");
  daemon_->call("plan.approve", {{"id", id}});
  const json done = wait_final(*daemon_, id, 120s);
  EXPECT_EQ(done["status"], "failed") << done.dump(2);
  const json code = get_loop(*daemon_, "p1-s1-ph1-c1");
  EXPECT_EQ(code["status"], "budget_exhausted") << code.dump(2);
  EXPECT_NE(code["status_reason"].get<std::string>().find("plan p1"), std::string::npos)
      << code.dump(2);
  const json plan = plan_get(id);
  EXPECT_LE(plan["plan_budget"]["used"]["tool_calls"].get<int>(), 5) << plan.dump(2);
  for (const json& loop : plan["tree"]) {
    EXPECT_TRUE(is_final_status(loop["status"])) << loop.dump(2);
  }
}

// ---- crashes ---------------------------------------------------------------------------

TEST_F(PlanTest, AWaitingPlanStillWaitsAfterSigkillAndTheTreeCompletesAcrossMoreKills) {
  auto lines = two_spec_plan();
  for (json& line : lines)
    if (line["loop"] == "p1-s1-ph2-c1" || line["loop"] == "p1-s2-ph1") line["delay_ms"] = 1500;
  start(lines);
  const std::string id = create_plan()["id"];
  ASSERT_EQ(wait_awaiting(id)["status"], "awaiting_approval");
  kill_and_restart();
  ASSERT_EQ(get_loop(*daemon_, id)["status"], "awaiting_approval");
  EXPECT_TRUE(plan_get(id)["tree"].empty());

  {
    EventLog events(*daemon_, {"loop.updated"});
    daemon_->call("plan.approve", {{"id", id}});
    // Killed in the middle of a code loop's model call...
    ASSERT_TRUE(events.wait_for(status_event("p1-s1-ph2-c1", "running"), 90s));
  }
  kill_and_restart();
  {
    // ... and while the second spec's first phase is asking its model.
    EventLog events(*daemon_, {"loop.updated"});
    ASSERT_TRUE(events.wait_for(status_event("p1-s2-ph1", "running"), 90s));
  }
  kill_and_restart();

  const json done = wait_final(*daemon_, id, 180s);
  ASSERT_EQ(done["status"], "completed") << done.dump(2) << plan_get(id).dump(2);
  EXPECT_EQ(show("loop/p1", "answer.txt"), "42\n");
  EXPECT_FALSE(show("loop/p1", "notes/notes-three.txt").empty());
  // Nothing ran twice: every loop of the tree made exactly the model turns
  // of its script, in one iteration, and was merged once.
  std::map<std::string, int> scripted;
  for (const json& line : lines)
    scripted[line["loop"]] += 1;
  for (const auto& [loop_id, loop] : tree_by_id(id)) {
    EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
    EXPECT_EQ(loop["usage"]["model_turns"], scripted[loop_id]) << loop_id;
    EXPECT_EQ(loop["iteration"], 1) << loop_id;
    int merged_records = 0;  // the loop's own; its parent's name the child
    for (const json& step : steps_of_kind(read_transcript(*daemon_, loop_id), "merged"))
      if (!step["data"].contains("child")) ++merged_records;
    EXPECT_EQ(merged_records, 1) << loop_id;
  }
  const std::string log = git(repo_.path, {"log", "--format=%s", "loop/p1"}).out;
  std::size_t merges = 0;
  for (std::size_t at = log.find("loopr: merge loop p1-s"); at != std::string::npos;
       at = log.find("loopr: merge loop p1-s", at + 1)) {
    ++merges;
  }
  EXPECT_EQ(merges, 14u) << "each of the 14 loops merged once:\n" << log;
}

}  // namespace
}  // namespace loopr::test
