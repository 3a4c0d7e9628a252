// fts_query: a safe SQLite FTS5 MATCH expression from any text a model or a
// person typed. FTS5's query syntax gives meaning to quotes, `*`, `^`, `:`,
// parentheses, AND/OR/NOT/NEAR and column filters, and refuses unbalanced
// ones with an error; text from a model is not a query language. So the text
// is cut into words the way FTS5's unicode61 tokenizer cuts it (runs of
// letters and digits; anything else separates), each word becomes a quoted
// string (so "NEAR" or "OR" is a word to find, never an operator), and the
// words are joined with OR: a note matching more of them ranks higher under
// bm25. Bytes that are not valid UTF-8, NULs and control characters
// separate words. At most kMaxQueryWords distinct words are kept (in the
// order they first appear), so a megabyte of text is a bounded query.
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace loopr::memory {

inline constexpr std::size_t kMaxQueryWords = 32;
// A word longer than this is cut (FTS5 would index such a token, but no
// note is likely to hold it and it only makes the query long).
inline constexpr std::size_t kMaxQueryWordBytes = 64;

// The distinct words of `text`, in order, at most kMaxQueryWords.
std::vector<std::string> query_words(std::string_view text);

// `"w1" OR "w2" OR ...`; empty when `text` has no word (nothing to search).
std::string fts_query(std::string_view text);

}  // namespace loopr::memory
