#include <fcntl.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "loopr-tool/content_hash.hpp"
#include "loopr-tool/tool_registry.hpp"
#include "tests/tool_files/tool_fixture.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using tool::read_file;

class ReadFile : public ToolTest {};

TEST_F(ReadFile, NumbersLinesLikeCatN) {
  tree_.write("a.txt", "alpha\nbeta\n");
  const auto out = ok(read_file, {{"path", "a.txt"}});
  EXPECT_EQ(out["content"], "     1|alpha\n     2|beta\n");
  EXPECT_EQ(out["total_lines"], 2);
  EXPECT_EQ(out["more"], false);
  EXPECT_EQ(out["lines_returned"], 2);
  EXPECT_EQ(out["content_hash"], tool::content_hash("alpha\nbeta\n"));
  EXPECT_EQ(out["path"], "a.txt");
}

TEST_F(ReadFile, PagesWithOffsetAndLimitAndSaysWhatRemains) {
  std::string text;
  for (int i = 1; i <= 10; ++i)
    text += "line" + std::to_string(i) + "\n";
  tree_.write("ten.txt", text);
  const auto out = ok(read_file, {{"path", "ten.txt"}, {"offset", 4}, {"limit", 3}});
  EXPECT_EQ(out["content"], "     4|line4\n     5|line5\n     6|line6\n");
  EXPECT_EQ(out["more"], true);
  EXPECT_EQ(out["next_offset"], 7);
  EXPECT_EQ(out["total_lines"], 10);
}

TEST_F(ReadFile, ALastLineWithoutNewlineCounts) {
  tree_.write("a.txt", "one\ntwo");
  const auto out = ok(read_file, {{"path", "a.txt"}});
  EXPECT_EQ(out["content"], "     1|one\n     2|two\n");
  EXPECT_EQ(out["total_lines"], 2);
}

TEST_F(ReadFile, CutsLongLinesAt2000BytesWithoutSplittingACharacter) {
  std::string line(1999, 'x');
  line += "\xE2\x82\xAC";  // a 3-byte character straddling byte 2000
  line += std::string(5000, 'y');
  tree_.write("long.txt", line + "\nshort\n");
  const auto out = ok(read_file, {{"path", "long.txt"}});
  const std::string content = out["content"];
  EXPECT_EQ(content, "     1|" + std::string(1999, 'x') + "...\n     2|short\n");
  EXPECT_EQ(out["lines_cut"], 1);
}

TEST_F(ReadFile, RefusesBinaryFilesWithAHint) {
  tree_.write("blob.bin", std::string("\x7f"
                                      "ELF\0\0\0",
                                      7));
  const auto e = err(read_file, {{"path", "blob.bin"}});
  EXPECT_EQ(e.code, errc::binary_file);
  EXPECT_NE(e.hint.find("xxd"), std::string::npos);
}

TEST_F(ReadFile, ShowsInvalidUtf8Lossily) {
  tree_.write("latin1.txt", "caf\xE9\n");
  const auto out = ok(read_file, {{"path", "latin1.txt"}});
  EXPECT_EQ(out["content"], "     1|caf\xEF\xBF\xBD\n");
  EXPECT_EQ(out["invalid_utf8"], true);
}

TEST_F(ReadFile, StripsCrlfAndSaysSo) {
  tree_.write("dos.txt", "a\r\nb\r\n");
  const auto out = ok(read_file, {{"path", "dos.txt"}});
  EXPECT_EQ(out["content"], "     1|a\n     2|b\n");
  EXPECT_EQ(out["line_endings"], "crlf");
}

TEST_F(ReadFile, EmptyFileAndOffsetPastTheEnd) {
  tree_.write("empty.txt", "");
  const auto out = ok(read_file, {{"path", "empty.txt"}});
  EXPECT_EQ(out["content"], "");
  EXPECT_EQ(out["total_lines"], 0);
  tree_.write("three.txt", "1\n2\n3\n");
  const auto e = err(read_file, {{"path", "three.txt"}, {"offset", 9}});
  EXPECT_EQ(e.code, errc::invalid_arguments);
  EXPECT_NE(e.message.find("has 3 lines"), std::string::npos) << e.message;
}

TEST_F(ReadFile, DirectoriesAndMissingFilesAreClearErrors) {
  tree_.mkdir("src");
  EXPECT_EQ(err(read_file, {{"path", "src"}}).code, errc::is_directory);
  const auto missing = err(read_file, {{"path", "nope.txt"}});
  EXPECT_EQ(missing.code, errc::not_found);
  EXPECT_NE(missing.hint.find("list_directory"), std::string::npos);
}

TEST_F(ReadFile, AMultiGigabyteFileGivesItsFirstPageWithoutReadingIt) {
  // 12 KiB of text, then a sparse tail up to 3 GiB: the binary sniff (first
  // 8 KiB) sees text, and only the first chunk is read for the page.
  std::string head = "first line\n";
  for (int i = 0; i < 1000; ++i)
    head += "line " + std::to_string(i) + " of the log\n";
  tree_.write("huge.log", head);
  const int fd = ::open(tree_.path("huge.log").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 3ll << 30), 0);
  ::close(fd);
  const auto out = ok(read_file, {{"path", "huge.log"}, {"limit", 2}});
  EXPECT_EQ(out["content"], "     1|first line\n     2|line 0 of the log\n");
  EXPECT_EQ(out["total_lines"], nullptr);
  EXPECT_EQ(out["content_hash"], nullptr);
  EXPECT_EQ(out["more"], true);
  EXPECT_EQ(out["next_offset"], 3);
  EXPECT_EQ(out["too_large_to_edit"], true);
  EXPECT_EQ(out["size_bytes"], 3ull << 30);
}

TEST_F(ReadFile, BadArgumentsNameTheField) {
  tree_.write("a.txt", "x\n");
  EXPECT_NE(err(read_file, json::object()).message.find("missing required argument 'path'"),
            std::string::npos);
  EXPECT_NE(err(read_file, {{"path", 7}}).message.find("'path' must be a string"),
            std::string::npos);
  EXPECT_NE(err(read_file, {{"path", "a.txt"}, {"offset", 0}}).message.find("'offset'"),
            std::string::npos);
  EXPECT_NE(err(read_file, {{"path", "a.txt"}, {"limit", "ten"}}).message.find("'limit'"),
            std::string::npos);
  EXPECT_NE(err(read_file, {{"path", "a.txt"}, {"lines", 3}}).message.find("no argument 'lines'"),
            std::string::npos);
  EXPECT_EQ(err(read_file, json::array()).code, errc::invalid_arguments);
}

// Strips read_file's "%6d|" prefixes: what is left is the file's text.
std::string unnumbered(const std::string& content) {
  std::string out;
  std::size_t i = 0;
  while (i < content.size()) {
    const std::size_t bar = content.find('|', i);
    const std::size_t end = content.find('\n', bar);
    out += content.substr(bar + 1, end - bar);
    i = end + 1;
  }
  return out;
}

// read_file under a job's output cap (loopr-tool/output_fit.hpp), through
// the two front ends that know one: a process per call reads it from
// LOOPR_MAX_OUTPUT_BYTES, a warm worker is given it with each call and
// passes it to call_tool().
json read_capped(const std::string& root, const json& args, std::size_t cap, bool process) {
  if (process) {
    ::setenv("LOOPR_MAX_OUTPUT_BYTES", std::to_string(cap).c_str(), 1);
    const ToolRun run = run_loopr_tool("read_file", root, args);
    ::unsetenv("LOOPR_MAX_OUTPUT_BYTES");
    EXPECT_EQ(run.exit_code, 0) << run.stdout_text.substr(0, 300);
    EXPECT_LE(run.stdout_text.size(), cap);
    return run.output;
  }
  auto worktree = tool::Worktree::open(root);
  EXPECT_TRUE(worktree);
  if (!worktree) return nullptr;
  const tool::ToolOutput output =
      tool::call_tool("loopr-tool", tool::all_tools(), "read_file", *worktree, args.dump(), cap);
  EXPECT_EQ(output.exit_code, 0) << output.stdout_text.substr(0, 300);
  EXPECT_LE(output.stdout_text.size(), cap);
  return json::parse(output.stdout_text, nullptr, false);
}

TEST_F(ReadFile, APageOverTheOutputCapStopsAtTheLastWholeLineThatFitsAndReadsOnExactly) {
  // 2000 lines of 200 characters: ~416 kB of page under a 100 kB cap.
  std::string text;
  std::string numbered;
  for (int i = 1; i <= 2000; ++i) {
    const std::string line =
        std::to_string(i) + ":" +
        std::string(200 - std::to_string(i).size() - 1, static_cast<char>('a' + i % 26));
    text += line + "\n";
    char number[16];
    std::snprintf(number, sizeof number, "%6d|", i);
    numbered += number + line + "\n";
  }
  tree_.write("wide.txt", text);
  for (const bool process : {false, true}) {
    SCOPED_TRACE(process ? "process per call" : "call_tool, as a warm worker");
    std::string joined;
    std::int64_t offset = 1;
    int pages = 0;
    for (;;) {
      ASSERT_LT(++pages, 20);
      json args = {{"path", "wide.txt"}};
      if (offset > 1) args["offset"] = offset;
      const json page = read_capped(tree_.root(), args, 100000, process);
      ASSERT_TRUE(page.is_object());
      const std::string content = page["content"];
      EXPECT_EQ(page["start_line"], offset);
      EXPECT_EQ(page["total_lines"], 2000);
      joined += content;
      const std::int64_t returned = page["lines_returned"];
      if (!page["more"].get<bool>()) {
        EXPECT_EQ(offset + returned - 1, 2000);
        EXPECT_FALSE(page.contains("hint")) << "the last page fits whole";
        break;
      }
      // Cut at a whole line, as many as fit: one more would not have.
      EXPECT_EQ(content.back(), '\n');
      EXPECT_EQ(page["next_offset"], offset + returned);
      EXPECT_GT(returned, 400);
      EXPECT_LT(returned, 500);
      EXPECT_GT(page.dump().size() + 1 + 208, 100000u);
      const std::string hint = page["hint"];
      EXPECT_NE(hint.find("to fit this tool's output limit of 100000 bytes"), std::string::npos)
          << hint;
      EXPECT_NE(hint.find("read on with offset " + std::to_string(offset + returned)),
                std::string::npos)
          << hint;
      offset = page["next_offset"];
    }
    EXPECT_EQ(pages, 5);  // 4 x ~480 lines and the rest
    EXPECT_TRUE(joined == numbered) << "the pages do not add up to the file";
  }
}

TEST_F(ReadFile, UnderTheOutputCapOneLineIsReturnedWhateverItsSize) {
  tree_.write("two.txt", std::string(5000, 'x') + "\nsecond\n");
  for (const bool process : {false, true}) {
    SCOPED_TRACE(process ? "process per call" : "call_tool, as a warm worker");
    auto worktree = tool::Worktree::open(tree_.root());
    ASSERT_TRUE(worktree);
    // A cap that the first line alone is over: that line is returned (the
    // runner then refuses the result as too large, as it did before).
    const json args = {{"path", "two.txt"}};
    if (process) {
      ::setenv("LOOPR_MAX_OUTPUT_BYTES", "1000", 1);
      const ToolRun run = run_loopr_tool("read_file", tree_.root(), args);
      ::unsetenv("LOOPR_MAX_OUTPUT_BYTES");
      EXPECT_EQ(run.output["lines_returned"], 1) << run.stdout_text.substr(0, 300);
      EXPECT_EQ(run.output["next_offset"], 2);
      EXPECT_EQ(run.output["lines_cut"], 1);
    } else {
      const tool::ToolOutput output = tool::call_tool("loopr-tool", tool::all_tools(), "read_file",
                                                      *worktree, args.dump(), 1000);
      const json page = json::parse(output.stdout_text);
      EXPECT_EQ(page["lines_returned"], 1);
      EXPECT_EQ(page["next_offset"], 2);
    }
  }
}

RC_GTEST_FIXTURE_PROP(ReadFile, PagesConcatenateToTheFile, (std::vector<std::string> lines)) {
  std::string text;
  for (auto& line : lines) {
    std::string clean;
    for (char c : line) {
      if (c != '\n' && c != '\r' && c != '\0') clean += static_cast<char>((c & 0x3f) + 0x20);
    }
    text += clean + "\n";
  }
  tree_.write("p.txt", text);
  const int limit = *rc::gen::inRange(1, 7);
  std::string joined;
  std::int64_t offset = 1;
  for (;;) {
    auto out = call(read_file, {{"path", "p.txt"}, {"offset", offset}, {"limit", limit}});
    if (text.empty()) {
      RC_ASSERT(out.ok());
      break;
    }
    RC_ASSERT(out.ok());
    joined += unnumbered((*out)["content"]);
    if (!(*out)["more"].get<bool>()) break;
    offset = (*out)["next_offset"];
  }
  RC_ASSERT(joined == text);
}

}  // namespace
}  // namespace loopr::test
