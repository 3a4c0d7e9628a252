#include "common/glob_pattern.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

namespace loopr::tool {
namespace {

bool matches(std::string_view pattern, std::string_view path) {
  auto compiled = GlobPattern::compile(pattern);
  EXPECT_TRUE(compiled.ok()) << pattern;
  return compiled.ok() && compiled->match(path);
}

TEST(tool_search_GlobPattern, StarStaysInOneComponent) {
  EXPECT_TRUE(matches("*.cpp", "main.cpp"));
  EXPECT_FALSE(matches("*.cpp", "src/main.cpp"));
  EXPECT_TRUE(matches("src/*.cpp", "src/main.cpp"));
  EXPECT_TRUE(matches("*", ".hidden"));
  EXPECT_FALSE(matches("*.cpp", "main.cpp.orig"));
}

TEST(tool_search_GlobPattern, QuestionMarkIsOneCharacter) {
  EXPECT_TRUE(matches("a?c", "abc"));
  EXPECT_FALSE(matches("a?c", "ac"));
  EXPECT_FALSE(matches("a?c", "a/c"));
  EXPECT_TRUE(matches("a?c",
                      "a\xc3\xa9"
                      "c"));  // é is one character
}

TEST(tool_search_GlobPattern, Classes) {
  EXPECT_TRUE(matches("[abc].txt", "b.txt"));
  EXPECT_FALSE(matches("[abc].txt", "d.txt"));
  EXPECT_TRUE(matches("[a-z]1", "q1"));
  EXPECT_FALSE(matches("[a-z]1", "Q1"));
  EXPECT_TRUE(matches("[!x]y", "ay"));
  EXPECT_FALSE(matches("[!x]y", "xy"));
  EXPECT_TRUE(matches("[^x]y", "ay"));
  EXPECT_TRUE(matches("[]]", "]"));
  EXPECT_TRUE(matches("[a-]", "-"));
  EXPECT_TRUE(matches("x[", "x["));  // unclosed: literal
}

TEST(tool_search_GlobPattern, Escapes) {
  EXPECT_TRUE(matches("\\*.txt", "*.txt"));
  EXPECT_FALSE(matches("\\*.txt", "a.txt"));
  EXPECT_TRUE(matches("a\\?", "a?"));
  EXPECT_TRUE(matches("\\{a,b\\}", "{a,b}"));
}

TEST(tool_search_GlobPattern, Globstar) {
  EXPECT_TRUE(matches("**/x", "x"));
  EXPECT_TRUE(matches("**/x", "a/b/x"));
  EXPECT_FALSE(matches("**/x", "a/bx"));
  EXPECT_TRUE(matches("a/**/b", "a/b"));
  EXPECT_TRUE(matches("a/**/b", "a/x/y/b"));
  EXPECT_FALSE(matches("a/**/b", "a/x/y/c"));
  EXPECT_TRUE(matches("a/**", "a/x"));
  EXPECT_TRUE(matches("a/**", "a/x/y"));
  EXPECT_FALSE(matches("a/**", "a"));
  EXPECT_TRUE(matches("**/*.cpp", "src/deep/er/main.cpp"));
  EXPECT_TRUE(matches("**", "any/thing"));
  EXPECT_TRUE(matches("a**b", "axxb"));  // not a whole component: an ordinary star
  EXPECT_FALSE(matches("a**b", "ax/xb"));
}

TEST(tool_search_GlobPattern, Alternation) {
  EXPECT_TRUE(matches("*.{cpp,hpp}", "a.cpp"));
  EXPECT_TRUE(matches("*.{cpp,hpp}", "a.hpp"));
  EXPECT_FALSE(matches("*.{cpp,hpp}", "a.c"));
  EXPECT_TRUE(matches("{src,include}/**/*.h", "include/x/y.h"));
  EXPECT_TRUE(matches("a{b,{c,d}}e", "ade"));
  EXPECT_TRUE(matches("x{,y}", "x"));
}

TEST(tool_search_GlobPattern, CompileErrors) {
  EXPECT_FALSE(GlobPattern::compile("").ok());
  auto unbalanced = GlobPattern::compile("a{b,c");
  ASSERT_FALSE(unbalanced.ok());
  EXPECT_EQ(unbalanced.error().code, errc::invalid_arguments);
  EXPECT_FALSE(unbalanced.error().hint.empty());
  EXPECT_FALSE(
      GlobPattern::compile("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}").ok());
  EXPECT_TRUE(GlobPattern::compile("a{b", /*alternation=*/false).ok());
}

TEST(tool_search_GlobPattern, IsLiteral) {
  EXPECT_TRUE(GlobPattern::compile("a/b.txt")->is_literal());
  EXPECT_FALSE(GlobPattern::compile("a/*.txt")->is_literal());
}

// Bounded by structure, not by a clock: these would take astronomically long
// with exponential backtracking.
TEST(tool_search_GlobPattern, HostilePatternsFinish) {
  std::string pattern;
  for (int i = 0; i < 50; ++i)
    pattern += "*a";
  pattern += "*b";
  const std::string text(10000, 'a');
  EXPECT_FALSE(matches(pattern, text));
  std::string deep;
  for (int i = 0; i < 30; ++i)
    deep += "**/a/";
  deep += "b";
  std::string path;
  for (int i = 0; i < 2000; ++i)
    path += "a/";
  path += "c";
  EXPECT_FALSE(matches(deep, path));
}

std::string component_gen_value(const std::string& raw) {
  std::string out;
  for (char c : raw) {
    const auto u = static_cast<unsigned char>(c);
    out += static_cast<char>('a' + u % 26);
  }
  return out.empty() ? "x" : out;
}

RC_GTEST_PROP(tool_search_GlobPatternProperty, LiteralMatchesExactlyItself,
              (const std::string& raw)) {
  const std::string name = component_gen_value(raw);
  auto compiled = GlobPattern::compile(name);
  RC_ASSERT(compiled.ok());
  RC_ASSERT(compiled->is_literal());
  RC_ASSERT(compiled->match(name));
  RC_ASSERT(!compiled->match(name + "x"));
  RC_ASSERT(!compiled->match("x" + name));
}

RC_GTEST_PROP(tool_search_GlobPatternProperty, GlobstarFindsNameAtAnyDepth,
              (const std::string& raw, const std::vector<std::string>& dirs)) {
  const std::string name = component_gen_value(raw);
  std::string path;
  for (const std::string& dir : dirs)
    path += component_gen_value(dir) + "/";
  auto compiled = GlobPattern::compile("**/" + name);
  RC_ASSERT(compiled.ok());
  RC_ASSERT(compiled->match(path + name));
  RC_ASSERT(!compiled->match(path + name + "/" + name + "z"));
}

RC_GTEST_PROP(tool_search_GlobPatternProperty, StarMatchesAnyComponent, (const std::string& raw)) {
  const std::string name = component_gen_value(raw);
  RC_ASSERT(GlobPattern::compile("*")->match(name));
  RC_ASSERT(!GlobPattern::compile("*")->match(name + "/" + name));
  RC_ASSERT(GlobPattern::compile("*" + name.substr(name.size() / 2))->match(name));
}

}  // namespace
}  // namespace loopr::tool
