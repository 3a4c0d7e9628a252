// fts_query(): any text a model or a person types becomes a MATCH expression
// that SQLite's FTS5 accepts and that means "notes holding these words":
// FTS5's operators, quotes, column filters and parentheses in the text are
// words to find (or separators), never syntax. Each case runs the expression
// against a real FTS5 table.
#include "memory/fts_query.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <random>
#include <string>

namespace loopr::memory {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// An in-memory FTS5 table of a few rows, and MATCH run on it.
class Fts {
 public:
  Fts() {
    sqlite3_open(":memory:", &db_);
    exec("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'unicode61 remove_diacritics 2')");
    for (const char* row :
         {"alpha beta gamma", "the NEAR operator and OR and NOT", "column body: filter",
          "café au lait", "日本語 のテキスト", "quote \"inside\" here", "star* prefix^ caret"}) {
      sqlite3_stmt* insert = nullptr;
      sqlite3_prepare_v2(db_, "INSERT INTO t (body) VALUES (?1)", -1, &insert, nullptr);
      sqlite3_bind_text(insert, 1, row, -1, SQLITE_TRANSIENT);
      sqlite3_step(insert);
      sqlite3_finalize(insert);
    }
  }
  ~Fts() { sqlite3_close(db_); }

  // The rows matching `expression`, in rowid order; sets `error` on failure.
  std::vector<std::string> match(const std::string& expression, std::string* error = nullptr) {
    std::vector<std::string> rows;
    sqlite3_stmt* select = nullptr;
    sqlite3_prepare_v2(db_, "SELECT body FROM t WHERE t MATCH ?1 ORDER BY rowid", -1, &select,
                       nullptr);
    sqlite3_bind_text(select, 1, expression.data(), static_cast<int>(expression.size()),
                      SQLITE_TRANSIENT);
    int rc = 0;
    while ((rc = sqlite3_step(select)) == SQLITE_ROW)
      rows.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(select, 0)));
    if (rc != SQLITE_DONE && error != nullptr) *error = sqlite3_errmsg(db_);
    sqlite3_finalize(select);
    return rows;
  }
  // fts_query(text) run; the test fails if FTS5 refuses it.
  std::vector<std::string> search(const std::string& text) {
    const std::string expression = fts_query(text);
    if (expression.empty()) return {};
    std::string error;
    auto rows = match(expression, &error);
    EXPECT_EQ(error, "") << "text: " << text.substr(0, 200) << "\nexpression: " << expression;
    return rows;
  }

 private:
  void exec(const char* sql) { sqlite3_exec(db_, sql, nullptr, nullptr, nullptr); }
  sqlite3* db_ = nullptr;
};

TEST(FtsQuery, WordsAreQuotedAndJoinedWithOr) {
  EXPECT_EQ(fts_query("alpha beta"), "\"alpha\" OR \"beta\"");
  EXPECT_THAT(query_words("Alpha, alpha; beta-gamma"),
              ElementsAre("Alpha", "alpha", "beta", "gamma"));
  Fts fts;
  EXPECT_THAT(fts.search("gamma delta"), ElementsAre("alpha beta gamma"));
}

TEST(FtsQuery, TheRawTextWouldBeAnErrorOrMeanSomethingElse) {
  // The premise of fts_query: raw text is a syntax FTS5 refuses or obeys.
  Fts fts;
  std::string error;
  fts.match("alpha (beta", &error);
  EXPECT_NE(error, "");
  error.clear();
  fts.match("\"unbalanced", &error);
  EXPECT_NE(error, "");
  error.clear();
  EXPECT_THAT(fts.match("alpha NOT beta", &error), IsEmpty());  // NOT excluded the row
}

TEST(FtsQuery, OperatorsAreWordsToFind) {
  Fts fts;
  EXPECT_THAT(fts.search("NEAR"), ElementsAre("the NEAR operator and OR and NOT"));
  EXPECT_THAT(fts.search("alpha NOT beta"),
              ElementsAre("alpha beta gamma", "the NEAR operator and OR and NOT"));
  EXPECT_THAT(fts.search("NEAR(alpha beta, 2)"),
              ElementsAre("alpha beta gamma", "the NEAR operator and OR and NOT"));
  EXPECT_THAT(fts.search("AND"), ElementsAre("the NEAR operator and OR and NOT"));
}

TEST(FtsQuery, QuotesParenthesesColumnFiltersAndPrefixesAreNotSyntax) {
  Fts fts;
  for (const char* text : {"\"",          "\"\"\"",      "(((",      ")",
                           "alpha (beta", "body:filter", "body : x", "{body}: alpha",
                           "star*",       "^caret",      "*",        "-alpha",
                           "+",           "a\"b",        "'alpha'",  "\\\"inside\\\"",
                           "NEAR/3",      "OR",          "NOT",      "AND OR NOT"}) {
    fts.search(text);  // FTS5 accepts every expression (checked inside)
  }
  EXPECT_THAT(fts.search("body:filter"), ElementsAre("column body: filter"));
  EXPECT_THAT(fts.search("\"inside\""), ElementsAre("quote \"inside\" here"));
  EXPECT_THAT(fts.search("star*"), ElementsAre("star* prefix^ caret"));
  EXPECT_THAT(fts.search("sta*"), IsEmpty());  // no prefix search: '*' is not an operator
}

TEST(FtsQuery, TextWithoutWordsIsNoQuery) {
  EXPECT_EQ(fts_query(""), "");
  EXPECT_EQ(fts_query("  ,;:!?()\"*^-+{}"), "");
  EXPECT_EQ(fts_query(std::string("\0\0\0", 3)), "");
}

TEST(FtsQuery, NulBytesControlCharactersAndInvalidUtf8SeparateWords) {
  EXPECT_THAT(query_words(std::string("alpha\0beta", 10)), ElementsAre("alpha", "beta"));
  EXPECT_THAT(query_words("alpha\x01\x1f"
                          "beta"),
              ElementsAre("alpha", "beta"));
  // A lone continuation byte, an overlong '/', a surrogate, and a cut sequence.
  EXPECT_THAT(query_words("alpha\x80"
                          "beta\xc0\xaf"
                          "gamma\xed\xa0\x80"
                          "delta\xe6\x97"),
              ElementsAre("alpha", "beta", "gamma", "delta"));
  Fts fts;
  EXPECT_THAT(fts.search("gamma\xff\xfe"), ElementsAre("alpha beta gamma"));
}

TEST(FtsQuery, OtherScriptsAndAccentsAreFound) {
  Fts fts;
  EXPECT_THAT(fts.search("cafe"), ElementsAre("café au lait"));
  EXPECT_THAT(fts.search("café"), ElementsAre("café au lait"));
  EXPECT_THAT(fts.search("日本語"), ElementsAre("日本語 のテキスト"));
  EXPECT_THAT(fts.search("— … «»"), IsEmpty());  // punctuation of other scripts: no error
}

TEST(FtsQuery, AMegabyteOfTextIsABoundedQuery) {
  std::string text;
  std::mt19937 random(7);
  while (text.size() < 1024 * 1024)
    text += "w" + std::to_string(random() % 100000) + " (\"NEAR ";
  const std::vector<std::string> words = query_words(text);
  EXPECT_EQ(words.size(), kMaxQueryWords);
  EXPECT_LT(fts_query(text).size(), kMaxQueryWords * (kMaxQueryWordBytes + 6));
  const std::string long_word(100000, 'x');
  ASSERT_EQ(query_words(long_word).size(), 1u);
  EXPECT_EQ(query_words(long_word)[0].size(), kMaxQueryWordBytes);
  Fts fts;
  fts.search(text);
}

TEST(FtsQuery, RandomBytesAlwaysGiveAnExpressionFts5Accepts) {
  std::mt19937 random(42);
  Fts fts;
  for (int round = 0; round < 2000; ++round) {
    std::string text(random() % 200, '\0');
    for (char& c : text)
      c = static_cast<char>(random() % 256);
    fts.search(text);
  }
}

}  // namespace
}  // namespace loopr::memory
