#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loopr-tool/atomic_write.hpp"
#include "loopr-tool/content_hash.hpp"
#include "loopr-tool/edit_diagnosis.hpp"
#include "tests/support/text_checks.hpp"
#include "tests/tool_files/tool_fixture.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using tool::edit_file;
using tool::read_file;

class EditFile : public ToolTest {
 protected:
  json edit(const std::string& path, const std::string& old_string, const std::string& new_string,
            bool replace_all = false) {
    return ok(edit_file, {{"path", path},
                          {"old_string", old_string},
                          {"new_string", new_string},
                          {"replace_all", replace_all}});
  }
  Error edit_error(const std::string& path, const std::string& old_string,
                   const std::string& new_string) {
    return err(edit_file, {{"path", path}, {"old_string", old_string}, {"new_string", new_string}});
  }
};

TEST_F(EditFile, ReplacesTheOnlyMatchAndShowsTheChangedLines) {
  tree_.write("a.c", "one\ntwo\nthree\nfour\nfive\nsix\nseven\n");
  const auto out = edit("a.c", "four", "FOUR");
  EXPECT_EQ(tree_.read("a.c"), "one\ntwo\nthree\nFOUR\nfive\nsix\nseven\n");
  EXPECT_EQ(out["path"], "a.c");
  EXPECT_EQ(out["replacements"], 1);
  EXPECT_EQ(out["created"], false);
  EXPECT_EQ(out["bytes_written"], 34);
  EXPECT_EQ(out["content_hash"], tool::content_hash(tree_.read("a.c")));
  EXPECT_EQ(out["snippet"], "     2|two\n     3|three\n     4|FOUR\n     5|five\n     6|six\n");
  EXPECT_FALSE(out.contains("notes"));
}

TEST_F(EditFile, ReplaceAllChangesEveryOccurrence) {
  tree_.write("a.txt", "x = old;\ny = old + old;\n");
  const auto out = edit("a.txt", "old", "new", true);
  EXPECT_EQ(out["replacements"], 3);
  EXPECT_EQ(tree_.read("a.txt"), "x = new;\ny = new + new;\n");
}

TEST_F(EditFile, ReplaceAllHandlesManyThousandOccurrences) {
  std::string before;
  std::string after;
  for (int i = 0; i < 10000; ++i) {
    before += "x,";
    after += "yy,";
  }
  tree_.write("many.txt", before + "\n");
  EXPECT_EQ(edit("many.txt", "x", "yy", true)["replacements"], 10000);
  EXPECT_EQ(tree_.read("many.txt"), after + "\n");
}

TEST_F(EditFile, SeveralMatchesAreAmbiguousAndListTheirLines) {
  tree_.write("a.txt", "return 0;\nx;\nreturn 0;\n\nreturn 0;\n");
  const auto e = edit_error("a.txt", "return 0;", "return 1;");
  EXPECT_EQ(e.code, errc::ambiguous_match);
  EXPECT_TRUE(contains(e.message, "matches 3 places")) << e.message;
  EXPECT_TRUE(contains(e.message, "lines 1, 3, 5")) << e.message;
  EXPECT_TRUE(contains(e.hint, "replace_all")) << e.hint;
  EXPECT_EQ(e.details["match_lines"], (json{1, 3, 5}));
  EXPECT_EQ(tree_.read("a.txt"), "return 0;\nx;\nreturn 0;\n\nreturn 0;\n");
}

TEST_F(EditFile, OverlappingMatchesAreAmbiguousToo) {
  tree_.write("a.txt", "aaa\n");
  EXPECT_EQ(edit_error("a.txt", "aa", "b").code, errc::ambiguous_match);
}

TEST_F(EditFile, NoMatchShowsTheNearestCandidateWithTabsVisible) {
  tree_.write("greet.c", "int main(void) {\n\tprintf(\"hi\\n\");\n\treturn 0;\n}\n");
  const auto e = edit_error("greet.c", "    return 0;", "    return 1;");
  EXPECT_EQ(e.code, errc::no_match);
  EXPECT_TRUE(contains(e.message, "lines 3-3")) << e.message;
  EXPECT_TRUE(contains(e.message, "     3|→return 0;")) << e.message;
  EXPECT_TRUE(contains(e.message, "the file indents with tabs, old_string with spaces"))
      << e.message;
  EXPECT_TRUE(contains(e.hint, "offset=3")) << e.hint;
  EXPECT_EQ(e.details["nearest"]["first_line"], 3);
  EXPECT_EQ(e.details["nearest"]["similarity"], 1.0);
}

TEST_F(EditFile, NoMatchShowsTrailingSpacesAndTextDifferences) {
  tree_.write("a.py", "def f():\n    x = 1  \n    return x\n");
  const auto spaces = edit_error("a.py", "    x = 1\n    return x", "    x = 2\n    return x");
  EXPECT_EQ(spaces.code, errc::no_match);
  EXPECT_TRUE(contains(spaces.message, "     2|    x = 1··")) << spaces.message;
  EXPECT_TRUE(
      contains(spaces.message, "line 2 ends with 2 spaces in the file, nothing in old_string"))
      << spaces.message;
  const auto typo = edit_error("a.py", "    retrun x", "    return y");
  EXPECT_TRUE(contains(typo.message, "the file has «return x» where old_string has «retrun x»"))
      << typo.message;
}

TEST_F(EditFile, NoMatchWithNothingSimilarSaysSo) {
  tree_.write("a.txt", "alpha\nbeta\n");
  const auto e = edit_error("a.txt", "zzzz qqqq", "x");
  EXPECT_EQ(e.code, errc::no_match);
  EXPECT_TRUE(contains(e.message, "nothing in the file resembles it")) << e.message;
  EXPECT_TRUE(contains(e.hint, "read_file")) << e.hint;
}

TEST_F(EditFile, NoMatchRecognisesLineNumbersCopiedFromReadFile) {
  tree_.write("a.txt", "alpha\nbeta\n");
  const auto e = edit_error("a.txt", "     2|beta", "gamma");
  EXPECT_EQ(e.code, errc::no_match);
  EXPECT_TRUE(contains(e.message, "line-number prefixes")) << e.message;
  EXPECT_TRUE(e.details.contains("likely_cause"));
}

TEST_F(EditFile, AnEditAlreadyInTheFileSaysSo) {
  tree_.write("a.txt", "hello, loopr\n");
  const auto e = edit_error("a.txt", "hello, world", "hello, loopr");
  EXPECT_EQ(e.code, errc::already_applied);
  EXPECT_TRUE(contains(e.message, "already applied")) << e.message;
  EXPECT_EQ(e.details["new_string_line"], 1);
}

TEST_F(EditFile, RepeatingAnEditThatKeepsItsOldTextIsAlreadyApplied) {
  // new_string contains old_string: a retried edit would insert twice.
  tree_.write("a.c", "int x;\nint z;\n");
  edit("a.c", "int x;", "int x;\nint y;");
  EXPECT_EQ(tree_.read("a.c"), "int x;\nint y;\nint z;\n");
  const auto e = edit_error("a.c", "int x;", "int x;\nint y;");
  EXPECT_EQ(e.code, errc::already_applied);
  EXPECT_TRUE(contains(e.hint, "include the surrounding text")) << e.hint;
  EXPECT_EQ(tree_.read("a.c"), "int x;\nint y;\nint z;\n");
}

TEST_F(EditFile, OldEqualToNewIsRefused) {
  tree_.write("a.txt", "x\n");
  const auto e = edit_error("a.txt", "x", "x");
  EXPECT_EQ(e.code, errc::invalid_arguments);
  EXPECT_TRUE(contains(e.message, "are the same")) << e.message;
}

TEST_F(EditFile, AnEmptyOldStringCreatesANewFileWithItsFolders) {
  const auto out = edit("src/new/file.txt", "", "fresh\n");
  EXPECT_EQ(out["created"], true);
  EXPECT_EQ(out["replacements"], 1);
  EXPECT_EQ(out["snippet"], "     1|fresh\n");
  EXPECT_EQ(tree_.read("src/new/file.txt"), "fresh\n");
}

TEST_F(EditFile, AnEmptyOldStringRefusesAnExistingFileButFillsAnEmptyOne) {
  tree_.write("full.txt", "data\n");
  const auto e = edit_error("full.txt", "", "other\n");
  EXPECT_EQ(e.code, errc::invalid_arguments);
  EXPECT_TRUE(contains(e.message, "already exists")) << e.message;
  EXPECT_TRUE(contains(e.hint, "write_file")) << e.hint;
  EXPECT_EQ(tree_.read("full.txt"), "data\n");
  tree_.write("empty.txt", "");
  EXPECT_EQ(edit("empty.txt", "", "now\n")["created"], false);
  EXPECT_EQ(tree_.read("empty.txt"), "now\n");
}

TEST_F(EditFile, AMissingFileIsNotFoundWithAWayToCreateIt) {
  const auto e = edit_error("missing.txt", "a", "b");
  EXPECT_EQ(e.code, errc::not_found);
  EXPECT_TRUE(contains(e.hint, "empty old_string")) << e.hint;
  EXPECT_FALSE(tree_.exists("missing.txt"));
  EXPECT_EQ(edit_error("no/such/dir/f.txt", "a", "b").code, errc::not_found);
  EXPECT_FALSE(tree_.exists("no"));
}

TEST_F(EditFile, EditsApplyInOrder) {
  tree_.write("a.txt", "alpha beta\n");
  const auto out =
      ok(edit_file, {{"path", "a.txt"},
                     {"edits",
                      {{{"old_string", "alpha"}, {"new_string", "gamma"}},
                       {{"old_string", "gamma beta"}, {"new_string", "delta"}},
                       {{"old_string", "delta"}, {"new_string", "x"}, {"replace_all", true}}}}});
  EXPECT_EQ(out["replacements"], 3);
  EXPECT_EQ(tree_.read("a.txt"), "x\n");
}

TEST_F(EditFile, AFailingEditInAListWritesNothingAndIsNamed) {
  tree_.write("a.txt", "one\ntwo\nthree\n");
  const auto e = err(edit_file, {{"path", "a.txt"},
                                 {"edits",
                                  {{{"old_string", "one"}, {"new_string", "1"}},
                                   {{"old_string", "two"}, {"new_string", "2"}},
                                   {{"old_string", "thre"}, {"new_string", "3"}},
                                   {{"old_string", "four"}, {"new_string", "4"}}}}});
  EXPECT_EQ(e.code, errc::no_match);
  EXPECT_TRUE(contains(e.message, "edit 4 of 4 (edits[3])")) << e.message;
  EXPECT_TRUE(contains(e.hint, "nothing was written")) << e.hint;
  EXPECT_EQ(e.details["edit_index"], 3);
  EXPECT_EQ(tree_.read("a.txt"), "one\ntwo\nthree\n");
}

TEST_F(EditFile, AnEmptyOldStringMayOnlyComeFirstInAList) {
  const auto created = ok(edit_file, {{"path", "n.txt"},
                                      {"edits",
                                       {{{"old_string", ""}, {"new_string", "a b\n"}},
                                        {{"old_string", "b"}, {"new_string", "c"}}}}});
  EXPECT_EQ(created["created"], true);
  EXPECT_EQ(tree_.read("n.txt"), "a c\n");
  const auto e = err(
      edit_file,
      {{"path", "n.txt"},
       {"edits",
        {{{"old_string", "a"}, {"new_string", "b"}}, {{"old_string", ""}, {"new_string", "c"}}}}});
  EXPECT_EQ(e.code, errc::invalid_arguments);
  EXPECT_TRUE(contains(e.message, "edits[1]")) << e.message;
}

TEST_F(EditFile, KeepsCrlfLineEndingsWhenTheModelSendsLf) {
  tree_.write("dos.txt", "first\r\nsecond\r\nthird\r\n");
  const auto out = edit("dos.txt", "first\nsecond", "1\n2\n2b");
  EXPECT_EQ(tree_.read("dos.txt"), "1\r\n2\r\n2b\r\nthird\r\n");
  EXPECT_EQ(out["line_endings"], "crlf");
  EXPECT_EQ(out["snippet"], "     1|1\n     2|2\n     3|2b\n     4|third\n");
  edit("dos.txt", "third\n", "3\n");
  EXPECT_EQ(tree_.read("dos.txt"), "1\r\n2\r\n2b\r\n3\r\n");
}

TEST_F(EditFile, KeepsAMissingFinalNewline) {
  tree_.write("a.txt", "a\nb");
  // old_string's "\n" stands for the end of the file; new_string's is left out.
  const auto out = edit("a.txt", "b\n", "c\n");
  EXPECT_EQ(tree_.read("a.txt"), "a\nc");
  EXPECT_EQ(out["notes"].size(), 2u) << out.dump();
  edit("a.txt", "c", "c\nd\n");
  EXPECT_EQ(tree_.read("a.txt"), "a\nc\nd");
}

TEST_F(EditFile, KeepsAPresentFinalNewline) {
  tree_.write("a.txt", "a\nb\n");
  edit("a.txt", "b\n", "c");
  EXPECT_EQ(tree_.read("a.txt"), "a\nc\n");
  // Appending a line after the last one does not leave a blank line.
  edit("a.txt", "c", "c\nd\n");
  EXPECT_EQ(tree_.read("a.txt"), "a\nc\nd\n");
  // Deleting the last line keeps the one before it ended.
  edit("a.txt", "d\n", "");
  EXPECT_EQ(tree_.read("a.txt"), "a\nc\n");
}

TEST_F(EditFile, KeepsTheModeAndLeavesNoTemporaryFile) {
  tree_.write("run.sh", "echo old\n");
  ::chmod(tree_.path("run.sh").c_str(), 0751);
  edit("run.sh", "old", "new");
  EXPECT_EQ(mode_of(tree_.path("run.sh")), 0751u);
  EXPECT_EQ(ok(tool::list_directory, json::object())["entries"].size(), 1u);
}

TEST_F(EditFile, RefusesGitMetadataEvenThroughASymlink) {
  tree_.write(".git/config", "[core]\n\tbare = false\n");
  EXPECT_EQ(edit_error(".git/config", "false", "true").code, errc::protected_path);
  tree_.symlink(".git", "meta");
  EXPECT_EQ(edit_error("meta/config", "false", "true").code, errc::protected_path);
  EXPECT_EQ(edit_error(".git/hooks/pre-commit", "", "#!/bin/sh\n").code, errc::protected_path);
  EXPECT_EQ(tree_.read(".git/config"), "[core]\n\tbare = false\n");
  EXPECT_FALSE(tree_.exists(".git/hooks"));
}

TEST_F(EditFile, RefusesSymlinkLeavesDirectoriesAndBinaryFiles) {
  tree_.write("real.txt", "real\n");
  tree_.symlink("real.txt", "link.txt");
  const auto link = edit_error("link.txt", "real", "fake");
  EXPECT_TRUE(contains(link.message, "is a symlink to 'real.txt'")) << link.message;
  EXPECT_EQ(tree_.read("real.txt"), "real\n");
  tree_.mkdir("dir");
  EXPECT_EQ(edit_error("dir", "a", "b").code, errc::is_directory);
  tree_.write("blob.bin", std::string("ab\0cd", 5));
  EXPECT_EQ(edit_error("blob.bin", "ab", "xy").code, errc::binary_file);
}

TEST_F(EditFile, RefusesFilesOverTheEditLimit) {
  tree_.write("big.log", "head\n");
  ASSERT_EQ(
      ::truncate(tree_.path("big.log").c_str(), static_cast<off_t>(tool::kMaxEditableBytes + 1)),
      0);
  EXPECT_EQ(edit_error("big.log", "head", "tail").code, errc::too_large);
}

TEST_F(EditFile, AStaleExpectedHashIsRefusedAndTheFileKept) {
  tree_.write("f.txt", "v1\n");
  const std::string read_hash = ok(read_file, {{"path", "f.txt"}})["content_hash"];
  tree_.write("f.txt", "v2 by someone else\n");
  const auto e = err(
      edit_file,
      {{"path", "f.txt"}, {"old_string", "v"}, {"new_string", "w"}, {"expected_hash", read_hash}});
  EXPECT_EQ(e.code, errc::stale_read);
  EXPECT_TRUE(contains(e.hint, "read it again")) << e.hint;
  EXPECT_EQ(e.details["expected_hash"], read_hash);
  EXPECT_EQ(e.details["current_hash"], tool::content_hash("v2 by someone else\n"));
  EXPECT_EQ(tree_.read("f.txt"), "v2 by someone else\n");
  const std::string fresh = ok(read_file, {{"path", "f.txt"}})["content_hash"];
  ok(edit_file,
     {{"path", "f.txt"}, {"old_string", "v2"}, {"new_string", "v3"}, {"expected_hash", fresh}});
  EXPECT_EQ(tree_.read("f.txt"), "v3 by someone else\n");
}

// Read, then removed by someone: an edit cannot match (not_found, saying it
// was read before), and creating it again is allowed: nothing can be lost.
TEST_F(EditFile, AFileGoneSinceItWasReadCanBeCreatedAgain) {
  const auto e = err(edit_file, {{"path", "gone.txt"},
                                 {"old_string", "a"},
                                 {"new_string", "b"},
                                 {"expected_hash", "sha256:00"}});
  EXPECT_EQ(e.code, errc::not_found);
  EXPECT_TRUE(contains(e.message, "read before")) << e.message;
  const auto out = ok(edit_file, {{"path", "gone.txt"},
                                  {"old_string", ""},
                                  {"new_string", "back\n"},
                                  {"expected_hash", "sha256:00"}});
  EXPECT_EQ(out["created"], true);
  EXPECT_EQ(tree_.read("gone.txt"), "back\n");
}

// A file too big to hash can never have been read whole: the refusal says
// so (too_large) instead of asking for a read that cannot help.
TEST_F(EditFile, AFileTooLargeToHashIsRefusedAsTooLargeNotAsUnread) {
  tree_.write("huge.log", "x");
  ASSERT_EQ(
      ::truncate(tree_.path("huge.log").c_str(), static_cast<off_t>(tool::kMaxEditableBytes) + 1),
      0);
  const auto e =
      err(edit_file,
          {{"path", "huge.log"}, {"old_string", "x"}, {"new_string", "y"}, {"create_only", true}});
  EXPECT_EQ(e.code, errc::too_large);
  EXPECT_TRUE(contains(e.hint, "run_command")) << e.hint;
}

TEST_F(EditFile, CreateOnlyRefusesAFileTheSessionNeverRead) {
  tree_.write("seen.txt", "text\n");
  const auto e = err(edit_file, {{"path", "seen.txt"},
                                 {"old_string", "text"},
                                 {"new_string", "more"},
                                 {"create_only", true}});
  EXPECT_EQ(e.code, errc::not_read_first);
  EXPECT_TRUE(contains(e.hint, "read_file")) << e.hint;
  EXPECT_EQ(tree_.read("seen.txt"), "text\n");
  ok(edit_file,
     {{"path", "new.txt"}, {"old_string", ""}, {"new_string", "hi\n"}, {"create_only", true}});
  EXPECT_EQ(tree_.read("new.txt"), "hi\n");
}

TEST_F(EditFile, BadArgumentsNameTheProblem) {
  tree_.write("a.txt", "x\n");
  const auto message = [&](const json& args) { return err(edit_file, args).message; };
  EXPECT_TRUE(contains(message({{"old_string", "x"}, {"new_string", "y"}}),
                       "missing required argument 'path'"));
  EXPECT_TRUE(contains(message({{"path", "a.txt"}}), "missing old_string and new_string"));
  EXPECT_TRUE(contains(message({{"path", "a.txt"}, {"new_string", "y"}}), "'old_string'"));
  EXPECT_TRUE(contains(message({{"path", "a.txt"},
                                {"old_string", "x"},
                                {"new_string", "y"},
                                {"edits", {{{"old_string", "x"}, {"new_string", "y"}}}}}),
                       "not both"));
  EXPECT_TRUE(contains(message({{"path", 3}, {"old_string", "x"}, {"new_string", "y"}}),
                       "'path' must be a string"));
  EXPECT_TRUE(contains(message({{"path", "a.txt"}, {"old_string", 5}, {"new_string", "y"}}),
                       "'old_string' must be a string"));
  EXPECT_TRUE(contains(
      message(
          {{"path", "a.txt"}, {"old_string", "x"}, {"new_string", "y"}, {"replace_all", "yes"}}),
      "'replace_all' must be true or false"));
  EXPECT_TRUE(contains(message({{"path", "a.txt"}, {"edits", "x->y"}}), "must be a list"));
  EXPECT_TRUE(contains(message({{"path", "a.txt"}, {"edits", json::array()}}), "'edits' is empty"));
  EXPECT_TRUE(contains(message({{"path", "a.txt"}, {"edits", {5}}}), "edits[0]"));
  EXPECT_TRUE(contains(message({{"path", "a.txt"}, {"edits", {{{"old_string", "x"}}}}}),
                       "edit_file edits[0]: missing required argument 'new_string'"));
  EXPECT_TRUE(
      contains(message({{"path", "a.txt"},
                        {"edits", {{{"old_string", "x"}, {"new_string", "y"}, {"regex", true}}}}}),
               "edits[0] has no argument 'regex'"));
  EXPECT_TRUE(
      contains(message({{"path", "a.txt"}, {"old_string", "x"}, {"new_string", "y"}, {"line", 3}}),
               "edit_file has no argument 'line'"));
  EXPECT_TRUE(contains(
      message({{"path", "a.txt"}, {"old_string", ""}, {"new_string", "y"}, {"replace_all", true}}),
      "replace_all needs a non-empty old_string"));
  EXPECT_TRUE(contains(
      message({{"path", "a.txt"}, {"old_string", "x"}, {"new_string", "y"}, {"create_only", "no"}}),
      "'create_only'"));
  json many = json::array();
  for (int i = 0; i < 101; ++i)
    many.push_back({{"old_string", "x"}, {"new_string", "y"}});
  EXPECT_TRUE(contains(message({{"path", "a.txt"}, {"edits", many}}), "at most 100"));
  EXPECT_EQ(err(edit_file, json::array()).code, errc::invalid_arguments);
  EXPECT_EQ(tree_.read("a.txt"), "x\n");
}

// A random text line over a small alphabet, so slices repeat often enough to
// exercise uniqueness, and without 'X', which marks new text.
rc::Gen<std::string> text_line() {
  return rc::gen::container<std::string>(rc::gen::element('a', 'b', 'c', 'd', ' ', '\t'));
}

RC_GTEST_FIXTURE_PROP(EditFile, AnEditAndItsReverseRestoreTheFileByteForByte, ()) {
  const auto lines = *rc::gen::container<std::vector<std::string>>(text_line());
  const bool crlf = *rc::gen::arbitrary<bool>();
  const bool final_newline = *rc::gen::arbitrary<bool>();
  std::string text;  // as read_file shows it: "\n" line breaks
  for (std::size_t i = 0; i < lines.size(); ++i) {
    text += lines[i];
    if (i + 1 < lines.size() || final_newline) text += '\n';
  }
  RC_PRE(!text.empty());
  const std::size_t begin = *rc::gen::inRange<std::size_t>(0, text.size());
  const std::size_t length = *rc::gen::inRange<std::size_t>(1, text.size() - begin + 1);
  const std::string old_string = text.substr(begin, length);
  RC_PRE(tool::find_occurrences(text, old_string, 2, true).size() == 1);
  std::string new_string = "X" + *rc::gen::container<std::string>(rc::gen::element('a', 'e', '\n'));
  if (*rc::gen::arbitrary<bool>()) new_string += '\n';

  std::string file;
  for (char c : text)
    file += crlf && c == '\n' ? std::string("\r\n") : std::string(1, c);
  tree_.write("p.txt", file);
  auto forward =
      call(edit_file, {{"path", "p.txt"}, {"old_string", old_string}, {"new_string", new_string}});
  RC_ASSERT(forward.ok());
  // A file left with no line break at all has no line-ending style to keep.
  RC_PRE(!crlf || tree_.read("p.txt").find('\n') != std::string::npos);
  auto reverse =
      call(edit_file, {{"path", "p.txt"}, {"old_string", new_string}, {"new_string", old_string}});
  RC_ASSERT(reverse.ok());
  RC_ASSERT(tree_.read("p.txt") == file);
}

}  // namespace
}  // namespace loopr::test
