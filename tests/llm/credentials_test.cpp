#include "llm/credentials.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <sstream>

#include "llm/provider.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::llm {
namespace {

constexpr const char* kKey = "sk-test-0123456789abcdef";

config::ProviderSettings settings_with(std::string env, std::string file) {
  config::ProviderSettings settings;
  settings.api_key_env = std::move(env);
  settings.key_file = std::move(file);
  return settings;
}

void expect_no_key_text(const Error& error) {
  EXPECT_EQ(error.message.find(kKey), std::string::npos);
  EXPECT_EQ(error.hint.find(kKey), std::string::npos);
}

TEST(Credentials, KeyFromTheEnvironment) {
  auto credential =
      load_credential(settings_with("MY_KEY", ""), config::fixed_env({{"MY_KEY", kKey}}));
  ASSERT_TRUE(credential) << credential.error().message;
  ASSERT_TRUE(credential->key);
  EXPECT_EQ(credential->key->reveal(), kKey);
  EXPECT_EQ(credential->source, "environment variable MY_KEY");
  EXPECT_TRUE(credential->note.empty());
}

TEST(Credentials, MissingVariableNamesItAndSaysWhatToSet) {
  auto credential = load_credential(settings_with("MY_KEY", ""), config::fixed_env({}));
  ASSERT_FALSE(credential);
  EXPECT_EQ(credential.error().code, errc::provider_auth);
  EXPECT_NE(credential.error().message.find("MY_KEY"), std::string::npos);
  EXPECT_NE(credential.error().hint.find("export MY_KEY"), std::string::npos);
  EXPECT_NE(credential.error().hint.find("key_file"), std::string::npos);
}

TEST(Credentials, EmptyVariableFallsBackToTheKeyFile) {
  test::TempTree tree;
  tree.write("key", std::string(kKey) + "\n");
  ::chmod(tree.path("key").c_str(), 0600);
  auto credential = load_credential(settings_with("MY_KEY", tree.path("key")),
                                    config::fixed_env({{"MY_KEY", ""}}));
  ASSERT_TRUE(credential) << credential.error().message;
  EXPECT_EQ(credential->key->reveal(), kKey);
  EXPECT_EQ(credential->source, "key file " + tree.path("key"));
  EXPECT_TRUE(credential->note.empty());
}

TEST(Credentials, KeyFileStripsOneTrailingNewlineOnly) {
  test::TempTree tree;
  tree.write("crlf", std::string(kKey) + "\r\n");
  tree.write("two", std::string(kKey) + "\n\n");
  ::chmod(tree.path("crlf").c_str(), 0600);
  auto crlf = load_credential(settings_with("", tree.path("crlf")), config::fixed_env({}));
  ASSERT_TRUE(crlf);
  EXPECT_EQ(crlf->key->reveal(), kKey);
  auto two = load_credential(settings_with("", tree.path("two")), config::fixed_env({}));
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().message.find("more than one line"), std::string::npos);
  expect_no_key_text(two.error());
}

TEST(Credentials, EmptyOrUnreadableKeyFileIsRefused) {
  test::TempTree tree;
  tree.write("empty", "\n");
  auto empty = load_credential(settings_with("", tree.path("empty")), config::fixed_env({}));
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, errc::provider_auth);
  EXPECT_NE(empty.error().message.find("is empty"), std::string::npos);
  EXPECT_NE(empty.error().message.find(tree.path("empty")), std::string::npos);

  auto missing = load_credential(settings_with("ANTHROPIC_API_KEY", tree.path("absent")),
                                 config::fixed_env({}));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find(tree.path("absent")), std::string::npos);
  EXPECT_NE(missing.error().hint.find("ANTHROPIC_API_KEY"), std::string::npos);

  tree.mkdir("dir");
  EXPECT_FALSE(load_credential(settings_with("", tree.path("dir")), config::fixed_env({})));
}

TEST(Credentials, KeyFileOthersCanReadGivesANote) {
  test::TempTree tree;
  tree.write("key", kKey);
  ::chmod(tree.path("key").c_str(), 0644);
  auto credential = load_credential(settings_with("", tree.path("key")), config::fixed_env({}));
  ASSERT_TRUE(credential);
  EXPECT_NE(credential->note.find("0644"), std::string::npos);
  EXPECT_NE(credential->note.find("chmod 600"), std::string::npos);
  EXPECT_EQ(credential->note.find(kKey), std::string::npos);
}

TEST(Credentials, NoVariableAndNoFileMeansNoKey) {
  auto credential = load_credential(settings_with("", ""), config::fixed_env({}));
  ASSERT_TRUE(credential);
  EXPECT_FALSE(credential->key);
}

TEST(Credentials, VariableWithANewlineIsRefusedWithoutShowingIt) {
  auto credential = load_credential(settings_with("K", ""),
                                    config::fixed_env({{"K", std::string(kKey) + "\nX: y"}}));
  ASSERT_FALSE(credential);
  expect_no_key_text(credential.error());
}

TEST(Credentials, SecretNeverPrints) {
  Secret secret(kKey);
  std::ostringstream out;
  out << secret;
  EXPECT_EQ(out.str(), "[secret]");
  EXPECT_EQ(::testing::PrintToString(secret), "[secret]");
}

TEST(Credentials, RedactReplacesEveryOccurrence) {
  Secret secret(kKey);
  EXPECT_EQ(redact(std::string("bad key ") + kKey + " (" + kKey + ")", &secret),
            "bad key [redacted] ([redacted])");
  EXPECT_EQ(redact("nothing here", &secret), "nothing here");
  EXPECT_EQ(redact("no key at all", nullptr), "no key at all");
}

}  // namespace
}  // namespace loopr::llm
