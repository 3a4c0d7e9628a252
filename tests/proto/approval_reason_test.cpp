// Why a call waits, in words (proto/approval_reason.hpp): the rule, the
// unreadable command or the policy, each part on one line and cut.
#include "proto/approval_reason.hpp"

#include <gtest/gtest.h>

namespace loopr::proto {
namespace {

using nlohmann::json;

TEST(ApprovalReason, SaysWhichRuleWhichUnreadableCommandOrWhichPolicy) {
  const json user_rule = {{"decision", "ask"},
                          {"command", {"git", "push"}},
                          {"reason", "pushes are reviewed"},
                          {"source", "user"},
                          {"file", "/home/ada/.config/loopr/loopr.toml"},
                          {"line", 12}};
  EXPECT_EQ(approval_reason({{"tool", "run_command"}, {"rule", user_rule}}),
            "waits by the rule at /home/ada/.config/loopr/loopr.toml:12 (ask "
            "[\"git\",\"push\"]): pushes are reviewed");
  json repository_rule = user_rule;
  repository_rule["source"] = "repository";
  repository_rule["file"] = "/src/app/.loopr/loopr.toml";
  EXPECT_EQ(approval_reason({{"rule", repository_rule}})
                .rfind("waits by the repository's rule at /src/app/.loopr/loopr.toml:12", 0),
            0u);
  EXPECT_EQ(approval_reason({{"tool", "run_command"}, {"uncertain", "eval $CMD"}}),
            "waits: the approval rules cannot read its command (eval $CMD)");
  EXPECT_EQ(approval_reason({{"tool", "write_file"}}),
            "waits by the approval policy for write_file");
}

// A repository's rule text cannot fill or end the prompt a person reads:
// one line, at most 300 bytes a part, never split inside a character.
TEST(ApprovalReason, ARulesTextIsOneLineAndCut) {
  const std::string long_reason = "safe\n\nApproved by your admin. " + std::string(2000, 'x');
  const json rule = {{"decision", "ask"},
                     {"command", {"make"}},
                     {"reason", long_reason},
                     {"source", "repository"},
                     {"file", "/src/app/.loopr/loopr.toml\x1b[2J"},
                     {"line", 3}};
  const std::string reason = approval_reason({{"rule", rule}});
  EXPECT_EQ(reason.find('\n'), std::string::npos) << reason;
  EXPECT_EQ(reason.find('\x1b'), std::string::npos) << reason;
  EXPECT_LT(reason.size(), 800u);
  EXPECT_NE(reason.find("safe  Approved by your admin. xxx"), std::string::npos) << reason;
  EXPECT_EQ(reason.substr(reason.size() - 3), "...");
  const json accented = {{"tool", "run_command"},
                         {"uncertain", std::string(299, 'a') + "\xc3\xa9"}};
  const std::string cut = approval_reason(accented);
  EXPECT_EQ(cut.find("\xc3)"), std::string::npos) << "cut inside a character";
}

TEST(ApprovalReason, AnyJsonShapeIsAnsweredWithoutThrowing) {
  for (const json& shape : {json(nullptr), json(3), json::array({1}), json{{"rule", "x"}},
                            json{{"rule", {{"command", 5}, {"line", "x"}}}}, json{{"uncertain", 4}},
                            json{{"tool", {1, 2}}}}) {
    EXPECT_NO_THROW(approval_reason(shape)) << shape;
    EXPECT_FALSE(approval_reason(shape).empty()) << shape;
  }
}

}  // namespace
}  // namespace loopr::proto
