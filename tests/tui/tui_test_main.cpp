// The TUI's unit tests measure columns with wcwidth(3), which needs a UTF-8
// LC_CTYPE: the environment's setup sets C.UTF-8 for every test.
#include <gtest/gtest.h>

#include <clocale>

namespace {

class Utf8Locale : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_NE(std::setlocale(LC_ALL, "C.UTF-8"), nullptr) << "the C.UTF-8 locale is missing";
  }
};

const auto* const kLocale = ::testing::AddGlobalTestEnvironment(new Utf8Locale);

}  // namespace
