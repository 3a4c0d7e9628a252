#include "memory/fts_query.hpp"

#include <algorithm>

namespace loopr::memory {
namespace {

bool is_ascii_word_byte(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Length of the well-formed UTF-8 sequence of two to four bytes at `text[i]`
// (no overlongs, no surrogates, <= U+10FFFF), or 0.
std::size_t multibyte_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if (byte(k) < 0x80 || byte(k) > 0xbf) return 0;
  return length;
}

}  // namespace

std::vector<std::string> query_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty() && std::find(words.begin(), words.end(), word) == words.end()) {
      words.push_back(word);
    }
    word.clear();
  };
  for (std::size_t i = 0; i < text.size() && words.size() < kMaxQueryWords;) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (is_ascii_word_byte(c)) {
      if (word.size() < kMaxQueryWordBytes) word += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c >= 0x80) {
      if (const std::size_t length = multibyte_length(text, i); length != 0) {
        // Letters of other scripts (and their punctuation: FTS5's tokenizer
        // separates that inside the quoted word, harmlessly).
        if (word.size() + length <= kMaxQueryWordBytes) word.append(text.substr(i, length));
        i += length;
        continue;
      }
    }
    flush();  // ASCII punctuation, space, control, NUL, or an invalid byte
    ++i;
  }
  if (words.size() < kMaxQueryWords) flush();
  return words;
}

std::string fts_query(std::string_view text) {
  std::string query;
  for (const std::string& word : query_words(text)) {
    if (!query.empty()) query += " OR ";
    // A word holds no '"' (it separates words), so quoting needs no escape.
    query += '"';
    query += word;
    query += '"';
  }
  return query;
}

}  // namespace loopr::memory
