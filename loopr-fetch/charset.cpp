#include "loopr-fetch/charset.hpp"

#include <iconv.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "common/ascii_text.hpp"
#include "common/utf8.hpp"

namespace loopr::fetch {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

std::string charset_of(std::string_view content_type) {
  std::size_t at = content_type.find(';');
  while (at != std::string_view::npos) {
    std::string_view rest = content_type.substr(at + 1);
    const std::size_t next = rest.find(';');
    std::string_view parameter = trim_space(rest.substr(0, next));
    at = next == std::string_view::npos ? next : at + 1 + next;
    const std::size_t equals = parameter.find('=');
    if (equals == std::string_view::npos) continue;
    if (ascii_lower(trim_space(parameter.substr(0, equals))) != "charset") continue;
    std::string_view value = trim_space(parameter.substr(equals + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    return std::string(value);
  }
  return {};
}

std::string media_type_of(std::string_view content_type) {
  return ascii_lower(trim_space(content_type.substr(0, content_type.find(';'))));
}

std::string decode_to_utf8(std::string_view bytes, std::string_view charset) {
  const std::string name = ascii_lower(charset);
  if (name.empty() || name == "utf-8" || name == "utf8" || name == "us-ascii" || name == "ascii") {
    return to_lossy_utf8(bytes);
  }
  iconv_t converter = ::iconv_open("UTF-8", std::string(charset).c_str());
  if (converter == reinterpret_cast<iconv_t>(-1)) return to_lossy_utf8(bytes);
  std::string out;
  out.reserve(bytes.size() + bytes.size() / 2);
  char buffer[16384];
  auto* in = const_cast<char*>(bytes.data());
  std::size_t in_left = bytes.size();
  while (in_left > 0) {
    char* write = buffer;
    std::size_t out_left = sizeof buffer;
    const std::size_t done = ::iconv(converter, &in, &in_left, &write, &out_left);
    out.append(buffer, sizeof buffer - out_left);
    if (done != static_cast<std::size_t>(-1)) break;
    if (errno == E2BIG) continue;
    // EILSEQ or EINVAL (a sequence cut at the end): one byte is replaced.
    out.append(kReplacement);
    ++in;
    --in_left;
  }
  ::iconv_close(converter);
  return to_lossy_utf8(out);
}

}  // namespace loopr::fetch
