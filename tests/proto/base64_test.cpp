#include "proto/base64.hpp"

#include <gtest/gtest.h>

namespace loopr::proto {
namespace {

TEST(Base64, EncodesRfc4648Vectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode(std::string("\xFF\xFE\x00", 3)), "//4A");
}

TEST(Base64, DecodesRfc4648Vectors) {
  for (const std::string plain : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    auto decoded = base64_decode(base64_encode(plain));
    ASSERT_TRUE(decoded.ok()) << plain;
    EXPECT_EQ(*decoded, plain);
  }
  EXPECT_EQ(*base64_decode("//4A"), std::string("\xFF\xFE\x00", 3));
}

TEST(Base64, RefusesBadLength) {
  const auto r = base64_decode("Zm9");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::protocol);
  EXPECT_NE(r.error().message.find("multiple of 4"), std::string::npos);
}

TEST(Base64, RefusesCharactersOutsideTheAlphabet) {
  EXPECT_FALSE(base64_decode("Zm9v!A==").ok());
  EXPECT_FALSE(base64_decode("Zm 9").ok());
  EXPECT_FALSE(base64_decode("Zm9v\n").ok());
  EXPECT_FALSE(base64_decode("Zm-_").ok());  // base64url is not accepted
  EXPECT_FALSE(base64_decode(std::string("Zm\0v", 4)).ok());
}

TEST(Base64, RefusesMisplacedPadding) {
  EXPECT_FALSE(base64_decode("=Zm9").ok());
  EXPECT_FALSE(base64_decode("Z=m9").ok());
  EXPECT_FALSE(base64_decode("Zg==Zg==").ok());
  EXPECT_FALSE(base64_decode("Z===").ok());
  EXPECT_FALSE(base64_decode("====").ok());
}

TEST(Base64, RefusesNonZeroUnusedBits) {
  EXPECT_TRUE(base64_decode("Zg==").ok());
  EXPECT_FALSE(base64_decode("Zh==").ok());
  EXPECT_TRUE(base64_decode("Zm8=").ok());
  EXPECT_FALSE(base64_decode("Zm9=").ok());
}

}  // namespace
}  // namespace loopr::proto
