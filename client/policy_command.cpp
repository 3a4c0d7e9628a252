#include "client/policy_command.hpp"

#include <algorithm>
#include <optional>
#include <ostream>

#include "client/client_paths.hpp"
#include "client/text_format.hpp"
#include "config/catalog.hpp"
#include "config/settings.hpp"
#include "policy/always_rules.hpp"
#include "policy/command_rules.hpp"
#include "proto/control_messages.hpp"
#include "proto/memory_messages.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;

// A rule as repo.show gives it (policy::CommandRule::to_json), its regexes
// compiled again.
Result<policy::CommandRule> rule_from_json(const json& shown) {
  policy::CommandRule rule;
  rule.command = shown.at("command").get<std::vector<std::string>>();
  const std::string decision = shown.at("decision").get<std::string>();
  rule.decision = decision == "deny" ? policy::Decision::deny : policy::Decision::ask;
  rule.reason = shown.value("reason", std::string());
  rule.from_repository = true;
  rule.file = shown.value("file", std::string());
  rule.line = shown.value("line", std::uint32_t{0});
  for (const char* key : {"args_match", "args_not_match"}) {
    if (!shown.contains(key)) continue;
    auto regex = Regex::compile(shown.at(key).get<std::string>());
    if (!regex) return std::move(regex).error();
    (std::string_view(key) == "args_match" ? rule.args_match : rule.args_not_match) =
        std::move(*regex);
  }
  return rule;
}

// The repository's rules from looprd, or the refusal looprd would answer
// run_command with (a file that sets rules but is not honoured).
struct RepositoryRules {
  std::vector<policy::CommandRule> rules;
  std::optional<json> refusal;
};

Result<RepositoryRules> repository_rules(const CommandContext& context, const std::string& dir,
                                         const std::string& tool) {
  auto folder = absolute_folder(dir, "the repository", "--repo");
  if (!folder) return std::move(folder).error();
  auto client = context.open();
  if (!client) return std::move(client).error();
  auto shown = client->call("repo.show", proto::to_json(proto::RepoParams{*folder}));
  if (!shown) return std::move(shown).error();
  RepositoryRules out;
  const json unhonoured = shown->value("unhonoured_keys", json::array());
  if (std::find(unhonoured.begin(), unhonoured.end(), "approval.rules") != unhonoured.end()) {
    out.refusal = shown->value("refusal", json());
  }
  // The rules approve --always saved for it judge before the file's.
  auto saved = client->call("policy.rules", proto::to_json(proto::PolicyRulesParams{*folder}));
  if (!saved) return std::move(saved).error();
  for (const json& row : saved->value("rules", json::array())) {
    auto rule =
        policy::saved_rule_from_json(row.value("rule", json()), row.value("id", std::int64_t{0}));
    // As looprd does: a malformed row (edited by hand) is left out, and said.
    if (!rule) {
      context.err << "looprctl: " << printable(rule.error().message) << " (left out; "
                  << printable(rule.error().hint) << ")\n";
      continue;
    }
    if (rule->tool.empty() || rule->tool == tool) out.rules.push_back(std::move(*rule));
  }
  for (const json& item : shown->value("rules", json::array())) {
    auto rule = rule_from_json(item);
    if (!rule) return std::move(rule).error();
    out.rules.push_back(std::move(*rule));
  }
  return out;
}

int exit_for(policy::Decision decision) {
  return decision == policy::Decision::deny  ? kPolicyExitDeny
         : decision == policy::Decision::ask ? kPolicyExitAsk
                                             : kPolicyExitAllow;
}

policy::Decision decision_of(config::ApprovalPolicy policy) {
  return policy == config::ApprovalPolicy::deny  ? policy::Decision::deny
         : policy == config::ApprovalPolicy::ask ? policy::Decision::ask
                                                 : policy::Decision::allow;
}

std::string rule_text(const policy::CommandRule& rule) {
  std::string out = rule.where() + "  " + rule.describe();
  if (!rule.reason.empty()) out += ": " + rule.reason;
  return printable(out);
}

}  // namespace

int run_policy_check(const CommandContext& context, const PolicyCheckOptions& options) {
  std::string line;
  for (const std::string& word : options.command)
    line += (line.empty() ? "" : " ") + word;
  if (blank(line)) {
    return context.fail(make_error(errc::invalid_arguments, "no command to check",
                                   "looprctl policy check -- 'npm test && git push'"));
  }
  config::Settings settings;
  config::Catalog catalog;
  try {
    settings = config::Settings::load(context.paths.settings_file());
    catalog = config::Catalog::load({context.paths.user_catalog_file()});
  } catch (const ConfigError& e) {
    return context.fail(make_error(errc::invalid_arguments, e.what(),
                                   "looprd refuses to start on this too; fix the file"));
  }
  const config::ToolSpec* tool = catalog.find(options.tool);
  if (tool == nullptr || tool->command != config::ToolCommand::from_arguments) {
    return context.fail(
        make_error(errc::invalid_arguments,
                   "tool '" + options.tool + "' does not run a command from its arguments",
                   "approval rules judge run_command and run_command_isolated"));
  }
  std::vector<policy::CommandRule> rules = settings.approval.rules;
  std::string repo_note;
  if (!options.repo.empty()) {
    auto repo = repository_rules(context, options.repo, options.tool);
    if (!repo && exit_status_for(repo.error()) != ExitStatus::unreachable) {
      return context.fail(repo.error());
    }
    if (!repo) {
      repo_note =
          "the repository's rules are left out: looprd does not answer, and it keeps "
          "which repository files you trust";
    } else if (repo->refusal) {
      // looprd refuses every command there until the file is trusted again.
      if (context.json) {
        context.print_json({{"decision", "deny"}, {"refusal", *repo->refusal}});
      } else {
        context.out << "decision  deny (the repository's rules are not honoured)\n"
                    << printable_lines(repo->refusal->value("message", std::string())) << '\n'
                    << "hint: " << printable_lines(repo->refusal->value("hint", std::string()))
                    << '\n';
      }
      return kPolicyExitDeny;
    } else {
      rules.insert(rules.end(), repo->rules.begin(), repo->rules.end());
    }
  }

  const policy::RuleVerdict verdict = policy::evaluate(line, rules);
  const config::ApprovalPolicy tool_policy = settings.approval_for(*tool);
  // As looprd decides: a tool denied stays denied; otherwise a rule's
  // decision, else the tool's policy.
  policy::Decision effective = verdict.decision;
  if (tool_policy == config::ApprovalPolicy::deny || effective == policy::Decision::none) {
    effective = decision_of(tool_policy);
  }
  if (context.json) {
    json shown = verdict.to_json();
    shown["effective"] = to_string(effective);
    shown["tool"] = tool->name;
    shown["tool_policy"] = config::to_string(tool_policy);
    if (!repo_note.empty()) shown["note"] = repo_note;
    context.print_json(shown);
    return exit_for(effective);
  }
  std::ostream& out = context.out;
  out << "decision  " << to_string(effective);
  if (verdict.decision == policy::Decision::none || effective != verdict.decision) {
    out << " (" << tool->name << "'s approval policy: " << config::to_string(tool_policy)
        << (verdict.decision == policy::Decision::none ? "; no rule decided"
                                                       : "; it outranks the rules")
        << ")";
  }
  out << '\n';
  if (verdict.rule) out << "rule      " << rule_text(*verdict.rule) << '\n';
  if (!verdict.uncertain.empty()) {
    out << "uncertain " << printable(verdict.uncertain) << ": it waits for approval\n";
  }
  if (!verdict.commands.empty()) out << "commands:\n";
  for (const policy::CommandVerdict& c : verdict.commands) {
    out << "  " << to_string(c.decision) << std::string(6 - to_string(c.decision).size(), ' ')
        << printable(c.command.text());
    if (c.rule) out << "\n        by " << rule_text(*c.rule);
    if (!c.command.uncertain.empty())
      out << "\n        uncertain: " << printable(c.command.uncertain);
    out << '\n';
  }
  if (rules.empty()) out << "(no [[approval.rules]] are configured)\n";
  if (!repo_note.empty()) context.err << "looprctl: note: " << repo_note << '\n';
  return exit_for(effective);
}

int run_policy_rules(const CommandContext& context, const std::string& repo) {
  proto::PolicyRulesParams params;
  if (!repo.empty()) {
    auto folder = absolute_folder(repo, "the repository", "--repo");
    if (!folder) return context.fail(folder.error());
    params.repo = *folder;
  }
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call("policy.rules", proto::to_json(params));
  if (!result) return context.fail(result.error());
  auto rows = objects_in(*result, "rules", "policy.rules");
  if (!rows) return context.fail(rows.error());
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  if (rows->empty()) {
    context.out << "no rules are saved (looprctl approve ID --always saves them)\n";
    return to_int(ExitStatus::ok);
  }
  TextTable table({"ID", "REPOSITORY", "RULE"});
  for (const json& row : *rows) {
    auto rule =
        policy::saved_rule_from_json(row.value("rule", json()), row.value("id", std::int64_t{0}));
    table.add_row({std::to_string(row.value("id", std::int64_t{0})), cell(row, "repo"),
                   rule ? printable(rule->describe()) : printable(rule.error().message)});
  }
  table.print(context.out);
  context.out << "forget one with: looprctl policy forget ID\n";
  return to_int(ExitStatus::ok);
}

int run_policy_forget(const CommandContext& context, std::int64_t id) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call("policy.forget", proto::to_json(proto::PolicyForgetParams{id}));
  if (!result) return context.fail(result.error());
  if (context.json) {
    context.print_json(*result);
  } else {
    context.out << "forgot rule " << id << '\n';
  }
  return to_int(ExitStatus::ok);
}

}  // namespace loopr::client
