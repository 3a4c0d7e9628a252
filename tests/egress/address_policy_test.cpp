// AddressPolicy: what a job's connection may reach (SECURITY.md classes 14
// and 21, the address side; the runner's attack tests try the connections).
#include "egress/address_policy.hpp"

#include <gtest/gtest.h>

namespace loopr::egress {
namespace {

IpAddress ip(const char* text) {
  return IpAddress::parse(text).value();
}

TEST(AddressPolicy, RefusesEveryNonPublicRangeAndSaysWhich) {
  const struct {
    const char* address;
    const char* reason_part;
  } cases[] = {
      {"127.0.0.1", "loopback"},
      {"127.255.255.254", "loopback"},
      {"::1", "loopback"},
      {"::ffff:127.0.0.1", "loopback"},
      {"0.0.0.0", "this network"},
      {"::", "unspecified"},
      {"10.0.0.1", "RFC 1918"},
      {"172.16.0.1", "RFC 1918"},
      {"172.31.255.255", "RFC 1918"},
      {"192.168.1.1", "RFC 1918"},
      {"169.254.169.254", "link-local"},
      {"fe80::1", "link-local"},
      {"100.64.0.1", "carrier-grade NAT"},
      {"fd00::1", "unique local"},
      {"fc00::1", "unique local"},
      {"224.0.0.1", "multicast"},
      {"ff02::1", "multicast"},
      {"255.255.255.255", "broadcast"},
      {"240.0.0.1", "reserved"},
      {"192.0.2.10", "documentation"},
      {"2001:db8::1", "documentation"},
      {"198.18.0.1", "benchmarking"},
      {"64:ff9b::7f00:1", "loopback"},       // NAT64 of 127.0.0.1
      {"64:ff9b::a9fe:a9fe", "link-local"},  // NAT64 of 169.254.169.254
      {"2002:7f00:1::1", "loopback"},        // 6to4 of 127.0.0.1
      {"2002:c0a8:101::1", "RFC 1918"},      // 6to4 of 192.168.1.1
      {"2001:0:4136:e378::1", "Teredo"},
      {"::7f00:1", "IPv4-compatible"},
  };
  const AddressPolicy policy;
  for (const auto& c : cases) {
    const auto verdict = policy.check(ip(c.address), "http://x/");
    ASSERT_FALSE(verdict) << c.address;
    EXPECT_EQ(verdict.error().code, errc::sandbox_denied) << c.address;
    EXPECT_NE(verdict.error().message.find(c.reason_part), std::string::npos)
        << c.address << ": " << verdict.error().message;
    EXPECT_NE(verdict.error().hint.find("allowed_networks"), std::string::npos);
  }
}

TEST(AddressPolicy, AllowsPublicAddresses) {
  const AddressPolicy policy;
  for (const char* address :
       {"8.8.8.8", "1.1.1.1", "93.184.216.34", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111",
        "2001:4860:4860::8888", "64:ff9b::808:808", "2002:808:808::1"}) {
    EXPECT_TRUE(policy.check(ip(address), "http://x/")) << address;
  }
}

TEST(AddressPolicy, AllowedNetworksOpenOnlyWhatTheyName) {
  const AddressPolicy policy = AddressPolicy::from_strings({"127.0.0.1/32", "10.1.0.0/16"}).value();
  EXPECT_TRUE(policy.check(ip("127.0.0.1"), "u"));
  EXPECT_TRUE(policy.check(ip("::ffff:127.0.0.1"), "u"));
  EXPECT_TRUE(policy.check(ip("10.1.200.3"), "u"));
  EXPECT_FALSE(policy.check(ip("127.0.0.2"), "u"));
  EXPECT_FALSE(policy.check(ip("10.2.0.1"), "u"));
  EXPECT_FALSE(policy.check(ip("169.254.169.254"), "u"));
  EXPECT_FALSE(policy.check(ip("::1"), "u"));
}

TEST(AddressPolicy, ABadAllowedRangeIsRefusedByName) {
  const auto policy = AddressPolicy::from_strings({"10.0.0.0/8", "192.168.1.1/16"});
  ASSERT_FALSE(policy);
  EXPECT_EQ(policy.error().code, errc::invalid_arguments);
  EXPECT_NE(policy.error().message.find("192.168.1.1/16"), std::string::npos);
}

}  // namespace
}  // namespace loopr::egress
