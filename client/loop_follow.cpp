#include "client/loop_follow.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <ostream>

#include "client/approval_view.hpp"
#include "client/failure.hpp"
#include "client/loop_tree.hpp"
#include "client/loop_view.hpp"
#include "client/text_format.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;

constexpr std::size_t kReasonWidth = 200;
constexpr std::size_t kFilesShown = 10;

std::string key_of(const json& value) {
  return compact_json(value);
}

std::string turn_key(const json& iteration, const json& sequence) {
  return key_of(iteration) + "/" + key_of(sequence);
}

// Inserts `key`; a set that reached the cap starts over (a step or turn
// printed long ago may then print again, which is harmless).
void remember(std::set<std::string>& set, std::string key) {
  if (set.size() >= LoopPrinter::kMaxRemembered) set.clear();
  set.insert(std::move(key));
}

bool is_true(const json& value) {
  return value.is_boolean() && value.get<bool>();
}

// Hands each event to `on_event` until it returns a status. After
// `options.status_check` without an event, or once events were dropped,
// asks `ask` (loop.get, plan.get) for one. `end_line` runs before anything
// is written on `err` and before it returns.
Result<std::string> follow_events(
    ControlClient& client, const FollowOptions& options, std::ostream& err,
    const std::function<std::optional<std::string>(const proto::Event&)>& on_event,
    const std::function<Result<std::optional<std::string>>()>& ask,
    const std::function<void()>& end_line) {
  std::uint64_t dropped_seen = client.dropped_events();
  for (;;) {
    auto event = client.next_event(options.status_check);
    if (!event) {
      end_line();
      return std::move(event).error();
    }
    bool asking = !*event;
    if (client.dropped_events() > dropped_seen) {
      end_line();
      err << "looprctl: " << client.dropped_events() - dropped_seen
          << " events were dropped (arrived faster than they were printed)\n";
      dropped_seen = client.dropped_events();
      asking = true;
    }
    if (*event) {
      if (auto status = on_event(**event)) return *status;
    }
    if (!asking) continue;
    auto status = ask();
    if (!status || *status) {
      end_line();
      if (!status) return std::move(status).error();
      return **status;
    }
  }
}

}  // namespace

LoopPrinter::LoopPrinter(std::string loop_id, FollowStyle style, bool json, std::ostream& out)
    : loop_id_(std::move(loop_id)), style_(style), json_(json), out_(out) {}

bool LoopPrinter::stops_at(std::string_view status) const {
  return is_final_status(status) || stop_statuses_.find(status) != stop_statuses_.end();
}

void LoopPrinter::set_mid_line(bool mid_line) {
  mid_line_ = mid_line;
  if (mid_line_flag_ != nullptr) *mid_line_flag_ = mid_line ? 1 : 0;
}

void LoopPrinter::end_line() {
  if (!mid_line_) return;
  out_ << '\n';
  set_mid_line(false);
  out_.flush();
}

void LoopPrinter::flush() {
  out_.flush();
}

bool LoopPrinter::in_filter(const json& iteration) const {
  if (!iteration_) return true;
  return iteration.is_number_integer() && iteration.get<std::int64_t>() == *iteration_;
}

bool LoopPrinter::remember_step(const json& id) {
  if (id.is_number_integer()) {
    const auto number = id.get<std::int64_t>();
    if (max_step_id_ && number <= *max_step_id_) return false;
    max_step_id_ = number;
    return true;
  }
  if (id.is_null()) return true;  // cannot tell; print it
  std::string key = key_of(id);
  if (other_step_ids_.count(key) != 0) return false;
  remember(other_step_ids_, std::move(key));
  return true;
}

std::optional<std::string> LoopPrinter::step(const json& step) {
  if (!step.is_object()) return std::nullopt;
  if (!remember_step(member(step, "id"))) return std::nullopt;
  const std::string kind = string_of(step, "kind");
  const json& data = member(step, "data");
  std::optional<std::string> final_status;
  if (kind == "status" && stops_at(string_of(data, "status"))) {
    final_status = string_of(data, "status");
  }
  if (!in_filter(member(step, "iteration"))) return final_status;

  if (json_) {
    if (style_ == FollowStyle::journal) out_ << compact_json(step) << '\n';
  } else if (style_ == FollowStyle::live) {
    live_step(step);
  } else {
    bool model_text = true;
    if (kind == "model_turn") {
      std::string key = turn_key(member(step, "iteration"), member(data, "sequence"));
      model_text = turns_streamed_.count(key) == 0;
      remember(turns_shown_, std::move(key));
    }
    end_line();
    print_step(step, model_text, out_);
  }
  flush();
  return final_status;
}

void LoopPrinter::live_step(const json& step) {
  const std::string kind = string_of(step, "kind");
  const json& data = member(step, "data");
  const json& iteration = member(step, "iteration");
  if (kind == "iteration_started") {
    iteration_header(iteration);
  } else if (kind == "model_turn") {
    std::string key = turn_key(iteration, member(data, "sequence"));
    const bool streamed = turns_streamed_.count(key) != 0;
    remember(turns_shown_, std::move(key));
    if (!streamed) {
      end_line();
      print_step(step, true, out_);
    }
  } else if (kind == "note" || kind == "committed" || kind == "validation_started" ||
             kind == "tool_calls_started") {
    end_line();
    print_step(step, false, out_);
  } else if (kind == "validation") {
    validation(iteration, data);
  }
  // what the calls gave arrives as tool.* events, status changes as loop.updated.
}

bool LoopPrinter::is_ours(const proto::Event& event) const {
  if (event.event == "loop.created" || event.event == "loop.updated") {
    return string_of(member(event.data, "loop"), "id") == loop_id_;
  }
  return string_of(event.data, "loop_id") == loop_id_;
}

std::optional<std::string> LoopPrinter::event(const proto::Event& event) {
  if (!is_ours(event)) return std::nullopt;
  const json& data = event.data;
  std::optional<std::string> final_status;
  if (event.event == "loop.updated") {
    const std::string status = loop_status(member(data, "loop"));
    if (stops_at(status)) final_status = status;
  }

  // A call of this loop waits for a person: a headless run stops here.
  if (event.event == "approval.requested" && stops_at(kCallAwaitsApproval)) {
    final_status = kCallAwaitsApproval;
  }

  if (json_ && style_ == FollowStyle::live) {
    out_ << compact_json(proto::to_json(event)) << '\n';
    flush();
    if (event.event == "loop.step") {
      const json& step = member(data, "step");
      const json& step_data = member(step, "data");
      const std::string status = string_of(step_data, "status");
      if (string_of(step, "kind") == "status" && stops_at(status)) final_status = status;
    }
    return final_status;
  }

  if (event.event == "loop.step") {
    auto status = step(member(data, "step"));
    if (status) final_status = status;
  } else if (event.event == "chat.chunk") {
    if (!json_) print_chunk(data);
  } else if (event.event == "provider.retry") {
    if (!json_) print_retry(data);
  } else if (style_ == FollowStyle::live) {
    if (event.event == "loop.updated") {
      const json& loop = member(data, "loop");
      const std::string status = loop_status(loop);
      if (!status.empty() && status != last_status_ && !stops_at(status) && !last_status_.empty()) {
        end_line();
        out_ << "status: " << printable(status);
        const std::string reason = string_of(loop, "status_reason");
        if (!reason.empty()) out_ << " (" << first_line(reason, 200) << ')';
        out_ << '\n';
      }
      if (!status.empty()) last_status_ = status;
    } else if (event.event == "loop.iteration") {
      const std::string phase = string_of(data, "phase");
      if (phase == "started") iteration_header(member(data, "iteration"));
      if (phase == "validated") validation(member(data, "iteration"), member(data, "validation"));
    } else if (event.event == "tool.started") {
      const std::string call_id = string_of(data, "call_id");
      if (!call_id.empty()) {
        if (tool_names_.size() >= kMaxRemembered) tool_names_.clear();
        tool_names_[call_id] = string_of(data, "tool");
      }
    } else if (event.event == "tool.finished") {
      print_tool_finished(data);
    } else if (event.event == "approval.requested") {
      end_line();
      out_ << waiting_for_approval_line(data) << '\n';
    } else if (event.event == "tool.queued") {
      end_line();
      out_ << "waiting: " << printable(string_of(data, "tool"))
           << printable(waiting_text(data)).substr(1) << '\n';
    }
  }
  if (final_status) end_line();
  flush();
  return final_status;
}

void LoopPrinter::print_chunk(const json& data) {
  if (!in_filter(member(data, "iteration"))) return;
  std::string key = turn_key(member(data, "iteration"), member(data, "sequence"));
  if (turns_shown_.count(key) != 0) return;  // printed from the journal already
  const std::string text = string_of(data, "text");
  if (text.empty()) return;
  out_ << printable_lines(text);
  set_mid_line(text.back() != '\n');
  remember(turns_streamed_, std::move(key));
}

void LoopPrinter::print_retry(const json& data) {
  end_line();
  out_ << "provider " << cell(data, "provider") << ": retry " << cell(data, "attempt") << '/'
       << cell(data, "max_retries") << " in " << format_duration_ms(member(data, "delay_ms"));
  const std::string reason = string_of(data, "reason");
  if (!reason.empty()) out_ << ": " << first_line(reason, 200);
  out_ << '\n';
}

void LoopPrinter::print_tool_finished(const json& data) {
  const std::string call_id = string_of(data, "call_id");
  std::string tool = string_of(data, "tool");
  const auto it = tool_names_.find(call_id);
  if (it != tool_names_.end()) {
    if (tool.empty()) tool = it->second;
    tool_names_.erase(it);
  }
  std::string status = string_of(data, "status");
  if (status.empty()) status = is_true(member(data, "ok")) ? "ok" : "failed";
  end_line();
  out_ << "  tool " << (tool.empty() ? "?" : printable(tool)) << ": " << printable(status) << ", "
       << format_duration_ms(member(data, "duration_ms")) << '\n';
}

void LoopPrinter::iteration_header(const json& iteration) {
  std::string key = key_of(iteration);
  if (headers_shown_.count(key) != 0) return;
  remember(headers_shown_, std::move(key));
  end_line();
  out_ << "== iteration " << printable(compact_json(iteration)) << " ==\n";
}

void LoopPrinter::validation(const json& iteration, const json& result) {
  if (!result.is_object()) return;
  std::string key = key_of(iteration);
  if (validations_shown_.count(key) != 0) return;
  remember(validations_shown_, std::move(key));
  end_line();
  print_validation(result, kValidationTail, out_);
}

Result<std::string> follow_loop(ControlClient& client, LoopPrinter& printer,
                                const FollowOptions& options, std::ostream& err) {
  return follow_events(
      client, options, err, [&](const proto::Event& event) { return printer.event(event); },
      [&]() -> Result<std::optional<std::string>> {
        auto got = client.call<proto::methods::LoopGet>({printer.loop_id()});
        if (!got) return std::move(got).error();
        const std::string status = loop_status(member(*got, "loop"));
        if (printer.stops_at(status)) return std::optional<std::string>(status);
        return std::optional<std::string>();
      },
      [&] { printer.end_line(); });
}

// ---- a plan's tree ----

PlanTreePrinter::PlanTreePrinter(std::string plan_id, bool json, std::ostream& out)
    : plan_id_(std::move(plan_id)), json_(json), out_(out) {}

bool PlanTreePrinter::stops_at(std::string_view status) {
  return is_final_status(status) || status == "awaiting_approval";
}

bool PlanTreePrinter::is_ours(const json& loop) const {
  return string_of(loop, "id") == plan_id_ || string_of(loop, "plan_id") == plan_id_;
}

bool PlanTreePrinter::is_our_id(const std::string& loop_id) const {
  if (loop_id.empty()) return false;
  if (loop_id == plan_id_ || seen_.count(loop_id) != 0) return true;
  return loop_id.size() > plan_id_.size() + 1 &&
         loop_id.compare(0, plan_id_.size(), plan_id_) == 0 && loop_id[plan_id_.size()] == '-';
}

void PlanTreePrinter::known(const json& loop) {
  loop_seen(loop, false);
}

std::optional<std::string> PlanTreePrinter::loop_seen(const json& loop, bool print) {
  const std::string id = string_of(loop, "id");
  const std::string status = loop_status(loop);
  if (id.empty() || status.empty()) return std::nullopt;
  std::string shown = status + '\n' + string_of(loop, "queue_reason");
  auto [it, added] = seen_.try_emplace(id, shown);
  const bool changed = added || it->second != shown;
  it->second = std::move(shown);
  if (changed && print) {
    out_ << printable(id) << ": " << status_with_reason(loop, kReasonWidth, true) << '\n';
  }
  if (id == plan_id_ && stops_at(status)) return status;
  return std::nullopt;
}

std::optional<std::string> PlanTreePrinter::event(const proto::Event& event) {
  const json& data = event.data;
  const bool merge = event.event == "loop.merged" || event.event == "loop.merge_conflict";
  const json* loop = nullptr;
  if (event.event == "loop.created" || event.event == "loop.updated") {
    loop = &member(data, "loop");
  } else if (event.event.rfind("plan.", 0) == 0) {
    loop = &member(data, "plan");
  }
  const bool approval = event.event == "approval.requested";
  const bool ours = loop != nullptr ? is_ours(*loop)
                                    : (merge || approval) && is_our_id(string_of(data, "loop_id"));
  if (!ours) return std::nullopt;

  std::optional<std::string> stop;
  // A call of one of the plan's loops waits for a person: a headless run
  // stops here.
  if (approval && stop_at_approvals_) stop = kCallAwaitsApproval;
  if (json_) {
    out_ << compact_json(proto::to_json(event)) << '\n';
    if (loop != nullptr) stop = loop_seen(*loop, false);
  } else if (loop != nullptr) {
    stop = loop_seen(*loop, true);
  } else if (approval) {
    out_ << waiting_for_approval_line(data) << '\n';
  } else if (event.event == "loop.merged") {
    out_ << cell(data, "loop_id") << " merged into " << cell(data, "into") << " at "
         << short_commit(member(data, "commit")) << '\n';
  } else {
    out_ << cell(data, "loop_id") << ": merge conflict into " << cell(data, "into");
    const json& files = member(data, "files");
    if (files.is_array() && !files.empty()) {
      std::string list;
      std::size_t shown = 0;
      for (const json& file : files) {
        if (shown == kFilesShown) break;
        list += (list.empty() ? "" : ", ") +
                (file.is_string() ? cut(file.get<std::string>(), 80) : cut(compact_json(file), 80));
        ++shown;
      }
      if (files.size() > shown) list += ", and " + std::to_string(files.size() - shown) + " more";
      out_ << " (" << list << ')';
    }
    const std::string resolver = string_of(data, "resolver_id");
    if (!resolver.empty()) out_ << "; resolving in " << printable(resolver);
    out_ << '\n';
  }
  out_.flush();
  return stop;
}

std::optional<std::string> PlanTreePrinter::snapshot(const json& plan_get) {
  std::optional<std::string> stop;
  const json& tree = member(plan_get, "tree");
  if (tree.is_array()) {
    for (const json& loop : tree) {
      if (is_ours(loop)) loop_seen(loop, !json_);
    }
  }
  const json& plan = member(plan_get, "plan");
  if (string_of(plan, "id") == plan_id_) stop = loop_seen(plan, !json_);
  out_.flush();
  return stop;
}

Result<std::string> follow_plan(ControlClient& client, PlanTreePrinter& printer,
                                const FollowOptions& options, std::ostream& err) {
  return follow_events(
      client, options, err, [&](const proto::Event& event) { return printer.event(event); },
      [&]() -> Result<std::optional<std::string>> {
        auto got = client.call<proto::methods::PlanGet>({printer.plan_id()});
        if (!got) return std::move(got).error();
        return printer.snapshot(*got);
      },
      [] {});
}

// ---- Ctrl-C while following ----
//
// The handler may only use async-signal-safe calls: it writes a message
// prepared before it was installed and leaves with _exit(0). Everything the
// followers printed was flushed already (they flush after every event).

namespace {

char g_detach_message[512];
std::size_t g_detach_length = 0;
volatile std::sig_atomic_t g_mid_line = 0;

extern "C" void detach_on_sigint(int) {
  if (g_mid_line != 0) (void)!::write(STDOUT_FILENO, "\n", 1);
  (void)!::write(STDERR_FILENO, g_detach_message, g_detach_length);
  ::_exit(0);
}

}  // namespace

DetachOnInterrupt::DetachOnInterrupt(const std::string& message) {
  g_detach_length = std::min(message.size(), sizeof g_detach_message - 1);
  std::memcpy(g_detach_message, message.data(), g_detach_length);
  g_mid_line = 0;
  struct sigaction action {};
  action.sa_handler = detach_on_sigint;
  sigemptyset(&action.sa_mask);
  installed_ = ::sigaction(SIGINT, &action, &previous_) == 0;
}

DetachOnInterrupt::~DetachOnInterrupt() {
  if (installed_) ::sigaction(SIGINT, &previous_, nullptr);
}

volatile std::sig_atomic_t* DetachOnInterrupt::mid_line_flag() const {
  return &g_mid_line;
}

}  // namespace loopr::client
