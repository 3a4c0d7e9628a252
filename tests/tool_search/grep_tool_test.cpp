#include <gtest/gtest.h>

#include "loopr-tool/tools.hpp"
#include "tests/support/temp_tree.hpp"
#include "tests/support/tool_front_end.hpp"

namespace loopr::tool {
namespace {

class tool_search_GrepTool : public testing::Test {
 protected:
  Result<Json> run(const Json& args) { return tools.call(grep, args); }
  Json ok(const Json& args) {
    auto result = run(args);
    EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
    return result.ok() ? *result : Json();
  }
  test::TempTree tree;
  test::ToolFrontEnd tools{tree.root()};
};

TEST_F(tool_search_GrepTool, ContentModeSortedByPath) {
  tree.write("b.txt", "one\nfoo two\nthree\n");
  tree.write("a.txt", "foo\nbar\nxfoo\n");
  const Json result = ok({{"pattern", "foo"}});
  EXPECT_EQ(result["content"], "a.txt:1:foo\na.txt:3:xfoo\nb.txt:2:foo two\n");
  EXPECT_EQ(result["match_count"], 3);
  EXPECT_EQ(result["files_matched"], 2);
  EXPECT_EQ(result["files_searched"], 2);
  EXPECT_EQ(result["truncated"], false);
  EXPECT_EQ(result["mode"], "content");
}

TEST_F(tool_search_GrepTool, FilesAndCountModes) {
  tree.write("a.txt", "foo\nfoo\n");
  tree.write("b.txt", "nothing\n");
  tree.write("c/d.txt", "foo foo\n");
  const Json files = ok({{"pattern", "foo"}, {"output_mode", "files"}});
  EXPECT_EQ(files["files"], (Json{"a.txt", "c/d.txt"}));
  EXPECT_FALSE(files.contains("match_count"));
  const Json counts = ok({{"pattern", "foo"}, {"output_mode", "count"}});
  EXPECT_EQ(counts["counts"],
            (Json{{{"path", "a.txt"}, {"count", 2}}, {{"path", "c/d.txt"}, {"count", 1}}}));
  EXPECT_EQ(counts["match_count"], 3);
}

TEST_F(tool_search_GrepTool, ContextAndSeparators) {
  tree.write("a.txt", "1\n2\nm3\n4\n5\n6\n7\nm8\n9\n");
  tree.write("b.txt", "m1\n2\n");
  const Json result = ok({{"pattern", "^m"}, {"context", 1}});
  EXPECT_EQ(result["content"],
            "a.txt-2-2\na.txt:3:m3\na.txt-4-4\n--\na.txt-7-7\na.txt:8:m8\na.txt-9-9\n--\n"
            "b.txt:1:m1\nb.txt-2-2\n");
  const Json merged = ok({{"pattern", "^m"}, {"context", 3}, {"path", "a.txt"}});
  EXPECT_EQ(merged["content"],
            "a.txt-1-1\na.txt-2-2\na.txt:3:m3\na.txt-4-4\na.txt-5-5\na.txt-6-6\na.txt-7-7\n"
            "a.txt:8:m8\na.txt-9-9\n");
}

TEST_F(tool_search_GrepTool, CaseInsensitive) {
  tree.write("a.txt", "Hello\nHELLO\nhelo\n");
  EXPECT_EQ(ok({{"pattern", "hello"}})["match_count"], 0);
  EXPECT_EQ(ok({{"pattern", "hello"}, {"case_insensitive", true}})["match_count"], 2);
}

TEST_F(tool_search_GrepTool, FilePatternOnBasenameOrPath) {
  tree.write("src/a.cpp", "x\n");
  tree.write("src/a.h", "x\n");
  tree.write("test/b.cpp", "x\n");
  EXPECT_EQ(ok({{"pattern", "x"}, {"file_pattern", "*.cpp"}, {"output_mode", "files"}})["files"],
            (Json{"src/a.cpp", "test/b.cpp"}));
  EXPECT_EQ(ok({{"pattern", "x"}, {"file_pattern", "src/*"}, {"output_mode", "files"}})["files"],
            (Json{"src/a.cpp", "src/a.h"}));
  EXPECT_EQ(
      ok({{"pattern", "x"}, {"file_pattern", "*.{h,hpp}"}, {"output_mode", "files"}})["files"],
      (Json{"src/a.h"}));
}

TEST_F(tool_search_GrepTool, GitignoreAndBinary) {
  tree.write(".gitignore", "gen/\n*.log\n");
  tree.write("gen/a.txt", "needle\n");
  tree.write("x.log", "needle\n");
  tree.write("bin.dat", std::string("needle\0", 7));
  tree.write("ok.txt", "needle\n");
  const Json result = ok({{"pattern", "needle"}, {"output_mode", "files"}});
  EXPECT_EQ(result["files"], Json{"ok.txt"});
  EXPECT_EQ(result["skipped_binary"], 1);
  // An explicit path is searched even if ignored.
  EXPECT_EQ(ok({{"pattern", "needle"}, {"path", "gen"}, {"output_mode", "files"}})["files"],
            Json{"gen/a.txt"});
}

TEST_F(tool_search_GrepTool, CapAndTruncated) {
  std::string text;
  for (int i = 0; i < 30; ++i)
    text += "hit\n";
  tree.write("a.txt", text);
  tree.write("b.txt", text);
  const Json result = ok({{"pattern", "hit"}, {"max_results", 40}});
  EXPECT_EQ(result["truncated"], true);
  EXPECT_EQ(result["match_count"], 60);
  const std::string content = result["content"];
  EXPECT_EQ(std::count(content.begin(), content.end(), '\n'), 40);
  EXPECT_NE(content.find("b.txt:10:hit\n"), std::string::npos);
  EXPECT_EQ(content.find("b.txt:11:hit\n"), std::string::npos);
  EXPECT_NE(result["hint"].get<std::string>().find("file_pattern"), std::string::npos);
  const Json files = ok({{"pattern", "hit"}, {"max_results", 1}, {"output_mode", "files"}});
  EXPECT_EQ(files["files"], Json{"a.txt"});
  EXPECT_EQ(files["truncated"], true);
}

TEST_F(tool_search_GrepTool, ManyFilesCapKeepsTheFirstPaths) {
  for (int i = 100; i < 400; ++i)
    tree.write("d/f" + std::to_string(i), "hit\nhit\n");
  const Json result = ok({{"pattern", "hit"}, {"max_results", 5}});
  EXPECT_EQ(result["content"],
            "d/f100:1:hit\nd/f100:2:hit\nd/f101:1:hit\nd/f101:2:hit\n"
            "d/f102:1:hit\n");
  EXPECT_EQ(result["match_count"], 600);
}

TEST_F(tool_search_GrepTool, InvalidRegexNamesTheOffset) {
  tree.write("a.txt", "x\n");
  auto result = run({{"pattern", "ab(c"}});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, errc::invalid_arguments);
  EXPECT_NE(result.error().message.find("offset 4"), std::string::npos) << result.error().message;
  EXPECT_NE(result.error().message.find("missing closing parenthesis"), std::string::npos)
      << result.error().message;
  EXPECT_FALSE(result.error().hint.empty());
}

TEST_F(tool_search_GrepTool, MatchSpanningLinesIsNotReportedOnTheWrongLine) {
  tree.write("a.txt", "alpha\nbeta\nalpha beta\n");
  const Json result = ok({{"pattern", "alpha\\sbeta"}});
  EXPECT_EQ(result["content"], "a.txt:3:alpha beta\n");
  const Json negated = ok({{"pattern", "a[^x]*b"}});  // [^x] crosses '\n' in PCRE2
  EXPECT_EQ(negated["content"], "a.txt:3:alpha beta\n");
}

TEST_F(tool_search_GrepTool, InvalidUtf8AndCrlfAndLongLines) {
  tree.write("bad.txt", "caf\xff needle\r\nplain\n");
  tree.write("long.txt", std::string(5000, 'y') + "needle\n");
  const Json result = ok({{"pattern", "needle"}});
  const std::string content = result["content"];
  EXPECT_NE(content.find("bad.txt:1:caf\xef\xbf\xbd needle\n"), std::string::npos) << content;
  EXPECT_NE(content.find("long.txt:1:" + std::string(2000, 'y') + "...\n"), std::string::npos);
  // A non-ASCII pattern turns on UTF mode; invalid bytes in files are no error.
  EXPECT_EQ(ok({{"pattern", "caf."}})["match_count"], 1);
  tree.write("utf.txt", "caf\xc3\xa9\n");
  EXPECT_EQ(ok({{"pattern", "caf\xc3\xa9"}, {"path", "utf.txt"}})["match_count"], 1);
  EXPECT_EQ(ok({{"pattern", "\\p{L}+\xc3\xa9"}, {"path", "."}})["match_count"], 1);
}

// Patterns whose required-literal prefilter must not lose matches.
TEST_F(tool_search_GrepTool, LiteralPrefilterKeepsEveryMatch) {
  tree.write("a.txt",
             "colorful\ncolourful\nacdef\nxxyzw\nfoobazq\nbarbazq\ndefg\nABCD\n_MAXX\n"
             "aa.bcd\nnothing\n");
  const std::pair<const char*, int> cases[] = {
      {"colou?rful", 2}, {"ab*cdef", 1},    {"x{2}yzw", 1}, {"(foo|bar)bazq", 2},
      {"abc|defg", 1},   {"\\x{41}BCD", 1}, {"[_]MAXX", 1}, {"a\\.bcd", 1},
      {"z*yzw", 1},      {"q?bazq", 2},     {"^...baz", 2}, {"(?i)abcd", 1},
  };
  for (const auto& [pattern, expected] : cases) {
    EXPECT_EQ(ok({{"pattern", pattern}})["match_count"], expected) << pattern;
  }
  EXPECT_EQ(ok({{"pattern", "COLOU?RFUL"}, {"case_insensitive", true}})["match_count"], 2);
}

TEST_F(tool_search_GrepTool, LargeFileIsMappedAndSearchedToTheEnd) {
  std::string big;
  const std::string line = "filler line of text without the word\n";
  while (big.size() < (17u << 20))
    big += line;
  const std::uint64_t lines = big.size() / line.size();
  big += "the needle at the end\n";
  tree.write("big.txt", big);
  const Json result = ok({{"pattern", "needle"}});
  EXPECT_EQ(result["content"], "big.txt:" + std::to_string(lines + 1) + ":the needle at the end\n");
}

TEST_F(tool_search_GrepTool, CatastrophicPatternEnds) {
  tree.write("a.txt", std::string(100000, 'a') + "b\n");
  auto result = run({{"pattern", "(a+)+$"}});
  if (result.ok()) {
    EXPECT_EQ((*result)["match_count"], 0);
  } else {
    EXPECT_EQ(result.error().code, errc::invalid_arguments);
    EXPECT_NE(result.error().hint.find("nested"), std::string::npos);
  }
}

TEST_F(tool_search_GrepTool, EmptyPatternAndEdgeLines) {
  tree.write("a.txt", "x\n\ny");
  EXPECT_EQ(ok({{"pattern", ""}})["content"], "a.txt:1:x\na.txt:2:\na.txt:3:y\n");
  EXPECT_EQ(ok({{"pattern", "^$"}})["content"], "a.txt:2:\n");
  tree.write("empty.txt", "");
  EXPECT_EQ(ok({{
                    "pattern",
                    "",
                },
                {"path", "empty.txt"}})["match_count"],
            0);
}

TEST_F(tool_search_GrepTool, PathEscapesAndMissing) {
  tree.symlink("/etc", "etc");
  for (const char* path : {"..", "/etc", "etc", "etc/passwd"}) {
    auto result = run({{"pattern", "root"}, {"path", path}});
    ASSERT_FALSE(result.ok()) << path;
    EXPECT_EQ(result.error().code, errc::path_outside_worktree) << path;
  }
  auto missing = run({{"pattern", "x"}, {"path", "nope"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, errc::not_found);
}

TEST_F(tool_search_GrepTool, BadArguments) {
  const Json cases[] = {
      Json::object(),
      {{"pattern", 1}},
      {{"pattern", "x"}, {"unknown", 1}},
      {{"pattern", "x"}, {"context", 21}},
      {{"pattern", "x"}, {"context", -1}},
      {{"pattern", "x"}, {"context", 1.5}},
      {{"pattern", "x"}, {"max_results", 0}},
      {{"pattern", "x"}, {"max_results", 10001}},
      {{"pattern", "x"}, {"output_mode", "lines"}},
      {{"pattern", "x"}, {"case_insensitive", 1}},
      {{"pattern", "x"}, {"file_pattern", 5}},
      {{"pattern", "x"}, {"file_pattern", "{a"}},
      {{"pattern", "x"}, {"path", ""}},
      Json::array(),
  };
  for (const Json& args : cases) {
    auto result = run(args);
    ASSERT_FALSE(result.ok()) << args.dump();
    EXPECT_EQ(result.error().code, errc::invalid_arguments) << args.dump();
    EXPECT_FALSE(result.error().hint.empty()) << args.dump();
  }
}

TEST_F(tool_search_GrepTool, ThroughTheBinary) {
  tree.write("a.txt", "needle\n");
  const auto run_result = test::run_loopr_tool("grep", tree.root(), Json{{"pattern", "needle"}});
  EXPECT_EQ(run_result.exit_code, 0) << run_result.stdout_text << run_result.stderr_text;
  EXPECT_EQ(run_result.output["content"], "a.txt:1:needle\n");
  const auto bad = test::run_loopr_tool("grep", tree.root(), Json{{"pattern", "("}});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.output["error"]["code"], "invalid_arguments");
}

}  // namespace
}  // namespace loopr::tool
