#include "common/small_file.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/unique_fd.hpp"

namespace loopr {

std::string first_line_of_small_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd) return {};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  std::string text(PATH_MAX, '\0');
  const ssize_t got = ::read(fd.get(), text.data(), text.size());
  if (got <= 0) return {};
  text.resize(static_cast<std::size_t>(got));
  const auto newline = text.find('\n');
  if (newline == std::string::npos && text.size() == PATH_MAX) return {};  // no line that short
  std::string line = text.substr(0, newline);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
    line.pop_back();
  if (line.find('\0') != std::string::npos) return {};
  return line;
}

}  // namespace loopr
