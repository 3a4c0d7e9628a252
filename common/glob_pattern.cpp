#include "common/glob_pattern.hpp"

#include <algorithm>

namespace loopr {
namespace {

using Token = GlobPattern::Token;
using Segment = GlobPattern::Segment;
using Alternative = GlobPattern::Alternative;

Error pattern_error(std::string_view pattern, std::string problem) {
  return make_error(errc::invalid_arguments,
                    "glob pattern '" + std::string(pattern) + "' is invalid: " + problem,
                    "use *, ?, [a-z], ** and {a,b} with balanced braces; escape a literal "
                    "metacharacter with a backslash");
}

// Decodes one UTF-8 code point at s[i]; an invalid byte is one character.
// Returns the code point and sets `length` (>= 1).
std::uint32_t decode(std::string_view s, std::size_t i, std::size_t& length) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  length = 1;
  if (b0 < 0x80) return b0;
  std::size_t need = 0;
  std::uint32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0 && b0 >= 0xC2) {
    need = 1;
    cp = b0 & 0x1Fu;
  } else if ((b0 & 0xF0) == 0xE0) {
    need = 2;
    cp = b0 & 0x0Fu;
  } else if ((b0 & 0xF8) == 0xF0 && b0 <= 0xF4) {
    need = 3;
    cp = b0 & 0x07u;
  } else {
    return 0x80000000u | b0;  // invalid lead byte: a character of its own
  }
  if (i + need >= s.size()) return 0x80000000u | b0;
  for (std::size_t k = 1; k <= need; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0x80000000u | b0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  length = need + 1;
  return cp;
}

std::size_t char_length(std::string_view s, std::size_t i) {
  std::size_t length = 1;
  decode(s, i, length);
  return length;
}

// End (index of the closing ']') of a bracket expression starting at s[open],
// or npos if it is not closed (then '[' is literal).
std::size_t bracket_end(std::string_view s, std::size_t open) {
  std::size_t i = open + 1;
  if (i < s.size() && (s[i] == '!' || s[i] == '^')) ++i;
  if (i < s.size() && s[i] == ']') ++i;
  for (; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == ']') {
      return i;
    } else if (s[i] == '/') {
      return std::string_view::npos;
    }
  }
  return std::string_view::npos;
}

// Expands the first top-level {a,b} of `s` (recursively); appends to `out`.
Result<void> expand_braces(std::string_view pattern, const std::string& s,
                           std::vector<std::string>& out) {
  std::size_t open = std::string::npos;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '[') {
      const std::size_t end = bracket_end(s, i);
      if (end != std::string_view::npos) i = end;
    } else if (s[i] == '{') {
      open = i;
      break;
    }
  }
  if (open == std::string::npos) {
    if (out.size() >= GlobPattern::kMaxAlternatives) {
      return pattern_error(pattern, "more than " + std::to_string(GlobPattern::kMaxAlternatives) +
                                        " alternatives after expanding {}");
    }
    out.push_back(s);
    return {};
  }
  std::vector<std::string> parts;
  std::string current;
  int depth = 1;
  std::size_t i = open + 1;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\' && i + 1 < s.size()) {
      current += c;
      current += s[++i];
      continue;
    }
    if (c == '[') {
      const std::size_t end = bracket_end(s, i);
      if (end != std::string_view::npos) {
        current.append(s, i, end - i + 1);
        i = end;
        continue;
      }
    }
    if (c == '{') ++depth;
    if (c == '}' && --depth == 0) break;
    if (c == ',' && depth == 1) {
      parts.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (depth != 0)
    return pattern_error(pattern, "'{' at offset " + std::to_string(open) + " has no matching '}'");
  parts.push_back(std::move(current));
  const std::string prefix = s.substr(0, open);
  const std::string suffix = s.substr(i + 1);
  for (const std::string& part : parts) {
    auto expanded = expand_braces(pattern, prefix + part + suffix, out);
    if (!expanded) return expanded;
  }
  return {};
}

Token parse_class(std::string_view s, std::size_t open, std::size_t close) {
  Token token{Token::Kind::char_class, false, {}, {}};
  std::size_t i = open + 1;
  if (s[i] == '!' || s[i] == '^') {
    token.negated = true;
    ++i;
  }
  const std::size_t first = i;
  while (i < close) {
    if (s[i] == '\\' && i + 1 < close) ++i;
    std::size_t length = 1;
    const std::uint32_t low = decode(s, i, length);
    i += length;
    std::uint32_t high = low;
    // "a-z"; a '-' first or last is literal.
    if (i + 1 < close && s[i] == '-' && !(i == first)) {
      std::size_t j = i + 1;
      if (s[j] == '\\' && j + 1 < close) ++j;
      high = decode(s, j, length);
      i = j + length;
    }
    token.ranges.push_back({std::min(low, high), std::max(low, high)});
  }
  return token;
}

Segment parse_segment(std::string_view component) {
  Segment segment;
  if (component == "**") {
    segment.globstar = true;
    segment.literal = false;
    return segment;
  }
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) {
      segment.tokens.push_back(Token{Token::Kind::literal, false, std::move(literal), {}});
      literal.clear();
    }
  };
  for (std::size_t i = 0; i < component.size(); ++i) {
    const char c = component[i];
    if (c == '\\' && i + 1 < component.size()) {
      literal += component[++i];
    } else if (c == '*') {
      flush();
      if (segment.tokens.empty() || segment.tokens.back().kind != Token::Kind::star) {
        segment.tokens.push_back(Token{Token::Kind::star, false, {}, {}});
      }
      segment.literal = false;
    } else if (c == '?') {
      flush();
      segment.tokens.push_back(Token{Token::Kind::any_char, false, {}, {}});
      segment.literal = false;
    } else if (c == '[' && bracket_end(component, i) != std::string_view::npos) {
      flush();
      const std::size_t close = bracket_end(component, i);
      segment.tokens.push_back(parse_class(component, i, close));
      segment.literal = false;
      i = close;
    } else {
      literal += c;
    }
  }
  flush();
  return segment;
}

Alternative parse_alternative(std::string_view text) {
  Alternative alternative;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] == '\\') {
      ++i;
      continue;
    }
    if (i < text.size() && text[i] == '[') {
      const std::size_t end = bracket_end(text, i);
      if (end != std::string_view::npos) i = end;
      continue;
    }
    if (i == text.size() || text[i] == '/') {
      const std::string_view component = text.substr(start, i - start);
      start = i + 1;
      if (component.empty()) continue;
      Segment segment = parse_segment(component);
      // Consecutive `**` are one.
      if (segment.globstar && !alternative.empty() && alternative.back().globstar) continue;
      alternative.push_back(std::move(segment));
    }
  }
  // A trailing `**` matches everything inside, not the directory itself.
  if (!alternative.empty() && alternative.back().globstar) {
    alternative.push_back(parse_segment("*"));
  }
  return alternative;
}

bool class_contains(const Token& token, std::uint32_t cp) {
  bool found = false;
  for (const auto& range : token.ranges) {
    if (cp >= range.low && cp <= range.high) {
      found = true;
      break;
    }
  }
  return found != token.negated;
}

// Matches one component (no '/') against a segment's tokens.
bool match_component(const Segment& segment, std::string_view text) {
  const std::vector<Token>& tokens = segment.tokens;
  std::size_t ti = 0, pi = 0;
  std::size_t star_token = std::string::npos, star_pos = 0;
  while (ti < tokens.size() || pi < text.size()) {
    if (ti < tokens.size()) {
      const Token& token = tokens[ti];
      if (token.kind == Token::Kind::star) {
        star_token = ti++;
        star_pos = pi;
        continue;
      }
      if (pi < text.size()) {
        bool matched = false;
        std::size_t next = pi;
        switch (token.kind) {
          case Token::Kind::literal:
            matched = text.substr(pi, token.text.size()) == token.text;
            next = pi + token.text.size();
            break;
          case Token::Kind::any_char:
            matched = true;
            next = pi + char_length(text, pi);
            break;
          case Token::Kind::char_class: {
            std::size_t length = 1;
            matched = class_contains(token, decode(text, pi, length));
            next = pi + length;
            break;
          }
          case Token::Kind::star:
            break;
        }
        if (matched) {
          pi = next;
          ++ti;
          continue;
        }
      }
    }
    if (star_token != std::string::npos && star_pos < text.size()) {
      star_pos += char_length(text, star_pos);
      pi = star_pos;
      ti = star_token + 1;
      continue;
    }
    return false;
  }
  return true;
}

std::size_t component_end(std::string_view path, std::size_t start) {
  const std::size_t slash = path.find('/', start);
  return slash == std::string_view::npos ? path.size() : slash;
}

// Same greedy algorithm one level up: `**` is the star, components the chars.
// Positions are byte offsets of component starts; path.size() + 1 is the end.
bool match_alternative(const Alternative& segments, std::string_view path) {
  const std::size_t end = path.size() + 1;
  std::size_t si = 0, pi = 0;
  std::size_t star_segment = std::string::npos, star_pos = 0;
  while (si < segments.size() || pi < end) {
    if (si < segments.size()) {
      const Segment& segment = segments[si];
      if (segment.globstar) {
        star_segment = si++;
        star_pos = pi;
        continue;
      }
      if (pi < end) {
        const std::size_t stop = component_end(path, pi);
        if (match_component(segment, path.substr(pi, stop - pi))) {
          pi = stop + 1;
          ++si;
          continue;
        }
      }
    }
    if (star_segment != std::string::npos && star_pos < end) {
      star_pos = component_end(path, star_pos) + 1;
      pi = star_pos;
      si = star_segment + 1;
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace

Result<GlobPattern> GlobPattern::compile(std::string_view pattern, bool alternation) {
  if (pattern.empty()) return pattern_error(pattern, "it is empty");
  if (pattern.size() > kMaxPatternBytes) {
    return pattern_error(pattern.substr(0, 80),
                         "it is longer than " + std::to_string(kMaxPatternBytes) + " bytes");
  }
  std::vector<std::string> expanded;
  if (alternation) {
    auto braces = expand_braces(pattern, std::string(pattern), expanded);
    if (!braces) return std::move(braces).error();
  } else {
    expanded.emplace_back(pattern);
  }

  GlobPattern compiled;
  compiled.source_ = std::string(pattern);
  compiled.literal_ = expanded.size() == 1;
  for (const std::string& text : expanded) {
    Alternative alternative = parse_alternative(text);
    for (const Segment& segment : alternative)
      compiled.literal_ = compiled.literal_ && segment.literal;
    compiled.alternatives_.push_back(std::move(alternative));
  }
  return compiled;
}

bool GlobPattern::match(std::string_view path) const {
  if (path.empty()) return false;
  for (const Alternative& alternative : alternatives_) {
    if (match_alternative(alternative, path)) return true;
  }
  return false;
}

}  // namespace loopr
