// looprctl loop run | show | logs | pause | resume | cancel | delete | export,
// looprctl loops [--tree] (docs/control-protocol.md, "Loops"). Following a
// loop as it runs is client/loop_follow.hpp; rendering is client/loop_view.hpp
// (and client/loop_tree.hpp for --tree).
#include <cmath>
#include <filesystem>
#include <ostream>

#include "client/client_paths.hpp"
#include "client/commands.hpp"
#include "client/loop_follow.hpp"
#include "client/loop_spec_params.hpp"
#include "client/loop_tree.hpp"
#include "client/loop_view.hpp"
#include "client/text_format.hpp"

namespace loopr::client {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// loop.create and loop.create_plan store the loop and make its worktree (git
// worktree add) before they answer: allow for a large repository.
constexpr Milliseconds kCreateTimeout{300'000};
// A transcript that claims more pages than this is a daemon bug, not a log.
constexpr std::size_t kMaxTranscriptPages = 100'000;
// How long `loop cancel` waits to print the status the loop ends in.
constexpr Milliseconds kCancelWait{60'000};

json create_params(const LoopRunOptions& options, const std::string& repo) {
  proto::LoopCreateParams params;
  params.type = options.type;
  params.task = options.task;
  params.spec = spec_params(repo, options.base, options.provider, options.model,
                            options.validate_timeout_s, options.include_uncommitted);
  if (options.max_iterations) {
    params.spec.max_iterations = static_cast<std::int64_t>(*options.max_iterations);
  }
  if (options.budget_usd) params.spec.budget = {{"usd", *options.budget_usd}};
  params.spec.validate = options.validate;
  return proto::to_json(params);
}

}  // namespace

// ---- loop run ----

Result<LiveLoop> start_live_loop(const CommandContext& context, const LiveLoopStart& start) {
  auto client = context.open();
  if (!client) return std::move(client).error();
  // Subscribed before the loop exists, so none of its events can be missed;
  // other loops' events are filtered out by id.
  if (start.follow) {
    auto subscribed =
        subscribe_events(*client, {"loop", "chat", "provider", "tool", "approval"}, std::nullopt);
    if (!subscribed) return std::move(subscribed).error();
  }
  auto created = client->call(start.method, start.params, kCreateTimeout);
  if (!created) return std::move(created).error();
  auto loop = object_in(*created, "loop", start.method);
  if (!loop) return std::move(loop).error();
  LiveLoop live{std::move(*client), string_of(*loop, "id"), loop_status(*loop)};
  if (live.id.empty()) {
    return make_error(errc::protocol, "the " + start.method + " result has a loop without id");
  }

  const json& uncommitted = member(*loop, "uncommitted");
  if (!start.follow) {
    if (context.json) {
      context.print_json(*loop);
    } else {
      context.out << printable(live.id) << '\n';
      // Said on stderr: stdout holds the id alone, for scripts.
      print_uncommitted(member(uncommitted, "paths"), member(uncommitted, "included"), context.err);
    }
    return live;
  }

  if (context.json) {
    context.out << compact_json(*created) << '\n';
  } else {
    context.out << start.noun << ' ' << printable(live.id) << ": " << cell(*loop, "status")
                << " on branch " << cell(*loop, "branch") << " in " << cell(*loop, "worktree")
                << '\n'
                << "(Ctrl-C detaches; the " << start.noun << " goes on)\n";
    print_uncommitted(member(uncommitted, "paths"), member(uncommitted, "included"), context.out);
  }
  context.out.flush();

  LoopPrinter printer(live.id, FollowStyle::live, context.json, context.out);
  if (start.stop_at) printer.stop_at(*start.stop_at);
  // Nobody at a headless run can answer an approval.
  if (context.json) printer.stop_at(kCallAwaitsApproval);
  if (printer.stops_at(live.status)) return live;
  DetachOnInterrupt detach("detached; the " + start.noun + " goes on \xe2\x80\x94 " +
                           start.after_detach(live.id) + "\n");
  printer.set_status(live.status);
  printer.set_mid_line_flag(detach.mid_line_flag());
  auto followed = follow_loop(live.client, printer, FollowOptions{}, context.err);
  if (!followed) return std::move(followed).error();
  live.status = *followed;
  return live;
}

int run_loop_run(const CommandContext& context, const LoopRunOptions& options) {
  // Followed, the exit status is the loop's outcome (failure.hpp).
  const auto fail = [&](const Error& error) {
    return options.detach ? context.fail(error) : context.fail_outcome(error);
  };
  if (blank(options.task)) {
    return fail(make_error(failure::usage, "the task is empty",
                           "say what the loop should do, e.g. looprctl loop run --repo . "
                           "\"make the tests pass\""));
  }
  if (options.budget_usd && !(std::isfinite(*options.budget_usd) && *options.budget_usd > 0)) {
    return fail(make_error(failure::usage, "--budget-usd must be a positive number"));
  }
  auto repo = absolute_folder(options.repo, "the repository", "--repo");
  if (!repo) return fail(repo.error());

  auto started =
      start_live_loop(context, LiveLoopStart{"loop.create", create_params(options, *repo), "loop",
                                             [](const std::string& id) {
                                               return "follow it with: looprctl loop logs " +
                                                      shell_word(id) + " --follow";
                                             },
                                             std::nullopt, !options.detach});
  if (!started) return fail(started.error());
  if (options.detach) return to_int(ExitStatus::ok);
  auto& client = started->client;
  const std::string& id = started->id;
  std::string status = started->status;

  // The summary comes from the store: events may have been dropped.
  auto got = client.call<proto::methods::LoopGet>({id});
  if (!got) return fail(got.error());
  auto final_loop = object_in(*got, "loop", "loop.get");
  if (!final_loop) return fail(final_loop.error());
  if (is_final_status(loop_status(*final_loop))) status = loop_status(*final_loop);
  if (context.json) {
    context.out << compact_json(*got) << '\n';
  } else {
    print_loop_summary(*final_loop, context.out);
  }
  if (status == kCallAwaitsApproval) {
    context.err << "looprctl: loop " << printable(id)
                << " waits for an approval and goes on waiting: see looprctl approvals, or "
                   "allow the command in loopr.toml\n";
  }
  return outcome_exit_status(status);
}

// ---- loops, loop show ----

int run_loops(const CommandContext& context, const LoopListOptions& options) {
  proto::LoopListParams params;
  params.status = options.status.value_or("");
  params.type = options.type.value_or("");
  params.include_deleted = options.all;
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call<proto::methods::LoopList>(params);
  if (!result) return context.fail(result.error());
  auto loops = objects_in(*result, "loops", "loop.list");
  if (!loops) return context.fail(loops.error());
  if (context.json) {
    context.print_json(*result);
  } else if (options.tree) {
    print_loop_tree(*loops, context.out);
  } else {
    print_loop_table(*loops, now_ms(), context.out);
  }
  return to_int(ExitStatus::ok);
}

int run_loop_show(const CommandContext& context, const std::string& id) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call<proto::methods::LoopGet>({id});
  if (!result) return context.fail(result.error());
  auto loop = object_in(*result, "loop", "loop.get");
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
    auto subscribed = subscribe_events(*client, {"loop", "chat", "provider"}, options.id);
    if (!subscribed) return context.fail(subscribed.error());
    auto got = client->call<proto::methods::LoopGet>({options.id});
    if (!got) return context.fail(got.error());
    auto loop = object_in(*got, "loop", "loop.get");
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
    proto::LoopTranscriptParams params;
    params.id = options.id;
    params.iteration = options.iteration;
    if (after.is_number_integer()) params.after = after.get<std::int64_t>();
    auto result = client->call<proto::methods::LoopTranscript>(params);
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
  // A cancel answers at once, while the loop's current call is stopped: the
  // status it ends in arrives as loop.updated (subscribed first, so it
  // cannot be missed).
  const bool cancel = control == LoopControl::cancel;
  if (cancel) {
    if (auto subscribed = subscribe_events(*client, {"loop"}, id); !subscribed) {
      return context.fail(subscribed.error());
    }
  }
  auto result = client->call(method, proto::to_json(proto::LoopIdParams{id}));
  if (!result) return context.fail(result.error());
  auto loop = object_in(*result, "loop", method);
  if (!loop) return context.fail(loop.error());
  if (cancel && !is_final_status(loop_status(*loop))) {
    const auto deadline = std::chrono::steady_clock::now() + kCancelWait;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto left =
          std::chrono::duration_cast<Milliseconds>(deadline - std::chrono::steady_clock::now());
      auto event = client->next_event(left);
      if (!event) return context.fail(event.error());
      if (!*event) break;
      if ((*event)->event != "loop.updated") continue;
      const json& updated = member((*event)->data, "loop");
      if (string_of(updated, "id") != id) continue;
      *loop = updated;
      (*result)["loop"] = updated;
      if (is_final_status(loop_status(updated))) break;
    }
  }
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  const std::string status = loop_status(*loop);
  context.out << "loop " << cell(*loop, "id") << ": " << cell(*loop, "status");
  if (control == LoopControl::pause && status == "running") {
    context.out << " (it pauses after the current model turn)";
  }
  if (cancel && !is_final_status(status)) {
    context.out << " (cancel requested; it ends when its current call has stopped)";
  }
  context.out << '\n';
  return to_int(ExitStatus::ok);
}

int run_loop_delete(const CommandContext& context, const LoopDeleteOptions& options) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call<proto::methods::LoopDelete>(
      {options.id, options.remove_worktree, options.remove_branch});
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
  auto result = client->call<proto::methods::LoopExport>({id});
  if (!result) return context.fail(result.error());
  auto turns = objects_in(*result, "turns", "loop.export");
  if (!turns) return context.fail(turns.error());
  // JSON Lines whatever --json says: a scripted provider's session file.
  for (const json& turn : *turns)
    context.out << compact_json(turn) << '\n';
  return to_int(ExitStatus::ok);
}

}  // namespace loopr::client
