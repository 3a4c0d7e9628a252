// The pure helpers behind edit_file's messages: match search, whitespace made
// visible, numbered excerpts, the nearest candidate and how it differs.
#include "loopr-tool/edit_diagnosis.hpp"

#include <gtest/gtest.h>

#include "tests/support/text_checks.hpp"

namespace loopr::tool {
namespace {

using test::contains;
using Offsets = std::vector<std::size_t>;

TEST(FindOccurrences, OverlappingTellsOneMatchFromSeveral) {
  EXPECT_EQ(find_occurrences("aaa", "aa", 10, true), (Offsets{0, 1}));
  EXPECT_EQ(find_occurrences("aaa", "aa", 10, false), (Offsets{0}));
  EXPECT_EQ(find_occurrences("x-x-x-x", "x", 2, false), (Offsets{0, 2}));
  EXPECT_EQ(find_occurrences("abc", "", 10, false), Offsets{});
  EXPECT_EQ(find_occurrences("ab", "abc", 10, true), Offsets{});
  EXPECT_EQ(find_occurrences("", "a", 10, true), Offsets{});
}

TEST(LineNumbersOf, CountsLinesUpToEachOffsetInOnePass) {
  const std::string_view text = "one\ntwo\nthree\n";
  EXPECT_EQ(line_numbers_of(text, {0, 3, 4, 8, 8, 14}), (Offsets{1, 1, 2, 3, 3, 4}));
}

TEST(ShowWhitespace, MarksTabsCarriageReturnsAndTrailingSpacesOnly) {
  EXPECT_EQ(show_whitespace("\tx = 1;  \r\n  \na b"), "→x = 1;··␍\n··\na b");
  EXPECT_EQ(show_whitespace("if (a)\t{"), "if (a)→{");
  EXPECT_EQ(show_whitespace(""), "");
}

TEST(NumberedLines, NumbersLikeReadFileAndCutsLongLinesAndLongLists) {
  EXPECT_EQ(numbered_lines("a\r\nb\n", 7, 10, 100, false), "     7|a\n     8|b\n");
  EXPECT_EQ(numbered_lines("a\r\n", 1, 10, 100, true), "     1|a␍\n");
  EXPECT_EQ(numbered_lines("abcdef\n", 1, 10, 3, false), "     1|abc...\n");
  EXPECT_EQ(numbered_lines("1\n2\n3\n4\n", 1, 2, 100, false),
            "     1|1\n     2|2\n(2 more lines)\n");
  // A cut never splits a UTF-8 character.
  EXPECT_EQ(numbered_lines("ab\xE2\x82\xAC\n", 1, 1, 3, false), "     1|ab...\n");
}

TEST(NearestCandidate, WhitespaceOnlyDifferencesScoreOne) {
  const std::string file = "int main() {\n\tint x = 1;\n\treturn x;\n}\n";
  const auto candidate = nearest_candidate(file, "    int x = 1;\n    return x;");
  ASSERT_TRUE(candidate);
  EXPECT_EQ(candidate->first_line, 2u);
  EXPECT_EQ(candidate->last_line, 3u);
  EXPECT_EQ(candidate->text, "\tint x = 1;\n\treturn x;");
  EXPECT_DOUBLE_EQ(candidate->similarity, 1.0);
}

TEST(NearestCandidate, FindsAMisspeltFragmentInsideALine) {
  const std::string file =
      "#include <stdio.h>\n\nvoid greet(void) {\n  printf(\"hello, world\\n\");\n}\n";
  const auto candidate = nearest_candidate(file, "printf(\"helo, world");
  ASSERT_TRUE(candidate);
  EXPECT_EQ(candidate->first_line, 4u);
  EXPECT_EQ(candidate->text, "  printf(\"hello, world\\n\");");
  EXPECT_GT(candidate->similarity, 0.7);
  EXPECT_LT(candidate->similarity, 1.0);
}

TEST(NearestCandidate, PicksTheBestOfSeveralSimilarBlocks) {
  std::string file;
  for (int i = 0; i < 50; ++i) {
    file +=
        "case " + std::to_string(i) + ":\n  handle_" + std::to_string(i) + "(request);\n  break;\n";
  }
  const auto candidate = nearest_candidate(file, "case 37:\n  handle_37(reqest);\n  break;\n");
  ASSERT_TRUE(candidate);
  EXPECT_EQ(candidate->first_line, 37u * 3 + 1);
  EXPECT_EQ(candidate->last_line, 37u * 3 + 3);
}

TEST(NearestCandidate, StaysCorrectOnABigFileWithTheMatchAtTheEnd) {
  // 200,000 lines of filler; the search is two linear passes plus a fixed
  // number of window comparisons (see the header), whatever the size.
  std::string file;
  for (int i = 0; i < 200000; ++i)
    file += "filler line number " + std::to_string(i) + "\n";
  file += "\tconfigure(options, verbose);\n";
  const auto candidate = nearest_candidate(file, "  configure(options, verbose);");
  ASSERT_TRUE(candidate);
  EXPECT_EQ(candidate->first_line, 200001u);
  EXPECT_DOUBLE_EQ(candidate->similarity, 1.0);
}

TEST(NearestCandidate, ALineRepeatingACommonWordDoesNotOutscoreTheRealOne) {
  std::string file;
  for (int i = 0; i < 5000; ++i)
    file += "    config config config config options options;\n";
  file += "\tconfigure(options, verbose);\n";
  const auto candidate = nearest_candidate(file, "  configure(options, verbos);");
  ASSERT_TRUE(candidate);
  EXPECT_EQ(candidate->first_line, 5001u);
}

TEST(NearestCandidate, NothingSimilarOrNothingToCompare) {
  EXPECT_FALSE(nearest_candidate("alpha\nbeta\ngamma\n", "zzzz qqqq wwww"));
  EXPECT_FALSE(nearest_candidate("alpha\n", "  \n\t\n"));
  EXPECT_FALSE(nearest_candidate("", "something"));
}

TEST(DescribeDifference, TabsAgainstSpaces) {
  EXPECT_EQ(describe_difference("\tint x;\n\treturn x;", "    int x;\n    return x;", 4),
            "the file indents with tabs, old_string with spaces (2 lines differ only in "
            "whitespace)");
  EXPECT_EQ(describe_difference("  int x;", "\tint x;", 4),
            "the file indents with spaces, old_string with tabs");
}

TEST(DescribeDifference, IndentWidthAndTrailingSpaces) {
  EXPECT_EQ(describe_difference("a\n        b", "a\n    b", 10),
            "line 11 is indented with 8 spaces in the file, 4 spaces in old_string");
  EXPECT_EQ(describe_difference("x = 1;  \ny = 2;", "x = 1;\ny = 2;", 3),
            "line 3 ends with 2 spaces in the file, nothing in old_string");
  EXPECT_TRUE(contains(describe_difference("f(a,  b);", "f(a, b);", 1), "spacing inside line 1"));
}

TEST(DescribeDifference, ShowsTheFirstDifferingTextWithContext) {
  const std::string said =
      describe_difference("  printf(\"hello, world\\n\");", "printf(\"helo, world", 9);
  EXPECT_EQ(said,
            "line 9: the file has «ntf(\"hello, world» where old_string has «ntf(\"helo, world»");
  // Indentation does not throw the alignment off.
  EXPECT_EQ(
      describe_difference("\tconfigure(options, verbose);", "  configure(options, verbos);", 3),
      "line 3: the file has «, verbose);» where old_string has «, verbos);»");
  const std::string two =
      describe_difference("a = 1;\nb = 2;\nc = 3;", "a = 1;\nb = 5;\nc = 4;", 1);
  EXPECT_TRUE(contains(two, "line 2: the file has «b = 2;» where old_string has «b = 5;»")) << two;
  EXPECT_TRUE(contains(two, "2 lines differ in text")) << two;
}

TEST(DescribeDifference, SaysWhenTheFileEndsBeforeTheRegion) {
  const std::string said = describe_difference("a\nb", "a\nb\nc", 1);
  EXPECT_TRUE(contains(said, "old_string has 3 lines but the file ends after 2")) << said;
}

TEST(RecognisedMistake, LineNumbersCopiedFromReadFile) {
  const auto said =
      recognised_mistake("int a;\n\nint b;\n", "     1|int a;\n     2|\n     3|int b;\n");
  ASSERT_TRUE(said);
  EXPECT_TRUE(contains(*said, "line-number prefixes")) << *said;
  EXPECT_FALSE(contains(*said, "does not match exactly either")) << *said;
  const auto also_wrong = recognised_mistake("int a;\n", "     1|int z;\n");
  ASSERT_TRUE(also_wrong);
  EXPECT_TRUE(contains(*also_wrong, "does not match exactly either"));
}

TEST(RecognisedMistake, EscapesWrittenOutAsText) {
  const auto said = recognised_mistake("a\n\tb \"c\"\n", "a\\n\\tb \\\"c\\\"");
  ASSERT_TRUE(said);
  EXPECT_TRUE(contains(*said, "escape sequences")) << *said;
  // A backslash the file has too is no mistake.
  EXPECT_FALSE(recognised_mistake("puts(\"x\\n\");\n", "puts(\"y\\n\");"));
}

TEST(RecognisedMistake, CarriageReturnsTheFileLacks) {
  const auto said = recognised_mistake("a\nb\n", "a\r\nc\r\n");
  ASSERT_TRUE(said);
  EXPECT_TRUE(contains(*said, "carriage returns")) << *said;
  EXPECT_FALSE(recognised_mistake("a\nb\n", "a\nc\n"));
}

}  // namespace
}  // namespace loopr::tool
