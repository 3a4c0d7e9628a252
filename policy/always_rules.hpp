// The rules `looprctl approve ID --always` offers and saves (issue 27): the
// narrowest that let exactly the approved command line run without asking
// again, and never more. One `exact` allow rule per simple command of the
// line (policy/command_rules.hpp): its words, all of them — so `npm test`
// approved always does not allow `npm test --watch`, `npm install`, `sudo
// npm test` or `FOO=1 npm test`, and `npm test && curl x` approved allows
// `curl x` exactly, not curl.
//
// Offered for none (an error saying to approve once, or to write a rule in
// loopr.toml) when the line cannot be read with confidence, redirects a
// file or a here-document, sets variables (VAR=x cmd, or VAR=x; cmd), or a
// command in it runs under a wrapper (sudo, env, timeout, sh -c …) or has a
// word that is expanded ($x, $(…), a glob): no exact rule could say what
// was approved. A saved rule judges the calls of the tool that was approved
// only (run_command's approval does not allow run_command_isolated's, nor
// the reverse).
//
// Saved rules live in looprd's store, scoped to one repository
// (store/store.hpp, approval_rules); saved_rule_from_json() reads one back.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "policy/command_rules.hpp"

namespace loopr::policy {

// The rules for `line` as a call of `tool` ran it (each judges that tool's
// calls only), deduplicated, in the order their commands appear.
Result<std::vector<CommandRule>> always_rules(std::string_view line, const std::string& tool);

// What the store keeps of a rule always_rules() made: {command, exact,
// decision, reason, tool?} (where it came from is the store's row).
nlohmann::json saved_rule_json(const CommandRule& rule);

// A saved rule from its stored JSON ({command, exact, decision, reason}),
// with its store id. Malformed: an error naming the id.
Result<CommandRule> saved_rule_from_json(const nlohmann::json& stored, std::int64_t id);

}  // namespace loopr::policy
