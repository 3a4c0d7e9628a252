// Why a call waits for approval, in words, from an approval as
// approval.requested and approval.list carry it (docs/control-protocol.md):
// the approval rule that asked (where it is written, its decision and
// command, its reason), or the command line the rules could not read, or the
// tool's policy. One sentence shared by looprctl approvals, the TUI's
// Approvals pane and the MCP server's elicitation, so each shows the same.
// Plain text: a terminal caller escapes it (client/text_format.hpp printable).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace loopr::proto {

// "waits by the rule at FILE:LINE (ask [\"git\",\"push\"]): REASON" ("the
// repository's rule" for one from a repository's file),
// "waits: the approval rules cannot read its command (WHY)", or
// "waits by the approval policy for TOOL". Each part is put on one line and
// cut at 300 bytes: a repository's rule must not fill the prompt a person
// reads. Never throws on any JSON.
std::string approval_reason(const nlohmann::json& approval);

}  // namespace loopr::proto
