#include "common/error.hpp"

#include <gtest/gtest.h>

#include <cerrno>

namespace loopr {
namespace {

Result<int> parse_positive(int n) {
  if (n <= 0) return make_error(errc::invalid_arguments, "must be positive", "pass 1 or more");
  return n;
}

TEST(Result, CarriesValueOrError) {
  auto good = parse_positive(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  auto bad = parse_positive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, errc::invalid_arguments);
  EXPECT_EQ(bad.error().hint, "pass 1 or more");
}

TEST(Result, VoidResultIsOkByDefault) {
  Result<void> fine;
  EXPECT_TRUE(fine.ok());
  Result<void> failed = make_error(errc::io, "disk on fire");
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "disk on fire");
}

TEST(Error, JsonOmitsEmptyHintAndDetails) {
  const auto bare = make_error(errc::not_found, "gone").to_json();
  EXPECT_EQ(bare, (nlohmann::json{{"code", "not_found"}, {"message", "gone"}}));
  auto rich = make_error(errc::no_match, "no", "try again");
  rich.details = {{"line", 4}};
  EXPECT_EQ(rich.to_json()["details"]["line"], 4);
  EXPECT_EQ(rich.to_json()["hint"], "try again");
}

TEST(Error, ErrnoErrorNamesOperationPathAndCause) {
  const auto e = errno_error(ENOENT, "cannot open", "a/b.txt");
  EXPECT_EQ(e.code, errc::io);
  EXPECT_EQ(e.message, "cannot open 'a/b.txt': No such file or directory");
}

}  // namespace
}  // namespace loopr
