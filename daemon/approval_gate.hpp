// ApprovalGate: privileged calls whose policy is "ask" wait here until a
// client approves or denies them (approval.approve / approval.deny, the TUI,
// `looprctl approve`), or until the timeout, which denies (DESIGN.md §6).
// A job can never approve itself: the control socket is unreachable from
// every lane (SECURITY.md).
// Threads: io thread only.
#pragma once

#include <asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/error.hpp"
#include "daemon/event_bus.hpp"
#include "daemon/wakeup.hpp"

namespace loopr::daemon {

struct ApprovalRequest {
  std::string call_id;
  std::string tool;
  std::string lane;
  std::string tier;
  nlohmann::json args;  // shown to the user: long strings are cut (abbreviated_for_display)
  std::string worktree;
  std::string loop_id;  // the loop that made the call; empty for a client's own call
  // The approval rule that made this call wait (policy::CommandRule::to_json),
  // or null: the tool's or lane's policy did.
  nlohmann::json rule = nullptr;
  // Why the approval rules could not read the command with confidence (they
  // then ask); empty otherwise.
  std::string uncertain;
  // A command tool's command, whole (args holds it cut for display), and
  // the repository it runs in: what `looprctl approve --always` writes its
  // rules for. Unset for other tools. Never shown.
  std::optional<std::string> command;
  std::string repo;
};

struct ApprovalDecision {
  bool approved = false;
  // No one decided: the call was cancelled or looprd is shutting down.
  bool withdrawn = false;
  std::string reason;  // why it was denied ("timed out after 300 s", the user's words)
};

// A copy of `args` for a person to judge: every string longer than
// kMaxShownStringBytes keeps its head and says how long it was, so an
// approval of a 10 MB write_file stays a small event. Depth is bounded by the
// schema-validated arguments it is given.
inline constexpr std::size_t kMaxShownStringBytes = 4096;
nlohmann::json abbreviated_for_display(const nlohmann::json& args);

class ApprovalGate {
 public:
  ApprovalGate(asio::any_io_executor executor, EventBus& events)
      : executor_(std::move(executor)), events_(events) {}

  // Publishes approval.requested and waits for a decision or the timeout.
  asio::awaitable<ApprovalDecision> request(ApprovalRequest request,
                                            std::chrono::milliseconds timeout);

  // approval.approve / approval.deny. Unknown (or already decided) ids are an
  // invalid_arguments error that says so.
  Result<void> decide(const std::string& id, bool approved, std::string reason);
  // Denies the pending approval of a call (tool.cancel, shutdown).
  bool cancel_call(const std::string& call_id, const std::string& reason);
  void deny_all(const std::string& reason);
  // Withdraws every pending request and every later one (shutdown).
  void close(const std::string& reason);

  // [{id, call_id, tool, lane, tier, args, worktree, requested_at_ms, expires_at_ms}]
  nlohmann::json pending_json() const;
  // The request waiting as `id` (nullopt: none is).
  std::optional<ApprovalRequest> find(const std::string& id) const;
  std::size_t pending_count() const { return pending_.size(); }

 private:
  struct Pending {
    ApprovalRequest request;
    std::int64_t requested_at_ms = 0;
    std::int64_t expires_at_ms = 0;
    std::optional<ApprovalDecision> decision;
    Wakeup decided;
  };
  nlohmann::json describe(const std::string& id, const Pending& pending) const;

  asio::any_io_executor executor_;
  EventBus& events_;
  std::map<std::string, std::shared_ptr<Pending>> pending_;
  std::optional<std::string> closed_;  // why no request is taken any more
  std::uint64_t next_id_ = 1;
};

// Unix time in milliseconds.
std::int64_t unix_ms();

}  // namespace loopr::daemon
