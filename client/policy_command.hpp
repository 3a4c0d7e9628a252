// looprctl policy check [--repo DIR] [--tool NAME] -- CMD...: what the
// approval rules (policy/command_rules.hpp, issue 27) decide for a command
// line, evaluated here by loading the settings looprd would (loopr.toml,
// catalog.toml) — looprd need not run. With --repo, the repository's own
// rules come from looprd (repo.show: only a trusted file's rules apply, and
// looprd keeps the trust), with the rules `approve --always` saved for it
// (policy.rules); without an answer they are left out, and it says so.
//
// Prints the decision, the rule that made it (file:line) and each simple
// command with the rule that matched it (--json: the verdict as JSON).
// Exit status: 0 allow, 10 ask, 11 deny; when no rule decides, the tool's
// approval policy applies and gives the status the same way (auto 0).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "client/commands.hpp"

namespace loopr::client {

inline constexpr int kPolicyExitAllow = 0;
inline constexpr int kPolicyExitAsk = 10;
inline constexpr int kPolicyExitDeny = 11;

struct PolicyCheckOptions {
  std::vector<std::string> command;  // joined with spaces: the command line
  std::string repo;                  // --repo; empty: no repository rules
  std::string tool = "run_command";  // a tool whose command comes from its arguments
};

int run_policy_check(const CommandContext& context, const PolicyCheckOptions& options);
// looprctl policy rules [--repo DIR]: the rules approve --always saved.
int run_policy_rules(const CommandContext& context, const std::string& repo);
// looprctl policy forget ID.
int run_policy_forget(const CommandContext& context, std::int64_t id);

}  // namespace loopr::client
