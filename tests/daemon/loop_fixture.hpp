// Helpers for the loop integration tests: the real looprd (DaemonHarness)
// running code loops against the scripted provider, in a small git
// repository beneath the harness's worktree root.
//
// - A sample project whose validation (`sh test.sh`) fails until answer.txt
//   holds 42 (it holds 41), plus a few files to read, grep and glob.
// - Scripted sessions (llm/scripted_provider.hpp): one JSON model turn a
//   line, request N answered by line N.
// - loopr.toml snippets for a scripted provider, [llm] and [prices].
// - Loops over the control socket: create, wait for a final status (events
//   first, a loop.get after subscribing closes the race), the whole
//   transcript (paged with `after`).
// - Events in order, for tests that act at a precise moment (kill, pause,
//   cancel) or prove an order.
// - git in the repository, to read a loop's branch.
// Nothing here sleeps to synchronise: waits are on events, processes or
// inotify, each with a deadline.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "client/control_client.hpp"
#include "tests/daemon/daemon_harness.hpp"

namespace loopr::test {

inline constexpr const char* kTestModel = "test-model";
// [prices."test-model"] as scripted_provider_toml writes it: USD per million tokens.
inline constexpr double kInputUsdPerMtok = 3.0;
inline constexpr double kOutputUsdPerMtok = 15.0;

// ---- the sample project ------------------------------------------------------

// The task the sample project's scripts solve.
inline constexpr const char* kSampleTask = "Make `sh test.sh` pass: answer.txt must hold 42.";

struct SampleRepo {
  std::string path;
  std::string base_commit;
};

// Creates a git repository at `path` (the folder may exist) with the sample
// project committed on `main`: test.sh, answer.txt ("41"), docs/*.md and
// src/*.txt.
SampleRepo make_sample_repo(const std::string& path);

// ---- git ---------------------------------------------------------------------

struct GitOutput {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

// Runs `git -C repo ARGS` hermetically (no user or system config).
GitOutput git(const std::string& repo, const std::vector<std::string>& args);
// Subjects of the commits on `branch` since `base`, oldest first.
std::vector<std::string> branch_subjects(const std::string& repo, const std::string& base,
                                         const std::string& branch);
// `git diff base branch` (unified, no colour).
std::string branch_diff(const std::string& repo, const std::string& base,
                        const std::string& branch);
bool branch_exists(const std::string& repo, const std::string& branch);

// ---- scripted sessions and loopr.toml -----------------------------------------

// One tool call of a scripted turn; `arguments` is an object, or a string
// sent as raw text (to test malformed arguments).
nlohmann::json tool_call(const std::string& id, const std::string& name, nlohmann::json arguments);
// A model turn making `calls`; `extra` adds keys (text, usage, delay_ms).
nlohmann::json turn(std::vector<nlohmann::json> calls,
                    nlohmann::json extra = nlohmann::json::object());
nlohmann::json usage(std::int64_t input_tokens, std::int64_t output_tokens);

// The calls that solve the sample project (make_sample_repo: answer.txt holds
// 41): read_file of `path`, edit_file of answer.txt from `from` to `to`, and
// complete_task with `summary`.
nlohmann::json read_call(const std::string& id, const std::string& path = "answer.txt");
nlohmann::json edit_call(const std::string& id, const std::string& from = "41",
                         const std::string& to = "42");
nlohmann::json complete_call(const std::string& id,
                             const std::string& summary = "answer.txt holds 42");

// Writes `turns` to `path` as JSON Lines; returns `path`.
std::string write_session(const std::string& path, const std::vector<nlohmann::json>& turns);

struct ScriptedProviderEntry {
  std::string name = "scripted";
  std::string script;           // absolute path of the session file
  std::int64_t max_tokens = 0;  // 0: the default
};

// [providers.NAME] kind="scripted" with model "test-model" for each, the
// first one as [llm] provider, and [prices."test-model"].
std::string scripted_toml(const std::vector<ScriptedProviderEntry>& providers);

// One scripted provider's session: the turns it answers, in order.
struct ScriptedSession {
  std::string provider = "scripted";
  std::vector<nlohmann::json> turns;
  std::int64_t max_tokens = 0;
};

// Writes each session into `scripts`, then starts looprd with them as its
// providers (the first is the default) plus `extra_toml`, and the sample
// project (returned in `repo`) in its worktree root; `catalog_toml`, when
// not empty, is its catalog.toml.
std::unique_ptr<DaemonHarness> start_scripted_looprd(TempTree& scripts,
                                                     const std::vector<ScriptedSession>& sessions,
                                                     const std::string& extra_toml,
                                                     SampleRepo& repo,
                                                     const std::string& catalog_toml = {});

// ---- loops over the control socket ---------------------------------------------

bool is_final_status(const std::string& status);

// loop.create with {type: code, task: kSampleTask, repo, validate: "sh test.sh"}
// and `params` over it; the created <loop> (the test fails on an error).
nlohmann::json create_loop(const DaemonHarness& daemon, const std::string& repo,
                           nlohmann::json params = nlohmann::json::object());
// loop.get's <loop>.
nlohmann::json get_loop(const DaemonHarness& daemon, const std::string& id);
// Waits for loop `id` to reach a final status (subscribed to its events; a
// loop.get after subscribing catches a loop that had already ended) and
// returns loop.get's <loop>; the test fails after `wait`.
nlohmann::json wait_final(const DaemonHarness& daemon, const std::string& id,
                          std::chrono::milliseconds wait = std::chrono::seconds(30));
// The same until `reached(status)` holds (e.g. awaiting_approval).
nlohmann::json wait_status(const DaemonHarness& daemon, const std::string& id,
                           const std::function<bool(const std::string&)>& reached,
                           std::chrono::milliseconds wait = std::chrono::seconds(30));
// Every step of the journal, read in pages of `page` with `after`.
std::vector<nlohmann::json> read_transcript(const DaemonHarness& daemon, const std::string& id,
                                            int page = 25);
std::vector<nlohmann::json> steps_of_kind(const std::vector<nlohmann::json>& steps,
                                          const std::string& kind);
// The rpc error code of `method`, or nullopt when it succeeded.
std::optional<int> rpc_error_code(const DaemonHarness& daemon, const std::string& method,
                                  nlohmann::json params);

// ---- events ----------------------------------------------------------------------

// A client subscribed to `topics` (of one loop when `loop_id` is set) that
// keeps every event it reads, in order.
class EventLog {
 public:
  EventLog(const DaemonHarness& daemon, std::vector<std::string> topics,
           std::optional<std::string> loop_id = std::nullopt);

  // Reads until an event satisfies `match` (events already read are checked
  // first, from `from`); its index in events(), or nullopt after `wait`.
  std::optional<std::size_t> wait_for(const std::function<bool(const proto::Event&)>& match,
                                      std::chrono::milliseconds wait = std::chrono::seconds(20),
                                      std::size_t from = 0);
  const std::vector<proto::Event>& events() const { return events_; }
  client::ControlClient& client() { return client_; }

 private:
  client::ControlClient client_;
  std::vector<proto::Event> events_;
};

// Matchers: a loop.step of `kind` (and optional predicate on its data) of loop
// `id`; a tool event of loop `id`.
std::function<bool(const proto::Event&)> step_event(
    const std::string& id, const std::string& kind,
    std::function<bool(const nlohmann::json&)> data_match = {});
std::function<bool(const proto::Event&)> tool_event(const std::string& id, const std::string& event,
                                                    const std::string& tool = {});
// loop.updated of loop `id` with status `status`.
std::function<bool(const proto::Event&)> status_event(const std::string& id,
                                                      const std::string& status);

// Waits (inotify, bounded) until `path` exists and is not empty.
bool wait_for_file(const std::string& path, std::chrono::milliseconds wait);
std::string file_text(const std::string& path);  // empty when unreadable

}  // namespace loopr::test
