#include "tui/text_width.hpp"

#include <cwchar>

namespace loopr::tui {
namespace {

constexpr char32_t kReplacement = 0xFFFD;
constexpr std::string_view kEllipsis = "\xe2\x80\xa6";  // "…"

// Decodes one code point at text[i]; advances i. Overlongs, surrogates and
// values above U+10FFFF are U+FFFD (one byte consumed).
char32_t next_code_point(std::string_view text, std::size_t& i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  std::size_t length = 0;
  char32_t value = 0;
  char32_t minimum = 0;
  if ((b0 & 0xE0) == 0xC0) {
    length = 2;
    value = b0 & 0x1F;
    minimum = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    length = 3;
    value = b0 & 0x0F;
    minimum = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    length = 4;
    value = b0 & 0x07;
    minimum = 0x10000;
  } else {
    ++i;
    return kReplacement;
  }
  if (i + length > text.size()) {
    ++i;
    return kReplacement;
  }
  for (std::size_t k = 1; k < length; ++k) {
    const unsigned char b = byte(i + k);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return kReplacement;
    }
    value = (value << 6) | (b & 0x3F);
  }
  if (value < minimum || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
    ++i;
    return kReplacement;
  }
  i += length;
  return value;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace

std::u32string decode_utf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();)
    out.push_back(next_code_point(text, i));
  return out;
}

std::string encode_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : text)
    append_utf8(out, c);
  return out;
}

std::size_t code_point_width(char32_t c) {
  if (c < 0x80) return 1;  // ASCII; controls never reach here (printable())
  const int width = ::wcwidth(static_cast<wchar_t>(c));
  if (width < 0) return 1;
  return static_cast<std::size_t>(width);
}

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size();)
    width += code_point_width(next_code_point(text, i));
  return width;
}

std::string clip_to_width(std::string_view text, std::size_t width) {
  if (display_width(text) <= width) return std::string(text);
  if (width == 0) return {};
  std::string out;
  std::size_t used = 0;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t start = i;
    const std::size_t w = code_point_width(next_code_point(text, i));
    if (used + w > width - 1) break;
    out.append(text.substr(start, i - start));
    used += w;
  }
  out.append(kEllipsis);
  return out;
}

std::string pad_to_width(std::string_view text, std::size_t width) {
  std::string out = clip_to_width(text, width);
  const std::size_t used = display_width(out);
  if (used < width) out.append(width - used, ' ');
  return out;
}

std::string pad_left_to_width(std::string_view text, std::size_t width) {
  std::string clipped = clip_to_width(text, width);
  const std::size_t used = display_width(clipped);
  return std::string(width > used ? width - used : 0, ' ') + clipped;
}

std::vector<std::string> wrap_to_width(std::string_view text, std::size_t width,
                                       std::size_t max_lines) {
  if (width == 0) width = 1;
  std::vector<std::string> lines;
  const auto full = [&] { return max_lines != 0 && lines.size() >= max_lines; };
  std::size_t begin = 0;
  while (begin <= text.size() && !full()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view rest = text.substr(begin, end - begin);
    do {
      if (full()) break;
      // The longest prefix of `rest` within `width`, and the last space in it.
      std::size_t used = 0, cut = 0, last_space = std::string_view::npos;
      for (std::size_t i = 0; i < rest.size();) {
        const std::size_t start = i;
        const char32_t c = next_code_point(rest, i);
        const std::size_t w = code_point_width(c);
        if (used + w > width) break;
        if (c == ' ') last_space = start;
        used += w;
        cut = i;
      }
      if (cut == 0 && !rest.empty()) {  // one character wider than the line
        std::size_t i = 0;
        next_code_point(rest, i);
        cut = i;
      }
      if (cut < rest.size() && rest[cut] == ' ') {  // the line ends right before a space
        lines.emplace_back(rest.substr(0, cut));
        rest.remove_prefix(cut + 1);
      } else if (cut < rest.size() && last_space != std::string_view::npos && last_space > 0) {
        lines.emplace_back(rest.substr(0, last_space));
        rest.remove_prefix(last_space + 1);
      } else {
        lines.emplace_back(rest.substr(0, cut));
        rest.remove_prefix(cut);
      }
    } while (!rest.empty());
    if (end == text.size()) break;
    begin = end + 1;
  }
  return lines;
}

}  // namespace loopr::tui
