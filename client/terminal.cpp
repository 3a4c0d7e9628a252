#include "client/terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string_view>

namespace loopr::client {
namespace {

constexpr std::size_t kMinColumns = 20;
constexpr std::size_t kMaxColumns = 10'000;

std::size_t columns_from_environment() {
  const char* text = std::getenv("COLUMNS");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const unsigned long value = std::strtoul(text, &end, 10);
  if (*end != '\0' || value < kMinColumns || value > kMaxColumns) return 0;
  return static_cast<std::size_t>(value);
}

}  // namespace

TerminalStyle terminal_style(const std::ostream& out) {
  TerminalStyle style;
  if (const std::size_t columns = columns_from_environment(); columns != 0) {
    style.columns = columns;
  }
  if (&out != &std::cout || ::isatty(STDOUT_FILENO) != 1) return style;
  winsize size{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col >= kMinColumns) {
    style.columns = size.ws_col;
  }
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  style.bold = (no_color == nullptr || *no_color == '\0') &&
               (term == nullptr || std::string_view(term) != "dumb");
  return style;
}

}  // namespace loopr::client
