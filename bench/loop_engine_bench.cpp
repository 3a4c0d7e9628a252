// The loop engine's costs (DESIGN.md §8, §9), measured against the real
// looprd and, for the breakdown, in-process:
//   turns     the engine's own overhead per model turn: a scripted session of
//             N turns whose tool calls are all malformed or not offered, so
//             the engine answers them itself (no runner, no git, no
//             validation); the time between consecutive model_turn journal
//             steps as a follower receives them (steady_clock), and the mean
//             from the journal's at_ms with no follower at all
//   idle      looprd's RSS (metrics.get rss_bytes) before any loop and with
//             L loops paused, then cancelled
//   typical   the journal steps and SQLite transactions of one typical
//             iteration (read_file, edit_file, complete_task, validation)
//   store     one append_loop_step transaction on a temporary database, with
//             the loop state of iteration 1 and of iteration 50
//   request   what building one model request costs the engine at 1, 101
//             and 401 messages (a replica of loop_run.cpp's per-turn work)
// Run by hand (bench/README.md), never as a timed test:
//   loop_engine_bench [--turns N] [--runs R] [--idle-loops L] [--appends A]
//                     [--bin-dir DIR] [--only daemon|inproc]
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/sample_stats.hpp"
#include "client/control_client.hpp"
#include "config/catalog.hpp"
#include "config/settings.hpp"
#include "llm/conversation.hpp"
#include "llm/scripted_provider.hpp"
#include "loops/loop_record.hpp"
#include "store/store.hpp"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using loopr::client::ControlClient;
using nlohmann::json;

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

double ms_since(Clock::time_point start) {
  return ms_between(start, Clock::now());
}

double median(std::vector<double> samples) {
  return loopr::bench::quantile(std::move(samples), 0.5);
}

std::string spread(std::vector<double> samples) {
  if (samples.empty()) return "-";
  std::sort(samples.begin(), samples.end());
  char text[64];
  std::snprintf(text, sizeof text, "%.3f-%.3f", samples.front(), samples.back());
  return text;
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  in >> one;
  return one;
}

// Runs argv (PATH searched) with stdin, stdout and stderr on /dev/null;
// returns its exit status, -1 when it could not start.
int run(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

[[noreturn]] void fail(const std::string& what) {
  std::cerr << "loop_engine_bench: " << what << "\n";
  std::exit(1);
}

json tool_call(const std::string& id, const std::string& name, const std::string& arguments) {
  return {{"id", id}, {"name", name}, {"arguments", arguments}};
}

// ---- scripted sessions ----

// `lead` text-only turns (one per iteration, each ending its iteration),
// then N turns: N-1 whose one tool call the engine refuses itself
// (alternately a tool the loop does not offer, and read_file with arguments
// that are not JSON), then a text-only turn that ends the iteration. With
// `usage`, every turn reports its tokens, so the scripted provider does not
// estimate them by encoding the whole request. `delay_ms` > 0 makes the
// provider wait (on an asio timer) before each of the N turns, so looprd's
// io thread runs the event writers between turns.
void write_turns_session(const std::string& path, int lead, int turns, bool usage, int delay_ms) {
  std::ofstream out(path);
  for (int i = 0; i < lead; ++i) {
    json line = {{"text", "Iteration " + std::to_string(i + 1) + ": a first try."}};
    if (usage) line["usage"] = {{"input_tokens", 1200}, {"output_tokens", 20}};
    out << line.dump() << "\n";
  }
  for (int i = 0; i < turns; ++i) {
    json line = {{"text", "Turn " + std::to_string(i) +
                              ": I will look at the code before changing anything, starting with "
                              "the file the task names."}};
    if (i + 1 < turns) {
      line["tool_calls"] = json::array(
          {i % 2 == 0 ? tool_call("t" + std::to_string(i), "no_such_tool", "{}")
                      : tool_call("t" + std::to_string(i), "read_file", "{\"path\": app.txt")});
    }
    if (usage) line["usage"] = {{"input_tokens", 1200}, {"output_tokens", 60}};
    if (delay_ms > 0) line["delay_ms"] = delay_ms;
    out << line.dump() << "\n";
  }
}

// Text-only turns, each after a short delay: a loop pauses before its first
// model call, or at the latest before the next iteration's.
void write_idle_session(const std::string& path) {
  std::ofstream out(path);
  for (int i = 0; i < 3; ++i)
    out << json{{"text", "Looking at the task."}, {"delay_ms", 200}}.dump() << "\n";
}

void write_typical_session(const std::string& path) {
  std::ofstream out(path);
  out << json{{"text", "I will read the file first."},
              {"tool_calls", json::array({tool_call("a1", "read_file", R"({"path": "app.txt"})")})}}
             .dump()
      << "\n";
  out << json{{"text", "Now the change."},
              {"tool_calls",
               json::array({tool_call(
                   "a2", "edit_file",
                   R"({"path": "app.txt", "old_string": "value = 1", "new_string": "value = 2"})")})}}
             .dump()
      << "\n";
  out << json{{"text", "Done."},
              {"tool_calls",
               json::array({tool_call("a3", "complete_task", R"({"summary": "value is now 2"})")})}}
             .dump()
      << "\n";
}

// ---- the daemon ----

struct StepSeen {
  std::string loop_id;
  std::string kind;
  std::int64_t iteration = 0;
  std::int64_t sequence = -1;
  std::int64_t at_ms = 0;
  std::string status;
  Clock::time_point received;
};

// A follower: its own connection, subscribed to loop and chat events (as
// `looprctl loop run` follows a loop); stamps each loop.step on arrival.
class Follower {
 public:
  explicit Follower(const std::string& socket) {
    auto client = ControlClient::open(socket);
    if (!client) fail("the follower cannot connect: " + client.error().message);
    client_.emplace(std::move(*client));
    auto subscribed =
        client_->call("events.subscribe", {{"topics", json::array({"loop", "chat"})}});
    if (!subscribed) fail("events.subscribe: " + subscribed.error().message);
    thread_ = std::jthread([this](std::stop_token stop) { read(stop); });
  }

  // Waits until `loop_id` reaches a final status (or `limit` passes).
  std::optional<std::string> wait_final(const std::string& loop_id,
                                        std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    std::optional<std::string> status;
    changed_.wait_for(lock, limit, [&] {
      for (const auto& step : steps_) {
        if (step.loop_id == loop_id && step.kind == "status" && is_final(step.status)) {
          status = step.status;
          return true;
        }
      }
      return false;
    });
    return status;
  }

  std::vector<StepSeen> steps_of(const std::string& loop_id) {
    std::lock_guard lock(mutex_);
    std::vector<StepSeen> out;
    for (const auto& step : steps_)
      if (step.loop_id == loop_id) out.push_back(step);
    return out;
  }

  std::uint64_t dropped() const { return client_->dropped_events(); }

  static bool is_final(const std::string& status) {
    return status == "completed" || status == "failed" || status == "cancelled" ||
           status == "budget_exhausted" || status == "stuck";
  }

 private:
  void read(const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      auto event = client_->next_event(std::chrono::milliseconds(100));
      const auto received = Clock::now();
      if (!event) return;
      if (!*event || (*event)->event != "loop.step") continue;
      const json& data = (*event)->data;
      const json step = data.value("step", json::object());
      StepSeen seen;
      seen.loop_id = data.value("loop_id", "");
      seen.kind = step.value("kind", "");
      seen.at_ms = step.value("at_ms", std::int64_t{0});
      seen.iteration = step.value("iteration", std::int64_t{0});
      const json body = step.value("data", json::object());
      seen.sequence = body.value("sequence", std::int64_t{-1});
      seen.status = body.value("status", "");
      seen.received = received;
      std::lock_guard lock(mutex_);
      steps_.push_back(std::move(seen));
      changed_.notify_all();
    }
  }

  std::optional<ControlClient> client_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<StepSeen> steps_;
  std::jthread thread_;  // last: joined before the members it reads go
};

// "RssAnon 1234 kB, RssFile ..." of a process, from /proc/PID/status.
std::string rss_parts(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line, out;
  while (std::getline(status, line)) {
    if (line.rfind("RssAnon:", 0) == 0 || line.rfind("RssFile:", 0) == 0 ||
        line.rfind("RssShmem:", 0) == 0) {
      line.erase(std::unique(line.begin(), line.end(),
                             [](char a, char b) { return a == b && (a == ' ' || a == '\t'); }),
                 line.end());
      std::replace(line.begin(), line.end(), '\t', ' ');
      out += (out.empty() ? "" : ", ") + line;
    }
  }
  return out;
}

// How long a 1 ms asio steady_timer really waits in this process (async_wait
// on an io_context, as the scripted provider's delay_ms waits in looprd): the
// pacing to subtract from a paced turn.
double timer_wait_p50_ms(int waits) {
  asio::io_context io;
  asio::steady_timer timer(io);
  std::vector<double> waited;
  for (int i = 0; i < waits; ++i) {
    const auto start = Clock::now();
    timer.expires_after(std::chrono::milliseconds(1));
    timer.async_wait([&](const std::error_code&) { waited.push_back(ms_since(start)); });
    io.restart();
    io.run();
  }
  return median(waited);
}

struct Daemon {
  pid_t pid = -1;
  std::string socket;
  std::string state_dir;
  std::optional<ControlClient> client;

  json call(const std::string& method, json params = json::object()) {
    auto reply = client->call(method, std::move(params), std::chrono::minutes(5));
    if (!reply) fail(method + ": " + reply.error().message);
    return *reply;
  }

  double rss_mb() {
    return static_cast<double>(call("metrics.get").value("rss_bytes", std::int64_t{0})) /
           (1024.0 * 1024.0);
  }

  json loop(const std::string& id) { return call("loop.get", {{"id", id}})["loop"]; }

  std::string wait_final(const std::string& id, std::chrono::milliseconds poll) {
    for (;;) {
      const std::string status = loop(id).value("status", "");
      if (Follower::is_final(status)) return status;
      std::this_thread::sleep_for(poll);  // polling loop.get: no follower on purpose
    }
  }
};

Daemon start_daemon(const std::string& bin_dir, const std::string& base) {
  Daemon d;
  d.socket = base + "/run/looprd.sock";
  d.state_dir = base + "/state";
  std::vector<std::string> args = {
      bin_dir + "/looprd", "--foreground", "--socket",  d.socket,      "--config-dir",
      base + "/config",    "--state-dir",  d.state_dir, "--log-level", "warn"};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  if (::posix_spawn(&d.pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    fail("cannot start " + args[0]);
  }
  for (int i = 0; i < 400 && !d.client; ++i) {
    if (auto c = ControlClient::open(d.socket))
      d.client.emplace(std::move(*c));
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(25));  // waiting for start
  }
  if (!d.client) fail("looprd did not answer");
  return d;
}

std::string create_loop(Daemon& d, const std::string& repo, const std::string& provider,
                        const std::string& validate, const std::string& task,
                        int max_iterations = 5) {
  json reply = d.call("loop.create", {{"type", "code"},
                                      {"task", task},
                                      {"repo", repo},
                                      {"provider", provider},
                                      {"validate", validate},
                                      {"max_iterations", max_iterations}});
  return reply["loop"].value("id", "");
}

struct TurnRun {
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
  double p50_first = 0, p50_last = 0;  // the first and last quarter of the turns
  double mean_at_ms = 0;               // from the journal's at_ms
  std::size_t intervals = 0;
};

// The intervals between consecutive model_turn steps of one iteration, as
// the follower received them.
TurnRun turn_figures(const std::vector<StepSeen>& steps, std::int64_t iteration) {
  std::vector<const StepSeen*> turns;
  for (const auto& step : steps)
    if (step.kind == "model_turn" && step.iteration == iteration) turns.push_back(&step);
  TurnRun r;
  std::vector<double> all;
  for (std::size_t i = 1; i < turns.size(); ++i) {
    if (turns[i]->sequence != turns[i - 1]->sequence + 1) continue;  // a dropped event
    all.push_back(ms_between(turns[i - 1]->received, turns[i]->received));
  }
  r.intervals = all.size();
  if (all.empty()) return r;
  r.p50 = loopr::bench::quantile(all, 0.5);
  r.p90 = loopr::bench::quantile(all, 0.9);
  r.p99 = loopr::bench::quantile(all, 0.99);
  r.max = loopr::bench::quantile(all, 1.0);
  const std::size_t quarter = std::max<std::size_t>(1, all.size() / 4);
  r.p50_first = median(std::vector<double>(all.begin(), all.begin() + static_cast<long>(quarter)));
  r.p50_last = median(std::vector<double>(all.end() - static_cast<long>(quarter), all.end()));
  r.mean_at_ms = static_cast<double>(turns.back()->at_ms - turns.front()->at_ms) /
                 static_cast<double>(turns.size() - 1);
  return r;
}

// Mean ms per turn of one iteration from the stored journal's at_ms (no
// follower needed).
double mean_turn_from_journal(Daemon& d, const std::string& id, std::int64_t iteration) {
  json steps =
      d.call("loop.transcript", {{"id", id}, {"iteration", iteration}, {"limit", 5000}})["steps"];
  std::vector<std::int64_t> at;
  for (const auto& step : steps)
    if (step.value("kind", "") == "model_turn") at.push_back(step.value("at_ms", std::int64_t{0}));
  if (at.size() < 2) return 0;
  return static_cast<double>(at.back() - at.front()) / static_cast<double>(at.size() - 1);
}

// ---- in-process: the store and the request ----

loopr::llm::ModelTurn sample_turn(int i) {
  loopr::llm::ModelTurn turn;
  turn.text = "Turn " + std::to_string(i) +
              ": I will look at the code before changing anything, starting with the file the "
              "task names.";
  turn.tool_calls = {{"t" + std::to_string(i), "read_file", R"({"path": "src/main.cpp"})"}};
  turn.stop_reason = loopr::llm::StopReason::tool_use;
  turn.model = "scripted";
  turn.usage.input_tokens = 1200;
  turn.usage.output_tokens = 60;
  return turn;
}

// The progress of a loop in iteration `iteration`: each earlier iteration
// failed validation with `output_bytes` of output (the engine keeps up to
// 8000 bytes of head and tail), as the engine records it.
loopr::loops::LoopProgress sample_progress(int iteration, std::size_t output_bytes) {
  loopr::loops::LoopProgress p;
  p.iteration = iteration;
  p.spend.model_turns = iteration * 12;
  p.spend.tool_calls = iteration * 11;
  p.turns_this_iteration = 3;
  p.calls_this_iteration = 2;
  const std::string output(output_bytes, 'e');
  for (int i = 1; i < iteration; ++i) {
    json validation = {
        {"passed", false}, {"exit_code", 1}, {"output", output}, {"duration_ms", 4200}};
    p.iterations.push_back({{"iteration", i},
                            {"started_at_ms", 1700000000000},
                            {"ended_at_ms", 1700000060000},
                            {"model_turns", 12},
                            {"tool_calls", 11},
                            {"commit", std::string(40, 'a')},
                            {"changed", true},
                            {"validation", validation}});
    p.notes.push_back("Iteration " + std::to_string(i) +
                      ": changed files; validation failed (exit 1)");
    p.last_validation = {{"iteration", i}, {"passed", false}, {"exit_code", 1}, {"output", output}};
    p.feedback = "`make test` exited with 1:\n" + output;
  }
  return p;
}

struct StoreFigures {
  double append_p50 = 0, append_p99 = 0, append_mean = 0;  // append_loop_step alone
  double build_p50 = 0;  // state to JSON and the step's data (persist's own work)
  std::size_t state_bytes = 0;
};

StoreFigures time_appends(const std::string& dir, int iteration, int appends) {
  namespace store = loopr::store;
  std::filesystem::remove_all(dir);
  store::Store db = store::Store::open(dir);
  loopr::loops::LoopSpec spec;
  spec.id = "c1";
  spec.type = "code";
  spec.task = "make the tests pass";
  spec.repo = "/src/app";
  spec.branch = "loop/c1";
  spec.worktree = "/src/.loopr-worktrees/c1";
  spec.provider = "anthropic";
  spec.model = "claude-sonnet-4-5";
  spec.validate = "make test";
  spec.prompt_template = "code";
  spec.tools = {"read_file", "write_file",  "edit_file", "list_directory", "glob",
                "grep",      "run_command", "build",     "test",           "complete_task"};
  spec.max_iterations = 50;
  const loopr::loops::LoopProgress progress = sample_progress(iteration, 8000);
  store::LoopRow row;
  row.id = spec.id;
  row.seq = 1;
  row.type = "code";
  row.status = "running";
  row.spec = spec.to_json();
  row.state = progress.to_json();
  if (auto ok = db.insert_loop(row); !ok) fail("insert_loop: " + ok.error().message);
  StoreFigures f;
  f.state_bytes = row.state.dump().size();
  std::vector<double> append, build;
  for (int i = 0; i < appends; ++i) {
    const auto t0 = Clock::now();
    row.state = progress.to_json();
    store::LoopStep step;
    step.loop_id = spec.id;
    step.iteration = iteration;
    step.kind = "model_turn";
    step.data = {{"sequence", i}, {"turn", loopr::llm::to_json(sample_turn(i))}};
    const auto t1 = Clock::now();
    auto id = db.append_loop_step(step, &row);
    const auto t2 = Clock::now();
    if (!id) fail("append_loop_step: " + id.error().message);
    build.push_back(ms_between(t0, t1));
    append.push_back(ms_between(t1, t2));
  }
  f.append_p50 = loopr::bench::quantile(append, 0.5);
  f.append_p99 = loopr::bench::quantile(append, 0.99);
  for (double ms : append)
    f.append_mean += ms / static_cast<double>(append.size());
  f.build_p50 = loopr::bench::quantile(build, 0.5);
  return f;
}

// The conversation after `turns` refused turns: the first prompt, then an
// assistant message (text + one call) and a tool result per turn.
std::vector<loopr::llm::Message> sample_messages(int turns) {
  using loopr::llm::Message;
  using loopr::llm::Role;
  std::vector<Message> messages = {Message{Role::user, std::string(2000, 'p'), {}, {}}};
  const std::string refusal =
      json{{"error",
            {{"code", "invalid_arguments"},
             {"message", "there is no tool 'no_such_tool' in this loop"},
             {"hint",
              "use one of: read_file, write_file, edit_file, list_directory, glob, grep, "
              "run_command, build, test, complete_task"}}}}
          .dump();
  for (int i = 0; i < turns; ++i) {
    const auto turn = sample_turn(i);
    messages.push_back(Message{Role::assistant, turn.text, turn.tool_calls, {}});
    Message results{Role::user, {}, {}, {}};
    loopr::llm::ToolResult result;
    result.call_id = turn.tool_calls[0].id;
    result.name = turn.tool_calls[0].name;
    result.content = refusal;
    result.is_error = true;
    results.tool_results.push_back(result);
    messages.push_back(std::move(results));
  }
  return messages;
}

struct RequestFigures {
  double copy_us = 0;      // request.messages = messages_; request.tools = tools
  double budget_us = 0;    // worst_budget_for_call's byte count
  double tools_us = 0;     // of which: the tool schemas
  double estimate_us = 0;  // the scripted provider's usage estimate (no "usage" in the session)
  std::size_t request_bytes = 0;
};

// Mirrors the per-turn work of LoopRun::model_phase and worst_budget_for_call
// (loops/loop_run.cpp) on a conversation of 1 + 2 * turns messages.
RequestFigures time_request(int turns, const std::vector<loopr::llm::ToolDefinition>& tools,
                            int repeats) {
  const auto messages = sample_messages(turns);
  const auto turn = sample_turn(turns);
  std::vector<double> copy, budget, tool_bytes, estimate;
  std::size_t sink = 0;
  RequestFigures f;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    loopr::llm::ModelRequest request;
    request.system = std::string(3000, 's');
    request.messages = messages;
    request.tools = tools;
    const auto t1 = Clock::now();
    std::size_t bytes = request.system.size();
    for (const auto& message : request.messages)
      bytes += loopr::llm::to_json(message).dump().size();
    const auto t2 = Clock::now();
    for (const auto& tool : request.tools)
      bytes += tool.name.size() + tool.description.size() + tool.input_schema.dump().size();
    const auto t3 = Clock::now();
    const auto usage = loopr::llm::estimate_usage(request, turn);
    const auto t4 = Clock::now();
    sink += bytes + static_cast<std::size_t>(usage.input_tokens);
    f.request_bytes = static_cast<std::size_t>(usage.input_tokens) * 4;
    copy.push_back(ms_between(t0, t1) * 1000);
    budget.push_back(ms_between(t1, t3) * 1000);
    tool_bytes.push_back(ms_between(t2, t3) * 1000);
    estimate.push_back(ms_between(t3, t4) * 1000);
  }
  if (sink == 0) std::printf(" ");
  f.copy_us = median(copy);
  f.budget_us = median(budget);
  f.tools_us = median(tool_bytes);
  f.estimate_us = median(estimate);
  return f;
}

void in_process(const std::string& base, int runs, int appends) {
  std::printf("\n== in-process (load %.2f) ==\n", load_average());
  for (int iteration : {1, 50}) {
    std::vector<double> append50, append99, append_mean, build50;
    std::size_t state_bytes = 0;
    const int n = iteration == 1 ? appends : std::max(100, appends / 4);
    for (int r = 0; r < runs; ++r) {
      auto f = time_appends(base + "/inproc-state", iteration, n);
      append50.push_back(f.append_p50);
      append99.push_back(f.append_p99);
      append_mean.push_back(f.append_mean);
      build50.push_back(f.build_p50);
      state_bytes = f.state_bytes;
    }
    std::printf(
        "append_loop_step, loop state of iteration %d (%zu B): p50 %.3f ms (runs %s), p99 %.3f "
        "ms, mean %.3f ms; building state+step JSON p50 %.3f ms; %d appends x %d runs\n",
        iteration, state_bytes, median(append50), spread(append50).c_str(), median(append99),
        median(append_mean), median(build50), n, runs);
  }
  const auto catalog = loopr::config::Catalog::builtin();
  const json definitions = loopr::config::llm_tool_definitions(
      catalog, {"read_file", "write_file", "edit_file", "list_directory", "glob", "grep",
                "run_command", "build", "test", "complete_task"});
  std::vector<loopr::llm::ToolDefinition> tools;
  for (const json& d : definitions)
    tools.push_back(
        {d.value("name", ""), d.value("description", ""), d.value("input_schema", json::object())});
  std::printf("%-10s %10s %12s %14s %12s %14s\n", "messages", "request B", "copy us",
              "budget bytes us", "(tools) us", "estimate us");
  for (int turns : {0, 50, 200}) {
    std::vector<double> copy, budget, tool_bytes, estimate;
    std::size_t bytes = 0;
    for (int r = 0; r < runs; ++r) {
      auto f = time_request(turns, tools, 200);
      copy.push_back(f.copy_us);
      budget.push_back(f.budget_us);
      tool_bytes.push_back(f.tools_us);
      estimate.push_back(f.estimate_us);
      bytes = f.request_bytes;
    }
    std::printf("%-10d %10zu %12.1f %14.1f %12.1f %14.1f\n", 1 + 2 * turns, bytes, median(copy),
                median(budget), median(tool_bytes), median(estimate));
  }
}

void against_daemon(const std::string& bin_dir, const std::string& base, int turns, int runs,
                    int idle_loops) {
  const std::string work = base + "/work", repo = work + "/repo";
  std::filesystem::create_directories(repo);
  std::filesystem::create_directories(base + "/config");
  std::filesystem::create_directories(base + "/scripts");
  std::filesystem::create_directories(base + "/run");
  std::ofstream(repo + "/app.txt") << "value = 1\n";
  const std::vector<std::string> git = {
      "git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-C", repo};
  auto git_run = [&](std::vector<std::string> args) {
    std::vector<std::string> all = git;
    all.insert(all.end(), args.begin(), args.end());
    if (run(all) != 0) fail("git " + args.front() + " failed");
  };
  git_run({"init", "-q", "-b", "main"});
  git_run({"add", "-A"});
  git_run({"commit", "-q", "-m", "start"});
  constexpr int kLateIteration = 50;
  write_turns_session(base + "/scripts/turns.jsonl", 0, turns, true, 0);
  write_turns_session(base + "/scripts/estimate.jsonl", 0, turns, false, 0);
  write_turns_session(base + "/scripts/paced.jsonl", 0, turns, true, 1);
  write_turns_session(base + "/scripts/late.jsonl", kLateIteration - 1, turns, true, 1);
  write_idle_session(base + "/scripts/idle.jsonl");
  write_typical_session(base + "/scripts/typical.jsonl");
  std::ofstream config(base + "/config/loopr.toml");
  config << "[sandbox]\nworktree_roots = [\"" << work << "\"]\n"
         << "[budgets.loop]\nturns_per_iteration = 100000\n"
         << "[loop_health]\nmalformed_call_limit = 1000\nunchanged_iteration_limit = 1000\n"
         << "[llm]\nprovider = \"turns\"\n";
  for (const char* name : {"turns", "estimate", "paced", "late", "idle", "typical"}) {
    config << "[providers." << name << "]\nkind = \"scripted\"\nscript = \"" << base << "/scripts/"
           << name << ".jsonl\"\n";
  }
  config.close();

  Daemon d = start_daemon(bin_dir, base);
  std::this_thread::sleep_for(std::chrono::seconds(1));  // runners up, start-up settled
  const double rss_start = d.rss_mb();
  const std::string rss_start_parts = rss_parts(d.pid);

  // idle: loops that pause
  std::printf("\n== idle loops (load %.2f) ==\n", load_average());
  std::vector<std::string> idle;
  for (int i = 0; i < idle_loops; ++i) {
    idle.push_back(create_loop(d, repo, "idle", "false", "stay idle " + std::to_string(i)));
    d.call("loop.pause", {{"id", idle.back()}});
  }
  for (const auto& id : idle) {
    for (int i = 0; i < 600 && d.loop(id).value("status", "") != "paused"; ++i)
      std::this_thread::sleep_for(
          std::chrono::milliseconds(50));  // until it reaches its pause point
  }
  int paused = 0;
  for (const auto& id : idle)
    if (d.loop(id).value("status", "") == "paused") ++paused;
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double rss_paused = d.rss_mb();
  const std::string rss_paused_parts = rss_parts(d.pid);
  for (const auto& id : idle)
    d.call("loop.cancel", {{"id", id}});
  for (const auto& id : idle)
    d.wait_final(id, std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double rss_cancelled = d.rss_mb();
  std::printf(
      "RSS before any loop %.2f MB (%s); with %d loops (%d paused) %.2f MB (%s; %.1f KB per "
      "loop); after cancelling them %.2f MB\n",
      rss_start, rss_start_parts.c_str(), idle_loops, paused, rss_paused, rss_paused_parts.c_str(),
      (rss_paused - rss_start) * 1024.0 / std::max(1, idle_loops), rss_cancelled);

  // turns
  std::printf("\n== per model turn, %d turns, %d runs ==\n", turns, runs);
  std::printf("%-4s %-34s %8s %8s %8s %8s %10s %10s %10s %6s\n", "run", "way", "p50 ms", "p90 ms",
              "p99 ms", "max ms", "p50 1st/4", "p50 4th/4", "at_ms mean", "load");
  std::map<std::string, std::vector<TurnRun>> paced_ways;
  std::map<std::string, std::vector<double>> means;
  std::vector<double> timer_p50s;
  auto print_paced = [&](int r, const std::string& way, const TurnRun& t) {
    std::printf("%-4d %-34s %8.3f %8.3f %8.3f %8.3f %10.3f %10.3f %10.3f %6.2f%s\n", r, way.c_str(),
                t.p50, t.p90, t.p99, t.max, t.p50_first, t.p50_last, t.mean_at_ms, load_average(),
                t.intervals + 1 < static_cast<std::size_t>(turns) ? " (events dropped)" : "");
  };
  for (int r = 1; r <= runs; ++r) {
    timer_p50s.push_back(timer_wait_p50_ms(200));
    for (const char* provider : {"turns", "estimate"}) {
      const std::string id = create_loop(d, repo, provider, "true", "bench turns");
      const std::string status = d.wait_final(id, std::chrono::milliseconds(100));
      if (status != "completed") fail("loop " + id + " ended " + status);
      const double mean = mean_turn_from_journal(d, id, 1);
      const std::string way =
          std::string("iter 1, unpaced, ") +
          (std::string(provider) == "turns" ? "usage given" : "usage estimated");
      means[way].push_back(mean);
      std::printf("%-4d %-34s %8s %8s %8s %8s %10s %10s %10.3f %6.2f\n", r, way.c_str(), "-", "-",
                  "-", "-", "-", "-", mean, load_average());
    }
    // "late" twice: validations that print 13 kB (the engine keeps 8 kB of
    // each in the loop's state) and validations that print nothing.
    for (const std::string way_name : {"paced", "late", "late-quiet"}) {
      const bool late = way_name != "paced";
      const std::string provider = late ? "late" : "paced";
      const std::string failing = way_name == "late" ? "seq 1 3000; exit 1" : "exit 1";
      Follower follower(d.socket);
      const std::string id =
          late ? create_loop(d, repo, provider, failing, "bench late turns", kLateIteration)
               : create_loop(d, repo, provider, "true", "bench turns");
      const auto status = follower.wait_final(id, std::chrono::minutes(10));
      if (!status || (*status != "completed" && !late)) {
        fail("loop " + id + " ended " + status.value_or("(timeout)") + ": " +
             d.loop(id).value("status_reason", ""));
      }
      const TurnRun t = turn_figures(follower.steps_of(id), late ? kLateIteration : 1);
      const std::string way =
          !late ? "iter 1, paced 1 ms, follower (raw)"
                : std::string("iter 50") +
                      (way_name == "late" ? " (8 kB outputs)" : " (no output)") + ", paced (raw)";
      print_paced(r, way, t);
      paced_ways[way].push_back(t);
    }
  }
  const double timer = median(timer_p50s);
  std::printf("medians of %d runs; a 1 ms asio timer waits %.3f ms p50 here (runs %s):\n", runs,
              timer, spread(timer_p50s).c_str());
  for (const auto& [way, list] : means) {
    std::printf("  %-34s at_ms mean %.3f ms (runs %s)\n", way.c_str(), median(list),
                spread(list).c_str());
  }
  for (const auto& [way, list] : paced_ways) {
    auto pick = [&](double TurnRun::*field) {
      std::vector<double> v;
      for (const auto& t : list)
        v.push_back(t.*field);
      return v;
    };
    std::printf(
        "  %-34s p50 %.3f ms (runs %s), p90 %.3f, p99 %.3f; p50 first quarter %.3f, last "
        "quarter %.3f; at_ms mean %.3f\n",
        way.c_str(), median(pick(&TurnRun::p50)), spread(pick(&TurnRun::p50)).c_str(),
        median(pick(&TurnRun::p90)), median(pick(&TurnRun::p99)), median(pick(&TurnRun::p50_first)),
        median(pick(&TurnRun::p50_last)), median(pick(&TurnRun::mean_at_ms)));
    std::printf("  %-34s minus the timer's wait: p50 %.3f, p90 %.3f, p99 %.3f ms\n", "",
                median(pick(&TurnRun::p50)) - timer, median(pick(&TurnRun::p90)) - timer,
                median(pick(&TurnRun::p99)) - timer);
  }

  // typical iteration
  std::printf("\n== one typical iteration (load %.2f) ==\n", load_average());
  const auto typical_start = Clock::now();
  const std::string typical =
      create_loop(d, repo, "typical", "grep -q 'value = 2' app.txt", "set value to 2");
  const std::string typical_status = d.wait_final(typical, std::chrono::milliseconds(20));
  const double typical_ms = ms_since(typical_start);
  json steps = d.call("loop.transcript", {{"id", typical}, {"limit", 5000}})["steps"];
  std::map<std::string, int> kinds;
  std::int64_t first_at = 0, last_at = 0;
  for (const auto& step : steps) {
    kinds[step.value("kind", "")] += 1;
    const std::int64_t at = step.value("at_ms", std::int64_t{0});
    if (first_at == 0) first_at = at;
    last_at = at;
  }
  std::printf("loop %s %s in %.0f ms (journal %lld ms); %zu journal steps:", typical.c_str(),
              typical_status.c_str(), typical_ms, static_cast<long long>(last_at - first_at),
              steps.size());
  for (const auto& [kind, count] : kinds)
    std::printf(" %s %d", kind.c_str(), count);
  std::printf("\n");
  const double rss_end = d.rss_mb();
  std::printf(
      "RSS at the end (%zu loops in memory) %.2f MB\n",
      static_cast<std::size_t>(d.call("loop.list", {{"include_deleted", true}})["loops"].size()),
      rss_end);

  ::kill(d.pid, SIGTERM);
  ::waitpid(d.pid, nullptr, 0);
  // The tool calls the store recorded for that loop: one transaction each.
  auto db = loopr::store::Store::open(d.state_dir);
  auto calls = db.recent_tool_calls(loopr::store::kMaxRecentToolCalls);
  if (!calls) fail("recent_tool_calls: " + calls.error().message);
  std::map<std::string, int> tools;
  int total = 0;
  for (const auto& call : *calls) {
    if (call.session != "loop:" + typical) continue;
    tools[call.tool] += 1;
    ++total;
  }
  std::printf("tool call records of %s: %d (", typical.c_str(), total);
  for (const auto& [tool, count] : tools)
    std::printf(" %s %d", tool.c_str(), count);
  std::printf(
      " ); SQLite transactions: %zu journal steps (one append_loop_step or insert_loop "
      "each) + %d tool call records = %zu\n",
      steps.size(), total, steps.size() + static_cast<std::size_t>(total));
}

}  // namespace

int main(int argc, char** argv) {
  int turns = 200, runs = 5, idle_loops = 50, appends = 2000;
  std::string only;
  std::string bin_dir = std::filesystem::canonical("/proc/self/exe").parent_path();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--turns") turns = std::max(3, std::atoi(argv[i + 1]));
    if (flag == "--runs") runs = std::max(1, std::atoi(argv[i + 1]));
    if (flag == "--idle-loops") idle_loops = std::max(1, std::atoi(argv[i + 1]));
    if (flag == "--appends") appends = std::max(10, std::atoi(argv[i + 1]));
    if (flag == "--bin-dir") bin_dir = argv[i + 1];
    if (flag == "--only") only = argv[i + 1];
  }
  char pattern[] = "/tmp/loopr-lbench-XXXXXX";
  const char* made = ::mkdtemp(pattern);
  if (made == nullptr) fail("mkdtemp failed");
  const std::string base = made;
  std::printf("loop_engine_bench: nproc %u, load %.2f, %s\n", std::thread::hardware_concurrency(),
              load_average(), base.c_str());
  if (only.empty() || only == "inproc") in_process(base, runs, appends);
  if (only.empty() || only == "daemon") against_daemon(bin_dir, base, turns, runs, idle_loops);
  std::filesystem::remove_all(base);
  return 0;
}
