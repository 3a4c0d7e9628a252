#include "tests/daemon/loop_fixture.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spawn.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/unique_fd.hpp"
#include "tests/support/spawn_and_drain.hpp"

namespace loopr::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

void write_text(const std::string& path, const std::string& content) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) ADD_FAILURE() << "cannot write " << path;
}

std::chrono::milliseconds left_until(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(0),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

}  // namespace

// ---- the sample project ------------------------------------------------------

SampleRepo make_sample_repo(const std::string& path) {
  write_text(path + "/test.sh",
             "answer=$(cat answer.txt)\n"
             "if [ \"$answer\" = 42 ]; then echo \"PASS: the answer is 42\"; exit 0; fi\n"
             "echo \"FAIL: answer.txt says $answer, want 42\"\n"
             "exit 1\n");
  write_text(path + "/answer.txt", "41\n");
  write_text(path + "/docs/guide.md", "# Guide\n\nThe answer lives in answer.txt.\n");
  write_text(path + "/docs/notes.md", "# Notes\n\nanswer: see test.sh\n");
  write_text(path + "/src/alpha.txt", "alpha one\n");
  write_text(path + "/src/beta.txt", "beta two\n");
  SampleRepo repo;
  repo.path = path;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"init", "-q", "-b", "main"},
        {"add", "-A"},
        {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "sample project"}}) {
    const GitOutput run = git(path, args);
    if (run.exit_code != 0) {
      ADD_FAILURE() << "git " << args.front() << " failed: " << run.out;
      return repo;
    }
  }
  GitOutput head = git(path, {"rev-parse", "HEAD"});
  repo.base_commit = head.out.substr(0, head.out.find('\n'));
  return repo;
}

std::unique_ptr<DaemonHarness> start_scripted_looprd(TempTree& scripts,
                                                     const std::vector<ScriptedSession>& sessions,
                                                     const std::string& extra_toml,
                                                     SampleRepo& repo,
                                                     const std::string& catalog_toml) {
  std::vector<ScriptedProviderEntry> providers;
  for (const ScriptedSession& session : sessions) {
    const std::string path = scripts.path(session.provider + ".jsonl");
    write_session(path, session.turns);
    providers.push_back({session.provider, path, session.max_tokens});
  }
  DaemonOptions options;
  options.extra_toml = scripted_toml(providers) + extra_toml;
  options.catalog_toml = catalog_toml;
  auto daemon = std::make_unique<DaemonHarness>(options);
  repo = make_sample_repo(daemon->worktree());
  daemon->start();
  return daemon;
}

// ---- git ---------------------------------------------------------------------

GitOutput git(const std::string& repo, const std::vector<std::string>& args) {
  std::vector<std::string> git_args = {"-C", repo};
  git_args.insert(git_args.end(), args.begin(), args.end());
  SpawnOptions options;
  options.environment = {
      "PATH=/usr/bin:/bin",    "HOME=/nonexistent",           "LANG=C",
      "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0"};
  options.stderr_into_stdout = true;
  GitOutput result;
  try {
    SpawnedRun spawned = spawn_and_drain("/usr/bin/git", git_args, options);
    result.exit_code = spawned.exit_code;
    result.out = std::move(spawned.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "cannot start git: " << e.what();
  }
  return result;
}

std::vector<std::string> branch_subjects(const std::string& repo, const std::string& base,
                                         const std::string& branch) {
  const GitOutput log = git(repo, {"log", "--reverse", "--format=%s", base + ".." + branch});
  EXPECT_EQ(log.exit_code, 0) << log.out;
  std::vector<std::string> subjects;
  std::istringstream lines(log.out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) subjects.push_back(line);
  return subjects;
}

std::string branch_diff(const std::string& repo, const std::string& base,
                        const std::string& branch) {
  const GitOutput diff = git(repo, {"diff", "--no-color", "--no-ext-diff", base, branch});
  EXPECT_EQ(diff.exit_code, 0) << diff.out;
  return diff.out;
}

bool branch_exists(const std::string& repo, const std::string& branch) {
  return git(repo, {"rev-parse", "--verify", "--quiet", "refs/heads/" + branch}).exit_code == 0;
}

// ---- scripted sessions and loopr.toml -----------------------------------------

json tool_call(const std::string& id, const std::string& name, json arguments) {
  return {{"id", id}, {"name", name}, {"arguments", std::move(arguments)}};
}

json read_call(const std::string& id, const std::string& path) {
  return tool_call(id, "read_file", {{"path", path}});
}

json edit_call(const std::string& id, const std::string& from, const std::string& to) {
  return tool_call(id, "edit_file",
                   {{"path", "answer.txt"}, {"old_string", from}, {"new_string", to}});
}

json complete_call(const std::string& id, const std::string& summary) {
  return tool_call(id, "complete_task", {{"summary", summary}});
}

json turn(std::vector<json> calls, json extra) {
  json out = extra.is_object() ? std::move(extra) : json::object();
  if (!calls.empty()) out["tool_calls"] = std::move(calls);
  return out;
}

json usage(std::int64_t input_tokens, std::int64_t output_tokens) {
  return {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}};
}

std::string write_session(const std::string& path, const std::vector<json>& turns) {
  std::string text;
  for (const json& line : turns)
    text += line.dump() + "\n";
  write_text(path, text);
  return path;
}

std::string scripted_toml(const std::vector<ScriptedProviderEntry>& providers) {
  std::string toml;
  for (const ScriptedProviderEntry& provider : providers) {
    toml += "[providers." + provider.name + "]\nkind = \"scripted\"\nscript = \"" +
            provider.script + "\"\nmodel = \"" + kTestModel + "\"\n";
    if (provider.max_tokens > 0)
      toml += "max_tokens = " + std::to_string(provider.max_tokens) + "\n";
  }
  if (!providers.empty()) toml += "[llm]\nprovider = \"" + providers.front().name + "\"\n";
  toml += std::string("[prices.\"") + kTestModel +
          "\"]\ninput_usd_per_mtok = " + std::to_string(kInputUsdPerMtok) +
          "\noutput_usd_per_mtok = " + std::to_string(kOutputUsdPerMtok) + "\n";
  return toml;
}

// ---- loops over the control socket ---------------------------------------------

bool is_final_status(const std::string& status) {
  return status == "completed" || status == "failed" || status == "cancelled" ||
         status == "budget_exhausted" || status == "stuck" || status == "rejected" ||
         status == "invalidated" || status == "blocked";
}

json create_loop(const DaemonHarness& daemon, const std::string& repo, json params) {
  json request = {
      {"type", "code"}, {"task", kSampleTask}, {"repo", repo}, {"validate", "sh test.sh"}};
  for (const auto& [key, value] : params.items())
    request[key] = value;
  json result = daemon.call("loop.create", std::move(request));
  if (!result.is_object() || !result.contains("loop")) return json::object();
  return result["loop"];
}

json get_loop(const DaemonHarness& daemon, const std::string& id) {
  json result = daemon.call("loop.get", {{"id", id}});
  return result.is_object() && result.contains("loop") ? result["loop"] : json::object();
}

json wait_final(const DaemonHarness& daemon, const std::string& id,
                std::chrono::milliseconds wait) {
  return wait_status(daemon, id, is_final_status, wait);
}

json wait_status(const DaemonHarness& daemon, const std::string& id,
                 const std::function<bool(const std::string&)>& reached,
                 std::chrono::milliseconds wait) {
  const auto deadline = Clock::now() + wait;
  EventLog events(daemon, {"loop.updated"}, id);
  // Subscribed first, then asked: an end before the subscription shows here,
  // an end after it arrives as an event.
  auto current = events.client().call("loop.get", {{"id", id}});
  if (!current) {
    ADD_FAILURE() << "loop.get " << id << ": " << current.error().message;
    return json::object();
  }
  while (!reached((*current)["loop"].value("status", ""))) {
    // The event is the signal; a loop.get every second is only a fallback
    // against an event lost in transit.
    const auto slice = std::min(left_until(deadline), std::chrono::milliseconds(1000));
    if (slice.count() == 0) {
      ADD_FAILURE() << "loop " << id << " did not get there within " << wait.count()
                    << " ms; it is " << (*current)["loop"].dump() << "\nlooprd log:\n"
                    << daemon.log();
      return (*current)["loop"];
    }
    events.wait_for(
        [&](const proto::Event& event) {
          return reached(event.data.value("loop", json::object()).value("status", ""));
        },
        slice, events.events().size());
    current = events.client().call("loop.get", {{"id", id}});
    if (!current) {
      ADD_FAILURE() << "loop.get " << id << ": " << current.error().message;
      return json::object();
    }
  }
  return (*current)["loop"];
}

std::vector<json> read_transcript(const DaemonHarness& daemon, const std::string& id, int page) {
  std::vector<json> steps;
  std::int64_t after = 0;
  for (;;) {
    json result = daemon.call("loop.transcript", {{"id", id}, {"after", after}, {"limit", page}});
    if (!result.is_object() || !result.contains("steps")) break;
    for (const json& step : result["steps"]) {
      EXPECT_GT(step["id"].get<std::int64_t>(), after) << "steps come in id order";
      after = step["id"].get<std::int64_t>();
      steps.push_back(step);
    }
    if (!result.value("more", false)) break;
  }
  return steps;
}

std::vector<json> steps_of_kind(const std::vector<json>& steps, const std::string& kind) {
  std::vector<json> out;
  for (const json& step : steps)
    if (step.value("kind", "") == kind) out.push_back(step);
  return out;
}

std::optional<int> rpc_error_code(const DaemonHarness& daemon, const std::string& method,
                                  json params) {
  auto c = daemon.client();
  auto result = c.call(method, std::move(params));
  if (result) return std::nullopt;
  const json& details = result.error().details;
  return details.is_object() && details.contains("rpc_code") ? details["rpc_code"].get<int>() : 0;
}

// ---- events ----------------------------------------------------------------------

EventLog::EventLog(const DaemonHarness& daemon, std::vector<std::string> topics,
                   std::optional<std::string> loop_id)
    : client_(daemon.client()) {
  json params = {{"topics", std::move(topics)}};
  if (loop_id) params["loop_id"] = *loop_id;
  auto subscribed = client_.call("events.subscribe", std::move(params));
  if (!subscribed) ADD_FAILURE() << "events.subscribe: " << subscribed.error().message;
}

std::optional<std::size_t> EventLog::wait_for(const std::function<bool(const proto::Event&)>& match,
                                              std::chrono::milliseconds wait, std::size_t from) {
  for (std::size_t i = from; i < events_.size(); ++i)
    if (match(events_[i])) return i;
  const auto deadline = Clock::now() + wait;
  for (;;) {
    const auto left = left_until(deadline);
    if (left.count() == 0) return std::nullopt;
    auto next = client_.next_event(left);
    if (!next) {
      ADD_FAILURE() << "reading events: " << next.error().message;
      return std::nullopt;
    }
    if (!*next) return std::nullopt;
    events_.push_back(std::move(**next));
    if (match(events_.back())) return events_.size() - 1;
  }
}

std::function<bool(const proto::Event&)> step_event(
    const std::string& id, const std::string& kind,
    std::function<bool(const nlohmann::json&)> data_match) {
  return [=](const proto::Event& event) {
    if (event.event != "loop.step" || event.data.value("loop_id", "") != id) return false;
    const json& step = event.data["step"];
    if (step.value("kind", "") != kind) return false;
    return !data_match || data_match(step["data"]);
  };
}

std::function<bool(const proto::Event&)> tool_event(const std::string& id, const std::string& name,
                                                    const std::string& tool) {
  return [=](const proto::Event& event) {
    return event.event == name && event.data.value("loop_id", "") == id &&
           (tool.empty() || event.data.value("tool", "") == tool);
  };
}

std::function<bool(const proto::Event&)> status_event(const std::string& id,
                                                      const std::string& status) {
  return [=](const proto::Event& event) {
    if (event.event != "loop.updated") return false;
    const json loop = event.data.value("loop", json::object());
    return loop.value("id", "") == id && loop.value("status", "") == status;
  };
}

bool wait_for_file(const std::string& path, std::chrono::milliseconds wait) {
  auto ready = [&] {
    std::error_code ignored;
    return fs::exists(path, ignored) && fs::file_size(path, ignored) > 0;
  };
  UniqueFd watch(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  const std::string folder = fs::path(path).parent_path().string();
  if (!watch || ::inotify_add_watch(watch.get(), folder.c_str(),
                                    IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO) < 0) {
    ADD_FAILURE() << "cannot watch " << folder;
    return ready();
  }
  const auto deadline = Clock::now() + wait;
  while (!ready()) {
    const auto left = left_until(deadline);
    if (left.count() == 0) return false;
    pollfd p{watch.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) > 0) {
      char buffer[4096];
      while (::read(watch.get(), buffer, sizeof buffer) > 0) {
      }
    }
  }
  return true;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace loopr::test
