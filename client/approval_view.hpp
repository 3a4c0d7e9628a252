// Why a call waits for approval, in words for a person: the approval rule
// that made it wait (policy/command_rules.hpp: its file:line, decision,
// words and reason), or that the rules could not read its command, or the
// tool's or lane's policy. Shared by `looprctl approvals` and the TUI's
// Approvals pane. Every string goes through printable().
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace loopr::client {

// "waits by the rule at FILE:LINE (ask ["git","push"]): REASON",
// "waits: the approval rules cannot read its command (WHY)", or
// "waits by the approval policy for TOOL" — for an approval as
// approval.list and approval.requested describe it.
std::string why_it_waits(const nlohmann::json& approval);

// "waiting for your approval: TOOL (ID) — looprctl approve ID, or looprctl
// deny ID": the line a person following a loop or a plan sees for an
// approval.requested event.
std::string waiting_for_approval_line(const nlohmann::json& approval);

}  // namespace loopr::client
