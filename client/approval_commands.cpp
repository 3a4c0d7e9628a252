// looprctl approvals, approve ID [--always [--yes]], deny ID [--reason TEXT].
#include <ostream>

#include "client/approval_view.hpp"
#include "client/commands.hpp"
#include "client/text_format.hpp"
#include "common/json_text.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;

std::string expires_in(const json& approval, std::int64_t now) {
  const auto it = approval.find("expires_at_ms");
  if (it == approval.end() || !it->is_number_integer()) return "-";
  const auto left = it->get<std::int64_t>() - now;
  return left <= 0 ? "expired" : format_duration_ms(left);
}

int decide(const CommandContext& context, const std::string& method,
           const proto::ApprovalDecisionParams& params, const char* verb) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call(method, proto::to_json(params));
  if (!result) return context.fail(result.error());
  if (!result->is_object()) {
    return context.fail(make_error(errc::protocol, "the " + method + " result is not an object"));
  }
  if (context.json) {
    context.print_json(*result);
  } else {
    context.out << verb << ' ' << printable(params.id) << '\n';
  }
  return to_int(ExitStatus::ok);
}

// "allow exactly [\"npm\", \"test\"]" of a rule's JSON.
std::string rule_summary(const json& rule) {
  std::string words;
  for (const json& word : rule.value("command", json::array()))
    words += (words.empty() ? "" : ", ") + word.dump();
  const auto exact = rule.find("exact");
  const bool is_exact = exact != rule.end() && exact->is_boolean() && exact->get<bool>();
  const std::string tool = text_member(rule, "tool");
  return text_member(rule, "decision") + (is_exact ? " exactly [" : " [") + words + "]" +
         (tool.empty() ? "" : " (" + tool + ")");
}

}  // namespace

int run_approvals(const CommandContext& context) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call("approval.list");
  if (!result) return context.fail(result.error());
  auto approvals = objects_in(*result, "approvals", "approval.list");
  if (!approvals) return context.fail(approvals.error());
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  if (approvals->empty()) {
    context.out << "no calls are waiting for approval\n";
    return to_int(ExitStatus::ok);
  }
  const std::int64_t now = now_ms();
  TextTable table({"ID", "TOOL", "LANE", "TIER", "EXPIRES IN", "WORKTREE", "ARGS"});
  for (const json& approval : *approvals) {
    table.add_row({cell(approval, "id"), cell(approval, "tool"), cell(approval, "lane"),
                   cell(approval, "tier"), expires_in(approval, now), cell(approval, "worktree"),
                   cell(approval, "args")});
  }
  table.print(context.out);
  // Only the calls a rule (or an unreadable command) made wait: the others
  // wait by the policy the table's tier column already implies.
  for (const json& approval : *approvals) {
    if (approval.contains("rule") || approval.contains("uncertain")) {
      context.out << cell(approval, "id") << "  " << why_it_waits(approval) << '\n';
    }
  }
  context.out << "approve with: looprctl approve ID   deny with: looprctl deny ID --reason TEXT\n";
  return to_int(ExitStatus::ok);
}

int run_approve(const CommandContext& context, const std::string& id) {
  return decide(context, "approval.approve", proto::ApprovalDecisionParams{id, std::nullopt},
                "approved");
}

int run_approve_always(const CommandContext& context, const std::string& id, bool yes) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto offer = client->call("approval.always", proto::to_json(proto::ApprovalAlwaysParams{id}));
  if (!offer) return context.fail(offer.error());
  auto rules = objects_in(*offer, "rules", "approval.always");
  if (!rules) return context.fail(rules.error());
  const std::string repo = printable(offer->value("repo", std::string()));
  if (!yes) {
    if (context.json) {
      context.print_json(*offer);  // the offer only: saving needs --yes
      return to_int(ExitStatus::ok);
    }
    context.out << "looprctl approve --always would save " << rules->size()
                << (rules->size() == 1 ? " rule" : " rules") << " for " << repo << ":\n";
    for (const json& rule : *rules)
      context.out << "  " << printable(rule_summary(rule)) << '\n';
    context.out << "Each lets exactly that command run in this repository, with that tool, "
                   "without asking; other arguments, wrappers (sudo, env, sh -c), variables and "
                   "file redirections still ask.\n"
                << "Save and approve " << printable(id) << "? [y/N] " << std::flush;
    std::string answer;
    std::getline(context.in, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") {
      context.out << "nothing saved; " << printable(id) << " still waits (looprctl approve "
                  << printable(id) << " approves it once)\n";
      return to_int(ExitStatus::call_failed);
    }
  }
  auto saved =
      client->call("approval.always", proto::to_json(proto::ApprovalAlwaysParams{id, true}));
  if (!saved) return context.fail(saved.error());
  if (context.json) {
    context.print_json(*saved);
    return to_int(ExitStatus::ok);
  }
  auto saved_rules = objects_in(*saved, "rules", "approval.always");
  if (!saved_rules) return context.fail(saved_rules.error());
  for (const json& rule : *saved_rules) {
    context.out << "saved rule " << rule.value("saved_id", std::int64_t{0}) << ": "
                << printable(rule_summary(rule)) << '\n';
  }
  if (saved->value("approved", false)) {
    context.out << "approved " << printable(id) << '\n';
  } else {
    context.out << printable(id)
                << " was not approved: " << printable(saved->value("not_approved", std::string()))
                << '\n';
  }
  context.out
      << "forget a rule with: looprctl policy forget ID (looprctl policy rules lists them)\n";
  return to_int(ExitStatus::ok);
}

int run_deny(const CommandContext& context, const std::string& id,
             const std::optional<std::string>& reason) {
  return decide(context, "approval.deny", proto::ApprovalDecisionParams{id, reason}, "denied");
}

}  // namespace loopr::client
