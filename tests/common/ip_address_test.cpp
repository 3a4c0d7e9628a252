// IpAddress and NetworkRange: parsing, the IPv4-mapped representation, and
// CIDR containment at prefix boundaries.
#include "common/ip_address.hpp"

#include <gtest/gtest.h>

namespace loopr {
namespace {

IpAddress ip(const char* text) {
  auto address = IpAddress::parse(text);
  EXPECT_TRUE(address.has_value()) << text;
  return address.value_or(IpAddress{});
}

TEST(IpAddress, Ipv4AndItsMappedIpv6FormAreOneAddress) {
  EXPECT_EQ(ip("127.0.0.1"), ip("::ffff:127.0.0.1"));
  EXPECT_TRUE(ip("10.1.2.3").is_ipv4());
  EXPECT_EQ(ip("10.1.2.3").ipv4(), 0x0a010203u);
  EXPECT_FALSE(ip("::1").is_ipv4());
  EXPECT_EQ(ip("::ffff:127.0.0.1").to_string(), "127.0.0.1");
  EXPECT_EQ(ip("2001:DB8:0:0::1").to_string(), "2001:db8::1");
}

TEST(IpAddress, OnlyStrictTextFormsParse) {
  for (const char* text : {"", "2130706433", "0x7f000001", "127.1", "1.2.3.4.5", "[::1]",
                           "fe80::1%eth0", "1.2.3.4:80", "localhost", "::1/128"}) {
    EXPECT_FALSE(IpAddress::parse(text).has_value()) << text;
  }
}

TEST(NetworkRange, ContainsExactlyItsPrefix) {
  const NetworkRange range = NetworkRange::parse("172.16.0.0/12").value();
  EXPECT_TRUE(range.contains(ip("172.16.0.0")));
  EXPECT_TRUE(range.contains(ip("172.31.255.255")));
  EXPECT_FALSE(range.contains(ip("172.32.0.0")));
  EXPECT_FALSE(range.contains(ip("172.15.255.255")));
  EXPECT_TRUE(range.contains(ip("::ffff:172.20.1.1")));
  EXPECT_EQ(range.to_string(), "172.16.0.0/12");

  const NetworkRange v6 = NetworkRange::parse("fc00::/7").value();
  EXPECT_TRUE(v6.contains(ip("fd12:3456::1")));
  EXPECT_FALSE(v6.contains(ip("fe00::1")));
  EXPECT_EQ(NetworkRange::parse("::/0").value().to_string(), "::/0");
  EXPECT_TRUE(NetworkRange::parse("0.0.0.0/0").value().contains(ip("8.8.8.8")));
  EXPECT_FALSE(NetworkRange::parse("0.0.0.0/0").value().contains(ip("2001:4860::8888")));
}

TEST(NetworkRange, ASingleAddressIsAFullLengthRange) {
  const NetworkRange one = NetworkRange::parse("127.0.0.1").value();
  EXPECT_TRUE(one.contains(ip("127.0.0.1")));
  EXPECT_FALSE(one.contains(ip("127.0.0.2")));
  EXPECT_EQ(one.to_string(), "127.0.0.1/32");
  EXPECT_EQ(NetworkRange::parse("::1").value().to_string(), "::1/128");
}

TEST(NetworkRange, BadRangesAreRefusedWithWhatWasMeant) {
  const auto stray_bits = NetworkRange::parse("10.0.0.1/8");
  ASSERT_FALSE(stray_bits);
  EXPECT_EQ(stray_bits.error().code, errc::invalid_arguments);
  EXPECT_NE(stray_bits.error().hint.find("10.0.0.0/8"), std::string::npos)
      << stray_bits.error().hint;
  for (const char* text : {"10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/x", "10.0.0.0/-1",
                           "not-an-address/8", "10.0.0.0/8/8", ""}) {
    const auto range = NetworkRange::parse(text);
    EXPECT_FALSE(range) << text;
    if (!range) {
      EXPECT_EQ(range.error().code, errc::invalid_arguments) << text;
    }
  }
}

}  // namespace
}  // namespace loopr
