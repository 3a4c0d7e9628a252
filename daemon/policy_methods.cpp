// approval.always and the policy.* control methods (docs/control-protocol.md
// "Approval rules"): the rules `looprctl approve ID --always` offers for a
// waiting command and saves for its repository (policy/always_rules.hpp,
// store/approval_rules.cpp), and the saved rules listed and forgotten.
//
// A saved rule only ever allows, exactly, a command a person approved; it
// is saved only when it would decide: a rule that asks or denies the command
// (the user's or the repository's) wins over any allow, so --always is then
// refused with that rule named instead of saving a rule that changes nothing.
#include "daemon/methods.hpp"
#include "memory/repository.hpp"
#include "policy/always_rules.hpp"
#include "repos/repo_settings.hpp"

namespace loopr::daemon {
namespace {

using nlohmann::json;

Error bad_request(std::string message, std::string hint) {
  return as_invalid_params(
      make_error(errc::invalid_arguments, std::move(message), std::move(hint)));
}

json saved_json(const store::SavedApprovalRule& row) {
  json rule = row.rule;
  if (rule.is_object()) rule["saved_id"] = row.id;
  return {{"id", row.id}, {"repo", row.repo}, {"rule", rule}, {"saved_at_ms", row.saved_at_ms}};
}

}  // namespace

Result<proto::Document> MethodRegistry::approval_always(const proto::ApprovalAlwaysParams& params) {
  const std::optional<ApprovalRequest> waiting = services_.approvals.find(params.id);
  if (!waiting) {
    return bad_request("no call waits for approval as " + params.id,
                       "see the waiting calls with looprctl approvals");
  }
  if (!waiting->command) {
    return bad_request(
        "--always offers rules for the commands of run_command and run_command_isolated; " +
            waiting->tool + " waits by its approval policy",
        "approve it once, or set [approval.tools] " + waiting->tool +
            " = \"auto\" in your loopr.toml to stop asking");
  }
  auto rules = policy::always_rules(*waiting->command, waiting->tool);
  if (!rules) return as_invalid_params(std::move(rules).error());
  const std::string repo =
      waiting->repo.empty() ? memory::repository_of(waiting->worktree) : waiting->repo;
  // With them saved, would the command run without asking?
  auto current = services_.router.command_rules(repo, waiting->tool);
  if (!current) return std::move(current).error();
  std::vector<policy::CommandRule> with_saved = *current;
  with_saved.insert(with_saved.end(), rules->begin(), rules->end());
  const policy::RuleVerdict verdict = policy::evaluate(*waiting->command, with_saved);
  if (verdict.decision != policy::Decision::allow) {
    return bad_request("a saved rule would not change this: " + verdict.explanation(),
                       "approve it once; to stop asking, change the rule that asks in "
                       "loopr.toml (a rule that asks or denies always wins over an allow)");
  }
  json out = {{"id", params.id}, {"repo", repo}, {"saved", false}, {"approved", false}};
  if (params.save) {
    std::vector<json> stored;
    for (const policy::CommandRule& rule : *rules)
      stored.push_back(policy::saved_rule_json(rule));
    auto ids = services_.store.save_approval_rules(repo, stored);
    if (!ids) return std::move(ids).error();
    for (std::size_t i = 0; i < rules->size(); ++i) {
      (*rules)[i].saved_id = (*ids)[i];
      (*rules)[i].file = "saved rule";
    }
  }
  json shown = json::array();
  for (const policy::CommandRule& rule : *rules)
    shown.push_back(rule.to_json());
  out["rules"] = std::move(shown);
  if (params.save) {
    out["saved"] = true;
    auto decided = services_.approvals.decide(params.id, true, "");
    // The call may have timed out or been cancelled meanwhile: the rules
    // stay saved, and say so.
    out["approved"] = static_cast<bool>(decided);
    if (!decided) out["not_approved"] = decided.error().message;
  }
  return out;
}

Result<proto::Document> MethodRegistry::policy_rules(const proto::PolicyRulesParams& params) {
  std::string repo;
  if (params.repo) {
    auto found = repos::repository_of(*params.repo);
    if (!found) return bad_request(found.error().message, found.error().hint);
    repo = *found;
  }
  auto saved = services_.store.saved_approval_rules(repo);
  if (!saved) return std::move(saved).error();
  json rules = json::array();
  for (const store::SavedApprovalRule& row : *saved)
    rules.push_back(saved_json(row));
  return json{{"rules", std::move(rules)}};
}

Result<proto::Document> MethodRegistry::policy_forget(const proto::PolicyForgetParams& params) {
  auto removed = services_.store.delete_approval_rule(params.id);
  if (!removed) return std::move(removed).error();
  if (!*removed) {
    return bad_request("no saved approval rule has id " + std::to_string(params.id),
                       "see the saved rules with looprctl policy rules");
  }
  return json{{"id", params.id}, {"forgotten", true}};
}

void MethodRegistry::add_policy_methods() {
  namespace methods = proto::methods;
  add<methods::ApprovalAlways>([this](ClientSession&, const proto::ApprovalAlwaysParams& params) {
    return approval_always(params);
  });
  add<methods::PolicyRules>([this](ClientSession&, const proto::PolicyRulesParams& params) {
    return policy_rules(params);
  });
  add<methods::PolicyForget>([this](ClientSession&, const proto::PolicyForgetParams& params) {
    return policy_forget(params);
  });
}

}  // namespace loopr::daemon
