// looprctl loop run | show | logs | pause | resume | cancel | delete | export,
// looprctl loops (docs/control-protocol.md, "Loops"). Following a loop as it
// runs is client/loop_follow.hpp; rendering is client/loop_view.hpp.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <ostream>

#include "client/client_paths.hpp"
#include "client/commands.hpp"
#include "client/loop_follow.hpp"
#include "client/loop_view.hpp"
#include "client/text_format.hpp"

namespace loopr::client {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// loop.create stores the loop and makes its worktree (git worktree add)
// before it answers: allow for a large repository.
constexpr Milliseconds kCreateTimeout{300'000};
// A transcript that claims more pages than this is a daemon bug, not a log.
constexpr std::size_t kMaxTranscriptPages = 100'000;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// result["loop"], which must be an object.
Result<json> loop_in(const json& result, const std::string& method) {
  if (!result.is_object() || !result.contains("loop") || !result["loop"].is_object()) {
    return make_error(errc::protocol, "the " + method + " result has no 'loop' object");
  }
  return result["loop"];
}

bool blank(const std::string& text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

// ---- Ctrl-C while following: detach, the loop goes on ----
//
// The handler may only use async-signal-safe calls: it writes a message
// prepared before it was installed and leaves with _exit(0). Everything the
// follower printed was flushed already (it flushes after every event).

char g_detach_message[512];
std::size_t g_detach_length = 0;
volatile std::sig_atomic_t g_mid_line = 0;

extern "C" void detach_on_sigint(int) {
  if (g_mid_line != 0) (void)!::write(STDOUT_FILENO, "\n", 1);
  (void)!::write(STDERR_FILENO, g_detach_message, g_detach_length);
  ::_exit(0);
}

// Installs the detaching SIGINT handler for its lifetime, then puts back the
// one there was before.
class DetachOnInterrupt {
 public:
  explicit DetachOnInterrupt(const std::string& loop_id) {
    const std::string message =
        "detached; the loop goes on \xe2\x80\x94 follow it with: "
        "looprctl loop logs " +
        shell_word(loop_id) + " --follow\n";
    g_detach_length = std::min(message.size(), sizeof g_detach_message);
    std::memcpy(g_detach_message, message.data(), g_detach_length);
    g_mid_line = 0;
    struct sigaction action {};
    action.sa_handler = detach_on_sigint;
    sigemptyset(&action.sa_mask);
    installed_ = ::sigaction(SIGINT, &action, &previous_) == 0;
  }
  ~DetachOnInterrupt() {
    if (installed_) ::sigaction(SIGINT, &previous_, nullptr);
  }
  DetachOnInterrupt(const DetachOnInterrupt&) = delete;
  DetachOnInterrupt& operator=(const DetachOnInterrupt&) = delete;

 private:
  struct sigaction previous_ {};
  bool installed_ = false;
};

json create_params(const LoopRunOptions& options, const std::string& repo) {
  json params = {{"type", options.type}, {"task", options.task}, {"repo", repo}};
  if (options.base) params["base"] = *options.base;
  if (options.provider) params["provider"] = *options.provider;
  if (options.model) params["model"] = *options.model;
  if (options.max_iterations) params["max_iterations"] = *options.max_iterations;
  if (options.budget_usd) params["budget"] = {{"usd", *options.budget_usd}};
  if (options.validate) params["validate"] = *options.validate;
  return params;
}

Result<json> subscribe(ControlClient& client, std::vector<std::string> topics,
                       const std::optional<std::string>& loop_id) {
  json params = {{"topics", std::move(topics)}};
  if (loop_id) params["loop_id"] = *loop_id;
  auto subscribed = client.call("events.subscribe", std::move(params));
  if (!subscribed) return subscribed;
  if (!subscribed->is_object()) {
    return make_error(errc::protocol, "the events.subscribe result is not an object");
  }
  return subscribed;
}

}  // namespace

// ---- loop run ----

int run_loop_run(const CommandContext& context, const LoopRunOptions& options) {
  if (blank(options.task)) {
    return context.fail(make_error(failure::usage, "the task is empty",
                                   "say what the loop should do, e.g. looprctl loop run --repo . "
                                   "\"make the tests pass\""));
  }
  if (options.budget_usd && !(std::isfinite(*options.budget_usd) && *options.budget_usd > 0)) {
    return context.fail(make_error(failure::usage, "--budget-usd must be a positive number"));
  }
  auto repo = absolute_folder(options.repo, "the repository", "--repo");
  if (!repo) return context.fail(repo.error());

  auto client = context.open();
  if (!client) return context.fail(client.error());
  // Subscribed before the loop exists, so none of its events can be missed;
  // other loops' events are filtered out by id.
  if (!options.detach) {
    auto subscribed = subscribe(*client, {"loop", "chat", "provider", "tool"}, std::nullopt);
    if (!subscribed) return context.fail(subscribed.error());
  }
  auto created = client->call("loop.create", create_params(options, *repo), kCreateTimeout);
  if (!created) return context.fail(created.error());
  auto loop = loop_in(*created, "loop.create");
  if (!loop) return context.fail(loop.error());
  const std::string id = string_of(*loop, "id");
  if (id.empty()) {
    return context.fail(make_error(errc::protocol, "the loop.create result has a loop without id"));
  }

  if (options.detach) {
    if (context.json) {
      context.print_json(*loop);
    } else {
      context.out << printable(id) << '\n';
    }
    return to_int(ExitStatus::ok);
  }

  if (context.json) {
    context.out << compact_json(*created) << '\n';
  } else {
    context.out << "loop " << printable(id) << ": " << cell(*loop, "status") << " on branch "
                << cell(*loop, "branch") << " in " << cell(*loop, "worktree") << '\n'
                << "(Ctrl-C detaches; the loop goes on)\n";
  }
  context.out.flush();

  std::string status = loop_status(*loop);
  if (!is_final_status(status)) {
    DetachOnInterrupt detach(id);
    LoopPrinter printer(id, FollowStyle::live, context.json, context.out);
    printer.set_status(status);
    printer.set_mid_line_flag(&g_mid_line);
    auto followed = follow_loop(*client, printer, FollowOptions{}, context.err);
    if (!followed) return context.fail(followed.error());
    status = *followed;
  }

  // The summary comes from the store: events may have been dropped.
  auto got = client->call("loop.get", {{"id", id}});
  if (!got) return context.fail(got.error());
  auto final_loop = loop_in(*got, "loop.get");
  if (!final_loop) return context.fail(final_loop.error());
  if (is_final_status(loop_status(*final_loop))) status = loop_status(*final_loop);
  if (context.json) {
    context.out << compact_json(*got) << '\n';
  } else {
    print_loop_summary(*final_loop, context.out);
  }
  return to_int(status == "completed" ? ExitStatus::ok : ExitStatus::call_failed);
}

// ---- loops, loop show ----

int run_loops(const CommandContext& context, const LoopListOptions& options) {
  json params = {{"include_deleted", options.all}};
  if (options.status) params["status"] = *options.status;
  if (options.type) params["type"] = *options.type;
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call("loop.list", std::move(params));
  if (!result) return context.fail(result.error());
  auto loops = objects_in(*result, "loops", "loop.list");
  if (!loops) return context.fail(loops.error());
  if (context.json) {
    context.print_json(*result);
  } else {
    print_loop_table(*loops, now_ms(), context.out);
  }
  return to_int(ExitStatus::ok);
}

int run_loop_show(const CommandContext& context, const std::string& id) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call("loop.get", {{"id", id}});
  if (!result) return context.fail(result.error());
  auto loop = loop_in(*result, "loop.get");
  if (!loop) return context.fail(loop.error());
  if (context.json) {
    context.print_json(*result);
  } else {
    print_loop_details(*loop, now_ms(), context.out);
  }
  return to_int(ExitStatus::ok);
}

// ---- loop logs ----

int run_loop_logs(const CommandContext& context, const LoopLogsOptions& options) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  std::string status;
  if (options.follow) {
    // Subscribed before the transcript is read: a step stored meanwhile
    // arrives as an event too, and the printer skips it by id.
    auto subscribed = subscribe(*client, {"loop", "chat", "provider"}, options.id);
    if (!subscribed) return context.fail(subscribed.error());
    auto got = client->call("loop.get", {{"id", options.id}});
    if (!got) return context.fail(got.error());
    auto loop = loop_in(*got, "loop.get");
    if (!loop) return context.fail(loop.error());
    status = loop_status(*loop);
  }

  LoopPrinter printer(options.id, FollowStyle::journal, context.json, context.out);
  printer.set_iteration_filter(options.iteration);
  json after;
  for (std::size_t page = 0;; ++page) {
    if (page == kMaxTranscriptPages) {
      return context.fail(make_error(errc::protocol, "loop.transcript never ends (more: true)"));
    }
    json params = {{"id", options.id}};
    if (options.iteration) params["iteration"] = *options.iteration;
    if (!after.is_null()) params["after"] = after;
    auto result = client->call("loop.transcript", std::move(params));
    if (!result) return context.fail(result.error());
    auto steps = objects_in(*result, "steps", "loop.transcript");
    if (!steps) return context.fail(steps.error());
    for (const json& step : *steps)
      printer.step(step);
    const auto more = result->find("more");
    if (more == result->end() || !more->is_boolean() || !more->get<bool>()) break;
    const json last = steps->empty() ? json() : steps->back().value("id", json());
    if (last.is_null() || last == after) {
      return context.fail(
          make_error(errc::protocol, "loop.transcript says 'more' but its page does not advance"));
    }
    after = last;
  }

  if (options.follow && !is_final_status(status)) {
    auto followed = follow_loop(*client, printer, FollowOptions{}, context.err);
    if (!followed) return context.fail(followed.error());
  }
  return to_int(ExitStatus::ok);
}

// ---- loop pause | resume | cancel, loop delete ----

int run_loop_control(const CommandContext& context, LoopControl control, const std::string& id) {
  const char* method = control == LoopControl::pause    ? "loop.pause"
                       : control == LoopControl::resume ? "loop.resume"
                                                        : "loop.cancel";
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call(method, {{"id", id}});
  if (!result) return context.fail(result.error());
  auto loop = loop_in(*result, method);
  if (!loop) return context.fail(loop.error());
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  const std::string status = loop_status(*loop);
  context.out << "loop " << cell(*loop, "id") << ": " << cell(*loop, "status");
  if (control == LoopControl::pause && status == "running") {
    context.out << " (it pauses after the current model turn)";
  }
  context.out << '\n';
  return to_int(ExitStatus::ok);
}

int run_loop_delete(const CommandContext& context, const LoopDeleteOptions& options) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call("loop.delete", {{"id", options.id},
                                             {"remove_worktree", options.remove_worktree},
                                             {"remove_branch", options.remove_branch}});
  if (!result) return context.fail(result.error());
  if (!result->is_object()) {
    return context.fail(make_error(errc::protocol, "the loop.delete result is not an object"));
  }
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  const auto removed = [&](const char* key) {
    const json value = result->value(key, json());
    return value.is_boolean() && value.get<bool>() ? "removed" : "kept";
  };
  context.out << "deleted loop " << printable(options.id) << "; worktree "
              << removed("worktree_removed") << ", branch " << removed("branch_removed") << '\n';
  return to_int(ExitStatus::ok);
}

// ---- loop export ----

int run_loop_export(const CommandContext& context, const std::string& id) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call("loop.export", {{"id", id}});
  if (!result) return context.fail(result.error());
  auto turns = objects_in(*result, "turns", "loop.export");
  if (!turns) return context.fail(turns.error());
  // JSON Lines whatever --json says: a scripted provider's session file.
  for (const json& turn : *turns)
    context.out << compact_json(turn) << '\n';
  return to_int(ExitStatus::ok);
}

}  // namespace loopr::client
