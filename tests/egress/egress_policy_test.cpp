// EgressPolicy and DomainList: the name rules before any lookup and the
// address rules after it (SECURITY.md classes 21 and 22, the policy side;
// tests/runner/egress_attack_test.cpp tries the connections from real jobs).
#include "egress/egress_policy.hpp"

#include <gtest/gtest.h>

namespace loopr::egress {
namespace {

IpAddress address(const char* text) {
  return IpAddress::parse(text).value();
}

EgressPolicy policy_with(std::vector<std::string> allow, std::vector<std::string> deny,
                         std::vector<std::string> networks = {}) {
  std::map<std::string, LaneDomainRules> lanes;
  lanes["net"] = {DomainList::parse(allow, "allow").value(),
                  DomainList::parse(deny, "deny").value()};
  return EgressPolicy(AddressPolicy::from_strings(networks).value(), std::move(lanes));
}

TEST(DomainList, ExactNamesAndSuffixesMatchCaseInsensitivelyWithoutTheTrailingDot) {
  const DomainList list = DomainList::parse({"Example.com", "*.pkg.dev"}, "k").value();
  EXPECT_EQ(list.match("example.com"), "example.com");
  EXPECT_EQ(list.match("EXAMPLE.COM."), "example.com");
  EXPECT_FALSE(list.match("www.example.com"));
  EXPECT_FALSE(list.match("badexample.com"));
  EXPECT_EQ(list.match("a.b.pkg.dev"), "*.pkg.dev");
  EXPECT_FALSE(list.match("pkg.dev"));  // a suffix entry is only what lies beneath
  EXPECT_FALSE(list.match("evilpkg.dev"));
}

TEST(DomainList, AnEntryThatIsNotANameIsRefusedByName) {
  for (const char* bad : {"https://example.com", "example.com:443", "*", "", "*.", "a..b",
                          "exa mple.com", "example.com/path"}) {
    const auto list = DomainList::parse({"ok.example", bad}, "egress.lanes.net.allow_domains");
    ASSERT_FALSE(list) << bad;
    EXPECT_EQ(list.error().code, errc::invalid_arguments);
    EXPECT_NE(list.error().message.find("egress.lanes.net.allow_domains"), std::string::npos);
  }
}

TEST(EgressPolicy, DenyWinsOverAllowAndAnEmptyAllowListAllowsEveryName) {
  const EgressPolicy open = policy_with({}, {"*.evil.test"});
  EXPECT_FALSE(open.judge_name("net", "example.com", 443));
  const auto denied = open.judge_name("net", "x.evil.test", 443);
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->rule, "deny_domains");
  EXPECT_NE(denied->message.find("\"*.evil.test\" in [egress.lanes.net] deny_domains"),
            std::string::npos)
      << denied->message;

  const EgressPolicy both = policy_with({"*.evil.test", "github.com"}, {"*.evil.test"});
  EXPECT_EQ(both.judge_name("net", "x.evil.test", 80)->rule, "deny_domains");
  EXPECT_FALSE(both.judge_name("net", "github.com", 443));
  const auto unlisted = both.judge_name("net", "gitlab.com", 443);
  ASSERT_TRUE(unlisted);
  EXPECT_EQ(unlisted->rule, "allow_domains");
  EXPECT_NE(unlisted->message.find("add \"gitlab.com\""), std::string::npos);
  // Another lane has no lists: every name passes the name rules.
  EXPECT_FALSE(both.judge_name("heavy", "gitlab.com", 443));
}

TEST(EgressPolicy, AddressesAreJudgedAsResolvedWithTheKeyThatWouldAllowThem) {
  const EgressPolicy policy = policy_with({}, {}, {"10.20.0.0/16"});
  const auto metadata =
      policy.judge_address("net", "metadata.internal", 80, address("169.254.169.254"));
  ASSERT_TRUE(metadata);
  EXPECT_EQ(metadata->rule, "link-local");
  EXPECT_NE(metadata->message.find("169.254.169.254 (which metadata.internal resolves to) is "
                                   "link-local"),
            std::string::npos)
      << metadata->message;
  EXPECT_NE(metadata->message.find("\"169.254.169.254/32\" to [egress] allowed_networks"),
            std::string::npos);
  const auto literal = policy.judge_address("net", "::1", 80, address("::1"));
  ASSERT_TRUE(literal);
  EXPECT_EQ(literal->rule, "loopback");
  EXPECT_NE(literal->message.find("[::1]:80"), std::string::npos) << literal->message;
  EXPECT_EQ(policy.judge_address("net", "h", 1, address("10.0.0.1"))->rule, "private");
  EXPECT_EQ(policy.judge_address("net", "h", 1, address("100.64.1.1"))->rule, "cgnat");
  EXPECT_FALSE(policy.judge_address("net", "h", 1, address("10.20.3.4")));  // allowed network
  EXPECT_FALSE(policy.judge_address("net", "h", 1, address("93.184.216.34")));
}

}  // namespace
}  // namespace loopr::egress
