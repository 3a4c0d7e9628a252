// loopr-tool/output_fit.hpp: listings longer than the job's cap are cut to
// the longest prefix that fits (whole entries, whole lines), marked
// truncated with a hint; everything else is left alone.
#include "loopr-tool/output_fit.hpp"

#include <gtest/gtest.h>

#include <string>

namespace loopr::tool {
namespace {

using nlohmann::json;

std::size_t line_size(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace).size() + 1;
}

json listing(int entries, const std::string& stem) {
  json list = json::array();
  for (int i = 0; i < entries; ++i)
    list.push_back({{"path", stem + std::to_string(i)},
                    {"size", i},
                    {"is_dir", false},
                    {"is_symlink", false}});
  return {{"path", "."}, {"entries", list}, {"truncated", false}};
}

TEST(OutputFit, AListingOverTheCapKeepsTheLongestPrefixThatFits) {
  const json original = listing(3000, "a/rather/long/folder/name/file-");
  json result = original;
  const std::size_t cap = 100000;
  ASSERT_GT(line_size(result), cap);
  EXPECT_TRUE(fit_listing_to_output_cap("list_directory", result, cap));
  EXPECT_LE(line_size(result), cap);
  const std::size_t kept = result["entries"].size();
  ASSERT_GT(kept, 0u);
  for (std::size_t i = 0; i < kept; ++i)
    ASSERT_EQ(result["entries"][i], original["entries"][i]) << i;
  EXPECT_EQ(result["truncated"], true);
  const std::string hint = result["hint"];
  EXPECT_NE(hint.find("cut to " + std::to_string(kept) + " of the 3000 entries"), std::string::npos)
      << hint;
  EXPECT_NE(hint.find("output limit of 100000 bytes"), std::string::npos) << hint;
  // Maximal: one entry more would not fit.
  json one_more = result;
  one_more["entries"].push_back(original["entries"][kept]);
  EXPECT_GT(line_size(one_more), cap);
}

TEST(OutputFit, TheToolsOwnHintIsKept) {
  json result = listing(2000, "folder/f");
  result["truncated"] = true;
  result["hint"] = "only the first 2000 entries are shown; list a subfolder";
  EXPECT_TRUE(fit_listing_to_output_cap("list_directory", result, 20000));
  EXPECT_NE(result["hint"].get<std::string>().find(
                "before that cut: only the first 2000 entries are shown; list a subfolder"),
            std::string::npos)
      << result["hint"];
}

TEST(OutputFit, GlobMatchesAndGrepFilesAndCountsAreCutToo) {
  json glob = {{"pattern", "**"}, {"matches", json::array()}, {"truncated", false}};
  json files = {{"mode", "files"}, {"files", json::array()}, {"truncated", false}};
  json counts = {{"mode", "count"}, {"counts", json::array()}, {"truncated", false}};
  for (int i = 0; i < 1000; ++i) {
    glob["matches"].push_back("src/module/file" + std::to_string(i) + ".cpp");
    files["files"].push_back("src/module/file" + std::to_string(i) + ".cpp");
    counts["counts"].push_back({{"path", "src/f" + std::to_string(i)}, {"count", i}});
  }
  EXPECT_TRUE(fit_listing_to_output_cap("glob", glob, 5000));
  EXPECT_TRUE(fit_listing_to_output_cap("grep", files, 5000));
  EXPECT_TRUE(fit_listing_to_output_cap("grep", counts, 5000));
  for (const json* result : {&glob, &files, &counts}) {
    EXPECT_LE(line_size(*result), 5000u) << result->dump().substr(0, 60);
    EXPECT_EQ((*result)["truncated"], true);
  }
  EXPECT_GT(glob["matches"].size(), 10u);
}

TEST(OutputFit, GrepContentIsCutAtTheEndOfALine) {
  std::string content;
  for (int i = 1; i <= 200; ++i)
    content += "a.txt:" + std::to_string(i) + ":" + std::string(100, 'x') + "\n";
  json result = {{"mode", "content"}, {"content", content}, {"truncated", false}};
  EXPECT_TRUE(fit_listing_to_output_cap("grep", result, 4000));
  EXPECT_LE(line_size(result), 4000u);
  const std::string cut = result["content"];
  ASSERT_FALSE(cut.empty());
  EXPECT_EQ(cut.back(), '\n');
  EXPECT_EQ(content.rfind(cut, 0), 0u) << "not a prefix";
  EXPECT_NE(result["hint"].get<std::string>().find(" lines "), std::string::npos);
}

TEST(OutputFit, BytesThatAreNotUtf8AreMeasuredAsWritten) {
  // Each invalid byte is written as U+FFFD (3 bytes): measured that way.
  json result = listing(0, "");
  for (int i = 0; i < 500; ++i)
    result["entries"].push_back(
        {{"path", std::string(20, '\xff')}, {"size", 0}, {"is_dir", false}, {"is_symlink", false}});
  EXPECT_TRUE(fit_listing_to_output_cap("list_directory", result, 10000));
  EXPECT_LE(line_size(result), 10000u);
}

TEST(OutputFit, AResultTooLargeEvenWithoutItsListingIsLeftWhole) {
  json glob = {{"pattern", std::string(20000, 'p')},
               {"matches", json::array({"a", "b", "c"})},
               {"truncated", false},
               {"hint", "the tool's own"}};
  const json before = glob;
  EXPECT_FALSE(fit_listing_to_output_cap("glob", glob, 1000));
  EXPECT_EQ(glob, before);
}

TEST(OutputFit, WhatFitsOtherToolsAndNoCapAreLeftAlone) {
  const json small = listing(3, "f");
  json same = small;
  EXPECT_FALSE(fit_listing_to_output_cap("list_directory", same, 100000));
  EXPECT_EQ(same, small);

  const json big = listing(3000, "folder/f");
  json uncapped = big;
  EXPECT_FALSE(fit_listing_to_output_cap("list_directory", uncapped, 0));
  EXPECT_EQ(uncapped, big);

  const json read = {{"path", "a"}, {"content", std::string(200000, 'r')}};
  json other = read;
  EXPECT_FALSE(fit_listing_to_output_cap("read_file", other, 1000));
  EXPECT_EQ(other, read);
}

}  // namespace
}  // namespace loopr::tool
